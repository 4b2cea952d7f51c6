package cost_test

import (
	"context"
	"fmt"

	"github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/engines/cost"
	"github.com/hlsbench/hlsbench/engines/launch"
)

// A workload measures whatever engine it was given, and the origin when it
// is a child process, without knowing which they are: whatever runs as a
// process group of its own is measured. A sleep stands in for the engine.
func Example() {
	ctx := context.Background()
	p, err := launch.StartProcess(ctx, launch.ProcessSpec{Name: "sleep", Path: "/bin/sleep", Args: []string{"60"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Stop(ctx)
	var inst any = p // an engines.Instance, or the origin's *launch.Process
	var groups []cost.Group
	if pg, ok := inst.(engines.ProcessGroup); ok { // not the in-process cache
		groups = append(groups, cost.Group{Name: "engine", PGID: pg.PGID()})
	}
	m := cost.Start(groups)
	runPass(ctx)
	for _, u := range m.Stop() {
		if u.Err != nil {
			fmt.Println(u.Name, u.Err)
			continue
		}
		// The figures differ from run to run; a real report prints them:
		// fmt.Printf("%.2f CPU-s, peak %d MB", u.CPUSeconds, u.PeakRSSBytes>>20).
		fmt.Printf("%s: %d process, %d exited, peak measured: %v\n", u.Name, u.Procs, u.Exited, u.PeakRSSBytes > 0)
	}
	// Output:
	// engine: 1 process, 0 exited, peak measured: true
}

func runPass(context.Context) {}
