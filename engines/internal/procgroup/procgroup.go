// Package procgroup runs commands each in a process group of its own, so
// that ending one ends what it forked too (make's compilers, debootstrap's
// chroots, an engine's workers), and keeps the end of their output for
// error messages. The image builder, the source builder and the local
// launcher share it.
package procgroup

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hlsbench/hlsbench/engines/runstate"
)

// Terminate ends the process group pgid leads: SIGTERM, then SIGKILL when
// exited has not closed within grace, or as soon as abort closes (a nil
// abort never does). It reports whether it sent SIGKILL.
func Terminate(pgid int, grace time.Duration, exited, abort <-chan struct{}) (killed bool) {
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-exited:
		return false
	case <-t.C:
	case <-abort:
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	return true
}

// Options say how Run runs a command.
type Options struct {
	// Grace is how long the group has after SIGTERM, once ctx is
	// cancelled, before SIGKILL.
	Grace time.Duration
	// TailBytes is how much of the end of the output a failure's error
	// shows.
	TailBytes int
	// Log, when not nil, gets the whole output.
	Log io.Writer
	// Track, when not "", records the group under that name in the run in
	// ctx (runstate.From) while it runs, so that if hlsbench is killed the
	// next run ends it.
	Track string
}

// Run runs cmd to its end in a process group of its own (Setpgid is added
// to cmd.SysProcAttr), its stderr, and its stdout unless already set, to
// o.Log and a tail of o.TailBytes. Cancelling ctx terminates the group
// (Terminate with o.Grace) and Run returns ctx.Err(); a failure's error
// ends with the tail. What the command left running in its group when it
// exited is killed: only a command that died abruptly leaves anything.
func Run(ctx context.Context, cmd *exec.Cmd, o Options) error {
	tail := NewTail(o.TailBytes)
	w := io.Writer(tail)
	if o.Log != nil {
		w = io.MultiWriter(o.Log, tail)
	}
	if cmd.Stdout == nil {
		cmd.Stdout = w
	}
	cmd.Stderr = w
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	if err := cmd.Start(); err != nil {
		return err
	}
	pgid := cmd.Process.Pid
	var tracked *runstate.Tracked
	if o.Track != "" {
		var err error
		if tracked, err = runstate.From(ctx).Track(o.Track, pgid, cmd.Args); err != nil {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			_ = cmd.Wait()
			return err
		}
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			Terminate(pgid, o.Grace, done, nil)
		case <-done:
		}
	}()
	err := cmd.Wait()
	close(done)
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	if tracked != nil {
		_ = tracked.Forget()
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		if t := strings.TrimSpace(tail.String()); t != "" {
			return fmt.Errorf("%w; its last lines:\n%s", err, t)
		}
	}
	return err
}

// Tail keeps the last bytes written to it: a process's output for error
// messages. It is safe for concurrent use.
type Tail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

// NewTail keeps the last max bytes.
func NewTail(max int) *Tail { return &Tail{max: max} }

func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *Tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
