package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/hlsbench/hlsbench/results"
	"github.com/hlsbench/hlsbench/results/compare"
	"github.com/hlsbench/hlsbench/results/stats"
	"github.com/hlsbench/hlsbench/workloads"
)

// CompareOptions are the flags and arguments of `hlsbench compare`.
type CompareOptions struct {
	Base, New string
	// BaseNames and NewNames, when set, compare variants of one run or
	// suite (Base): the rows of BaseNames[i] against NewNames[i].
	BaseNames, NewNames []string
	// Threshold is in percent of the base median.
	Threshold   float64
	Alpha       float64
	ToleranceMs float64
	JSON        bool
	// Markdown, when set, is a file that receives a Markdown summary
	// (for a CI's job page or a pull request).
	Markdown string
}

func newCompareCmd(stdout, stderr io.Writer) *cobra.Command {
	o := CompareOptions{}
	c := &cobra.Command{
		Short: "Compare two sets of runs per engine and test: medians, change, p-value, verdict",
		Long: `Compare two sets of runs per engine and test: medians, change, p-value, verdict.

BASE and NEW are each a run file or a directory, which stands for every
run-*.json in it (a suite); several runs are merged per engine, workload and
test. With --base and --new, one run or suite holds both sides: variants
that ran interleaved pass by pass (hlsbench suite --engine
prod=varnish,candidate=varnish), the rows of each --base engine compared with
those of the --new engine in the same place of its list. Warm-ups never
count, and no side is judged on the passes that survived: a measured pass
that gave no valid value because of the engine (saturated, failed, censored)
ranks worse than every valid pass, so a null or saturated new side where base
had a figure is a regression; one the instrument spoiled (the generator's
lateness, the host's busy CPUs) counts worst and best in turn, and a verdict
it flips is "inconclusive" (noted "partial", with a warning). A test missing
on a side, or without a value on both, is listed and never compared. base
and new are the medians of the valid passes' own values
(a pass's p99, say), so they can differ from a run's headline value, which
merges every request of its passes.

The effect is the Hodges–Lehmann shift of new from base (the median of every
difference between a new pass and a base pass), printed in percent of the
base median with its 1 − alpha confidence interval. The verdict is a
regression (or an improvement) when the two-sided Mann-Whitney U test's p,
adjusted for the many tests of one comparison (Benjamini–Hochberg: q), is
below --alpha and the shift is at least --threshold percent (and --tolerance,
the generator's timing tolerance, in ms for a latency) in the direction that is worse (or better) for the test;
~ (no significant change) otherwise. The adjustment keeps the expected share
of false regressions among those reported at alpha: thirty tests judged one
by one at p < 0.05 would report one or two that are not there most nights. It is "not comparable" when a side has too few valid passes for the
test ever to reach p < --alpha: 3 against 3 can never reach 0.05, 4 against 4
can; or when the medians differ but the values tie so often that no split of
them could (six passes of 0 against 0,0,1,1,1,1: p is at least 0.061). Up to 50
passes a side p is exact, from the distribution of U given the ties; above, the
normal approximation with tie correction.

A workload's conditions (rate, connections, object and range sizes, burst,
phases, pass duration, timeout) must be the same on both sides and within each;
pass counts may differ. Another host (CPU model or hostname) or engine version
is noted on the row and warned about under the tables.

Exit codes, as diff's: 0 no significant regression; 1 at least one regression
(listed under the tables and on stderr); 2 no verdict: bad flags, an
unreadable file, a newer schema, a workload under different conditions,
nothing in common, no test that could reach a verdict, a test left
inconclusive by spoiled passes, or a run on either side that did not finish
(failed, killed, interrupted): a build that crashed is not one that got
slower. --markdown writes a summary for a CI page.`,
		Use: "compare BASE NEW | compare RUNS --base NAMES --new NAMES",
		Example: `  hlsbench compare ~/.local/share/hlsbench/runs/run-20260101T101010Z-1a2b3c4d.json run-20260102T090000Z-5e6f7a8b.json
  hlsbench compare suites/before suites/after
  hlsbench compare suites/ab --base varnish@7.1.1 --new varnish@9.0.2
  hlsbench compare --threshold 2 --alpha 0.01 --json before/ after/`,
		Args: func(c *cobra.Command, args []string) error {
			if len(o.BaseNames) > 0 || len(o.NewNames) > 0 {
				return exactArgs(1, "one run file or suite directory with --base and --new (the variants to compare)")(c, args)
			}
			return exactArgs(2, "BASE and NEW, each a run file or a directory of them")(c, args)
		},
		RunE: func(c *cobra.Command, args []string) error {
			o.Base = args[0]
			if len(args) == 2 {
				o.New = args[1]
			}
			return RunCompare(c.Context(), stdout, stderr, o)
		},
	}
	f := c.Flags()
	f.Float64Var(&o.Threshold, "threshold", stats.DefaultThreshold, "smallest change of the median, in percent, reported as a regression or an improvement")
	f.Float64Var(&o.Alpha, "alpha", stats.DefaultAlpha, "significance level of the U test")
	f.Float64Var(&o.ToleranceMs, "tolerance", compare.DefaultToleranceMs, "the generator's timing tolerance: smallest change of a latency's median, in ms, reported as a regression or an improvement")
	toleranceAlias(c, &o.ToleranceMs, stderr)
	f.BoolVar(&o.JSON, "json", false, "print one JSON object: the rows (typed) and the warnings")
	f.StringSliceVar(&o.BaseNames, "base", nil, "with one suite or run: the engines (rows of --engine) of the base side, a comma list paired in order with --new's")
	f.StringSliceVar(&o.NewNames, "new", nil, "with one suite or run: the engines of the new side, e.g. --base prod --new candidate")
	f.StringVar(&o.Markdown, "markdown", "", "also write a Markdown summary to this file (e.g. for $GITHUB_STEP_SUMMARY)")
	return c
}

