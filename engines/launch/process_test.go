package launch

import (
	"context"
	"errors"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hlsbench/hlsbench/engines/internal/procfs"
	"github.com/hlsbench/hlsbench/engines/runstate"
)

// A process started with a run in ctx is in its state file from the start
// until it has stopped.
func TestStartProcessRecordsInRun(t *testing.T) {
	r, err := runstate.Begin(runstate.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := runstate.With(context.Background(), r)
	p, err := StartProcess(ctx, ProcessSpec{Name: "sleeper", Path: "sleep", Args: []string{"60"}, StopTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	st := r.State()
	if len(st.Procs) != 1 || st.Procs[0].PID != p.PID() || st.Procs[0].PGID != p.PGID() || p.PGID() != p.PID() || st.Procs[0].Name != "sleeper" ||
		st.Procs[0].Start == 0 || strings.Join(st.Procs[0].Command, " ") != "sleep 60" {
		t.Errorf("state %+v", st.Procs)
	}
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if st := r.State(); len(st.Procs) != 0 {
		t.Errorf("stopped, still recorded: %+v", st.Procs)
	}
	// Without a run nothing is recorded, and nothing fails.
	p, err = StartProcess(context.Background(), ProcessSpec{Name: "sleeper", Path: "sleep", Args: []string{"60"}})
	if err != nil {
		t.Fatal(err)
	}
	p.Stop(context.Background())
}

// waitState waits (bounded) until pid's state is or is not 'T' (stopped),
// and says whether it got there.
func waitState(pid int, stopped bool) bool {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if st, err := procfs.ReadStat(pid); err == nil && (st.State == 'T') == stopped {
			return true
		}
	}
	return false
}

// A frozen group stops (state T), thaws, and is frozen again; Stop then
// ends it with SIGTERM, which its trap answers with exit 0, rather than
// SIGKILL after the stop timeout: Stop thaws before it signals.
func TestProcessFreezeThawStop(t *testing.T) {
	r, err := runstate.Begin(runstate.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := runstate.With(context.Background(), r)
	p, err := StartProcess(ctx, ProcessSpec{Name: "trapper", Path: "sh",
		Args: []string{"-c", `trap 'exit 0' TERM; echo up; sleep 60 & wait`}, StopTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := p.WaitLine(wctx, "up"); err != nil {
		t.Fatal(err)
	}
	var inst Instance = p
	if err := Freeze(ctx, inst); err != nil {
		t.Fatal(err)
	}
	if !waitState(p.PID(), true) || !p.Frozen() {
		t.Fatal("frozen, yet its leader is not stopped")
	}
	if err := Thaw(ctx, inst); err != nil {
		t.Fatal(err)
	}
	if !waitState(p.PID(), false) || p.Frozen() {
		t.Fatal("thawed, yet its leader is still stopped")
	}
	if err := p.Freeze(ctx); err != nil || !waitState(p.PID(), true) {
		t.Fatalf("second freeze: %v", err)
	}
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if p.waitErr != nil {
		t.Errorf("a frozen group was not ended by SIGTERM: %v", p.waitErr)
	}
	if err := p.Freeze(ctx); err != nil || p.Frozen() {
		t.Errorf("freeze after stop: %v, frozen %v", err, p.Frozen())
	}
	// The in-process runtime cannot be frozen, and says so.
	inst, err = Inproc{}.Start(ctx, Spec{Name: "x", Serve: func() (string, func(context.Context) error, error) { return "", nil, nil }})
	if err != nil {
		t.Fatal(err)
	}
	if err := Freeze(ctx, inst); !errors.Is(err, ErrCannotFreeze) {
		t.Errorf("in-process freeze: %v", err)
	}
}

// A child outlives the thread that asked for it: Linux sends
// PR_SET_PDEATHSIG when the forking thread exits, and a goroutine that
// exits locked to its thread (a pinned event loop, the stall sampler) ends
// that thread. Started from such a goroutine, the child must still run.
func TestChildOutlivesLockedThread(t *testing.T) {
	// Go never ends the main thread (it parks it instead): a goroutine
	// that lands there holds it till the test ends, and another is tried.
	hold := make(chan struct{})
	defer close(hold)
	type started struct {
		p   *Process
		err error
		m0  bool
	}
	var p *Process
	for try := 0; try < 10 && p == nil; try++ {
		got := make(chan started, 1)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
			if unix.Gettid() == os.Getpid() {
				got <- started{m0: true}
				<-hold
				return
			}
			p, err := StartProcess(context.Background(), ProcessSpec{Name: "sleeper", Path: "sleep", Args: []string{"60"}, StopTimeout: time.Second})
			got <- started{p: p, err: err}
		}()
		s := <-got
		if s.err != nil {
			t.Fatal(s.err)
		}
		p = s.p
	}
	if p == nil {
		t.Fatal("every goroutine landed on the main thread")
	}
	defer p.Stop(context.Background())
	select {
	case <-p.done:
		t.Fatalf("the child ended when the thread that started it did: %v", p.waitErr)
	case <-time.After(500 * time.Millisecond):
	}
}
