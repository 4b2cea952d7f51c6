package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/hlsbench/hlsbench/results"
)

// csvHeader names the CSV's columns. A row is a test's value for a cell
// (pass "all") or one measured pass's value (pass 1, 2, …). A rate
// workload's rows have the rate offered and carried (the cell's: the
// median of its passes); saturated_passes counts the saturated passes (a
// pass's row: 1 or 0), and saturated_value is a latency cell's over them:
// what a client saw, not in value; spoiled_passes counts the passes the
// host or the instrument spoiled (a pass's row: 1 or 0), left out of the
// value and not against a valid cell. lower_bound says a value is a lower
// bound and why (a capacity the generator ran out on, or at the
// instrument's limit), instrument_ceiling marks the null engine's
// capacity, mib_per_s is a capacity's body carried. An invalid row (valid
// false) has no value: what was seen is in seen_value, and no_value says
// why it is not the row's value.
var csvHeader = []string{"workload", "test", "title", "engine", "version", "runtime", "topology", "pass",
	"value", "unit", "lower_is_better", "valid", "no_value", "valid_passes", "measured_passes",
	"min", "median", "max", "requests", "errors", "engine_cpu_ms_per_1000", "engine_peak_rss_bytes",
	"offered_rps", "achieved_rps", "saturated_passes", "saturated_value", "spoiled_passes", "lower_bound", "instrument_ceiling", "mib_per_s", "source", "seen_value"}