// checkJudge checks the flags of compare's statistics, which report's
// ties share.
// toleranceAlias keeps --resolution, the first name of --tolerance,
// working for scripts that use it, hidden and deprecated: 0.05 ms is the
// generator's timing tolerance, not a resolution (the histograms resolve
// 1 µs), and one thing has one name. pflag's MarkDeprecated would print
// its message through cobra to stdout, into --json's object; the same
// message goes to stderr instead.
func toleranceAlias(c *cobra.Command, p *float64, stderr io.Writer) {
	f := c.Flags()
	f.Float64Var(p, "resolution", compare.DefaultToleranceMs, "deprecated: the old name of --tolerance")
	_ = f.MarkHidden("resolution")
	c.PreRun = func(c *cobra.Command, _ []string) {
		if c.Flags().Changed("resolution") {
			fmt.Fprintln(stderr, "Flag --resolution has been deprecated, use --tolerance, the generator's timing tolerance in ms")
		}
	}
}

func checkJudge(threshold, alpha, toleranceMs float64) error {
	switch {
	case !(alpha > 0 && alpha < 1):
		return usagef("--alpha %g: want a level between 0 and 1, e.g. 0.05", alpha)
	case !(threshold >= 0) || math.IsInf(threshold, 0):
		return usagef("--threshold %g: want a percentage, 0 or more, e.g. 5", threshold)
	case !(toleranceMs >= 0) || math.IsInf(toleranceMs, 0):
		return usagef("--tolerance %g: want milliseconds, 0 or more, e.g. 0.05", toleranceMs)
	}
	return nil
}

// errRegression reports a comparison that found a regression (exit 1).
var errRegression = errors.New("significant regression")

// RunCompare is `hlsbench compare`.
func RunCompare(ctx context.Context, stdout, stderr io.Writer, o CompareOptions) error {
	if err := checkJudge(o.Threshold, o.Alpha, o.ToleranceMs); err != nil {
		return err
	}
	opts := compare.Options{Threshold: o.Threshold, Alpha: o.Alpha, ToleranceMs: o.ToleranceMs}
	var c *compare.Comparison
	var base, nw []compare.File
	var err error
	if o.New == "" {
		switch {
		case len(o.BaseNames) == 0 || len(o.NewNames) == 0:
			return usagef("--base and --new go together: the variants of %s to compare", o.Base)
		case len(o.BaseNames) != len(o.NewNames):
			return usagef("--base %s and --new %s: want as many engines on each side, paired in order",
				strings.Join(o.BaseNames, ","), strings.Join(o.NewNames, ","))
		}
		if base, err = compare.Load(o.Base); err != nil {
			return usagef("%s: %v", o.Base, err)
		}
		nw = base
		if c, err = compare.Variants(base, o.BaseNames, o.NewNames, opts); err != nil {
			return usagef("--base/--new: %v", err)
		}
	} else {
		if base, err = compare.Load(o.Base); err != nil {
			return usagef("BASE: %v", err)
		}
		if nw, err = compare.Load(o.New); err != nil {
			return usagef("NEW: %v", err)
		}
		if c, err = compare.Runs(base, nw, opts); err != nil {
			return usageError{err}
		}
	}
	if o.JSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(c); err != nil {
			return noVerdict{err}
		}
	} else {
		writeComparison(stdout, c, o, len(base), len(nw))
	}
	if o.Markdown != "" {
		if err := writeAtomic(o.Markdown, func(w io.Writer) error { return writeComparisonMarkdown(w, c, o, len(base), len(nw)) }); err != nil {
			return noVerdict{fmt.Errorf("--markdown %s: %w", o.Markdown, err)}
		}
	}
	return comparisonVerdict(c)
}

