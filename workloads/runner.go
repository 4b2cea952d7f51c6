package workloads

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/engines/certs"
	"github.com/hlsbench/hlsbench/engines/cost"
	"github.com/hlsbench/hlsbench/engines/cpuload"
	"github.com/hlsbench/hlsbench/engines/freeport"
	"github.com/hlsbench/hlsbench/engines/launch"
	"github.com/hlsbench/hlsbench/engines/runstate"
	"github.com/hlsbench/hlsbench/origin"
	"github.com/hlsbench/hlsbench/results"
)

// RunSpec is one `hlsbench run`.
type RunSpec struct {
	// Engines are the rows of the run, each an engines.Selection's Row():
	// NAME, NAME@VERSION (one build of several) or a variant's LABEL.
	// Selections holds the selection behind each row that is not a bare
	// engine name (a missing row is read with engines.ParseSelection).
	Engines    []string
	Selections map[string]engines.Selection
	Workloads  []Spec
	Config     Config
	// Runtime is where the origin, the built-in cache and the engines run:
	// a launch.Runtime's name ("" the default, process).
	Runtime string
	// External mode, by row (external, external@TAG): the proxy's URL, and
	// where its origin must listen for it (the proxy is configured to
	// fetch from there).
	ExternalURLs  map[string]string
	OriginListens map[string]string
	// Binaries overrides where a row's binary is (for builtin and null,
	// another hlsbench's), and Sources identify the engines built from
	// source and the other hlsbench builds, by row.
	Binaries map[string]string
	Sources  map[string]engines.Source
	// Configs are configurations of the user's own, by row
	// (engines.LoadUserConfig): run instead of the ones the engines
	// render, with the row's origin where the file fetches from.
	Configs map[string]*engines.UserConfig
	// Launcher starts the origin, the built-in cache and the engines
	// (nil: Runtime's, opened for the run). Images name the
	// image of each engine, and of hlsbench itself under "hlsbench", for a
	// launcher that runs images.
	Launcher launch.Launcher
	Images   map[string]string
	OutDir   string // "" writes no file
	Self     string // the hlsbench binary, for child processes
	Version  string
	Commit   string
	// Settings is recorded in the run file as its configuration.
	Settings map[string]any
	// Progress, when set, is told what the run is doing as it goes.
	Progress *Progress
	// Skip, when set, leaves out an engine under a workload (a resumed
	// suite's finished cells); Done is told of each engine whose workload
	// finished every pass.
	Skip func(engine, topology, workload string) bool
	Done func(engine, topology, workload string)
	// Topologies are those the workloads measured in each topology run
	// (hit-path, segment) run over; nil is plaintext alone. TLS is the run's
	// certificates, for topology tls.
	Topologies []string
	TLS        *certs.Set
	// Terminator is topology proxyv2's TLS terminator (nil: hitch); its
	// image, with Docker, is Images[its name].
	Terminator engines.Terminator
	// Started, when set, is told the results file's path once it exists.
	Started func(path string)
	// Placed, when set, runs the origin, the engine and the generators on
	// the hosts it opened (hlsbench run --place).
	Placed *Placed
	// More, when set, is asked once a workload that Extends has run its
	// planned passes on every cell, and again after each round it asks
	// for, how many more measured passes each cell is to run (0: none):
	// hlsbench run --decide, judging run's results so far, while a
	// comparison of two rows is undecided. passes is how many measured
	// passes each cell has run. The rounds are interleaved as the planned
	// passes are, so drift hits every cell alike.
	More func(run *results.Run, w Spec, passes int) int

	agents *agents // a placed run's, started by Execute
}

// CPUPlan splits the machine: the generator gets the last CPUs (one event
// loop on each), the engine and the origin the rest. With one CPU nothing is
// pinned.
type CPUPlan struct {
	Generator, Servers []int
}

// PlanCPUs pins apart where the machine allows: a quarter of the CPUs this
// process may use (at least one) for the generator, the rest for what it
// measures.
func PlanCPUs() CPUPlan { return planCPUs(startCPUs) }

// startCPUs are the CPUs this process could use when it started, as
// runtime.NumCPU counts them: by their numbers, since a cpuset need not
// start at 0 nor be contiguous. Read once, because Execute confines the
// whole process to the generator's CPUs.
var startCPUs = allowedCPUs()

func allowedCPUs() []int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		cpus := make([]int, runtime.NumCPU())
		for i := range cpus {
			cpus[i] = i
		}
		return cpus
	}
	var cpus []int
	for c := 0; len(cpus) < set.Count(); c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus
}

// planCPUs splits cpus (the CPUs this process may use): the generator gets
// the highest quarter (at least one), one event loop on each, the engine
// and the origin the rest. With fewer than two nothing is pinned.
func planCPUs(cpus []int) CPUPlan {
	if len(cpus) < 2 {
		return CPUPlan{}
	}
	cpus = slices.Sorted(slices.Values(cpus))
	split := len(cpus) - max(1, len(cpus)/4)
	return CPUPlan{Servers: cpus[:split:split], Generator: cpus[split:]}
}

