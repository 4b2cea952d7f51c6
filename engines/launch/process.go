// Package launch starts what hlsbench runs — the origin, the built-in
// cache, every engine — and hands back an instance to stop. Engines stay
// pure (they render files and describe a command line); where and how the
// command runs is a launcher's: a local process here, a container next.
package launch

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hlsbench/hlsbench/engines/internal/procgroup"
	"github.com/hlsbench/hlsbench/engines/runstate"
)

// DefaultStopTimeout is how long Stop waits after SIGTERM before SIGKILL.
// Some managers ignore SIGTERM for seconds (a Varnish 9 manager took over 8 s).
const DefaultStopTimeout = 10 * time.Second

// ProcessSpec is a local process to run.
type ProcessSpec struct {
	Name        string // for messages: "varnishd", "origin"
	Path        string
	Args        []string
	Env         []string // added to the environment
	Dir         string
	StopTimeout time.Duration
}

// Process is a started local process. Its output (stdout and stderr) is kept
// in a bounded tail for error messages; stdout lines can be awaited.
type Process struct {
	spec ProcessSpec
	cmd  *exec.Cmd
	tail *procgroup.Tail

	mu  sync.Mutex
	out *lineLog // stdout's lines

	done    chan struct{}
	waitErr error
	stopped bool
	frozen  bool // SIGSTOP sent to the group, no SIGCONT since

	tracked *runstate.Tracked
	// ready is the rest of the ready line, once seen.
	ready string
}

// StartProcess starts spec in a process group of its own and records the
// group in the run in ctx (runstate.From) as soon as it has started, so
// that if hlsbench is killed the next run ends it. PR_SET_PDEATHSIG also
// ends the direct child with us, but not its own children, nor a daemon
// that changes its credentials (varnishd), which clears that setting.
func StartProcess(ctx context.Context, spec ProcessSpec) (*Process, error) {
	if spec.StopTimeout == 0 {
		spec.StopTimeout = DefaultStopTimeout
	}
	cmd := exec.Command(spec.Path, spec.Args...)
	cmd.Dir = spec.Dir
	cmd.Env = append(os.Environ(), spec.Env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	p := &Process{spec: spec, cmd: cmd, tail: procgroup.NewTail(16 << 10), done: make(chan struct{})}
	p.out = newLineLog(p.tail)
	// A pipe of our own, not StdoutPipe: Wait closes that one as soon as
	// the process exits, and what it wrote last (why it exited) could be
	// lost unread.
	stdout, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = w
	cmd.Stderr = p.tail
	err = onSpawnThread(cmd.Start)
	w.Close()
	if err != nil {
		stdout.Close()
		return nil, fmt.Errorf("start %s: %w", spec.Name, err)
	}
	// Recorded before the output readers and the waiter start: the process
	// cannot yet be reaped, so its /proc entry is there to read.
	p.tracked, err = runstate.From(ctx).Track(spec.Name, cmd.Process.Pid, cmd.Args)
	if err != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		stdout.Close()
		return nil, fmt.Errorf("start %s: %w", spec.Name, err)
	}
	read := make(chan struct{})
	go func() {
		p.out.read(stdout)
		stdout.Close()
		close(read)
	}()
	go func() {
		p.waitErr = cmd.Wait()
		// Its output read to the end before Done, unless a process it
		// left behind (a daemon's child) still holds the pipe.
		select {
		case <-read:
		case <-time.After(outputGrace):
		}
		close(p.done)
	}()
	return p, nil
}

// outputGrace is how long an exited process's output is still read before
// Done closes, when something else holds its stdout open.
const outputGrace = 250 * time.Millisecond

// Linux sends a child its PR_SET_PDEATHSIG when the *thread* that forked
// it exits, not the process (see prctl(2)), and Go ends a thread whose
// goroutine exits while locked to it — the stall sampler's and pinned
// event loops' threads do, by design, so that no other goroutine inherits
// their affinity or real-time policy. A child forked from a thread that
// later became one of those was SIGKILLed mid-run ("connection refused"
// from an engine or a terminator that had been answering). So every child
// is forked from one thread kept for that alone, which never exits.
var spawn = struct {
	once sync.Once
	ch   chan func()
}{}

