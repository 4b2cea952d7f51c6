package launch

import (
	"context"
	"errors"
	"fmt"
	"syscall"
)

// Freezer is implemented by instances that can be held still and let go
// again: a suite freezes every cell but the one it measures, so that idle
// neighbours (a Varnish manager's CLI pings, its expiry and ban-lurker
// threads, Go runtimes' timers, a terminator) do not wake on the CPUs of
// the engine being measured. Stop thaws a frozen instance before it asks
// it to end: a stopped process cannot act on SIGTERM.
type Freezer interface {
	// Freeze stops every process of the instance; it is idempotent.
	Freeze(ctx context.Context) error
	// Thaw lets them run again; thawing what is not frozen does nothing.
	Thaw(ctx context.Context) error
}

// ErrCannotFreeze says an instance cannot be frozen: it runs inside
// hlsbench (the in-process runtime), or it is not ours (an external proxy).
var ErrCannotFreeze = errors.New("cannot be frozen")

// Freeze freezes inst if it can be frozen; ErrCannotFreeze otherwise.
func Freeze(ctx context.Context, inst any) error {
	f, ok := inst.(Freezer)
	if !ok {
		return ErrCannotFreeze
	}
	return f.Freeze(ctx)
}

// Thaw thaws inst if it can be frozen; ErrCannotFreeze otherwise.
func Thaw(ctx context.Context, inst any) error {
	f, ok := inst.(Freezer)
	if !ok {
		return ErrCannotFreeze
	}
	return f.Thaw(ctx)
}

// Freeze sends SIGSTOP to the process's group: the engine's every process
// (a Varnish manager and its child, NGINX's master and workers) stops at
// once. Process groups, not the cgroup v2 freezer: every instance already
// leads a group of its own that the run's state file records, while a
// cgroup would have to be made (and delegated, when hlsbench is not root)
// for each one. A group already gone is not an error.
func (p *Process) Freeze(context.Context) error {
	return p.signalGroup(syscall.SIGSTOP, true)
}

// Thaw sends SIGCONT to the process's group.
func (p *Process) Thaw(context.Context) error {
	return p.signalGroup(syscall.SIGCONT, false)
}

// Frozen says whether the process's group was frozen and not thawed since.
func (p *Process) Frozen() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.frozen
}

func (p *Process) signalGroup(sig syscall.Signal, frozen bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.done:
		p.frozen = false
		return nil
	default:
	}
	if p.stopped && frozen {
		return nil // never stop again what is being ended
	}
	if err := syscall.Kill(-p.PGID(), sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("%v %s (process group %d): %w", sig, p.spec.Name, p.PGID(), err)
	}
	p.frozen = frozen
	return nil
}

var _ Freezer = (*Process)(nil)
