// Package cli is the hlsbench command line. Main is the whole program; each
// command hands off to a function that takes a context, writers and an
// options struct, so tests call those directly.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/hlsbench/hlsbench/engines/cpuload"
	"github.com/hlsbench/hlsbench/workloads/loadgen"
)

// Exit codes.
const (
	ExitOK      = 0
	ExitFailure = 1
	ExitUsage   = 2
	// ExitInvalid: the command finished and printed its results, but some
	// are invalid or have no value (the reasons are printed with them).
	ExitInvalid     = 3
	ExitInterrupted = 130
)

// Version and Commit are set at build time (see the Makefile):
// -ldflags "-X github.com/hlsbench/hlsbench/cmd/cli.Version=… -X …Commit=…".
var (
	Version = "dev"
	Commit  = ""
)

// usageError marks a mistake in flags, arguments or input files.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// errInterrupted reports a run stopped by a signal after its output was written.
var errInterrupted = errors.New("interrupted")

// errInvalid reports a command that finished and wrote its results, some of
// which are invalid or have no value; wrap it with the reasons, on one line.
var errInvalid = errors.New("finished, but some results are invalid")

// Main runs hlsbench with args and returns the exit code. SIGINT, SIGTERM,
// SIGHUP (a closed terminal or ssh session) and SIGPIPE (stdout or stderr
// read by a program that quit, as head does) cancel the context: commands
// stop, tear down what they started and report what they finished, as for
// Ctrl-C. Writes to a closed pipe then fail quietly instead of killing
// hlsbench with its children left running. A second SIGINT or SIGTERM
// exits at once (exit 130), for a teardown that hangs: what it leaves, the
// next start or hlsbench clean removes.
//
// With SIGPIPE notified, Go raises it for a write to any broken pipe or
// socket, not stdout and stderr alone (os/signal): a client that hung up
// on the origin or the built-in cache mid-answer would stop them. A
// SIGPIPE cancels only when stdout or stderr is gone (outputGone).
func Main(args []string, stdout, stderr io.Writer) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
	defer signal.Stop(sigs)
	go watchSignals(sigs, cancel, stderr, func() { os.Exit(ExitInterrupted) }, outputGone)
	return Run(ctx, args, stdout, stderr)
}

// watchSignals cancels on the first signal; a second SIGINT or SIGTERM
// calls exit. SIGPIPE and SIGHUP only ever cancel: every write to a closed
// pipe raises another SIGPIPE. A SIGPIPE while stdout and stderr are
// still there (gone says) was a socket's: a peer that hung up, which the
// write's own error reports.
func watchSignals(sigs <-chan os.Signal, cancel context.CancelFunc, stderr io.Writer, exit func(), gone func() bool) {
	stopping := false
	for sig := range sigs {
		if sig == syscall.SIGPIPE && !gone() {
			continue
		}
		if stopping && (sig == os.Interrupt || sig == syscall.SIGTERM) {
			fmt.Fprintln(stderr, "hlsbench: interrupted again: exiting without the rest of the teardown (hlsbench clean removes what is left)")
			exit()
			return
		}
		stopping = true
		cancel()
	}
}

// Run is Main with a caller's context.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	// The stall sampler's process (started by the first pass) ends with
	// the command: nothing of ours outlives it.
	defer cpuload.CloseSampler()
	root := newRoot(stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, errInterrupted):
		fmt.Fprintln(stderr, "hlsbench: interrupted; what finished is above")
		return ExitInterrupted
	case errors.Is(err, errInvalid):
		fmt.Fprintln(stderr, "hlsbench:", err)
		return ExitInvalid
	}
	fmt.Fprintln(stderr, "hlsbench:", err)
	var ue usageError
	var nv noVerdict
	if errors.As(err, &ue) || errors.As(err, &nv) || loadgen.IsConfigError(err) {
		return ExitUsage
	}
	return ExitFailure
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "hlsbench",
		Short:         "Benchmark HTTP caching proxies for HLS delivery, truthfully",
		Version:       Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{fmt.Errorf("%w (see %s --help)", err, c.CommandPath())}
	})
	root.AddCommand(newLoadCmd(stdout, stderr), newRunCmd(stdout, stderr), newServeCacheCmd(stdout, stderr), newServeNullCmd(stdout, stderr), newOriginCmd(stdout, stderr), newEnginesCmd(stdout, stderr), newAgentCmd(stdout, stderr))
	root.AddCommand(newCleanCmd(stdout, stderr), newImagesCmd(stdout, stderr), newCertsCmd(stderr))
	root.AddCommand(newCompareCmd(stdout, stderr), newSuiteCmd(stdout, stderr), newReportCmd(stdout, stderr))
	return root
}

func contextWithTimeout(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}

// exactArgs is cobra.ExactArgs with a usage error.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef("%s takes %s (got %d arguments)", c.CommandPath(), what, len(args))
		}
		return nil
	}
}

// isTerminal reports whether w is a terminal (for a live progress line).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// outputGone says whether stdout or stderr is a pipe whose reader quit:
// polled for writing, its end reports an error or a hang-up.
func outputGone() bool {
	fds := []unix.PollFd{{Fd: 1, Events: unix.POLLOUT}, {Fd: 2, Events: unix.POLLOUT}}
	if _, err := unix.Poll(fds, 0); err != nil {
		return false
	}
	for _, f := range fds {
		if f.Revents&(unix.POLLERR|unix.POLLHUP) != 0 {
			return true
		}
	}
	return false
}
