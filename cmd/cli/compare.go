package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
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
	// Threshold is in percent of the base median.
	Threshold    float64
	Alpha        float64
	ResolutionMs float64
	JSON         bool
}

func newCompareCmd(stdout, stderr io.Writer) *cobra.Command {
	o := CompareOptions{}
	c := &cobra.Command{
		Use:   "compare BASE NEW",
		Short: "Compare two sets of runs per engine and test: medians, change, p-value, verdict",
		Long: `Compare two sets of runs per engine and test: medians, change, p-value, verdict.

BASE and NEW are each a run file or a directory, which stands for every
run-*.json in it (a suite); several runs are merged per engine, workload and
test. Only the valid measured passes count: not warm-ups, not invalid passes
(a test with some invalid passes is compared on its valid ones, noted
"partial" with a warning). A test with no valid pass, missing, or without a
value on either side is listed as such and never compared. base and new are the medians of the passes' own values
(a pass's p99, say), so they can differ from a run's headline value, which
merges every request of its passes.

The verdict is a regression (or an improvement) when the two-sided Mann-Whitney
U test gives p < --alpha and the median moved by at least --threshold percent in
the direction that is worse (or better) for the test; ~ (no significant change)
otherwise. It is "not comparable" when a side has too few valid passes for the
test ever to reach p < --alpha: 3 against 3 can never reach 0.05, 4 against 4
can; or when the medians differ but the values tie so often that no split of
them could (six passes of 0 against 0,0,1,1,1,1: p is at least 0.061). Up to 50
passes a side p is exact, from the distribution of U given the ties; above, the
normal approximation with tie correction.

A workload's conditions (rate, connections, object and range sizes, burst,
phases, pass duration, timeout) must be the same on both sides and within each;
pass counts may differ. Another host (CPU model or hostname) or engine version
is noted on the row and warned about under the tables.

Exit codes: 0 no significant regression; 1 at least one regression (listed on
stderr) or a failure; 2 bad input: an unreadable file, a newer schema, a
workload under different conditions, nothing in common, bad flags.`,
		Example: `  hlsbench compare ~/.local/share/hlsbench/runs/run-20260101T101010Z-1a2b3c4d.json run-20260102T090000Z-5e6f7a8b.json
  hlsbench compare suites/before suites/after
  hlsbench compare --threshold 2 --alpha 0.01 --json before/ after/`,
		Args: exactArgs(2, "BASE and NEW, each a run file or a directory of them"),
		RunE: func(c *cobra.Command, args []string) error {
			o.Base, o.New = args[0], args[1]
			return RunCompare(c.Context(), stdout, stderr, o)
		},
	}
	f := c.Flags()
	f.Float64Var(&o.Threshold, "threshold", stats.DefaultThreshold, "smallest change of the median, in percent, reported as a regression or an improvement")
	f.Float64Var(&o.Alpha, "alpha", stats.DefaultAlpha, "significance level of the U test")
	f.Float64Var(&o.ResolutionMs, "resolution", compare.DefaultResolutionMs, "smallest change of a latency's median, in ms, reported as a regression or an improvement (the generator's timing tolerance)")
	f.BoolVar(&o.JSON, "json", false, "print one JSON object: the rows (typed) and the warnings")
	return c
}

// checkJudge checks the flags of compare's statistics, which report's
// ties share.
func checkJudge(threshold, alpha, resolutionMs float64) error {
	switch {
	case !(alpha > 0 && alpha < 1):
		return usagef("--alpha %g: want a level between 0 and 1, e.g. 0.05", alpha)
	case !(threshold >= 0) || math.IsInf(threshold, 0):
		return usagef("--threshold %g: want a percentage, 0 or more, e.g. 5", threshold)
	case !(resolutionMs >= 0) || math.IsInf(resolutionMs, 0):
		return usagef("--resolution %g: want milliseconds, 0 or more, e.g. 0.05", resolutionMs)
	}
	return nil
}

// errRegression reports a comparison that found a regression (exit 1).
var errRegression = errors.New("significant regression")