// WriteCSV writes every figure of the report: each cell's value and each
// of its measured passes. A figure with nothing measured is empty, with
// its reason in no_value; never 0.
func WriteCSV(w io.Writer, rep *Report) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return err
	}
	for _, wl := range rep.Workloads {
		for _, t := range wl.Tests {
			for _, c := range t.Rows() {
				row := []string{t.Workload, t.Name, t.Title, c.Engine, c.Version, c.Runtime, c.Topology, "all",
					num(c.Value), t.Unit, strconv.FormatBool(t.LowerIsBetter), strconv.FormatBool(c.Valid), c.NoValue,
					strconv.Itoa(c.ValidPasses), strconv.Itoa(c.MeasuredPasses), "", "", "",
					strconv.FormatInt(c.Requests, 10), strconv.FormatInt(c.Errors, 10), "", "", "", "", "", "", "",
					c.LowerBound, strconv.FormatBool(c.InstrumentCeiling), num(c.MiBPerSecond), c.Source, ""}
				if !c.Valid && c.Value != nil {
					invalidRow(row, c.Invalid, "")
				}
				if c.Spread != nil {
					row[15], row[16], row[17] = fnum(c.Spread.Min), fnum(c.Spread.Median), fnum(c.Spread.Max)
				}
				row[20] = num(c.CPUMsPer1000)
				if c.PeakRSSBytes != nil {
					row[21] = strconv.FormatInt(*c.PeakRSSBytes, 10)
				}
				row[22], row[23], row[25] = num(c.OfferedRPS), num(c.AchievedRPS), num(c.SaturatedValue)
				if c.MeasuredPasses > 0 {
					row[24], row[26] = strconv.Itoa(c.SaturatedPasses), strconv.Itoa(c.SpoiledPasses)
				}
				if err := cw.Write(row); err != nil {
					return err
				}
				for _, p := range c.Passes {
					pr := make([]string, len(csvHeader))
					copy(pr, []string{t.Workload, t.Name, t.Title, c.Engine, c.Version, c.Runtime, c.Topology, strconv.Itoa(p.Index),
						num(p.Value), t.Unit, strconv.FormatBool(t.LowerIsBetter), strconv.FormatBool(p.Valid), p.NoValue})
					if p.OfferedRPS > 0 {
						pr[22], pr[23] = fnum(p.OfferedRPS), fnum(p.AchievedRPS)
					}
					pr[24], pr[26] = "0", "0"
					if p.Saturated != "" {
						pr[24] = "1"
					}
					if p.Spoiled {
						pr[26] = "1"
					}
					pr[len(pr)-2] = c.Source
					if !p.Valid && p.Value != nil {
						invalidRow(pr, append(c.Invalid[:len(c.Invalid):len(c.Invalid)], c.Spoiled...), fmt.Sprintf("pass %d: ", p.Index))
					}
					if err := cw.Write(pr); err != nil {
						return err
					}
				}
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// invalidRow moves an invalid row's value to seen_value: a reader summing
// the value column must not take in a figure the run rejected. Its
// no_value says why, from the reasons (the pass's own, those starting
// with prefix, when prefix is set).
func invalidRow(row, reasons []string, prefix string) {
	row[len(row)-1], row[8] = row[8], ""
	if row[12] != "" {
		return
	}
	row[12] = "invalid: its value is in seen_value"
	for _, why := range reasons {
		if prefix == "" || strings.HasPrefix(why, prefix) {
			row[12] = "invalid: " + why
			break
		}
	}
}

func num(v *float64) string {
	if v == nil {
		return ""
	}
	return fnum(*v)
}

// fnum is a figure in full: the CSV is for computing, not reading.
func fnum(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// WriteMarkdown writes the report as Markdown, for a README or a pull
// request's comment. Charts are linked by their relative paths.
func WriteMarkdown(w io.Writer, rep *Report) error {
	ew := &errWriter{w: w}
	p := ew.printf
	p("# %s\n\n", rep.Title)
	cited := map[string]bool{}
	if len(rep.Verdict) > 0 {
		p("## Verdict\n\n")
		for _, v := range rep.Verdict {
			p("- **%s:** %s%s\n", v.Job, mdEscape(v.Text), mdCites(v.Cites))
			for _, c := range v.Cites {
				cited[c.Anchor], cited[c.LeaderAnchor] = true, true
			}
		}
		p("\n")
	}
	if len(rep.Engines) > 0 {
		p("| Engine | Versions measured | Topologies | Notes |\n|---|---|---|---|\n")
		for _, e := range rep.Engines {
			p("| %s | %s | %s | %s |\n", mdEscape(e.Engine), mdEscape(orDash(strings.Join(e.Versions, ", "))), strings.Join(e.Topologies, ", "), mdEscape(e.Note))
		}
		p("\n")
	}
	p("%s\n\n", rep.Summary)
	if len(rep.Warnings) > 0 {
		p("> **Read first.**\n")
		for _, s := range rep.Warnings {
			p("> - %s\n", mdEscape(s))
		}
		p("\n")
	}
	p("## What did we learn?\n\n")
	for _, s := range rep.Learned {
		p("- %s\n", mdEscape(s))
	}
	p("\n")
	for _, wl := range rep.Workloads {
		p("## %s\n\n", wl.Title)
		if wl.Description != "" {
			p("%s.\n\n", strings.TrimSuffix(wl.Description, "."))
		}
		for _, f := range wl.Conditions {
			p("- %s: %s\n", f.Label, mdEscape(f.Value))
		}
		p("\n")
		for _, t := range wl.Tests {
			p("### %s\n\n", t.Title)
			p("%s, %s%s.\n\n", unitName(t), direction(t.LowerIsBetter), sloNote(t))
			p("![%s](charts/%s.png)\n\n", mdEscape(t.Title), t.Slug)
			if t.Unranked() {
				p("%s.\n\n", saturatedNote)
			}
			if t.Rated() {
				p("| Engine | Value | Rate carried | Valid passes | Spread of valid passes |\n|---|---:|---|---:|---|\n")
			} else {
				p("| Engine | Value | Valid passes | Spread of valid passes |\n|---|---:|---:|---|\n")
			}
			for _, c := range t.Rows() {
				spread := spreadText(c, t.Unit)
				if a := RowAnchor(t, c); cited[a] {
					// The verdict links here, at the row's end so that
					// the row still starts with its engine.
					spread += ` <a id="` + a + `"></a>`
				}
				if t.Rated() {
					p("| %s | %s | %s | %s | %s |\n", mdEscape(c.Label), mdEscape(cellValue(c, t.Unit)), mdEscape(carriedText(c)), passesText(c), spread)
					continue
				}
				p("| %s | %s | %s | %s |\n", mdEscape(c.Label), mdEscape(cellValue(c, t.Unit)), passesText(c), spread)
			}
			if t.Builds != "" {
				p("\n%s.\n", mdEscape(t.Builds))
			}
			p("\n%s\n\n", mdEscape(t.Finding))
			if t.Meaning != "" {
				p("%s\n\n", mdEscape(t.Meaning))
			}
		}
		for _, c := range wl.Curves {
			p("### %s\n\n", c.Title)
			p("%s.\n\n", curveText(c))
			p("![%s](charts/%s.png)\n\n", mdEscape(c.Title), c.Slug)
			p("| Engine |")
			for _, s := range c.Sizes {
				p(" %s |", sizeText(s))
			}
			p("\n|---|%s\n", strings.Repeat("---:|", len(c.Sizes)))
			for _, l := range c.Lines {
				p("| %s |", mdEscape(l.Label))
				for _, pt := range l.Points {
					p(" %s |", mdEscape(cellValue(pt, c.Unit)))
				}
				p("\n")
			}
			p("\n")
		}
		if len(wl.Cost) > 0 {
			if wl.CostByTest() {
				p("Engine cost in this workload:\n\n| Engine | Tests | CPU-ms per 1000 requests | Peak RSS |\n|---|---|---:|---:|\n")
			} else {
				p("Engine cost in this workload:\n\n| Engine | CPU-ms per 1000 requests | Peak RSS |\n|---|---:|---:|\n")
			}
			for _, c := range wl.Cost {
				if wl.CostByTest() {
					p("| %s | %s | %s | %s |\n", mdEscape(c.Label), mdEscape(costTests(c)), c.CPUText(), rssText(c.PeakRSSBytes))
					continue
				}
				p("| %s | %s | %s |\n", mdEscape(c.Label), c.CPUText(), rssText(c.PeakRSSBytes))
			}
			p("\n")
		}
		p("**Takeaway:** %s\n\n", mdEscape(wl.Takeaway))
	}
	if len(rep.Claims) > 0 {
		p("## %s\n\n", claimsTitle)
		for _, s := range rep.ClaimsNote {
			p("%s\n\n", mdEscape(s))
		}
		p("| Their section | Their claim | Ours | Same? | Why |\n|---|---|---|---|---|\n")
		for _, c := range rep.Claims {
			ours := mdEscape(c.Ours)
			if c.Slug != "" {
				ours += " ([table](#" + c.Slug + "))"
			}
			p("| %s | %s | %s | **%s** | %s |\n", mdEscape(c.Section), mdEscape(c.Claim), ours, c.Status, mdEscape(c.Why))
		}
		p("\n")
	}
	p("## Test conditions\n\n")
	if len(rep.Parts) > 0 {
		p("How the page was measured, part by part")
		if t := partsTotal(rep.Parts); t != "" {
			p(" (%s in all)", t)
		}
		p(":\n\n| Part | Workloads | Duration | Host | Build |\n|---|---|---:|---|---|\n")
		for _, pt := range rep.Parts {
			p("| %s | %s | %s | %s | %s |\n", mdEscape(pt.Name), mdEscape(strings.Join(pt.Workloads, ", ")), pt.DurationText(),
				mdEscape(joinOr(pt.Hosts, "unknown")), mdEscape(joinOr(pt.Builds, "unknown")))
		}
		p("\n")
	}
	for _, f := range rep.Conditions {
		p("- **%s:** %s\n", f.Label, mdEscape(f.Value))
	}
	p("\n## What this does not prove\n\n")
	for _, s := range rep.Caveats {
		if rest, ok := strings.CutPrefix(s, "· "); ok {
			p("  - %s\n", mdEscape(rest))
			continue
		}
		p("- %s\n", mdEscape(s))
	}
	p("\n## Result files\n\n")
	for _, s := range rep.Sources {
		p("- [%s](runs/%s) (%s, %s)\n", s.Name, s.Name, s.Run.ID, s.Run.Status)
	}
	if rep.manifest {
		p("- [%s](runs/%s) (the suite's cells)\n", results.ManifestName, results.ManifestName)
	}
	return ew.err
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// mdCites are a verdict line's links to the rows it rests on.
func mdCites(cs []Cite) string {
	var l []string
	for _, c := range cs {
		l = append(l, fmt.Sprintf("[%s, %s](#%s)", mdEscape(c.Title), topologyName(c.Topology), c.Anchor))
	}
	if len(l) == 0 {
		return ""
	}
	return " (rows: " + strings.Join(l, "; ") + ")"
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, a ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, a...)
	}
}

// mdEscape keeps a cell's text from breaking a table or starting markup.
func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "*", `\*`, "_", `\_`, "`", "\\`", "<", "&lt;", "\n", " ").Replace(s)
}

func cellValue(c Cell, unit string) string {
	if c.Unranked {
		return saturatedValueText(c, unit)
	}
	if c.Value == nil {
		return "no value: " + c.NoValue
	}
	return boundedValue(c, unit)
}

// boundedValue is a cell's value with what it is: "≥ 24000 rps (the
// generator ran out at 48000 rps)", "30000 rps (the instrument's
// ceiling)", and a capacity's body carried beside it.
func boundedValue(c Cell, unit string) string {
	s := valueWithBound(c, unit)
	if c.MiBPerSecond != nil {
		s += ", " + results.Sig3(*c.MiBPerSecond) + " MiB/s"
	}
	return s
}

// valueWithBound is a cell's value with what it is, without the body
// carried: "≥ 24000 rps (the generator ran out at 48000 rps)".
func valueWithBound(c Cell, unit string) string {
	s := valueText(*c.Value, unit)
	switch {
	case c.LowerBound != "":
		s = "≥ " + s + " (" + c.Bound() + ")"
	case c.InstrumentCeiling && c.Limit != "":
		s += " (the instrument's ceiling, " + c.Limit + ")"
	case c.InstrumentCeiling:
		s += " (the instrument's ceiling)"
	case c.CeilingBeaten != "":
		s += " (null is no ceiling here)"
	case c.NoCeiling:
		s += " (no ceiling measured)"
	}
	if c.SLO != "" && c.ownSLO {
		s += " within " + c.SLO
	}
	return s
}

// rateText is a rate in requests per second, to a tenth: "199.6", "500".
func rateText(v float64) string {
	return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
}

// carriedText is a cell's rate column: "199.6 of 500 rps", with "saturated
// in k of n passes: " before it when some were; "—" without a rate.
func carriedText(c Cell) string {
	s := "—"
	if c.OfferedRPS != nil && c.AchievedRPS != nil {
		s = fmt.Sprintf("%s of %s rps", rateText(*c.AchievedRPS), rateText(*c.OfferedRPS))
	}
	sat := c.saturatedText()
	if c.LimitedBy != "" && sat != "" {
		sat = "at " + c.LimitedBy + "'s limit in " + strings.TrimPrefix(sat, "saturated in ")
	}
	switch {
	case sat == "":
		return s
	case s == "—":
		return sat
	case !c.Saturated():
		// Judged on its other passes: the rate first, as for any cell.
		return s + "; " + sat
	}
	return sat + ": carried " + s
}

// sloNote is a capacity's service level beside its unit: "; each figure
// the highest rate within p99 TTFB ≤ 10 ms".
func sloNote(t Test) string {
	if slo := t.SLO(); slo != "" {
		return "; each figure is the highest rate served within " + slo
	}
	return ""
}

// saturatedValueText is the value column of a cell saturation took out of
// the ranking: what a client saw, never shown as the engine's TTFB, and
// its valid passes' value beside it when it has one.
func saturatedValueText(c Cell, unit string) string {
	s := "saturated, not ranked"
	if c.LimitedBy != "" {
		s = "at " + c.LimitedBy + "'s limit, as null is: not ranked"
	}
	if c.SaturatedValue != nil {
		s += "; what a client saw: " + valueText(*c.SaturatedValue, unit) + ", queueing included, not a TTFB"
	}
	if c.Value != nil {
		s += fmt.Sprintf("; its %d valid %s: %s", c.ValidPasses, plural(c.ValidPasses, "pass", "passes"), valueText(*c.Value, unit))
	}
	return s
}

// saturatedNote says what a hatched bar is, for a test that has one.
const saturatedNote = "Hatched bars are saturated cells: the engine did not carry the offered rate, or requests waited for a free connection, so the bar is what a client saw, queueing included, not the engine's TTFB; they are not ranked"

// curveText says what a curve's chart shows.
func curveText(c Curve) string {
	return fmt.Sprintf("%s at each %s, a line per engine, %s: each point is that size's test above (its valid passes); a size without a value breaks the line",
		c.What, c.SizeLabel, direction(c.LowerIsBetter))
}

func passesText(c Cell) string {
	if c.MeasuredPasses == 0 {
		return "—"
	}
	s := fmt.Sprintf("%d of %d", c.ValidPasses, c.MeasuredPasses)
	if c.SpoiledPasses > 0 {
		s += fmt.Sprintf("; %d of %d spoiled by the host or the instrument", c.SpoiledPasses, c.MeasuredPasses)
	}
	return s
}

func spreadText(c Cell, unit string) string {
	switch {
	case c.Spread == nil || c.Spread.N < 2:
		return "—"
	case c.Spread.Min == c.Spread.Max:
		return "all " + valueText(c.Spread.Min, unit)
	}
	return valueText(c.Spread.Min, unit) + " – " + valueText(c.Spread.Max, unit)
}

// costTests names the tests a cost row was measured in; "all" when one.
func costTests(c Cost) string {
	if len(c.Tests) == 0 {
		return "all"
	}
	return strings.Join(c.Tests, "; ")
}

func costText(v *float64) string {
	if v == nil {
		return "not measured"
	}
	return results.Sig3(*v)
}

// CPUText is the CPU-ms per 1000 requests, with the interrupts on the
// engine's CPUs when they were measured.
func (c Cost) CPUText() string {
	s := costText(c.CPUMsPer1000)
	if c.IRQ != nil && c.NetIRQ != nil {
		s += fmt.Sprintf(" (interrupts %.0f %% of its CPU, %.0f %% network softirqs)", *c.IRQ, *c.NetIRQ)
	}
	return s
}

func rssText(v *int64) string {
	if v == nil {
		return "not measured"
	}
	return results.Sig3(float64(*v)/1e6) + " MB"
}

// unitName says what a test's unit counts.
func unitName(t Test) string {
	switch {
	case t.UnitName != "":
		return t.UnitName
	case t.Unit == "ms":
		return "Milliseconds"
	case t.Unit == "s":
		return "Seconds"
	case t.Unit == "bytes":
		return "Bytes"
	case t.Unit == "x":
		return "Ratio (x)"
	case t.Unit == "%":
		return "Percent"
	case t.Unit == "answers":
		return "Answers"
	case t.Unit == "per 1000 answers":
		return "Stale answers per 1000 answers whose staleness the origin's stamp proves"
	case t.Unit == "bans":
		return "Bans on the engine's list"
	}
	return "Unit: " + t.Unit
}

func direction(lower bool) string {
	if lower {
		return "lower is better"
	}
	return "higher is better"
}