// originHandle is our origin, in-process or a child process.
type originHandle struct {
	dataURL string
	seed    uint64
	cfg     origin.Config // what it was started with
	control OriginControl
	stop    func(context.Context) error
	pgid    int // its process group; 0 in-process
	inst    launch.Instance
}

// selection is the selection behind a row.
func (spec RunSpec) selection(row string) engines.Selection {
	if sel, ok := spec.Selections[row]; ok {
		return sel
	}
	sel, err := engines.ParseSelection(row)
	if err != nil {
		return engines.Selection{Name: row}
	}
	return sel
}

// selfIn is where hlsbench itself is for the run's runtime: this binary,
// or /hlsbench in its image.
func selfIn(spec RunSpec) string {
	if spec.Images["hlsbench"] != "" {
		return "/hlsbench"
	}
	return spec.Self
}

// startOrigin starts the origin with the run's launcher: `hlsbench origin`
// as a process or in hlsbench's image, or the same server in-process.
func startOrigin(ctx context.Context, spec RunSpec, lch launch.Launcher, cfg origin.Config, listen, control string, cpus []int) (*originHandle, error) {
	if listen == "" {
		// Below the ephemeral range: the origin closes its data listener
		// when it refuses and binds the port again when it recovers, and
		// an ephemeral port may meanwhile be an outgoing connection's.
		var err error
		if listen, err = freeport.Addr(); err != nil {
			return nil, err
		}
	}
	serve := func() (string, func(context.Context) error, error) {
		o, err := origin.New(cfg)
		if err != nil {
			return "", nil, err
		}
		srv, err := origin.Start(o, listen, "127.0.0.1:0")
		if err != nil {
			return "", nil, err
		}
		line := origin.ReadyLine(srv.DataAddr(), srv.ControlAddr())
		return strings.TrimPrefix(line, origin.ReadyPrefix), func(context.Context) error { return srv.Close() }, nil
	}
	args := origin.ChildArgs(cfg, listen)
	if control != "" {
		// Placed: the control API is where the controller reaches it.
		if i := slices.Index(args, "--control"); i >= 0 {
			args[i+1] = control
		}
	}
	inst, err := lch.Start(ctx, launch.Spec{Name: "origin", Image: spec.Images["hlsbench"],
		Command: append([]string{selfIn(spec)}, args...), CPUs: cpus, PinFlag: "--cpus",
		ReadyLine: origin.ReadyPrefix, ReadyTimeout: 15 * time.Second, StopTimeout: 5 * time.Second, Serve: serve})
	if err != nil {
		return nil, err
	}
	dataURL, controlURL, err := origin.ParseReady(inst.Ready())
	if err != nil {
		inst.Stop(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("start origin: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	cl := &origin.Client{BaseURL: controlURL}
	if err := cl.Ready(wctx); err != nil {
		inst.Stop(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("origin control: %w%s", err, logsNote(inst))
	}
	h := &originHandle{dataURL: dataURL, seed: cfg.Seed, cfg: cfg, control: cl, stop: inst.Stop, inst: inst}
	if pg, ok := inst.(engines.ProcessGroup); ok {
		h.pgid = pg.PGID()
	}
	return h, nil
}

func logsNote(inst launch.Instance) string {
	if l := strings.TrimSpace(inst.Logs()); l != "" {
		return "\n--- origin output (last lines) ---\n" + launch.LastLines(l, 20)
	}
	return ""
}

// Execute runs every workload on every engine, saving the run file at the
// start and after each pass. tables receives a table per workload as it
// completes. A cancelled ctx stops the run; what finished is kept and the
// run is marked interrupted. The file always says how the run ended.
func Execute(ctx context.Context, spec RunSpec, tables io.Writer) (*results.Run, *Recorder, error) {
	rt, err := launch.RuntimeNamed(spec.Runtime)
	if err != nil {
		return nil, nil, err
	}
	spec.Runtime = rt.Name
	if err := spec.Config.withDefaults().Validate(); err != nil {
		return nil, nil, err
	}
	defer cpuload.CloseSampler() // its process is ours: it ends with the run
	if spec.Launcher == nil {
		if spec.Launcher, err = rt.Open(ctx, launch.Session{RunID: runstate.From(ctx).ID()}); err != nil {
			return nil, nil, err
		}
		defer launch.Close(spec.Launcher)
	}
	run := results.NewRun(spec.Version, spec.Commit, spec.Settings)
	rc := &Recorder{Run: run, Dir: spec.OutDir, Progress: spec.Progress}
	planned := EstimateRun(spec, spec.Config)
	spec.Progress.begin(planned)
	if err := rc.Save(); err != nil {
		return run, rc, fmt.Errorf("save results: %w", err)
	}
	if spec.Started != nil && rc.Path() != "" {
		spec.Started(rc.Path())
	}
	spec.Progress.Note("run %s: %s on %s, about %s", run.ID, names(spec.Workloads), strings.Join(spec.Engines, ", "), clock(planned))
	if rc.Path() != "" {
		spec.Progress.Note("results: %s (rewritten after every pass)", rc.Path())
	}
	plan := CPUPlan{}
	if rt.Pins && spec.Placed == nil {
		plan = PlanCPUs()
	}
	cfg := spec.Config.withDefaults()
	cfg.CPUs = plan.Generator
	if len(plan.Generator) > 0 {
		// The whole generator process, not only its event loops: the Go
		// runtime hands a preempted loop back through another thread, and
		// that thread must not wait for a core the engine keeps busy.
		if err := engines.PinProcess(plan.Generator); err != nil {
			run.Warnings = append(run.Warnings, "could not pin the generator: "+err.Error())
		}
	}
	if len(plan.Generator) == 0 && spec.Placed == nil {
		run.Warnings = append(run.Warnings, "one CPU: the generator shares it with the engine and the origin")
	}

	var runErr error
	if spec.Placed != nil {
		// A placement that cannot start fails the run as a workload's
		// error does: the file, saved already, says so.
		_, runErr = startPlaced(ctx, &spec, run)
	}
	for _, w := range spec.Workloads {
		w = w.Configured(cfg)
		if ctx.Err() != nil || runErr != nil {
			break
		}
		if !spec.runs(w) {
			continue // every engine of it finished before (a resumed suite)
		}
		run.Workloads = append(run.Workloads, w.Describe(cfg))
		err := runWorkload(ctx, spec, w, cfg, plan, rc)
		if w.Ranked() {
			// Every cell of the workload has finished (or the run
			// stopped): null's ceiling, if measured, is known for all.
			results.MarkInstrumentLimit(rc.Results(), w.Name)
		}
		spec.Progress.Clear()
		WriteTable(tables, w, rc.Results())
		if err != nil {
			runErr = err
			break
		}
	}
	if spec.agents != nil {
		// Stopped before the file is saved, so that a failure to is in it.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		if err := spec.agents.stop(sctx); err != nil {
			run.Warnings = append(run.Warnings, "stop the generator agents: "+err.Error())
		}
		cancel()
	}
	run.FinishedAt = time.Now().UTC()
	switch {
	case ctx.Err() != nil:
		// Interrupted: an error while stopping is kept, not raised.
		run.Interrupted = true
		run.Status = results.StatusInterrupted
		if runErr != nil {
			run.Error = runErr.Error()
		}
		runErr = nil
	case runErr != nil:
		run.Status, run.Error = results.StatusFailed, runErr.Error()
	default:
		run.Status = results.StatusComplete
	}
	if err := rc.Save(); err != nil {
		// The file may hold an older state; what is returned says failed.
		if runErr == nil {
			runErr = fmt.Errorf("save results: %w", err)
		}
		run.Status, run.Error = results.StatusFailed, runErr.Error()
	}
	return run, rc, runErr
}

// runs says whether any cell of the workload is left to run.
func (spec *RunSpec) runs(w Spec) bool {
	for _, e := range spec.Engines {
		for _, topo := range topologiesOf(*spec, w) {
			if spec.Skip == nil || !spec.Skip(e, topo, w.Name) {
				return true
			}
		}
	}
	return false
}

// cell is one engine under one workload: its own origin, the engine, and
// the workload's session on it.
type cell struct {
	name     string // the row: engines.Selection.Row()
	sel      engines.Selection
	topology string
	na       string // why the cell cannot be measured (not applicable), or ""
	orig     *originHandle
	lch      launch.Launcher
	inst     engines.Instance
	tgt      *Target
	sess     Session
	// dead says how its processes ended during a step: it runs no other,
	// and what is left of it is stopped at once (stopped).
	dead    error
	stopped bool
	// resting: its engine, terminator and origin are stopped between its
	// steps (rest), to be started again before its next (resume).
	resting bool
}

// kind is the engine a labelled variant runs, for results.Engine.Kind;
// "" when the row is the selection itself.
func (c *cell) kind() string {
	if c.sel.Label != "" {
		return c.sel.Name
	}
	return ""
}

// stop tears a cell down; it survives cancellation, with its own limit.
// A frozen cell is thawed first: its session may still talk to it, and a
// stopped process cannot act on SIGTERM.
func (c *cell) stop(ctx context.Context) error {
	if c.stopped {
		return nil
	}
	c.stopped = true
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second)
	defer cancel()
	var errs []error
	if err := c.thaw(sctx); err != nil {
		errs = append(errs, err)
	}
	if c.sess != nil {
		errs = append(errs, c.sess.Close())
	}
	if c.inst != nil {
		if err := c.inst.Stop(sctx); err != nil {
			errs = append(errs, fmt.Errorf("stop %s: %w", c.name, err))
		}
	}
	if c.orig != nil {
		errs = append(errs, c.orig.stop(sctx))
	}
	return errors.Join(errs...)
}

// freeze stops the cell's origin, engine and terminator (launch.Freezer);
// a part that cannot be frozen (in-process, an external proxy) runs on,
// as the workload's conditions say.
func (c *cell) freeze(ctx context.Context) error {
	var errs []error
	if c.inst != nil {
		if err := launch.Freeze(ctx, c.inst); err != nil && !errors.Is(err, launch.ErrCannotFreeze) {
			errs = append(errs, fmt.Errorf("%s: %w", c.label(), err))
		}
	}
	if c.orig != nil {
		if err := launch.Freeze(ctx, c.orig.inst); err != nil && !errors.Is(err, launch.ErrCannotFreeze) {
			errs = append(errs, fmt.Errorf("%s's origin: %w", c.label(), err))
		}
	}
	return errors.Join(errs...)
}

// thaw lets the cell's processes run again: the origin first, then the
// engine, each ready for what calls it.
func (c *cell) thaw(ctx context.Context) error {
	var errs []error
	if c.orig != nil {
		if err := launch.Thaw(ctx, c.orig.inst); err != nil && !errors.Is(err, launch.ErrCannotFreeze) {
			errs = append(errs, fmt.Errorf("%s's origin: %w", c.label(), err))
		}
	}
	if c.inst != nil {
		if err := launch.Thaw(ctx, c.inst); err != nil && !errors.Is(err, launch.ErrCannotFreeze) {
			errs = append(errs, fmt.Errorf("%s: %w", c.label(), err))
		}
	}
	return errors.Join(errs...)
}

// rester is a session whose cell can be stopped between its steps and
// started again, with an empty cache, before the next: Rest lets go of
// the target (its connections); Resume takes the new one and warms what
// its steps fetch.
type rester interface {
	Rest() error
	Resume(ctx context.Context, tgt *Target) error
}

// rests says whether c is stopped between its steps rather than frozen:
// its session can take a new target, and its engine is hlsbench's to start
// (not an external proxy's, nor another host's).
func (c *cell) rests(spec RunSpec) bool {
	_, ok := c.sess.(rester)
	return ok && spec.Placed == nil && c.sel.Name != engines.ExternalName
}

// rest stops the cell's engine, terminator and origin after its session
// let go of them, keeping their output with the run's logs.
func (c *cell) rest(ctx context.Context, rc *Recorder, w *Spec) error {
	errs := []error{c.sess.(rester).Rest()}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second)
	defer cancel()
	if c.inst != nil {
		if err := c.inst.Stop(sctx); err != nil {
			errs = append(errs, fmt.Errorf("stop %s: %w", c.label(), err))
		}
	}
	if c.orig != nil {
		errs = append(errs, c.orig.stop(sctx))
	}
	if _, err := rc.keepLogs(w, c, true); err != nil {
		rc.Run.Warnings = append(rc.Run.Warnings, err.Error())
	}
	c.inst, c.orig, c.resting = nil, nil, true
	return errors.Join(errs...)
}

// resume starts a resting cell again, as it was first started, and hands
// its session the new target.
func (c *cell) resume(ctx context.Context, spec RunSpec, w Spec, plan CPUPlan, rc *Recorder) error {
	if err := startCellAgain(ctx, spec, w, plan, rc, c); err != nil {
		return err
	}
	if c.na != "" {
		return fmt.Errorf("start again: %s", c.na)
	}
	c.resting = false
	return c.sess.(rester).Resume(ctx, c.tgt)
}

// startCellAgain starts a resting cell (tests replace it).
var startCellAgain = startCell

// restIsolation is the isolation of cells that rest between their steps.
const restIsolation = "other cells ended between their steps: each cell's origin, engine and terminator end after each of its steps and start again, with an empty cache warmed as at the start, before its next"

// runtime is the run's launch.Runtime (Execute checked the name).
func (s *RunSpec) runtime() launch.Runtime {
	rt, _ := launch.RuntimeNamed(s.Runtime)
	return rt
}

// isolation says how a workload's cells are kept from each other while
// one is measured, for its conditions: other cells frozen where the
// runtime allows, which the in-process runtime does not.
func isolation(runtime string, cells []*cell, rest bool) string {
	if len(cells) < 2 {
		return "alone: no other cell ran during the workload"
	}
	var external bool
	for _, c := range cells {
		external = external || c.sel.Name == engines.ExternalName
	}
	rt, _ := launch.RuntimeNamed(runtime)
	how := rt.Isolation
	if !rt.Freezes {
		return how
	}
	if rest {
		how = restIsolation
	}
	if external {
		how += "; an external proxy is not hlsbench's to stop, only its origin is"
	}
	return how
}

// runWorkload starts every engine at once, each on its own port with its
// own origin (counters and failure switch), and runs the workload on them
// interleaved pass by pass — pass k of every engine before pass k+1 of any
// — so drift on a shared machine hits all alike. While one cell runs a
// step every other cell is stopped (cell.rest, where its session can take
// a new target) or frozen (cell.freeze): a frozen suite's idle processes
// cost the measured cell its tail on a host that reclaims idle memory
// (METHODOLOGY, Isolation). Every cell is started before the first step,
// not when its own first step comes: a cell that cannot start fails the
// run before anything is measured.
func runWorkload(ctx context.Context, spec RunSpec, w Spec, cfg Config, plan CPUPlan, rc *Recorder) (err error) {
	var cells []*cell
	defer func() {
		for _, c := range cells {
			err = errors.Join(err, c.stop(ctx))
			if _, kerr := rc.keepLogs(&w, c, true); kerr != nil {
				rc.Run.Warnings = append(rc.Run.Warnings, kerr.Error())
			}
		}
	}()
	for _, name := range spec.Engines {
		for _, topo := range topologiesOf(spec, w) {
			if spec.Skip != nil && spec.Skip(name, topo, w.Name) {
				continue
			}
			if ctx.Err() != nil {
				return nil
			}
			c := &cell{name: name, sel: spec.selection(name), topology: topo}
			rc.Progress.at(c.where(w))
			if err := startCell(ctx, spec, w, plan, rc, c); err != nil {
				cells = append(cells, c)
				return err
			}
			if c.na != "" {
				// Not applicable: its tests say why, and it runs no pass.
				rc.Progress.unplan(Estimate(w, cfg) - startEstimate)
				err := c.stop(ctx)
				notApplicable(rc, &w, c, spec.Runtime)
				if spec.Done != nil {
					spec.Done(c.name, c.topology, w.Name)
				}
				if err != nil {
					return err
				}
				continue
			}
			cells = append(cells, c)
			if c.sess, err = w.w.Open(ctx, w, cfg, c.tgt, rc); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("%s on %s: %w", w.Name, c.label(), err)
			}
		}
	}
	if len(cells) == 0 {
		return nil
	}
	setIsolation(rc.Run, w.Name, isolation(spec.Runtime, cells, len(cells) > 1 && cells[0].rests(spec)))
	if err := runSteps(ctx, spec, w, plan, rc, cells); err != nil || ctx.Err() != nil {
		return err
	}
	if err := runMore(ctx, spec, w, cfg, plan, rc, cells); err != nil || ctx.Err() != nil {
		return err
	}
	for _, c := range cells {
		if spec.Done != nil {
			spec.Done(c.name, c.topology, w.Name)
		}
	}
	return nil
}

