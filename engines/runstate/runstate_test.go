package runstate

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hlsbench/hlsbench/engines/internal/procfs"
)

func TestDir(t *testing.T) {
	t.Setenv(DirEnv, "/x/override")
	t.Setenv("XDG_RUNTIME_DIR", "/run/user/1000")
	if d := Dir(); d != "/x/override" {
		t.Errorf("with %s: %s", DirEnv, d)
	}
	t.Setenv(DirEnv, "")
	if d := Dir(); d != "/run/user/1000/hlsbench" {
		t.Errorf("with XDG_RUNTIME_DIR: %s", d)
	}
	t.Setenv("XDG_RUNTIME_DIR", "")
	t.Setenv("HOME", "/home/u")
	want := "/home/u/.cache/hlsbench/run"
	if os.Geteuid() == 0 {
		want = "/run/hlsbench"
	}
	if d := Dir(); d != want {
		t.Errorf("without either: %s, want %s", d, want)
	}
}

// group starts sh in a process group of its own with a child in the same
// group (like an engine's master and worker), and returns the pids. The
// processes are reaped, and killed by PID at the end if still there.
func group(t *testing.T) (leader *exec.Cmd, pids []int) {
	t.Helper()
	cmd := exec.Command("sh", "-c", "sleep 60 & echo $!; wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	start, _ := procfs.ReadStat(cmd.Process.Pid)
	done := make(chan struct{})
	buf := make([]byte, 32)
	n, _ := out.Read(buf)
	var child int
	for _, c := range strings.TrimSpace(string(buf[:n])) {
		child = child*10 + int(c-'0')
	}
	// sh prints the child's pid right after the fork, maybe before the
	// child has become sleep: wait for the exec (bounded), so the group's
	// names are what a sweep will report.
	childStat, _ := procfs.ReadStat(child)
	for deadline := time.Now().Add(5 * time.Second); childStat.Comm != "sleep" && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
		childStat, _ = procfs.ReadStat(child)
	}
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		for _, s := range []procfs.Stat{start, childStat} {
			if same(s) {
				syscall.Kill(s.PID, syscall.SIGKILL)
			}
		}
		<-done
	})
	return cmd, []int{cmd.Process.Pid, child}
}

func stats(t *testing.T, pids []int) []procfs.Stat {
	t.Helper()
	var out []procfs.Stat
	for _, p := range pids {
		s, err := procfs.ReadStat(p)
		if err != nil {
			t.Fatalf("pid %d: %v", p, err)
		}
		out = append(out, s)
	}
	return out
}

func stillRunning(ss []procfs.Stat) []int {
	var out []int
	for _, s := range ss {
		if same(s) {
			out = append(out, s.PID)
		}
	}
	return out
}