// comparisonVerdict is a comparison's outcome as compare's exit code
// says it: nil no regression, errRegression, or a noVerdict (a side that
// did not finish, an inconclusive row, nothing compared).
func comparisonVerdict(c *compare.Comparison) error {
	regs := c.Regressions()
	switch {
	case len(c.Incomplete) > 0:
		msg := "a side did not finish: " + strings.Join(c.Incomplete, "; ")
		if len(regs) > 0 {
			msg += "; regressions in what did: " + regressionList(regs)
		}
		return noVerdict{errors.New(msg)}
	case len(regs) > 0:
		return fmt.Errorf("%w: %s", errRegression, regressionList(regs))
	case len(c.Inconclusive()) > 0:
		// A row the instrument left undecided may hide a regression: "no
		// regression" would be a decision the passes cannot support.
		var names []string
		for _, r := range c.Inconclusive() {
			names = append(names, engineLabel(r)+" "+r.ID)
		}
		return noVerdict{fmt.Errorf("inconclusive: passes spoiled by the instrument (the generator's lateness or busy CPUs) leave %s undecided; measure again on a quieter machine or with more passes",
			strings.Join(names, ", "))}
	case c.Verdicts() == 0:
		return noVerdict{fmt.Errorf("no test could reach a verdict (%d not comparable or not compared): nothing was compared", len(c.Rows))}
	}
	return nil
}

// noVerdict is a comparison that could not decide (exit 2, as diff's
// trouble): a side that did not finish, nothing comparable, bad input.
// A CI tells it from a regression (exit 1) by the code.
type noVerdict struct{ err error }

func (e noVerdict) Error() string { return e.err.Error() }
func (e noVerdict) Unwrap() error { return e.err }

// writeComparison prints one table per workload, the reasons rows were not
// compared under it, then a legend, the warnings and a count of verdicts.
func writeComparison(w io.Writer, c *compare.Comparison, o CompareOptions, nBase, nNew int) {
	bs, ns := sidesText(o)
	fmt.Fprintf(w, "base: %s (%s)\nnew:  %s (%s)\n", bs, runsText(nBase), ns, runsText(nNew))
	notes := false
	for _, r := range c.Rows {
		notes = notes || len(r.Notes) > 0
	}
	for i := 0; i < len(c.Rows); {
		j := i
		for j < len(c.Rows) && c.Rows[j].Workload == c.Rows[i].Workload {
			j++
		}
		writeWorkload(w, c.Rows[i:j], notes)
		i = j
	}
	fmt.Fprintln(w)
	legend := fmt.Sprintf("base, new: median of the valid measured passes' own values; n: how many, base/new; "+
		"shift %%: Hodges–Lehmann shift of new from base in %% of the base median, with its %g%% confidence interval ((—): too few passes for one); "+
		"q: the two-sided Mann-Whitney U p-value adjusted for the %d tests that could reach a verdict (Benjamini–Hochberg); "+
		"~: no significant change (q ≥ %g, |shift| < %g%%, or under the generator's %g ms timing tolerance for a latency)",
		100*(1-c.Alpha), c.Verdicts(), c.Alpha, c.Threshold, c.ToleranceMs)
	if notes {
		legend += "; note: another host or engine version, or partial: passes without a valid value, ranked worst (see the warnings)"
	}
	fmt.Fprintln(w, wrap(legend, "  "))
	for _, warn := range c.Warnings {
		fmt.Fprintln(w, wrap("warning: "+warn, "  "))
	}
	parts := verdictCounts(c.Rows)
	tests := "tests"
	if len(c.Rows) == 1 {
		tests = "test"
	}
	fmt.Fprintln(w, wrap(fmt.Sprintf("%d %s: %s.", len(c.Rows), tests, strings.Join(parts, ", ")), "  "))
	if regs := c.Regressions(); len(regs) > 0 {
		fmt.Fprintln(w, wrap("regressions: "+regressionList(regs), "  "))
	}
	for _, s := range c.Incomplete {
		fmt.Fprintln(w, wrap("incomplete: "+s, "  "))
	}
}