// runSteps runs the cells' sessions interleaved step by step. With more
// than one cell, and a runtime that can freeze them, every cell but the one
// stepping is stopped or frozen (stepper.settle); the one stepping is
// started again or thawed before its restart (if any) and its step, so what
// the step reads (counters, CPU cost) is its own while it is the only cell
// awake. A cell is settled before the next wakes, so two are never awake at
// once.
func runSteps(ctx context.Context, spec RunSpec, w Spec, plan CPUPlan, rc *Recorder, cells []*cell) error {
	st, err := newStepper(ctx, spec, w, plan, rc, cells)
	if err != nil {
		return err
	}
	for k := 0; k < cells[0].sess.Steps(); k++ {
		for _, c := range cells {
			what := fmt.Sprintf("step %d of %d", k+1, c.sess.Steps())
			if err := st.step(ctx, c, k, what, func() error { return c.sess.Step(ctx, k) }); err != nil || ctx.Err() != nil {
				return err
			}
		}
	}
	return st.dead()
}

// runMore runs the rounds of measured passes spec.More asks for after the
// planned ones, every cell's pass e before pass e+1 of any, as runSteps
// runs the planned ones: each more pass is recorded as the planned ones
// are, and none is dropped.
func runMore(ctx context.Context, spec RunSpec, w Spec, cfg Config, plan CPUPlan, rc *Recorder, cells []*cell) error {
	if spec.More == nil || !w.Extends() {
		return nil
	}
	ext := make([]extender, len(cells))
	for i, c := range cells {
		x, ok := c.sess.(extender)
		if !ok {
			return nil // said by Extends; a session of a test may not
		}
		ext[i] = x
	}
	st, err := newStepper(ctx, spec, w, plan, rc, cells)
	if err != nil {
		return err
	}
	passes, extra := cfg.Passes, 0 // each cell's measured passes, and the extra steps run
	for ctx.Err() == nil {
		n := spec.More(rc.Run, w, passes)
		if n <= 0 {
			break
		}
		rc.Progress.unplan(-time.Duration(n*ext[0].PerPass()*len(cells)) * cfg.PassDuration)
		more := fmt.Sprintf("%d more passes", n)
		if n == 1 {
			more = "1 more pass"
		}
		rc.Progress.Note("%s: %s of each of %d cells, to decide (%d run)", w.Name, more, len(cells), passes)
		for e := extra; e < extra+n*ext[0].PerPass(); e++ {
			for i, c := range cells {
				what := fmt.Sprintf("pass %d (more to decide)", passes+1+(e-extra)/ext[i].PerPass())
				if err := st.step(ctx, c, -1, what, func() error { return ext[i].Extra(ctx, e) }); err != nil || ctx.Err() != nil {
					return err
				}
			}
		}
		extra += n * ext[0].PerPass()
		passes += n
		if err := st.dead(); err != nil {
			return err
		}
	}
	return nil
}