// RunCompare is `hlsbench compare`.
func RunCompare(ctx context.Context, stdout, stderr io.Writer, o CompareOptions) error {
	if err := checkJudge(o.Threshold, o.Alpha, o.ResolutionMs); err != nil {
		return err
	}
	base, err := compare.Load(o.Base)
	if err != nil {
		return usagef("BASE: %v", err)
	}
	nw, err := compare.Load(o.New)
	if err != nil {
		return usagef("NEW: %v", err)
	}
	c, err := compare.Runs(base, nw, compare.Options{Threshold: o.Threshold, Alpha: o.Alpha, ResolutionMs: o.ResolutionMs})
	if err != nil {
		return usageError{err}
	}
	if o.JSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(c); err != nil {
			return err
		}
	} else {
		writeComparison(stdout, c, o, len(base), len(nw))
	}
	if regs := c.Regressions(); len(regs) > 0 {
		var names []string
		for _, r := range regs {
			names = append(names, fmt.Sprintf("%s %s %s", engineLabel(r), r.ID, changeText(r)))
		}
		return fmt.Errorf("%w: %s", errRegression, strings.Join(names, ", "))
	}
	return nil
}

// writeComparison prints one table per workload, the reasons rows were not
// compared under it, then a legend, the warnings and a count of verdicts.
func writeComparison(w io.Writer, c *compare.Comparison, o CompareOptions, nBase, nNew int) {
	fmt.Fprintf(w, "base: %s (%s)\nnew:  %s (%s)\n", o.Base, runsText(nBase), o.New, runsText(nNew))
	counts := map[string]int{}
	notes := false
	for _, r := range c.Rows {
		notes = notes || len(r.Notes) > 0
	}
	for i := 0; i < len(c.Rows); {
		j := i
		for j < len(c.Rows) && c.Rows[j].Workload == c.Rows[i].Workload {
			j++
		}
		writeWorkload(w, c.Rows[i:j], notes, counts)
		i = j
	}
	fmt.Fprintln(w)
	legend := fmt.Sprintf("base, new: median of the valid measured passes' own values; n: how many, base/new; "+
		"change: new vs base; p: two-sided Mann-Whitney U; ~: no significant change (p ≥ %g, |change| < %g%%, or under %g ms for a latency)", c.Alpha, c.Threshold, c.ResolutionMs)
	if notes {
		legend += "; note: another host or engine version, or partial: invalid passes left out (see the warnings)"
	}
	fmt.Fprintln(w, wrap(legend, "  "))
	for _, warn := range c.Warnings {
		fmt.Fprintln(w, wrap("warning: "+warn, "  "))
	}
	var parts []string
	for _, k := range []string{"regression", "improvement", "no significant change", "not comparable", "not compared"} {
		if n := counts[k]; n > 0 {
			s := fmt.Sprintf("%d %s", n, k)
			if n > 1 && (k == "regression" || k == "improvement") {
				s += "s"
			}
			parts = append(parts, s)
		}
	}
	tests := "tests"
	if len(c.Rows) == 1 {
		tests = "test"
	}
	fmt.Fprintf(w, "%d %s: %s.\n", len(c.Rows), tests, strings.Join(parts, ", "))
}

func writeWorkload(w io.Writer, rows []compare.Row, notes bool, counts map[string]int) {
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
	fmt.Fprintf(tw, "%s\t%s\tbase\tnew\tn\tchange\tp\t  %s  %s\n", left("engine", engW), left("test", testW), left("verdict", verdW), note)
	var why []string
	last := ""
	for _, r := range rows {
		eng := engineLabel(r)
		name := eng
		if eng == last {
			name = ""
		}
		last = eng
		p := "—"
		if r.P != nil {
			p = fmt.Sprintf("%.3f", *r.P)
			if *r.P < 0.001 {
				p = "<0.001"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d/%d\t%s\t%s\t  %s  %s\n", left(name, engW), left(r.Test, testW),
			valueText(r.Base.Median, r.Unit), valueText(r.New.Median, r.Unit), len(r.Base.Values), len(r.New.Values),
			changeText(r), p, left(verdictText(r), verdW), notesText(r.Notes))
		switch {
		case r.Status != compare.Compared:
			counts["not compared"]++
			why = append(why, fmt.Sprintf("%s %s: %s: %s", eng, r.Test, r.Status, r.Reason))
		case r.Verdict == stats.NotComparable:
			counts["not comparable"]++
			why = append(why, fmt.Sprintf("%s %s: not comparable: %s", eng, r.Test, r.Reason))
		default:
			counts[string(r.Verdict)]++
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
