package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/hlsbench/hlsbench/results"
	"github.com/hlsbench/hlsbench/results/compare"
	"github.com/hlsbench/hlsbench/results/stats"
	"github.com/hlsbench/hlsbench/workloads"
)

// decideFactor is --max-passes 0: three times the planned passes, as a
// user who reruns a comparison twice before giving up would.
const decideFactor = 3

// decider is hlsbench run --decide BASE,NEW: once a workload's planned
// passes are done it compares the two rows per test as hlsbench compare
// --base BASE --new NEW would compare the run's file, and while a test of
// the workload is undecided asks the run for another round of --passes
// measured passes of every row, up to --max-passes. The run ends with
// that comparison, and compare's exit code.
type decider struct {
	base, new string
	planned   int // --passes
	max       int // --max-passes, the planned included
	opts      compare.Options
	// judge is compare.Variants over the run's file; a test's may stand
	// in for it.
	judge func(files []compare.File, base, new []string, o compare.Options) (*compare.Comparison, error)
	// passes is each workload's measured passes of each row when it was
	// last judged.
	passes map[string]int
}

// parseDecide reads --decide and --max-passes: two rows of --engine, the
// workloads able to run more passes, and a bound no lower than the
// planned passes. nil without --decide.
func parseDecide(o RunOptions, rows []string, specs []workloads.Spec, planned int) (*decider, error) {
	if o.Decide == "" {
		if o.MaxPasses != 0 {
			return nil, usagef("--max-passes goes with --decide BASE,NEW: it bounds the passes run to decide between two rows")
		}
		return nil, nil
	}
	have := strings.Join(rows, ", ")
	names := strings.Split(o.Decide, ",")
	for i := range names {
		names[i] = strings.TrimSpace(names[i])
	}
	if len(names) != 2 || names[0] == "" || names[1] == "" {
		return nil, usagef("--decide %q: want BASE,NEW, two rows of --engine (%s)", o.Decide, have)
	}
	for _, n := range names {
		if !slices.Contains(rows, n) {
			return nil, usagef("--decide %s: %s is not a row of --engine: want two of %s", o.Decide, n, have)
		}
	}
	if names[0] == names[1] {
		return nil, usagef("--decide %s: the same row twice: want two different rows of --engine (%s)", o.Decide, have)
	}
	all, _ := workloads.Specs("all")
	var can []string
	for _, s := range all {
		if s.Extends() {
			can = append(can, s.Name)
		}
	}
	for _, s := range specs {
		if !s.Extends() {
			return nil, usagef("--decide: workload %s cannot run passes beyond its planned ones: want --workload %s", s.Name, strings.Join(can, " or "))
		}
	}
	max := o.MaxPasses
	if max == 0 {
		max = decideFactor * planned
	}
	if max < planned {
		return nil, usagef("--max-passes %d: want at least --passes (%d), the passes planned; 0 is %d× --passes", o.MaxPasses, planned, decideFactor)
	}
	return &decider{base: names[0], new: names[1], planned: planned, max: max, opts: compare.Defaults(),
		judge: decideJudge, passes: map[string]int{}}, nil
}

// decideJudge is compare's judge of two rows of one run; a test stands
// another in for it, to script the verdicts.
var decideJudge = compare.Variants

// plan says what the decision will do, before the run starts.
func (d *decider) plan(w io.Writer) {
	fmt.Fprintf(w, "hlsbench: --decide %s,%s: after the %d planned passes, %s is compared with %s per test as hlsbench compare does; "+
		"while a test is undecided, both run %d more passes, interleaved, up to %d each (--max-passes)\n",
		d.base, d.new, d.planned, d.new, d.base, d.planned, d.max)
}

// more is the run's RunSpec.More: it judges the run so far and asks for
// another round while a test of w is undecided and the bound allows.
func (d *decider) more(run *results.Run, w workloads.Spec, passes int) int {
	d.passes[w.Name] = passes
	// The run so far, as compare reads it once finished: a running run
	// is one that did not finish, and would decide nothing.
	snap := *run
	snap.Status = results.StatusComplete
	c, err := d.judge([]compare.File{{Path: "this run", Run: &snap}}, []string{d.base}, []string{d.new}, d.opts)
	d.record(run, c, err)
	if err != nil || passes >= d.max {
		return 0
	}
	for _, r := range c.Rows {
		if r.Workload == w.Name && retry(r) {
			return min(d.planned, d.max-passes)
		}
	}
	return 0
}

