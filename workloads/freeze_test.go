package workloads

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/engines/launch"
	"github.com/hlsbench/hlsbench/results"
)

// freezable stands for a cell's engine or origin: it records whether it
// is frozen, and every freeze and thaw.
type freezable struct {
	name   string
	frozen bool
	log    *[]string
	stops  int
	// frozenAtStop says whether Stop found it frozen (it must not).
	frozenAtStop bool
}

func (f *freezable) Freeze(context.Context) error {
	f.frozen = true
	*f.log = append(*f.log, "freeze "+f.name)
	return nil
}

func (f *freezable) Thaw(context.Context) error {
	f.frozen = false
	*f.log = append(*f.log, "thaw "+f.name)
	return nil
}

func (f *freezable) Stop(context.Context) error {
	f.stops++
	f.frozenAtStop = f.frozenAtStop || f.frozen
	return nil
}

// The engine side (engines.Instance) and the origin side (launch.Instance).
func (f *freezable) URL() string          { return "" }
func (f *freezable) Info() results.Engine { return results.Engine{Name: f.name} }
func (f *freezable) Ready() string        { return "" }
func (f *freezable) Exec(context.Context, ...string) (launch.Output, error) {
	return launch.Output{}, nil
}
func (f *freezable) Logs() string          { return "" }
func (f *freezable) Done() <-chan struct{} { return nil }

// stepCheck is a session that, at each step, checks that its own cell is
// awake and every other frozen.
type stepCheck struct {
	self   *cell
	cells  *[]*cell
	steps  int
	errs   *[]string
	failAt int // a step that fails (-1: none)
}

func (s *stepCheck) Steps() int { return s.steps }
func (s *stepCheck) Close() error {
	return nil
}

func (s *stepCheck) Step(_ context.Context, k int) error {
	for _, c := range *s.cells {
		for _, f := range []*freezable{c.inst.(*freezable), c.orig.inst.(*freezable)} {
			if want := c != s.self; f.frozen != want {
				*s.errs = append(*s.errs, fmt.Sprintf("step %d of %s: %s frozen %v", k, s.self.name, f.name, f.frozen))
			}
		}
	}
	if k == s.failAt {
		return errors.New("pass failed")
	}
	return nil
}

func fakeCells(n, steps, failAt int, log *[]string, errs *[]string) []*cell {
	var cells []*cell
	for i := range n {
		name := fmt.Sprintf("e%d", i)
		c := &cell{name: name, topology: engines.TopologyPlaintext,
			inst: &freezable{name: name, log: log}}
		o := &freezable{name: name + "-origin", log: log}
		c.orig = &originHandle{inst: o, stop: o.Stop}
		cells = append(cells, c)
	}
	for _, c := range cells {
		c.sess = &stepCheck{self: c, cells: &cells, steps: steps, errs: errs, failAt: failAt}
	}
	return cells
}

// While a cell steps, its engine and origin are awake and every other
// cell's are frozen; never two awake at once; a failed step leaves frozen
// cells that cell.stop thaws before it stops them.
func TestRunStepsFreezesOtherCells(t *testing.T) {
	var log, errs []string
	rc := &Recorder{Run: results.NewRun("test", "", nil)}
	spec := RunSpec{Runtime: engines.RuntimeProcess}
	w := Spec{Name: "hit-path"}
	cells := fakeCells(3, 4, -1, &log, &errs)
	if err := runSteps(context.Background(), spec, w, CPUPlan{}, rc, cells); err != nil {
		t.Fatal(err)
	}
	for _, e := range errs {
		t.Error(e)
	}
	// Never two cells awake: count the awake engines after every event.
	awake := map[string]bool{"e0": true, "e1": true, "e2": true}
	for _, ev := range log {
		what, name, _ := strings.Cut(ev, " ")
		if strings.HasSuffix(name, "-origin") {
			continue
		}
		awake[name] = what == "thaw"
		if what != "thaw" {
			continue // the initial freezes leave the others awake a moment
		}
		n := 0
		for _, a := range awake {
			if a {
				n++
			}
		}
		if n > 1 {
			t.Fatalf("after %q, %d cells awake: %v", ev, n, log)
		}
	}
	// Interleaved, each thawed once per step it runs and frozen between:
	// 3 initial freezes per side, then a freeze/thaw per switch.
	if thaws := strings.Count(strings.Join(log, "\n"), "thaw e1\n"); thaws != 4 {
		t.Errorf("e1 thawed %d times over 4 steps: %v", thaws, log)
	}

	// A step fails with the other cells frozen; stop thaws each first.
	log, errs = nil, nil
	cells = fakeCells(3, 4, 2, &log, &errs)
	if err := runSteps(context.Background(), spec, w, CPUPlan{}, rc, cells); err == nil {
		t.Fatal("a failed step did not fail the run")
	}
	for _, c := range cells {
		if err := c.stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		for _, f := range []*freezable{c.inst.(*freezable), c.orig.inst.(*freezable)} {
			if f.stops != 1 || f.frozenAtStop {
				t.Errorf("%s: stopped %d times, frozen when stopped %v", f.name, f.stops, f.frozenAtStop)
			}
		}
	}
}

