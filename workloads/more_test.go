package workloads

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/results"
)

// moreCheck is a stepCheck that runs extra passes too, each logged with
// its cell, and checks, as its steps do, that the other cells are frozen.
type moreCheck struct {
	*stepCheck
	perPass int
	order   *[]string
}

func (s *moreCheck) PerPass() int { return s.perPass }

func (s *moreCheck) Extra(ctx context.Context, e int) error {
	*s.order = append(*s.order, fmt.Sprintf("%s+%d", s.self.name, e))
	return s.stepCheck.Step(ctx, -1)
}

// moreCells are fakeCells whose sessions extend, perPass extra steps to a
// pass.
func moreCells(n, steps, perPass int, order, log, errs *[]string) []*cell {
	cells := fakeCells(n, steps, -2, log, errs)
	for _, c := range cells {
		c.sess = &moreCheck{stepCheck: c.sess.(*stepCheck), perPass: perPass, order: order}
	}
	return cells
}

// runMore runs the rounds More asks for, interleaved cell by cell with the
// others frozen, tells More how many passes each cell has run, and stops
// when it says 0: a comparison decided at once runs no extra pass, one
// decided after a round runs that round alone.
func TestRunMoreRounds(t *testing.T) {
	specs, err := Specs(HitPath)
	if err != nil {
		t.Fatal(err)
	}
	w := specs[0]
	cfg := Config{Passes: 3}
	for _, c := range []struct {
		name   string
		rounds []int // what More answers, call by call (then 0)
		asked  []int // the passes More is told, call by call
		order  []string
	}{
		{name: "decided at once", rounds: nil, asked: []int{3}},
		{name: "decided after a round", rounds: []int{3}, asked: []int{3, 6},
			order: []string{"e0+0", "e1+0", "e0+1", "e1+1", "e0+2", "e1+2"}},
		{name: "two rounds, the last short", rounds: []int{2, 1}, asked: []int{3, 5, 6},
			order: []string{"e0+0", "e1+0", "e0+1", "e1+1", "e0+2", "e1+2"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var order, log, errs []string
			var asked []int
			rc := &Recorder{Run: results.NewRun("test", "", nil)}
			spec := RunSpec{Runtime: engines.RuntimeProcess, More: func(run *results.Run, got Spec, passes int) int {
				if run != rc.Run || got.Name != w.Name {
					t.Errorf("More asked about %s of another run", got.Name)
				}
				asked = append(asked, passes)
				if len(asked) > len(c.rounds) {
					return 0
				}
				return c.rounds[len(asked)-1]
			}}
			cells := moreCells(2, 4, 1, &order, &log, &errs)
			if err := runMore(context.Background(), spec, w, cfg, CPUPlan{}, rc, cells); err != nil {
				t.Fatal(err)
			}
			for _, e := range errs {
				t.Error(e)
			}
			if !slices.Equal(asked, c.asked) {
				t.Errorf("More told %v passes, want %v", asked, c.asked)
			}
			if !slices.Equal(order, c.order) {
				t.Errorf("extra passes ran %v, want %v", order, c.order)
			}
		})
	}
}

// A rate session's more pass takes a step per series: a round of n passes
// runs n of each series on each cell; a workload that does not extend
// (or no More) runs none.
func TestRunMoreSeriesAndNone(t *testing.T) {
	specs, err := Specs(HitPath + "," + MissStorm)
	if err != nil {
		t.Fatal(err)
	}
	var order, log, errs []string
	rc := &Recorder{Run: results.NewRun("test", "", nil)}
	calls := 0
	spec := RunSpec{Runtime: engines.RuntimeInproc, More: func(*results.Run, Spec, int) int {
		if calls++; calls == 1 {
			return 2
		}
		return 0
	}}
	cells := moreCells(1, 4, 2, &order, &log, &errs)
	cells[0].sess.(*moreCheck).cells = &[]*cell{cells[0]}
	if err := runMore(context.Background(), spec, specs[0], Config{Passes: 10}, CPUPlan{}, rc, cells); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(order, " "); got != "e0+0 e0+1 e0+2 e0+3" {
		t.Errorf("2 more passes of 2 series ran %q", got)
	}
	order, calls = nil, 0
	if err := runMore(context.Background(), spec, specs[1], Config{Passes: 10}, CPUPlan{}, rc, cells); err != nil {
		t.Fatal(err)
	}
	spec.More = nil
	if err := runMore(context.Background(), spec, specs[0], Config{Passes: 10}, CPUPlan{}, rc, cells); err != nil {
		t.Fatal(err)
	}
	if len(order) != 0 || calls != 0 {
		t.Errorf("ran %v, More asked %d times, for a workload that does not extend or without More", order, calls)
	}
}
