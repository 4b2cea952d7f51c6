package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/docker/docker/client"

	"github.com/hlsbench/hlsbench/engines/images"
	"github.com/hlsbench/hlsbench/engines/launch"
	"github.com/hlsbench/hlsbench/engines/runstate"
	"github.com/hlsbench/hlsbench/workloads"
)

// parsePlace reads --place: "" is everything on this host. A placement
// runs every role in Docker on its host, so it takes the docker runtime
// (the default with --place).
func parsePlace(o RunOptions, rt launch.Runtime) (*launch.Placement, launch.Runtime, error) {
	if o.Place == "" {
		return nil, rt, nil
	}
	pl, err := launch.ParsePlacement(o.Place)
	if err != nil {
		return nil, rt, usagef("--place %v", err)
	}
	if err := workloads.CheckPlacement(pl); err != nil {
		var fe *workloads.FieldError
		if errors.As(err, &fe) {
			return nil, rt, usagef("--place %s", fe.Msg)
		}
		return nil, rt, err
	}
	switch {
	case !o.set["runtime"]:
		rt = launch.DockerRuntime
	case rt.Name != launch.DockerRuntime.Name:
		return nil, rt, usagef("--place runs every role in Docker on its host: it goes with --runtime %s, not %s", launch.DockerRuntime.Name, rt.Name)
	}
	if o.ClockTolerance <= 0 {
		return nil, rt, usagef("--clock-tolerance %v: want a positive duration", o.ClockTolerance)
	}
	return &pl, rt, nil
}

// openPlaced connects to every placed host's daemon and sends each the
// images its roles need from this host's (local): the engines' and the
// terminator's to the engine host, hlsbench's own to every host (the
// origin, the agents, the built-in cache). closeHosts closes the
// connections.
func (p *runPlan) openPlaced(ctx context.Context, stderr io.Writer, o RunOptions, local launch.Launcher, imgs map[string]string) (_ *workloads.Placed, closeHosts func(), err error) {
	clis := map[string]*client.Client{}
	closeHosts = func() {
		for _, c := range clis {
			c.Close()
		}
	}
	d, ok := local.(launch.Docker)
	if !ok {
		return nil, closeHosts, fmt.Errorf("--place: the local runtime %s holds no images to send", local.Name())
	}
	rs := runstate.From(ctx)
	run := rs.ID()
	open := func(h launch.Host, refs []string) (launch.Launcher, error) {
		cli := clis[h.Endpoint]
		if cli == nil {
			// Recorded before anything starts there: the next start, or
			// hlsbench clean, removes what a killed run left on it.
			if err := rs.AddHost(h.Endpoint); err != nil {
				return nil, err
			}
			var err error
			if cli, err = launch.ConnectHost(ctx, h, 10*time.Second); err != nil {
				return nil, fmt.Errorf("--place %s: %w", h, err)
			}
			clis[h.Endpoint] = cli
		}
		sent, err := images.Send(ctx, d.Client, cli, refs...)
		if err != nil {
			return nil, fmt.Errorf("--place %s: %w", h, err)
		}
		for _, s := range sent {
			if !s.Had {
				fmt.Fprintf(stderr, "hlsbench: sent %s to %s (%.1f MB)\n", s.Ref, h, float64(s.Bytes)/1e6)
			}
		}
		return launch.Docker{Client: cli, RunID: run, Memory: p.lim.Memory, CPUs: p.lim.CPUs, Remote: true}, nil
	}
	pl := p.place
	pd := &workloads.Placed{Placement: *pl, ClockTolerance: o.ClockTolerance}
	var engineRefs []string
	for _, ref := range imgs {
		if !slices.Contains(engineRefs, ref) {
			engineRefs = append(engineRefs, ref)
		}
	}
	slices.Sort(engineRefs)
	self := []string{imgs["hlsbench"]}
	if pd.Engine, err = open(pl.Engine, engineRefs); err != nil {
		return nil, closeHosts, err
	}
	if pd.Origin, err = open(pl.Origin, self); err != nil {
		return nil, closeHosts, err
	}
	for _, h := range pl.Generators {
		lch, err := open(h, self)
		if err != nil {
			return nil, closeHosts, err
		}
		pd.Generators = append(pd.Generators, lch)
	}
	return pd, closeHosts, nil
}

// sweepHosts removes, on the other hosts they were placed on, the
// containers of runs that are gone (what their state files list). It
// returns how many it found.
func sweepHosts(ctx context.Context, stderr io.Writer, sw runstate.Swept, dryRun bool) int {
	n := 0
	for _, d := range sw.Dead {
		for _, ep := range d.Hosts {
			n += removeOnHost(ctx, stderr, ep, d.Run, dryRun)
		}
	}
	return n
}

// removeOnHost removes run's containers on the daemon at endpoint.
func removeOnHost(ctx context.Context, stderr io.Writer, endpoint, run string, dryRun bool) int {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cli, err := launch.ConnectHost(ctx, launch.Host{Endpoint: endpoint}, 5*time.Second)
	if err != nil {
		fmt.Fprintf(stderr, "hlsbench: could not reach %s to remove run %s's containers there: %v; remove them by hand: docker -H %s rm -f $(docker -H %s ps -aq --filter label=%s=%s)\n",
			endpoint, run, err, endpoint, endpoint, launch.LabelRun, run)
		return 0
	}
	defer cli.Close()
	if dryRun {
		runs, err := launch.Runs(ctx, cli)
		if err != nil {
			fmt.Fprintf(stderr, "hlsbench: %s: %v\n", endpoint, err)
			return 0
		}
		if names := runs[run]; len(names) > 0 {
			fmt.Fprintf(stderr, "hlsbench: run %s left %d containers on %s: %s (--dry-run: nothing removed)\n", run, len(names), endpoint, strings.Join(names, ", "))
		}
		return len(runs[run])
	}
	removed, err := launch.Remove(ctx, cli, run)
	if len(removed) > 0 {
		fmt.Fprintf(stderr, "hlsbench: removed run %s's containers on %s: %s\n", run, endpoint, strings.Join(removed, ", "))
	}
	if err != nil {
		fmt.Fprintf(stderr, "hlsbench: could not remove every container of run %s on %s: %v\n", run, endpoint, err)
	}
	return len(removed)
}
