package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/hlsbench/hlsbench/engines/runstate"
)

// beginRun is what `hlsbench run` does before anything else: it records the
// run in a state file (engines add what they start to it through ctx), takes
// the bench lock as --lock says, and then ends what killed runs left behind.
// end stops whatever the run itself left and releases both.
func beginRun(ctx context.Context, stderr io.Writer, lock string) (_ context.Context, end func(), err error) {
	mode, err := runstate.ParseLockMode(lock)
	if err != nil {
		return ctx, nil, usagef("--lock %q: want wait, fail or none", lock)
	}
	dir := runstate.Dir()
	r, err := runstate.Begin(runstate.Options{Dir: dir, Lock: string(mode)})
	if err != nil {
		return ctx, nil, fmt.Errorf("record the run in %s (set %s to use another directory): %w", dir, runstate.DirEnv, err)
	}
	if mode == runstate.LockNone {
		if h, ok := runstate.BenchHolder(dir); ok {
			fmt.Fprintf(stderr, "hlsbench: --lock none: run %s (pid %d) is running too; both share the machine's cores\n", h.Run, h.PID)
		}
	}
	bl, err := runstate.LockBench(ctx, dir, mode, r.Holder(), func(h runstate.Holder) {
		if h.PID == 0 {
			fmt.Fprintln(stderr, "hlsbench: waiting for another run to finish; --lock fail to refuse")
			return
		}
		fmt.Fprintf(stderr, "hlsbench: waiting for run %s (pid %d) to finish; --lock fail to refuse\n", h.Run, h.PID)
	})
	if err != nil {
		r.Close()
		var busy *runstate.BusyError
		switch {
		case errors.As(err, &busy):
			return ctx, nil, fmt.Errorf("%w; --lock wait waits for it, --lock none runs beside it", err)
		case ctx.Err() != nil:
			return ctx, nil, errInterrupted
		}
		return ctx, nil, err
	}
	_, _, err = sweepAll(ctx, stderr, dir, false)
	if err != nil {
		fmt.Fprintf(stderr, "hlsbench: could not remove all a killed run left: %v\n", err)
	}
	end = func() {
		reapOwn(stderr, r.ID())
		for _, ep := range r.State().Hosts {
			removeOnHost(context.Background(), stderr, ep, r.ID(), false)
		}
		rep, err := r.Close()
		if !rep.Empty() {
			fmt.Fprintf(stderr, "hlsbench: stopped what this run left running: %s\n", rep.What())
		}
		if err != nil {
			fmt.Fprintf(stderr, "hlsbench: %v (kept in %s for the next run)\n", err, r.StateFile())
		}
		bl.Unlock()
	}
	return runstate.With(ctx, r), end, nil
}

// sweepAll removes what runs that are gone left: their processes and
// directories (runstate.Sweep), then their containers. When hlsbench is not
// root, a directory a container wrote in can only be removed once the
// container's files were given back: the sweep then runs again.
func sweepAll(ctx context.Context, stderr io.Writer, dir string, dryRun bool) (runstate.Swept, int, error) {
	sw, err := runstate.Sweep(dir, dryRun)
	printSwept(stderr, sw, dryRun)
	orphans := sweepLeftovers(ctx, stderr, sw, dryRun) + sweepHosts(ctx, stderr, sw, dryRun)
	if err != nil && orphans > 0 && !dryRun {
		again, aerr := runstate.Sweep(dir, false)
		printSwept(stderr, again, false)
		sw.Dead, err = append(sw.Dead, again.Dead...), aerr
	}
	return sw, orphans, err
}

// printSwept says in a line per dead run what it left and what became of it.
func printSwept(w io.Writer, sw runstate.Swept, dryRun bool) {
	for _, d := range sw.Dead {
		if dryRun {
			fmt.Fprintf(w, "hlsbench: a killed run left (run %s, pid %d): %s (--dry-run: nothing removed)\n", d.Run, d.PID, d.What())
			continue
		}
		if d.Err != nil {
			fmt.Fprintf(w, "hlsbench: a killed run left (run %s, pid %d): %s; not all removed: %v\n", d.Run, d.PID, d.What(), d.Err)
			continue
		}
		fmt.Fprintf(w, "hlsbench: removed what a killed run left (run %s, pid %d): %s\n", d.Run, d.PID, d.What())
	}
}
