package cost_test

import (
	"context"
	"fmt"

	"github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/engines/cost"
	"github.com/hlsbench/hlsbench/engines/launch"
)

// A workload measures whatever engine it was given, and the origin when it
// is a child process, without knowing which they are.
func Example() {
	var inst engines.Instance // from StartLocal or StartBuiltin
	var originProc *launch.Process
	var groups []cost.Group
	if pg, ok := inst.(engines.ProcessGroup); ok { // not the in-process cache
		groups = append(groups, cost.Group{Name: inst.Info().Name, PGID: pg.PGID()})
	}
	if originProc != nil {
		groups = append(groups, cost.Group{Name: "origin", PGID: originProc.PGID()})
	}
	m := cost.Start(groups)
	runPass(context.Background())
	for _, u := range m.Stop() {
		if u.Err != nil {
			fmt.Println(u.Name, u.Err)
			continue
		}
		fmt.Printf("%s: %.2f CPU-s, peak %d MB (one process %d MB)\n", u.Name, u.CPUSeconds, u.PeakRSSBytes>>20, u.MaxProcRSSBytes>>20)
	}
}

func runPass(context.Context) {}
