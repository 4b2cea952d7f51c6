package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/hlsbench/hlsbench/engines/runstate"
)

// CleanOptions are the flags of `hlsbench clean`.
type CleanOptions struct {
	DryRun bool
	Dir    string // the runtime directory; "" is runstate.Dir()
}

func newCleanCmd(stdout, stderr io.Writer) *cobra.Command {
	o := CleanOptions{}
	c := &cobra.Command{
		Use:   "clean",
		Short: "End the engines and remove the directories a killed run left behind",
		Long: `End the engines and remove the directories a killed run left behind.

Every hlsbench run records the processes and scratch directories it starts in
a state file under ` + "$XDG_RUNTIME_DIR/hlsbench (root: /run/hlsbench; else ~/.cache/hlsbench/run)" + `,
locked while it runs. A run killed with SIGKILL leaves its engines running
(varnishd, nginx workers) and its directories under /tmp and /dev/shm; clean
finds the state files no live run holds, stops those processes (SIGTERM, then
SIGKILL; only processes proven to be the run's by process group and start
time) and removes those directories. ` + "`hlsbench run`" + ` does the same when it
starts. Live runs and results files are never touched.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			return Clean(c.Context(), stdout, stderr, o)
		},
	}
	c.Flags().BoolVar(&o.DryRun, "dry-run", false, "only say what would be stopped and removed")
	return c
}

// Clean is `hlsbench clean`: what it finds and removes goes to stderr.
func Clean(ctx context.Context, stdout, stderr io.Writer, o CleanOptions) error {
	if o.Dir == "" {
		o.Dir = runstate.Dir()
	}
	sw, err := runstate.Sweep(o.Dir, o.DryRun)
	printSwept(stderr, sw, o.DryRun)
	sweepContainers(ctx, stderr, sw, o.DryRun)
	for _, l := range sw.Live {
		fmt.Fprintf(stderr, "hlsbench: run %s (pid %d) is running: left alone\n", l.Run, l.PID)
	}
	if err != nil {
		return fmt.Errorf("clean %s: %w", o.Dir, err)
	}
	if len(sw.Dead) == 0 {
		fmt.Fprintln(stderr, "hlsbench: nothing to clean")
	}
	return nil
}