// extender is a session that runs measured passes after its planned
// Steps (a workload that Extends).
type extender interface {
	// PerPass is how many extra steps make one more measured pass (one
	// per series of a rate session).
	PerPass() int
	// Extra runs and records extra step e (0, 1, … in order).
	Extra(ctx context.Context, e int) error
}

// stepper runs steps of a workload's cells one at a time, every other
// cell frozen where the runtime can (runSteps).
type stepper struct {
	spec   RunSpec
	w      Spec
	plan   CPUPlan
	rc     *Recorder
	cells  []*cell
	freeze bool
	awake  *cell
}

func newStepper(ctx context.Context, spec RunSpec, w Spec, plan CPUPlan, rc *Recorder, cells []*cell) (*stepper, error) {
	st := &stepper{spec: spec, w: w, plan: plan, rc: rc, cells: cells, freeze: len(cells) > 1 && spec.runtime().Freezes}
	if st.freeze {
		for _, c := range cells {
			if err := st.settle(ctx, c); err != nil {
				return nil, err
			}
		}
	}
	return st, nil
}

// settle puts a cell that is not stepping out of the way: stopped where it
// rests (cell.rests), else frozen.
func (st *stepper) settle(ctx context.Context, c *cell) error {
	switch {
	case c.resting || c.dead != nil:
		return nil
	case c.rests(st.spec):
		if err := c.rest(ctx, st.rc, &st.w); err != nil {
			return fmt.Errorf("%s: stop %s between its steps: %w", st.w.Name, c.label(), err)
		}
	default:
		if err := c.freeze(ctx); err != nil {
			return fmt.Errorf("%s: freeze: %w", st.w.Name, err)
		}
	}
	return nil
}