// One cell, or the in-process runtime: nothing is frozen, and the
// conditions say why.
func TestRunStepsAloneOrInproc(t *testing.T) {
	var log, errs []string
	rc := &Recorder{Run: results.NewRun("test", "", nil)}
	w := Spec{Name: "hit-path"}
	if err := runSteps(context.Background(), RunSpec{Runtime: engines.RuntimeProcess}, w, CPUPlan{}, rc, fakeCells(1, 2, -1, &log, &errs)); err != nil {
		t.Fatal(err)
	}
	cells := fakeCells(2, 2, -1, &log, &errs)
	for _, c := range cells {
		c.sess.(*stepCheck).cells = &[]*cell{c} // nothing is frozen in-process
	}
	if err := runSteps(context.Background(), RunSpec{Runtime: engines.RuntimeInproc}, w, CPUPlan{}, rc, cells); err != nil {
		t.Fatal(err)
	}
	if len(log) != 0 || len(errs) != 0 {
		t.Errorf("froze alone or in-process: %v %v", log, errs)
	}
	for _, c := range []struct {
		runtime string
		n       int
		want    string
	}{
		{engines.RuntimeProcess, 1, "alone"},
		{engines.RuntimeProcess, 3, "SIGSTOP"},
		{engines.RuntimeDocker, 3, "docker pause"},
		{engines.RuntimeInproc, 3, "none: the in-process runtime"},
	} {
		cells := make([]*cell, c.n)
		for i := range cells {
			cells[i] = &cell{name: "nginx"}
		}
		if got := isolation(c.runtime, cells, false); !strings.Contains(got, c.want) {
			t.Errorf("isolation(%s, %d cells) = %q, want %q in it", c.runtime, c.n, got, c.want)
		}
	}
}

// restCheck is a session whose cell rests between its steps: at each step
// it checks that its own cell was started again and every other cell's
// engine and origin are stopped.
type restCheck struct {
	stepCheck
	log *[]string
}

func (s *restCheck) Rest() error {
	*s.log = append(*s.log, "rest "+s.self.name)
	return nil
}

func (s *restCheck) Resume(_ context.Context, tgt *Target) error {
	if tgt == nil || s.self.inst == nil {
		return fmt.Errorf("%s resumed without a target", s.self.name)
	}
	*s.log = append(*s.log, "resume "+s.self.name)
	return nil
}

func (s *restCheck) Step(_ context.Context, k int) error {
	for _, c := range *s.cells {
		switch {
		case c == s.self && (c.inst == nil || c.resting):
			*s.errs = append(*s.errs, fmt.Sprintf("step %d of %s: not started", k, c.name))
		case c != s.self && (c.inst != nil || c.orig != nil || !c.resting):
			*s.errs = append(*s.errs, fmt.Sprintf("step %d of %s: %s not stopped", k, s.self.name, c.name))
		}
	}
	*s.log = append(*s.log, fmt.Sprintf("step %d %s", k, s.self.name))
	return nil
}

// Cells whose sessions can take a new target rest between their steps:
// while one steps, every other cell's engine and origin are stopped, not
// frozen; each is started again before each of its steps, and its session
// lets go of the old target before the engine stops.
func TestRunStepsRestsOtherCells(t *testing.T) {
	var log, errs []string
	rc := &Recorder{Run: results.NewRun("test", "", nil)}
	spec := RunSpec{Runtime: engines.RuntimeProcess}
	w := Spec{Name: "hit-path"}
	cells := fakeCells(3, 2, -1, &log, &errs)
	stops := map[string]int{}
	for _, c := range cells {
		c.sess = &restCheck{stepCheck: stepCheck{self: c, cells: &cells, steps: 2, errs: &errs, failAt: -1}, log: &log}
		c.orig.stop = func(context.Context) error { stops[c.name+"-origin"]++; return nil }
	}
	defer func(f func(context.Context, RunSpec, Spec, CPUPlan, *Recorder, *cell) error) { startCellAgain = f }(startCellAgain)
	startCellAgain = func(_ context.Context, _ RunSpec, _ Spec, _ CPUPlan, _ *Recorder, c *cell) error {
		log = append(log, "start "+c.name)
		c.inst = &freezable{name: c.name, log: &log}
		o := &freezable{name: c.name + "-origin", log: &log}
		c.orig, c.tgt = &originHandle{inst: o, stop: func(context.Context) error { stops[c.name+"-origin"]++; return nil }}, &Target{}
		return nil
	}
	if err := runSteps(context.Background(), spec, w, CPUPlan{}, rc, cells); err != nil {
		t.Fatal(err)
	}
	for _, e := range errs {
		t.Error(e)
	}
	got := strings.Join(log, "\n")
	if strings.Contains(got, "freeze") || strings.Contains(got, "thaw") {
		t.Errorf("resting cells were frozen or thawed:\n%s", got)
	}
	// Each step of e1 follows its own start and resume; each rest of e1 is
	// before its origin is stopped.
	if n := strings.Count(got, "start e1\nresume e1\nstep "); n != 2 {
		t.Errorf("e1 started again and resumed before %d of its 2 steps:\n%s", n, got)
	}
	if stops["e1-origin"] != 3 {
		t.Errorf("e1's origin stopped %d times, want 3 (up front and after each of its 2 steps)", stops["e1-origin"])
	}
	if iso := isolation(spec.Runtime, cells, true); iso != restIsolation {
		t.Errorf("isolation = %q", iso)
	}
}