// regressionList names each regression with its shift: "builtin
// WORKLOAD/TEST +33.3%, …".
func regressionList(regs []compare.Row) string {
	var names []string
	for _, r := range regs {
		s := fmt.Sprintf("%s %s %s", engineLabel(r), r.ID, shiftEstimate(r))
		if r.Outright {
			// No figure says what happened: the cause does, in a few
			// words (the row's note under its table has it whole).
			side := "new"
			if r.Verdict == stats.Improvement {
				side = "base"
			}
			why := side + "'s median pass gave no valid value"
			if r.Cause != "" {
				why += ": " + r.Cause
			}
			s += " (" + why + ")"
		}
		names = append(names, s)
	}
	return strings.Join(names, ", ")
}

// shiftEstimate is the shift without its interval.
func shiftEstimate(r compare.Row) string {
	switch {
	case r.ShiftBeyond != 0:
		return beyondText(r)
	case r.ShiftPct != nil:
		return fmt.Sprintf("%+.1f%%", r.ShiftPct.Estimate)
	case r.Shift != nil:
		return fmt.Sprintf("%+g %s", r.Shift.Estimate, r.Unit)
	}
	return changeText(r)
}

func writeWorkload(w io.Writer, rows []compare.Row, notes bool) {
	fmt.Fprintf(w, "\n%s\n", rows[0].Workload)
	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 0, 0, 2, ' ', tabwriter.AlignRight)
	// AlignRight for the figures; the text columns are padded by hand (and
	// the first column's padding indents the table).
	engW, testW, verdW := len("engine"), len("test"), len("verdict")
	for _, r := range rows {
		engW, testW, verdW = max(engW, len(engineLabel(r))), max(testW, len(r.Test)), max(verdW, len(verdictText(r)))
	}
	left := func(s string, n int) string { return s + strings.Repeat(" ", n-len([]rune(s))) }
	note := ""
	if notes {
		note = "note"
	}
	fmt.Fprintf(tw, "%s\t%s\tbase\tnew\tn\tshift %% (CI)\tq\t %s  %s\n", left("engine", engW), left("test", testW), left("verdict", verdW), note)
	var why []string
	last := ""
	for _, r := range rows {
		eng := engineLabel(r)
		name := eng
		if eng == last {
			name = ""
		}
		last = eng
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d/%d\t%s\t%s\t %s  %s\n", left(name, engW), left(r.Test, testW),
			valueText(r.Base.Median, r.Unit), valueText(r.New.Median, r.Unit), len(r.Base.Values), len(r.New.Values),
			shiftText(r, ""), pText(r.Q), left(verdictText(r), verdW), notesText(r.Notes))
		switch {
		case r.Status != compare.Compared:
			why = append(why, fmt.Sprintf("%s %s: %s: %s", eng, r.Test, r.Status, r.Reason))
		case r.Verdict == stats.NotComparable:
			why = append(why, fmt.Sprintf("%s %s: not comparable: %s", eng, r.Test, r.Reason))
		case r.Verdict == compare.Inconclusive:
			why = append(why, fmt.Sprintf("%s %s: %s", eng, r.Test, r.Reason))
		case r.Outright:
			why = append(why, fmt.Sprintf("%s %s: %s: %s", eng, r.Test, r.Verdict, r.Reason))
		}
	}
	tw.Flush()
	// The text columns are padded by hand: no trailing blanks.
	for _, line := range strings.SplitAfter(table.String(), "\n") {
		if line != "" {
			fmt.Fprintln(w, strings.TrimRight(line, " \n"))
		}
	}
	for _, s := range why {
		fmt.Fprintln(w, wrap("  "+s, "    "))
	}
}

func engineLabel(r compare.Row) string {
	return workloads.EngineLabel(&results.Result{Engine: r.Engine, Runtime: r.Runtime, Topology: r.Topology})
}

func runsText(n int) string {
	if n == 1 {
		return "1 run"
	}
	return fmt.Sprintf("%d runs", n)
}

// verdictText is the verdict, ~ for no significant change, or why the row
// was not compared.
func verdictText(r compare.Row) string {
	switch {
	case r.Status != compare.Compared:
		return string(r.Status)
	case r.Verdict == stats.NoChange:
		return "~"
	}
	return string(r.Verdict)
}