// retry says more passes may decide the row: it is inconclusive (the
// instrument's spoiled passes flip it), not comparable (too few valid
// passes for p to reach alpha), or a side has no valid pass yet. A test
// missing on a side, or not applicable, stays so however many passes run.
func retry(r compare.Row) bool {
	if r.Status == compare.Compared {
		return r.Verdict == compare.Inconclusive || r.Verdict == stats.NotComparable
	}
	return strings.HasPrefix(string(r.Status), string(compare.Invalid)+" ")
}

// record keeps the latest judgement in the run, saved with it.
func (d *decider) record(run *results.Run, c *compare.Comparison, err error) {
	rec := &results.Decision{Base: d.base, New: d.new, PlannedPasses: d.planned, MaxPasses: d.max, Tests: []results.DecidedTest{}}
	if err != nil {
		rec.Error = err.Error()
	} else {
		for _, r := range c.Rows {
			rec.Tests = append(rec.Tests, results.DecidedTest{ID: r.ID, Topology: r.Topology, Verdict: verdictOf(r),
				Decided: decided(r), Passes: d.passes[r.Workload], Reason: r.Reason})
		}
	}
	run.Decision = rec
}

// decided says the row's verdict is a decision: a regression, an
// improvement or no significant change.
func decided(r compare.Row) bool {
	return r.Status == compare.Compared && r.Verdict != compare.Inconclusive && r.Verdict != stats.NotComparable && r.Verdict != ""
}

func verdictOf(r compare.Row) string {
	if r.Status != compare.Compared {
		return string(r.Status)
	}
	return string(r.Verdict)
}

// finish compares the finished run's two rows as hlsbench compare RUN
// --base BASE --new NEW does, prints the comparison and per test how it
// was decided, and returns compare's verdict (exit 0, 1 or 2).
func (d *decider) finish(w io.Writer, run *results.Run, path string) error {
	name := path
	if name == "" {
		name = "this run"
	}
	c, err := d.judge([]compare.File{{Path: name, Run: run}}, []string{d.base}, []string{d.new}, d.opts)
	if err != nil {
		return noVerdict{fmt.Errorf("--decide %s,%s: %w", d.base, d.new, err)}
	}
	o := CompareOptions{Base: name, BaseNames: []string{d.base}, NewNames: []string{d.new},
		Threshold: d.opts.Threshold, Alpha: d.opts.Alpha, ToleranceMs: d.opts.ToleranceMs}
	fmt.Fprintln(w)
	writeComparison(w, c, o, 1, 1)
	d.writeDecisions(w, c)
	return comparisonVerdict(c)
}

// writeDecisions says per test whether it was decided and after how many
// passes, or why not.
func (d *decider) writeDecisions(w io.Writer, c *compare.Comparison) {
	fmt.Fprintf(w, "\ndecision, %s against %s (%d passes planned, at most %d):\n", d.new, d.base, d.planned, d.max)
	for _, r := range c.Rows {
		n := d.passes[r.Workload]
		var s string
		switch {
		case decided(r):
			s = fmt.Sprintf("%s, decided after %d passes of each", verdictText(r), n)
		case retry(r) && n >= d.max:
			s = fmt.Sprintf("%s at the bound of %d passes of each: %s", verdictOf(r), n, r.Reason)
		case retry(r):
			s = fmt.Sprintf("%s after %d passes of each, not decided: %s", verdictOf(r), n, r.Reason)
		default:
			s = fmt.Sprintf("%s after %d passes of each, which more passes would not change: %s", verdictOf(r), n, r.Reason)
		}
		fmt.Fprintln(w, wrap(fmt.Sprintf("  %s%s: %s", r.ID, topologyText(r.Topology), s), "    "))
	}
}

// topologyText names a topology other than plaintext, in brackets.
func topologyText(t string) string {
	if t == "" || t == "plaintext" {
		return ""
	}
	return " (" + t + ")"
}