// wake readies the cell about to step: started again where it rests,
// else thawed.
func (st *stepper) wake(ctx context.Context, c *cell) error {
	if c.resting {
		if err := c.resume(ctx, st.spec, st.w, st.plan, st.rc); err != nil {
			return fmt.Errorf("%s on %s: %w", st.w.Name, c.label(), err)
		}
		return nil
	}
	if err := c.thaw(ctx); err != nil {
		return fmt.Errorf("%s: thaw: %w", st.w.Name, err)
	}
	return nil
}

// step runs one step of c (run), planned step k (its restart, if any, is
// before it) or an extra one (k < 0); what names it if c ends during it.
// A dead cell runs none. The error is nil when ctx is done: interrupted,
// what finished is kept.
func (st *stepper) step(ctx context.Context, c *cell, k int, what string, run func() error) error {
	w, rc := st.w, st.rc
	if c.dead != nil {
		return nil
	}
	rc.Progress.setWhere(c.where(w))
	if st.freeze && st.awake != c {
		// Settled before the next wakes: never two awake.
		if st.awake != nil {
			if err := st.settle(ctx, st.awake); err != nil {
				return err
			}
		}
		if err := st.wake(ctx, c); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		st.awake = c
	}
	// Restarts and the step's evidence (counters, cost) happen while c is
	// thawed and every other cell frozen.
	if k >= 0 {
		if err := restartAt(ctx, st.spec, w, st.plan, rc, c, k); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("%s on %s: %w", w.Name, c.label(), err)
		}
	}
	before, counts := c.vitals(), rc.passCounts(&w, c)
	if why := c.ended(vitals{}); why != nil {
		// Ended between steps (frozen, or before the first).
		st.awake = nil
		return c.died(ctx, rc, &w, counts, why, why)
	}
	err := run()
	if ctx.Err() != nil {
		return nil // interrupted: keep what finished
	}
	if why := c.ended(before); why != nil {
		st.awake = nil
		return c.died(ctx, rc, &w, counts, why, fmt.Errorf("during %s: %w", what, why))
	}
	if err != nil {
		return fmt.Errorf("%s on %s: %w", w.Name, c.label(), err)
	}
	return nil
}