func TestRunRecordsAndForgets(t *testing.T) {
	dir := t.TempDir()
	r, err := Begin(Options{Dir: dir, Lock: "wait"})
	if err != nil {
		t.Fatal(err)
	}
	cmd, pids := group(t)
	tr, err := r.Track("sleeper", cmd.Process.Pid, cmd.Args)
	if err != nil {
		t.Fatal(err)
	}
	work, err := r.MkdirTemp(t.TempDir(), "nginx")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(filepath.Base(work), "hlsbench-"+r.ID()+"-nginx-") {
		t.Errorf("scratch dir %s", work)
	}
	st, err := ReadState(r.StateFile())
	if err != nil {
		t.Fatal(err)
	}
	if st.PID != os.Getpid() || st.Start == 0 || st.Lock != "wait" || len(st.Procs) != 1 || !slices.Equal(st.Dirs, []string{work}) {
		t.Errorf("state %+v", st)
	}
	if p := st.Procs[0]; p.PID != pids[0] || p.PGID != pids[0] || p.Start == 0 || p.Name != "sleeper" {
		t.Errorf("proc %+v", p)
	}
	if g := r.PGIDs(); !slices.Equal(g, []int{pids[0]}) {
		t.Errorf("PGIDs %v", g)
	}
	if err := tr.Forget(); err == nil {
		t.Error("forgot a group whose processes run")
	}
	ss := stats(t, pids)
	syscall.Kill(-pids[0], syscall.SIGKILL)
	waitGone(ss, 5*time.Second)
	if err := tr.Forget(); err != nil {
		t.Error(err)
	}
	if err := r.RemoveAll(work); err != nil {
		t.Fatal(err)
	}
	if st := r.State(); len(st.Procs) != 0 || len(st.Dirs) != 0 {
		t.Errorf("after stop: %+v", st)
	}
	rep, err := r.Close()
	if err != nil || !rep.Empty() {
		t.Errorf("close: %+v, %v", rep, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("left in the runtime directory: %v", ents)
	}
}

// An observed group counts as the run's until forgotten, and never reaches
// the state file (a sweep must not end what it cannot prove is the run's).
func TestObserve(t *testing.T) {
	r, err := Begin(Options{Dir: t.TempDir(), Lock: "wait"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	forget := r.Observe(4242)
	r.Observe(0)() // no group: nothing to count
	if g := r.PGIDs(); !slices.Equal(g, []int{4242}) {
		t.Errorf("PGIDs %v, want the observed group", g)
	}
	if st, err := ReadState(r.StateFile()); err != nil || len(st.Procs) != 0 {
		t.Errorf("state file %+v, %v: an observed group was recorded", st, err)
	}
	forget()
	forget()
	if g := r.PGIDs(); len(g) != 0 {
		t.Errorf("PGIDs %v after forget", g)
	}
	var nilRun *Run
	nilRun.Observe(4242)()
	if nilRun.PGIDs() != nil {
		t.Error("a nil run observed a group")
	}
}

func TestNilRun(t *testing.T) {
	var r *Run
	ctx := context.Background()
	if From(ctx) != nil || From(With(ctx, nil)) != nil {
		t.Fatal("a run from nowhere")
	}
	d, err := r.MkdirTemp(t.TempDir(), "varnish")
	if err != nil || !strings.HasPrefix(filepath.Base(d), "hlsbench-varnish-") {
		t.Fatalf("%s, %v", d, err)
	}
	tr, err := r.Track("x", os.Getpid(), nil)
	if err != nil || tr.Forget() != nil || r.RemoveAll(d) != nil || r.PGIDs() != nil {
		t.Error("a nil run must record nothing and fail nothing")
	}
	if _, err := r.Close(); err != nil {
		t.Error(err)
	}
}

// Close ends what the run's owners did not stop.
func TestCloseEndsLeftovers(t *testing.T) {
	dir := t.TempDir()
	r, err := Begin(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	cmd, pids := group(t)
	if _, err := r.Track("sleeper", cmd.Process.Pid, cmd.Args); err != nil {
		t.Fatal(err)
	}
	work, _ := r.MkdirTemp(t.TempDir(), "x")
	ss := stats(t, pids)
	rep, err := r.Close()
	if err != nil {
		t.Fatal(err)
	}
	if left := stillRunning(ss); len(left) > 0 {
		t.Errorf("still running: %v", left)
	}
	if _, err := os.Stat(work); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s: %v", work, err)
	}
	if len(rep.Killed) != 2 || !slices.Equal(rep.Dirs, []string{work}) {
		t.Errorf("report %+v", rep)
	}
	if _, err := r.Track("late", os.Getpid(), nil); err == nil {
		t.Error("tracked after Close")
	}
}

// killRun leaves r as a SIGKILL would: its lock released, its state file,
// processes and directories in place. The test goes on living, so the
// state is made to name another process as hlsbench (its start time one
// tick later).
func killRun(t *testing.T, r *Run) {
	r.st.Start++
	if err := r.write(); err != nil {
		t.Fatal(err)
	}
	r.lock.Close()
}

func TestSweepDeadRun(t *testing.T) {
	dir := t.TempDir()
	r, err := Begin(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	cmd, pids := group(t)
	if _, err := r.Track("sleeper", cmd.Process.Pid, cmd.Args); err != nil {
		t.Fatal(err)
	}
	work, _ := r.MkdirTemp(t.TempDir(), "nginx")
	os.WriteFile(filepath.Join(work, "f"), []byte("x"), 0o644)
	ss := stats(t, pids)
	killRun(t, r)

	sw, err := Sweep(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(sw.Dead) != 1 || len(sw.Dead[0].Killed) != 2 || len(sw.Dead[0].Dirs) != 1 || !sw.Dead[0].DryRun {
		t.Fatalf("dry run: %+v", sw)
	}
	if left := stillRunning(ss); len(left) != 2 {
		t.Fatalf("a dry run killed: %v alive", left)
	}
	if _, err := os.Stat(r.StateFile()); err != nil {
		t.Fatalf("a dry run removed the state: %v", err)
	}

	sw, err = Sweep(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(sw.Dead) != 1 || len(sw.Live) != 0 {
		t.Fatalf("sweep: %+v", sw)
	}
	rep := sw.Dead[0]
	if rep.Run != r.ID() || rep.PID != os.Getpid() || len(rep.Killed) != 2 || !slices.Equal(rep.Dirs, []string{work}) {
		t.Errorf("report %+v", rep)
	}
	if w := rep.What(); !strings.Contains(w, "sh pid ") || !strings.Contains(w, "sleep pid ") || !strings.Contains(w, work) {
		t.Errorf("What: %q", w)
	}
	if left := stillRunning(ss); len(left) > 0 {
		t.Errorf("still running: %v", left)
	}
	if _, err := os.Stat(work); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s: %v", work, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("left in the runtime directory: %v", ents)
	}
	if sw, err := Sweep(dir, false); err != nil || len(sw.Dead)+len(sw.Live) != 0 {
		t.Errorf("second sweep: %+v, %v", sw, err)
	}
}

func TestSweepLeavesLiveRun(t *testing.T) {
	dir := t.TempDir()
	r, err := Begin(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd, pids := group(t)
	r.Track("sleeper", cmd.Process.Pid, cmd.Args)
	work, _ := r.MkdirTemp(t.TempDir(), "x")
	ss := stats(t, pids)
	sw, err := Sweep(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(sw.Dead) != 0 || len(sw.Live) != 1 || sw.Live[0].Run != r.ID() {
		t.Errorf("sweep: %+v", sw)
	}
	if len(stillRunning(ss)) != 2 {
		t.Error("killed a live run's processes")
	}
	if _, err := os.Stat(work); err != nil {
		t.Error(err)
	}
	// Its lock file deleted, the run is still alive: hlsbench's PID and
	// start time say so.
	os.Remove(lockPath(dir, r.ID()))
	sw, err = Sweep(dir, false)
	if err != nil || len(sw.Live) != 1 || len(stillRunning(ss)) != 2 {
		t.Errorf("without its lock file: %+v, %v", sw, err)
	}
}

// A state file whose leader PID now belongs to another process (its start
// time differs), or from another boot, or listing a directory that is not a
// scratch directory: nothing is killed, nothing outside is removed.
func TestSweepProvesOwnership(t *testing.T) {
	dir := t.TempDir()
	cmd, pids := group(t)
	ss := stats(t, pids)
	keep := t.TempDir()
	mine := filepath.Join(t.TempDir(), "hlsbench-dead0001-nginx-1")
	os.Mkdir(mine, 0o755)
	// The leader as recorded started a tick before the live one: another
	// process that had the PID earlier.
	st := State{Version: StateVersion, Run: "dead0001", PID: 0, BootID: procfs.BootID(),
		Procs: []Proc{{Name: "old", PID: cmd.Process.Pid, PGID: cmd.Process.Pid, SID: ss[0].SID, Start: ss[0].Start - 1}},
		Dirs:  []string{keep, "/", mine}}
	writeState(t, dir, st)

	sw, err := Sweep(dir, false)
	if err == nil || !strings.Contains(err.Error(), "not a scratch directory") {
		t.Errorf("sweep error: %v", err)
	}
	if len(stillRunning(ss)) != 2 {
		t.Error("killed a process whose start time does not match")
	}
	if _, err := os.Stat(keep); err != nil {
		t.Errorf("removed a directory that is not a scratch directory: %v", err)
	}
	if _, err := os.Stat(mine); !errors.Is(err, os.ErrNotExist) || len(sw.Dead) != 1 || len(sw.Dead[0].Killed) != 0 {
		t.Errorf("sweep %+v; %s: %v", sw, mine, err)
	}
	if _, err := os.Stat(statePath(dir, "dead0001")); err != nil {
		t.Errorf("state file of an unfinished sweep: %v", err)
	}

	// The same run recorded on another boot: its processes are long gone.
	st.BootID = "another-boot"
	st.Dirs = nil
	st.Procs[0].Start = ss[0].Start
	writeState(t, dir, st)
	if sw, err := Sweep(dir, false); err != nil || len(sw.Dead) != 1 || len(sw.Dead[0].Killed) != 0 || len(stillRunning(ss)) != 2 {
		t.Errorf("another boot: %+v, %v", sw, err)
	}
}

func writeState(t *testing.T, dir string, st State) {
	t.Helper()
	r := &Run{dir: dir, st: st}
	if err := r.write(); err != nil {
		t.Fatal(err)
	}
}

func TestParseLockMode(t *testing.T) {
	for in, want := range map[string]LockMode{"": LockWait, "wait": LockWait, "fail": LockFail, "none": LockNone} {
		if m, err := ParseLockMode(in); m != want || err != nil {
			t.Errorf("%q: %q, %v", in, m, err)
		}
	}
	if _, err := ParseLockMode("always"); err == nil {
		t.Error("accepted always")
	}
}

func TestBenchLock(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	self, _ := procfs.ReadStat(os.Getpid())
	first := Holder{Run: "first", PID: os.Getpid(), Start: self.Start}
	l, err := LockBench(ctx, dir, LockWait, first, nil)
	if err != nil {
		t.Fatal(err)
	}
	if h, ok := BenchHolder(dir); !ok || h != first {
		t.Errorf("holder %+v %v", h, ok)
	}
	_, err = LockBench(ctx, dir, LockFail, Holder{Run: "second"}, nil)
	var busy *BusyError
	if !errors.As(err, &busy) || busy.Holder != first || !strings.Contains(err.Error(), "pid") {
		t.Errorf("fail: %v", err)
	}
	if n, err := LockBench(ctx, dir, LockNone, Holder{}, nil); n != nil || err != nil {
		t.Errorf("none: %v %v", n, err)
	}
	var waited []Holder
	wctx, cancel := context.WithTimeout(ctx, 3*DefaultPoll)
	_, err = LockBench(wctx, dir, LockWait, Holder{Run: "second"}, func(h Holder) { waited = append(waited, h) })
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) || len(waited) != 1 || waited[0] != first {
		t.Errorf("wait: %v, told %v", err, waited)
	}
	got := make(chan error, 1)
	go func() {
		l2, err := LockBench(ctx, dir, LockWait, Holder{Run: "second"}, nil)
		l2.Unlock()
		got <- err
	}()
	time.Sleep(DefaultPoll)
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Error(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting run did not get the lock")
	}
	if h, ok := BenchHolder(dir); ok {
		t.Errorf("a holder after Unlock: %+v", h)
	}
}

// TestSweepEndsRespawned: a master that forks a new worker when SIGTERM
// reaches it (as engines replace a worker that died) leaves a member the
// first listing of its group did not have; the sweep finds and ends it too.
func TestSweepEndsRespawned(t *testing.T) {
	dir := t.TempDir()
	r, err := Begin(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", `trap 'sleep 60 & echo $!' TERM; sleep 60 & echo $!; while :; do wait; done`)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	pids := make(chan int, 4)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if pid, err := strconv.Atoi(strings.TrimSpace(sc.Text())); err == nil {
				pids <- pid
			}
		}
		cmd.Wait()
		close(done)
	}()
	var seen []procfs.Stat
	t.Cleanup(func() {
		for _, s := range seen {
			if same(s) {
				syscall.Kill(s.PID, syscall.SIGKILL)
			}
		}
		if s, err := procfs.ReadStat(cmd.Process.Pid); err == nil && !s.Zombie() {
			cmd.Process.Kill()
		}
		<-done
	})
	next := func() procfs.Stat {
		t.Helper()
		select {
		case pid := <-pids:
			s, err := procfs.ReadStat(pid)
			if err != nil {
				return procfs.Stat{PID: pid} // gone already
			}
			seen = append(seen, s)
			return s
		case <-time.After(10 * time.Second):
			t.Fatal("the shell printed no child pid in 10 s")
			return procfs.Stat{}
		}
	}
	first := next()
	if _, err := r.Track("master", cmd.Process.Pid, cmd.Args); err != nil {
		t.Fatal(err)
	}
	killRun(t, r)

	sw, err := Sweep(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	respawned := next()
	if len(sw.Dead) != 1 {
		t.Fatalf("sweep: %+v", sw)
	}
	var killed []int
	for _, k := range sw.Dead[0].Killed {
		killed = append(killed, k.PID)
	}
	for _, s := range []procfs.Stat{first, respawned} {
		if same(s) {
			t.Errorf("pid %d still running after the sweep", s.PID)
		}
		if !slices.Contains(killed, s.PID) {
			t.Errorf("the report does not name pid %d: %v", s.PID, killed)
		}
	}
	if s, err := procfs.ReadStat(cmd.Process.Pid); err == nil && !s.Zombie() {
		t.Errorf("the master (pid %d) still running after the sweep", cmd.Process.Pid)
	}
}

// A killed run's frozen cell (its group stopped with SIGSTOP) is thawed by
// the sweep and ended by its SIGTERM: the trap's exit 0, not SIGKILL.
func TestSweepThawsFrozenOrphan(t *testing.T) {
	dir := t.TempDir()
	r, err := Begin(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", `trap 'exit 0' TERM; echo up; sleep 60 & wait`)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	buf := make([]byte, 3)
	if _, err := io.ReadFull(out, buf); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Track("frozen", cmd.Process.Pid, cmd.Args); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if st, err := procfs.ReadStat(cmd.Process.Pid); err == nil && st.State == 'T' {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("SIGSTOP did not stop the group's leader")
		}
	}
	killRun(t, r)
	sw, err := Sweep(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(sw.Dead) != 1 || len(sw.Dead[0].Killed) == 0 {
		t.Fatalf("sweep: %+v", sw)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("the frozen orphan was not ended by SIGTERM: %v", err)
	}
}