// onSpawnThread runs start on the spawning thread and returns its error.
func onSpawnThread(start func() error) error {
	spawn.once.Do(func() {
		spawn.ch = make(chan func())
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives as long as hlsbench
			for f := range spawn.ch {
				f()
			}
		}()
	})
	errc := make(chan error, 1)
	spawn.ch <- func() { errc <- start() }
	return <-errc
}

// Ready is the rest of the ready line the process printed.
func (p *Process) Ready() string { return p.ready }

// Logs is the end of the process's output.
func (p *Process) Logs() string { return p.Tail() }

// Exec runs a command on this host, where the process runs, in its
// directory.
func (p *Process) Exec(ctx context.Context, argv ...string) (Output, error) {
	return runLocal(ctx, p.spec.Dir, nil, argv)
}

// PID is the process id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// PGID is the process group the process leads (started with Setpgid): it
// and every process it forks, unless one moves to a group of its own.
func (p *Process) PGID() int { return p.cmd.Process.Pid }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Tail is the end of the process's output.
func (p *Process) Tail() string { return p.tail.String() }

// Exited says how the process ended, if it ended on its own: nil while it
// runs or once Stop was called.
func (p *Process) Exited() *Exit {
	select {
	case <-p.done:
	default:
		return nil
	}
	p.mu.Lock()
	stopped := p.stopped
	p.mu.Unlock()
	if stopped {
		return nil
	}
	e := &Exit{Name: p.spec.Name, Code: -1, Log: LastLines(strings.TrimSpace(p.Tail()), 20)}
	// ProcessState was set by Wait before done closed.
	if st := p.cmd.ProcessState; st != nil {
		e.Code = st.ExitCode()
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			e.Signal = ws.Signal()
		}
	}
	return e
}

// WaitHTTP waits until url answers anything (any status; over https with
// tc), or the process exits, or limit passes.
func (p *Process) WaitHTTP(ctx context.Context, url string, tc *tls.Config, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	switch err := waitHTTP(ctx, url, tc, p.done); {
	case errors.Is(err, errStopped):
		return p.exitError()
	case err != nil:
		return p.Err(fmt.Errorf("%s did not answer on %s within %v", p.spec.Name, url, limit))
	}
	return nil
}

// WaitLine waits for a stdout line starting with prefix and returns the rest.
func (p *Process) WaitLine(ctx context.Context, prefix string) (string, error) {
	rest, err := p.out.wait(ctx, prefix, p.done)
	switch {
	case errors.Is(err, errStopped):
		return "", p.exitError()
	case err != nil:
		return "", fmt.Errorf("%s: waiting for %q: %w%s", p.spec.Name, prefix, err, p.tailNote())
	}
	return rest, nil
}

func (p *Process) exitError() error {
	return fmt.Errorf("%s exited: %v%s", p.spec.Name, p.waitErr, p.tailNote())
}

func (p *Process) tailNote() string {
	t := strings.TrimSpace(p.Tail())
	if t == "" {
		return ""
	}
	return "\n--- " + p.spec.Name + " output (last lines) ---\n" + LastLines(t, 20)
}

// Err wraps err with the tail of the process's output.
func (p *Process) Err(err error) error {
	return fmt.Errorf("%w%s", err, p.tailNote())
}

// Stop sends SIGTERM to the process group, then SIGKILL after the stop
// timeout. It is idempotent; a process already gone counts as stopped. A
// stopped group leaves the run's state file.
func (p *Process) Stop(ctx context.Context) error {
	p.mu.Lock()
	already := p.stopped
	p.stopped = true
	p.mu.Unlock()
	if already {
		<-p.done
		return nil
	}
	// A frozen group would hold SIGTERM until SIGKILL: thawed first.
	_ = p.Thaw(ctx)
	err := p.stop(ctx)
	if err == nil {
		// Kept while any process of the group still runs: the run's Close,
		// or the next sweep, ends it.
		_ = p.tracked.Forget()
	}
	return err
}

