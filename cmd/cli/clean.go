package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/hlsbench/hlsbench/engines/images"
	"github.com/hlsbench/hlsbench/engines/launch"
	"github.com/hlsbench/hlsbench/engines/runstate"
)

// CleanOptions are the flags of `hlsbench clean`.
type CleanOptions struct {
	DryRun bool
	Dir    string // the runtime directory; "" is runstate.Dir()
	// Images also removes the images hlsbench built (labelled
	// org.hlsbench), which no container uses.
	Images bool
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
time) and removes those directories; and it removes every container whose
creator is gone (each names the hlsbench process that made it), whatever the
state files say (skipped at once when no Docker daemon answers).
` + "`hlsbench run`" + ` does the same when it starts. Live runs and
results files are never touched; images only with --images.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			return Clean(c.Context(), stdout, stderr, o)
		},
	}
	c.Flags().BoolVar(&o.DryRun, "dry-run", false, "only say what would be stopped and removed")
	c.Flags().BoolVar(&o.Images, "images", false, "also remove the Docker images hlsbench built (hlsbench images build makes them again)")
	return c
}

// Clean is `hlsbench clean`: what it finds and removes goes to stderr.
func Clean(ctx context.Context, stdout, stderr io.Writer, o CleanOptions) error {
	if o.Dir == "" {
		o.Dir = runstate.Dir()
	}
	sw, orphans, err := sweepAll(ctx, stderr, o.Dir, o.DryRun)
	for _, l := range sw.Live {
		fmt.Fprintf(stderr, "hlsbench: run %s (pid %d) is running: left alone\n", l.Run, l.PID)
	}
	if err != nil {
		return fmt.Errorf("clean %s: %w", o.Dir, err)
	}
	if o.Images {
		return removeImages(ctx, stderr, o.DryRun)
	}
	if len(sw.Dead) == 0 && orphans == 0 {
		fmt.Fprintln(stderr, "hlsbench: nothing to clean")
	}
	return nil
}

// removeImages removes every image labelled org.hlsbench that no container
// uses (a live run's stay).
func removeImages(ctx context.Context, stderr io.Writer, dryRun bool) error {
	cli, err := launch.Connect(ctx, 2*time.Second)
	if err != nil {
		return fmt.Errorf("--images: %w", err)
	}
	defer cli.Close()
	list, err := images.List(ctx, launch.Docker{Client: cli})
	if err != nil {
		return fmt.Errorf("--images: %w", err)
	}
	if len(list) == 0 {
		fmt.Fprintln(stderr, "hlsbench: no image of hlsbench's to remove")
		return nil
	}
	if err := images.Remove(ctx, cli, list, dryRun, stderr); err != nil {
		return fmt.Errorf("--images: %w", err)
	}
	return nil
}