func notesText(notes []string) string {
	var out []string
	for _, n := range notes {
		switch n {
		case compare.NoteHost:
			out = append(out, "host")
		case compare.NoteVersion:
			out = append(out, "version")
		case compare.NotePartial:
			out = append(out, "partial")
		default:
			out = append(out, n)
		}
	}
	return strings.Join(out, ", ")
}

// valueText prints a median in its unit, milliseconds of 1000 and more in
// seconds, with three significant figures; a dash for none.
func valueText(v *float64, unit string) string {
	if v == nil {
		return "—"
	}
	x := *v
	if unit == "ms" && math.Abs(x) >= 1000 {
		x, unit = x/1000, "s"
	}
	a := math.Abs(x)
	var s string
	switch {
	case a == 0:
		s = "0"
	case a >= 100:
		s = fmt.Sprintf("%.0f", x)
	case a >= 10:
		s = fmt.Sprintf("%.1f", x)
	case a >= 1:
		s = fmt.Sprintf("%.2f", x)
	default:
		s = fmt.Sprintf("%.*f", 2-int(math.Floor(math.Log10(a))), x)
	}
	return s + " " + unit
}

// pText prints a p- or q-value with three decimals, "<0.001" below.
func pText(p *float64) string {
	switch {
	case p == nil:
		return "—"
	case *p < 0.001:
		return "<0.001"
	}
	return fmt.Sprintf("%.3f", *p)
}

// shiftText is the Hodges–Lehmann shift in percent of the base median with
// its confidence interval, "+33.3% (+31…+36)" (pct is the sign after the
// estimate: "%", or "" under a header that says it); "(—)" when the passes
// are too few for an interval, the shift in the test's unit when the base
// median is 0.
func shiftText(r compare.Row, pct string) string {
	bound := func(v *float64) string {
		switch {
		case v == nil:
			return ""
		case math.Abs(*v) >= 10:
			return fmt.Sprintf("%+.0f", *v)
		}
		return fmt.Sprintf("%+.1f", *v)
	}
	ci := func(iv *compare.Interval) string {
		if iv.Lo == nil || iv.Hi == nil {
			return "(—)"
		}
		return "(" + bound(iv.Lo) + "…" + bound(iv.Hi) + ")"
	}
	switch {
	case r.ShiftBeyond != 0:
		return beyondText(r)
	case r.ShiftPct != nil:
		return fmt.Sprintf("%+.1f%s %s", r.ShiftPct.Estimate, pct, ci(r.ShiftPct))
	case r.Shift != nil:
		return fmt.Sprintf("%+g %s %s", r.Shift.Estimate, r.Unit, ci(r.Shift))
	}
	return "—"
}

// beyondText is a shift among the passes that gave no value: infinite,
// in the direction that is worse (or better) for the test.
func beyondText(r compare.Row) string {
	if (r.ShiftBeyond > 0) == r.LowerIsBetter {
		return "+∞"
	}
	return "−∞"
}

func changeText(r compare.Row) string {
	switch {
	case r.ChangePct != nil:
		return fmt.Sprintf("%+.1f%%", *r.ChangePct)
	case r.Status == compare.Compared && r.Base.Median != nil && r.New.Median != nil && *r.Base.Median == 0:
		if *r.New.Median > 0 {
			return "+∞"
		}
		return "−∞"
	}
	return "—"
}

// wrap breaks text into lines of at most workloads.TableWidth columns, the
// lines after the first indented.
func wrap(text, indent string) string {
	lead := text[:len(text)-len(strings.TrimLeft(text, " "))]
	var b strings.Builder
	b.WriteString(lead)
	line := len(lead)
	for i, word := range strings.Fields(text) {
		n := len([]rune(word))
		switch {
		case i > 0 && line+1+n > workloads.TableWidth:
			b.WriteString("\n" + indent)
			line = len(indent)
		case i > 0:
			b.WriteByte(' ')
			line++
		}
		b.WriteString(word)
		line += n
	}
	return b.String()
}