func (p *Process) stop(ctx context.Context) error {
	if err := p.stopLeader(ctx); err != nil {
		return err
	}
	// The leader is gone; the rest of its group (worker processes told by
	// the same SIGTERM, or orphaned) gets a moment, then SIGKILL.
	pgid := -p.cmd.Process.Pid
	for deadline := time.Now().Add(2 * time.Second); syscall.Kill(pgid, 0) == nil; {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pgid, syscall.SIGKILL)
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// stopLeader ends the group's leader: SIGTERM to the group, SIGKILL after
// the stop timeout.
func (p *Process) stopLeader(ctx context.Context) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	procgroup.Terminate(p.cmd.Process.Pid, p.spec.StopTimeout, p.done, ctx.Done())
	select {
	case <-p.done:
		return nil
	case <-time.After(5 * time.Second):
		return fmt.Errorf("stop %s (pid %d): still running after SIGKILL", p.spec.Name, p.cmd.Process.Pid)
	}
}

// LastLines is the last n lines of s.
func LastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// LocalRuntime runs instances as child processes on this host.
var LocalRuntime = Runtime{
	Name:      "process",
	Help:      "process (child processes pinned apart from the generator)",
	Binaries:  OnHost,
	Pins:      true,
	Freezes:   true,
	Isolation: "other cells stopped (SIGSTOP to the process groups of their origin, engine and terminator) during each cell's passes",
	Open:      func(context.Context, Session) (Launcher, error) { return Local{}, nil },
}

// Run runs s's command on this host, in s.Dir, to its end.
func (Local) Run(ctx context.Context, s Spec) (Output, error) {
	if err := WriteFiles(s.Dir, s.Files); err != nil {
		return Output{}, fmt.Errorf("run %s: %w", s.Name, err)
	}
	return runLocal(ctx, s.Dir, s.Env, s.Command)
}

// Local runs instances as local processes, each leading a process group
// of its own that the run's state file records (so a killed run's are
// ended by the next).
type Local struct{}

// Name is the runtime's name.
func (Local) Name() string { return "process" }

// Start writes the spec's files, starts its command and waits until it is
// ready. Whatever it started is stopped again when a later step fails.
func (Local) Start(ctx context.Context, s Spec) (inst Instance, err error) {
	if len(s.Command) == 0 {
		return nil, fmt.Errorf("start %s: no command", s.Name)
	}
	if err := WriteFiles(s.Dir, s.Files); err != nil {
		return nil, fmt.Errorf("start %s: %w", s.Name, err)
	}
	path, args := s.Command[0], s.Command[1:]
	if len(s.CPUs) > 0 {
		switch ts, err := exec.LookPath("taskset"); {
		case s.PinFlag != "":
			args = append(append([]string{}, args...), s.PinFlag, CPUList(s.CPUs))
		case err == nil:
			path, args = ts, append([]string{"-c", CPUList(s.CPUs), path}, args...)
		}
	}
	p, err := StartProcess(ctx, ProcessSpec{Name: s.Name, Path: path, Args: args, Env: s.Env, Dir: s.Dir, StopTimeout: s.StopTimeout})
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			p.Stop(context.WithoutCancel(ctx))
		}
	}()
	limit := s.ReadyTimeout
	if limit == 0 {
		limit = 30 * time.Second
	}
	switch {
	case s.ReadyLine != "":
		wctx, cancel := context.WithTimeout(ctx, limit)
		defer cancel()
		if p.ready, err = p.WaitLine(wctx, s.ReadyLine); err != nil {
			return nil, fmt.Errorf("start %s: %w", s.Name, err)
		}
	case s.ReadyURL != "":
		if err := p.WaitHTTP(ctx, s.ReadyURL, s.ReadyTLS, limit); err != nil {
			return nil, err
		}
	}
	return p, nil
}

var (
	_ Launcher = Local{}
	_ Instance = (*Process)(nil)
	_ Exiter   = (*Process)(nil)
)
