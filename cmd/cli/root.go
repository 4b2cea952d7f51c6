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

	"github.com/hlsbench/hlsbench/workloads/loadgen"
)

// Exit codes.
const (
	ExitOK          = 0
	ExitFailure     = 1
	ExitUsage       = 2
	ExitInvalid     = 3 // finished, but some result is invalid or has no value
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

// invalidError reports a measurement that finished with some result invalid
// or without a value (exit 3), after its output was written.
type invalidError struct{ msg string }

func (e invalidError) Error() string { return e.msg }

// Main runs hlsbench with args and returns the exit code. SIGINT and SIGTERM
// cancel the context: commands stop, clean up and report what they finished.
func Main(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Run(ctx, args, stdout, stderr)
}

// Run is Main with a caller's context.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, errInterrupted):
		fmt.Fprintln(stderr, "hlsbench: interrupted; what finished is above")
		return ExitInterrupted
	}
	var inv invalidError
	if errors.As(err, &inv) {
		fmt.Fprintln(stderr, "hlsbench: finished, but "+inv.msg)
		return ExitInvalid
	}
	fmt.Fprintln(stderr, "hlsbench:", err)
	var ue usageError
	if errors.As(err, &ue) || loadgen.IsConfigError(err) {
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
	root.AddCommand(newLoadCmd(stdout, stderr), newRunCmd(stdout, stderr), newServeCacheCmd(stdout, stderr), newOriginCmd(stdout, stderr), newEnginesCmd(stdout, stderr))
	root.AddCommand(newCleanCmd(stdout, stderr))
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