// writeAtomic writes a file through a temporary beside it, renamed into
// place when write succeeds: a failure leaves nothing half-written.
func writeAtomic(path string, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// writeComparisonMarkdown is the comparison as Markdown: a headline with
// the verdicts, the regressions and what kept a verdict from being
// reached, then one table per workload, the legend and the warnings.
func writeComparisonMarkdown(w io.Writer, c *compare.Comparison, o CompareOptions, nBase, nNew int) error {
	b := &strings.Builder{}
	parts := verdictCounts(c.Rows)
	head := "no regression"
	switch regs := c.Regressions(); {
	case len(c.Incomplete) > 0:
		head = "no verdict: a side did not finish"
	case len(regs) == 1:
		head = "1 regression"
	case len(regs) > 1:
		head = fmt.Sprintf("%d regressions", len(regs))
	case len(c.Inconclusive()) > 0:
		head = "no verdict: inconclusive"
	case c.Verdicts() == 0:
		head = "no verdict: nothing could be compared"
	}
	fmt.Fprintf(b, "## hlsbench compare: %s\n\n", head)
	bs, ns := sidesText(o)
	fmt.Fprintf(b, "base: `%s` (%s) · new: `%s` (%s) · %d tests: %s.\n\n", bs, runsText(nBase), ns, runsText(nNew), len(c.Rows), strings.Join(parts, ", "))
	for _, s := range c.Incomplete {
		fmt.Fprintf(b, "- **incomplete**: %s\n", mdEscape(s))
	}
	for _, r := range c.Regressions() {
		q := "q = " + pText(r.Q)
		if strings.HasPrefix(pText(r.Q), "<") {
			q = "q < 0.001"
		}
		fmt.Fprintf(b, "- **regression**: %s %s: %s → %s, shift %s, %s\n", mdEscape(engineLabel(r)), r.ID,
			valueText(r.Base.Median, r.Unit), valueText(r.New.Median, r.Unit), shiftText(r, "%"), q)
	}
	if len(c.Incomplete) > 0 || len(c.Regressions()) > 0 {
		b.WriteString("\n")
	}
	for i := 0; i < len(c.Rows); {
		j := i
		for j < len(c.Rows) && c.Rows[j].Workload == c.Rows[i].Workload {
			j++
		}
		fmt.Fprintf(b, "### %s\n\n| engine | test | base | new | n | shift (%g%% CI) | q | verdict |\n|---|---|---:|---:|---:|---:|---:|---|\n",
			c.Rows[i].Workload, 100*(1-c.Alpha))
		for _, r := range c.Rows[i:j] {
			v := verdictText(r)
			if r.Verdict == stats.Regression {
				v = "**regression**"
			}
			if r.Reason != "" && (r.Status != compare.Compared || r.Verdict == stats.NotComparable || r.Verdict == compare.Inconclusive || r.Outright) {
				v += ": " + r.Reason
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s | %d/%d | %s | %s | %s |\n", mdEscape(engineLabel(r)), r.Test,
				valueText(r.Base.Median, r.Unit), valueText(r.New.Median, r.Unit), len(r.Base.Values), len(r.New.Values),
				shiftText(r, "%"), pText(r.Q), mdEscape(v))
		}
		b.WriteString("\n")
		i = j
	}
	fmt.Fprintf(b, "Regression or improvement: q < %g (the U test's p adjusted by Benjamini–Hochberg over %d tests) and a shift of at least %g%% (%g ms for a latency: the generator's timing tolerance).\n",
		c.Alpha, c.Verdicts(), c.Threshold, c.ToleranceMs)
	if len(c.Warnings) > 0 {
		b.WriteString("\n")
		for _, warn := range c.Warnings {
			fmt.Fprintf(b, "- warning: %s\n", mdEscape(warn))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// mdEscape keeps a table cell's text from breaking the table.
func mdEscape(s string) string {
	return strings.NewReplacer("|", "\\|", "\n", " ").Replace(s)
}

func plural(many bool, s, one string) string {
	if many {
		return s
	}
	return one
}

// sidesText names what each side is: its files, or the variants of one
// suite ("nightly/suite: base-builtin, base-varnish").
func sidesText(o CompareOptions) (base, new string) {
	if o.New == "" {
		return o.Base + ": " + strings.Join(o.BaseNames, ", "), o.Base + ": " + strings.Join(o.NewNames, ", ")
	}
	return o.Base, o.New
}

// verdictCounts counts the rows by verdict, "3 regressions", "1 not
// compared" and so on, in a fixed order, leaving out the kinds with none.
func verdictCounts(rows []compare.Row) []string {
	counts := map[string]int{}
	for _, r := range rows {
		switch {
		case r.Status != compare.Compared:
			counts["not compared"]++
		default:
			counts[string(r.Verdict)]++
		}
	}
	var parts []string
	for _, k := range []string{"regression", "improvement", "no significant change", "inconclusive", "not comparable", "not compared"} {
		if n := counts[k]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s%s", n, k, plural(n > 1 && (k == "regression" || k == "improvement"), "s", "")))
		}
	}
	return parts
}