// dead is the error of the cells whose processes ended, each with where
// its output is kept; nil when none did.
func (st *stepper) dead() error {
	var errs []error
	for _, c := range st.cells {
		if c.dead != nil {
			where := ""
			if p := st.rc.logPath(&st.w, c); p != "" {
				where = "\n(its output is kept in " + p + ")"
			}
			errs = append(errs, fmt.Errorf("%s on %s: %w%s", st.w.Name, c.label(), c.dead, where))
		}
	}
	return errors.Join(errs...)
}

// termImage is the terminator's image, with Docker.
func termImage(spec RunSpec) string {
	name := engines.DefaultTerminator
	if spec.Terminator != nil {
		name = spec.Terminator.Name()
	}
	return spec.Images[name]
}

// topologiesOf are the topologies w runs over: the run's for a workload
// measured in each (hit-path, segment), plaintext for the others.
func topologiesOf(spec RunSpec, w Spec) []string {
	if len(spec.Topologies) == 0 || !w.OverTopologies() {
		return []string{engines.TopologyPlaintext}
	}
	return spec.Topologies
}

// label is the cell's engine, with its topology when not plaintext.
func (c *cell) label() string {
	if c.topology == "" || c.topology == engines.TopologyPlaintext {
		return c.name
	}
	return c.name + " " + c.topology
}

func (c *cell) where(w Spec) string { return "[" + c.label() + "] " + w.Name }

// notApplicable records the tests of w for a cell that cannot be
// measured, each with no value and the reason.
func notApplicable(rc *Recorder, w *Spec, c *cell, runtime string) {
	if runtime == "" {
		runtime = launch.Runtimes[0].Name
	}
	tgt := &Target{Engine: results.Engine{Name: c.name, Kind: c.kind(), Runtime: runtime, Topology: c.topology}}
	for _, d := range w.tests() {
		r := rc.newTest(w, tgt, d)
		r.NotApplicable = c.na
		r.NoValue = "not applicable: " + c.na
	}
}

// startCell starts a cell's origin and engine and makes its target.
func startCell(ctx context.Context, spec RunSpec, w Spec, plan CPUPlan, rc *Recorder, c *cell) error {
	if c.sel.Name == engines.ExternalName && c.topology != engines.TopologyPlaintext {
		// Its listeners are its operator's: nothing to start or measure.
		c.na = "hlsbench does not configure an external proxy's listeners: measure its TLS with hlsbench load --ca"
		return nil
	}
	if c.sel.Name == engines.NullName && w.NeedsCache() {
		c.na = engines.NullNeedsCache
		return nil
	}
	if c.sel.Name == engines.ExternalName && w.Policy.Purge == engines.PurgeBan {
		c.na = "an external proxy is purged with a request per object (--purge-mode purge, --purge-method): hlsbench has no ban to send it"
		return nil
	}
	ocfg := w.OriginConfig()
	ocfg.Seed = 1
	lch := spec.Launcher
	var err error
	listen := spec.OriginListens[c.name]
	if own := spec.Configs[c.name]; own != nil {
		if c.topology != engines.TopologyPlaintext {
			c.na = engines.OwnTopology
			return nil
		}
		listen = own.Origin
	}
	control := ""
	if p := spec.Placed; p != nil {
		if why := placedNA(w, c); why != "" {
			c.na = why
			// Said once a workload and cell, also where the workload
			// lists no test to record it under.
			rc.Run.Warnings = append(rc.Run.Warnings, fmt.Sprintf("%s on %s: not run placed: %s", w.Name, c.label(), why))
			return nil
		}
		lch = p.Origin
		if listen, control, err = placedOrigin(p); err != nil {
			return err
		}
	}
	orig, err := startOrigin(ctx, spec, lch, ocfg, listen, control, plan.Servers)
	if err != nil {
		return err
	}
	c.orig, c.lch = orig, lch
	return startEngine(ctx, spec, w, plan, rc, c)
}

// restartAt restarts the cell's engine before step k when its session
// asks for another policy there, and hands the session the new target.
func restartAt(ctx context.Context, spec RunSpec, w Spec, plan CPUPlan, rc *Recorder, c *cell, k int) error {
	rs, ok := c.sess.(restarter)
	if !ok {
		return nil
	}
	pol, ok := rs.PolicyAt(k)
	if !ok {
		return nil
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second)
	err := c.inst.Stop(sctx)
	cancel()
	if _, kerr := rc.keepLogs(&w, c, false); kerr != nil {
		rc.Run.Warnings = append(rc.Run.Warnings, kerr.Error())
	}
	c.inst = nil
	if err != nil {
		return fmt.Errorf("stop %s: %w", c.name, err)
	}
	w.Policy = pol
	if err := startEngine(ctx, spec, w, plan, rc, c); err != nil {
		return err
	}
	if c.na != "" {
		return fmt.Errorf("restart under store %d bytes: %s", pol.StoreBytes, c.na)
	}
	return rs.Retarget(ctx, c.tgt)
}

// startEngine starts a cell's engine on its origin under w's policy and
// makes its target.
func startEngine(ctx context.Context, spec RunSpec, w Spec, plan CPUPlan, rc *Recorder, c *cell) error {
	orig, lch := c.orig, c.lch
	host := ""
	if p := spec.Placed; p != nil {
		lch, host = p.Engine, p.Placement.Engine.Addr
	}
	var err error
	switch c.sel.Name {
	case "builtin", engines.NullName:
		// This hlsbench, or another build given for a variant.
		var e engines.Engine = engines.Builtin{}
		if c.sel.Name == engines.NullName {
			e = engines.Null{}
		}
		bin, version, given := selfIn(spec), spec.Version, spec.Binaries[c.name]
		if given != "" {
			bin, version = given, spec.Sources[c.name].Version
		}
		c.inst, err = engines.StartLocal(ctx, e, engines.LocalSpec{Policy: w.Policy, OriginURL: orig.dataURL,
			Binary: bin, CPUs: plan.Servers, Launcher: lch, Image: spec.Images["hlsbench"], Version: version,
			Name: c.name, Kind: c.kind(), GivenBinary: given, Host: host,
			Topology: c.topology, TLS: spec.TLS, Terminator: spec.Terminator, TermImage: termImage(spec)})
	case engines.ExternalName:
		c.inst = &engines.External{BaseURL: spec.ExternalURLs[c.name], Name: c.name, Kind: c.kind()}
	default:
		e, ok := engines.Lookup(c.sel.Name)
		if !ok {
			return fmt.Errorf("engine %q: want builtin, external or one of %v", c.name, engines.ProcessEngines())
		}
		src := spec.Sources[c.name]
		c.inst, err = engines.StartLocal(ctx, e, engines.LocalSpec{Policy: w.Policy, OriginURL: orig.dataURL,
			Binary: spec.Binaries[c.name], CPUs: plan.Servers, Launcher: lch, Image: spec.Images[c.name],
			Name: c.name, Kind: c.kind(), Version: src.Version, Commit: src.Commit, SourceSHA256: src.SHA256,
			Topology: c.topology, TLS: spec.TLS, Terminator: spec.Terminator, TermImage: termImage(spec), Own: spec.Configs[c.name], Host: host})
	}
	var na *engines.NotApplicableError
	if errors.As(err, &na) {
		c.na = na.Reason
		return nil
	}
	if err != nil {
		return err
	}
	info := c.inst.Info()
	if why := engines.WorkOnDisk(info); why != "" && !slices.Contains(rc.Run.Warnings, why) {
		rc.Run.Warnings = append(rc.Run.Warnings, why)
	}
	if info.Pinning == nil {
		info.Pinning = map[string]string{}
	}
	info.Pinning["generator"] = engines.CPUList(plan.Generator)
	info.Pinning["origin"] = engines.CPUList(plan.Servers)
	rc.Run.Engines = appendEngine(rc.Run.Engines, info)
	c.tgt = &Target{URL: c.inst.URL(), Origin: orig.control, Seed: orig.seed, OriginConfig: &orig.cfg, Engine: info,
		Nonce: rc.Run.ID + "-" + info.Name + "-" + c.topology, InProcess: spec.runtime().Binaries == launch.InHlsbench,
		CPUs: append(append([]int{}, plan.Generator...), plan.Servers...), GeneratorCPUs: plan.Generator, ServerCPUs: plan.Servers,
		Ours: func() cpuload.Ours { return cpuload.Self(runstate.From(ctx).PGIDs()) }}
	if c.topology != engines.TopologyPlaintext && spec.TLS != nil {
		c.tgt.TLS, c.tgt.CAPEM = spec.TLS.ClientConfig(), string(spec.TLS.CAPEM)
	}
	if spec.agents != nil {
		c.tgt.Agents, c.tgt.ClockTolerance, c.tgt.Probes = spec.agents.hosts, spec.Placed.ClockTolerance, spec.agents.probes
		for _, p := range spec.agents.probes {
			if p.Role == "origin" {
				c.tgt.Origin = &shiftedOrigin{OriginControl: orig.control, probe: p.Client}
			}
		}
		// Nothing of this host's measures a placed run's processes.
		c.tgt.CPUs, c.tgt.Ours = nil, nil
	}
	if tp, ok := c.inst.(interface{ TermPGID() int }); ok && tp.TermPGID() > 0 {
		c.tgt.Groups = append(c.tgt.Groups, cost.Group{Name: costTerminator, PGID: tp.TermPGID()})
	}
	if cn, ok := c.inst.(engines.Counters); ok {
		c.tgt.Counters = cn.Counters
	}
	if cs, ok := c.inst.(engines.CacheSizer); ok && spec.Placed == nil {
		// Placed, its cache files are on its host, not here.
		c.tgt.CacheBytes = cs.CacheBytes
	}
	if u, ok := c.inst.(engines.UpstreamCounter); ok {
		c.tgt.UpstreamKey = u.UpstreamCounter()
	}
	if pm, ok := c.inst.(engines.PurgeModer); ok {
		c.tgt.PurgeMode = pm.PurgeMode()
	}
	if b, ok := c.inst.(engines.Banner); ok && c.tgt.PurgeMode == engines.PurgeBan {
		c.tgt.Ban = b.Ban
	}
	if pg, ok := c.inst.(engines.ProcessGroup); ok && pg.PGID() > 0 {
		c.tgt.Groups = append(c.tgt.Groups, cost.Group{Name: costEngine, PGID: pg.PGID()})
	}
	if orig.pgid > 0 {
		c.tgt.Groups = append(c.tgt.Groups, cost.Group{Name: costOrigin, PGID: orig.pgid})
	}
	return nil
}

// setIsolation records how the workload's cells were isolated in its
// conditions.
func setIsolation(run *results.Run, workload, how string) {
	for i := range run.Workloads {
		if run.Workloads[i].Name == workload {
			run.Workloads[i].Conditions.Isolation = how
		}
	}
}

func appendEngine(list []results.Engine, e results.Engine) []results.Engine {
	for _, x := range list {
		if x.Name == e.Name && x.Runtime == e.Runtime && x.Topology == e.Topology {
			return list
		}
	}
	return append(list, e)
}
