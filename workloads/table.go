package workloads

import (
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/hlsbench/hlsbench/results"
)

// TableWidth is what the tables are laid out for.
const TableWidth = 100

// maxCauses bounds the reasons printed under a table; the rest are counted.
const maxCauses = 8

// WriteTable prints one workload's results, one row per engine and test, and
// under it a legend and the reasons any pass was invalid, each cause once.
func WriteTable(w io.Writer, spec Spec, all []*results.Result) {
	var rs []*results.Result
	for _, r := range all {
		if r.Workload == spec.Name {
			rs = append(rs, r)
		}
	}
	if len(rs) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s\n", wrap(spec.Title+" — "+spec.Description, TableWidth, "", "  "))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	rated := slices.ContainsFunc(rs, func(r *results.Result) bool { return r.OfferedRPS != nil })
	// One direction for every test is said once, under the table, and so
	// are the directions beside a carried column, which needs the width.
	oneWay := !slices.ContainsFunc(rs, func(r *results.Result) bool { return r.LowerIsBetter != rs[0].LowerIsBetter })
	perRow := !oneWay && !rated
	head := "  engine\ttest\tvalue [min–max]"
	capCols := spec.Ranked()
	if capCols {
		head += "\tMiB/s\tCPU-ms/1k"
	}
	if rated {
		head += "\tcarried"
	}
	if perRow {
		head += "\tbetter"
	}
	fmt.Fprintln(tw, head+"\tvalid")
	last := ""
	causes := newCauses()
	host := newCauses()
	var bounds []string
	spoiled := false
	verdicts := map[string]bool{} // the invalid cells' labels shown
	host.header = "the host's part (its lateness rejects no pass; a spoiled attempt was run again):"
	for _, r := range rs {
		causes.tests[EngineLabel(r)]++
		host.tests[EngineLabel(r)]++
	}
	for _, r := range rs {
		eng := EngineLabel(r)
		name := eng
		if eng == last {
			name = ""
		}
		last = eng
		value := FormatValue(r)
		if r.Value != nil && r.LowerBound != "" {
			// The why goes under the table: it does not fit a column.
			value = "≥ " + formatValue(r)
			bounds = append(bounds, fmt.Sprintf("%s, %s: at least %s (%s)", eng, r.Title, formatValue(r), r.LowerBound))
		}
		if why, k := invalidBy(r); why != "" {
			value = invalidText(r, why, k)
			verdicts[why] = true
			if why != bySaturation && strings.Contains(value, ", saw ") {
				verdicts[seenValid] = true
			}
		}
		row := "  " + name + "\t" + r.Title + "\t" + value
		if capCols {
			row += "\t" + sig3OrDash(r.MiBPerSecond) + "\t" + sig3OrDash(r.EngineCPUMsPer1000)
		}
		if rated {
			row += "\t" + carriedText(r)
		}
		if perRow {
			row += "\t" + better(r)
		}
		valid := fmt.Sprintf("%d/%d", r.ValidPasses, r.MeasuredPasses)
		if r.SpoiledPasses > 0 {
			// In parentheses, to keep the table's width: said under it.
			valid += fmt.Sprintf(" (%d)", r.SpoiledPasses)
			spoiled = true
		}
		fmt.Fprintf(tw, "%s\t%s\n", row, valid)
		causes.add(eng, r)
		host.addHost(eng, r)
	}
	tw.Flush()
	legend := "value: the test's figure over its valid measured passes; [min–max]: the valid passes' own values; valid: valid of measured passes"
	switch {
	case oneWay:
		legend += "; " + better(rs[0]) + " is better for every test"
	case !perRow:
		legend += "; " + directions(rs)
	}
	if spoiled {
		// Said where the count is shown: a cell with such passes may still
		// be valid, and why.
		legend += "; (k): k passes the host or the instrument spoiled (the generator's own lateness, other processes, stalls), not the engine: left out of the value, and the test stays valid while its valid passes are at least half of the measured ones"
	}
	fmt.Fprintln(w, wrap(legend, TableWidth, "  ", "  "))
	if rated {
		fmt.Fprintln(w, wrap(fmt.Sprintf("carried: requests per second carried (the measured passes' median) / offered; a pass is saturated when it carried under %.0f%% of the offered rate, or its waits for a free connection grew through the pass, and its latencies are then not valid as TTFB; waits that moved a test's quantile past the generator's tolerance saturate the pass for that test alone (a p99 moved by a host's blip leaves the p50 valid)",
			100*results.SaturationShare), TableWidth, "  ", "  "))
	}
	if len(verdicts) > 0 {
		fmt.Fprintln(w, wrap(verdictLegend(verdicts), TableWidth, "  ", "  "))
	}
	if capCols {
		fmt.Fprintln(w, wrap("capacity: the highest offered rate with every request successful, ≥ 99% of it carried, no request waiting for a connection and TTFB within the SLO; MiB/s: body carried at capacity; CPU-ms/1k: the engine's CPU per 1000 requests at capacity; ≥ N: a lower bound (why: below) — the generator ran out, or the engine is at the instrument's limit (within 10% of the null engine's)", TableWidth, "  ", "  "))
	}
	for _, b := range bounds {
		fmt.Fprintln(w, wrap("≥ "+b, TableWidth, "  ", "    "))
	}
	writeCost(w, rs)
	writeAudienceFailures(w, rs)
	causes.write(w)
	host.write(w)
}

// The labels of an invalid cell, each saying what made it invalid, by the
// results package's rule (Result.Recount).
const (
	// bySaturation: the median measured pass was saturated
	// (Result.Saturated): no pass of the cell is a TTFB.
	bySaturation = "saturated"
	// bySpoiling: the host or the instrument spoiled passes
	// (Result.SpoiledPasses) and left fewer than half of them valid.
	bySpoiling = "spoiled"
	// byEngine: a pass is invalid for the engine's doing, or for a reason
	// not classified where it was judged (Pass.InvalidBy).
	byEngine = "invalid"
	// seenValid: a cell not saturated shows its few valid passes' value.
	seenValid = "saw"
)

// invalidBy says what made an invalid cell with measured passes invalid,
// and in how many of its measured passes: "" for a valid cell or one with
// nothing measured. Saturation decides first, as Recount judges it: a
// saturated cell excuses no pass the host spoiled; then any pass the
// engine made invalid, which no count of valid passes excuses; then the
// passes the host or the instrument spoiled. A pass both saturated and
// spoiled counts in both SaturatedPasses and SpoiledPasses: the label
// says which of them decided.
func invalidBy(r *results.Result) (why string, passes int) {
	switch {
	case r.Valid || r.MeasuredPasses == 0:
		return "", 0
	case r.Saturated():
		return bySaturation, r.SaturatedPasses
	}
	engine := 0
	for _, p := range r.Passes {
		if p.Warmup || p.Valid && p.Value != nil || p.ByInstrument() || p.InvalidBy == results.InvalidBySaturation {
			continue
		}
		engine++
	}
	switch {
	case engine > 0:
		return byEngine, engine
	case r.SpoiledPasses > 0:
		return bySpoiling, r.SpoiledPasses
	}
	// Nothing else makes a cell invalid; were it so, its invalid passes.
	return byEngine, r.MeasuredPasses - r.ValidPasses
}

// invalidText is an invalid cell's value column: what made it invalid,
// in how many of its passes (the valid column has how many there were),
// and what was seen, which is no result — "2 saturated, saw 8.41 ms", "2
// spoiled, saw 0.0610 ms", "1 invalid" — as the page moves an invalid
// row's value out of its value column (report's seen_value). A saturated
// cell saw its quantile over the saturated passes, queueing included;
// another saw its few valid passes' value, without their spread. "(k of
// n)" would not fit the column beside a segment test's title.
func invalidText(r *results.Result, why string, passes int) string {
	s := fmt.Sprintf("%d %s", passes, why)
	switch {
	case why == bySaturation && r.SaturatedValue != nil:
		s += ", saw " + formatMs(*r.SaturatedValue)
	case why != bySaturation && r.Value != nil:
		seen := *r
		seen.Spread = nil
		s += ", saw " + formatValue(&seen)
		if r.LowerBound != "" {
			s += " or more"
		}
	}
	return s
}

// verdictLegend says what the invalid cells' labels shown mean.
func verdictLegend(shown map[string]bool) string {
	var l []string
	if shown[bySaturation] {
		l = append(l, "k saturated, saw X: k measured passes were saturated, the median one among them (spoiled by the host as well or not), so no pass's latency is a TTFB; X is the test's quantile over the saturated passes merged, what a client saw with the queueing, not the engine's TTFB")
	}
	if shown[bySpoiling] {
		l = append(l, "k spoiled: the host or the instrument spoiled k measured passes and left fewer than half valid")
	}
	if shown[byEngine] {
		l = append(l, "k invalid: k measured passes were invalid for the engine's doing (why: below)")
	}
	s := strings.Join(l, "; ")
	if shown[seenValid] {
		s += "; beside these, saw X is the few valid passes' figure, not a result"
	}
	return s
}

// writeAudienceFailures prints, per engine, live-audience's failed requests
// over the measured passes at the policy's store: the hit ratio, byte
// offload and origin requests per segment count each as a miss served from
// nowhere, and any makes them invalid, so the count stands beside them.
func writeAudienceFailures(w io.Writer, rs []*results.Result) {
	seen := map[string]bool{}
	for _, r := range rs {
		eng := EngineLabel(r)
		if seen[eng] {
			continue
		}
		var n, of, pl, ofPl, seg, ofSeg int64
		found := false
		for _, p := range r.Passes {
			if p.Warmup || p.Evidence == nil || results.Part[AudienceEvidence](p.Evidence, audiencePart) == nil {
				continue
			}
			a := results.Part[AudienceEvidence](p.Evidence, audiencePart)
			found = true
			n, of, pl, ofPl, seg, ofSeg = n+a.Failed, of+a.Requests, pl+a.FailedPlaylists, ofPl+a.Playlists, seg+a.FailedSegments, ofSeg+a.Segments
		}
		if !found {
			continue
		}
		seen[eng] = true
		line := fmt.Sprintf("failed requests, %s (%s's passes): %d of %d (%d of %d playlists, %d of %d segments)", eng, r.Test, n, of, pl, ofPl, seg, ofSeg)
		if n > 0 {
			line += ": each a miss served from nowhere; hit ratio, byte offload, origin requests per segment and miss ratio are invalid in those passes"
		}
		fmt.Fprintln(w, wrap(line, TableWidth, "  ", "    "))
	}
}

// writeCost prints each engine's CPU per 1000 requests and peak memory,
// once per series of passes (tests that share their passes, as p50 and p99
// of one request do; a segment's full and Range GETs are two series).
func writeCost(w io.Writer, rs []*results.Result) {
	type series struct{ eng, first string }
	seen := map[series][]string{}
	var order []series
	byKey := map[series]*results.Result{}
	for _, r := range rs {
		k := series{eng: EngineLabel(r), first: firstStart(r)}
		if _, ok := seen[k]; !ok {
			order = append(order, k)
			byKey[k] = r
		}
		seen[k] = append(seen[k], r.Test)
	}
	for _, k := range order {
		r := byKey[k]
		if r.EngineCPUMsPer1000 == nil && r.EnginePeakRSSBytes == nil {
			continue
		}
		// Each clause is kept whole on a line, the terminator's cost with
		// its own: a line broken inside "the TLS terminator in front of
		// it" or between a percent and what it is of reads as two figures.
		cpu, mem := costParts(r.EngineCPUMsPer1000, r.EnginePeakRSSBytes)
		clauses := []string{fmt.Sprintf("engine cost, %s (%s):", k.eng, strings.Join(seen[k], ", ")), cpu + ",", mem}
		if r.EngineIRQ != nil && r.EngineNetIRQ != nil {
			// The kernel's work of moving the answers' bytes is charged to
			// no process: it is said beside the engine's own CPU.
			clauses[len(clauses)-1] += ","
			clauses = append(clauses, fmt.Sprintf("interrupts %.0f\u00a0%% of its CPU (%.0f\u00a0%% network softirqs)", *r.EngineIRQ, *r.EngineNetIRQ))
		}
		if tc, tm := r.TerminatorCost(); tc != nil || tm != nil {
			tcpu, tmem := costParts(tc, tm)
			clauses[len(clauses)-1] += ";"
			clauses = append(clauses, "the TLS terminator in front of it: "+tcpu+", "+tmem)
		}
		fmt.Fprintln(w, wrapClauses(clauses, TableWidth, "  ", "    "))
	}
}

// costParts prints CPU-ms per 1000 requests and peak RSS, "—" for either
// not measured. A no-break space keeps each number with its unit when
// wrapped.
func costParts(cpuMsPer1000 *float64, peakRSSBytes *int64) (cpu, mem string) {
	cpu, mem = "—", "—"
	if cpuMsPer1000 != nil {
		cpu = results.Sig3(*cpuMsPer1000) + "\u00a0CPU-ms per 1000 requests"
	}
	if peakRSSBytes != nil {
		mem = fmt.Sprintf("peak RSS %s\u00a0MB", results.Sig3(float64(*peakRSSBytes)/(1<<20)))
	}
	return cpu, mem
}

// firstStart identifies a test's series of passes by its first pass's start.
func firstStart(r *results.Result) string {
	for _, p := range r.Passes {
		if !p.StartedAt.IsZero() {
			return p.StartedAt.String()
		}
	}
	return r.Test
}

// EngineLabel names an engine as it ran: name, version, runtime, topology.
func EngineLabel(r *results.Result) string {
	s := r.Engine
	if r.Runtime != "" && r.Runtime != "process" && r.Runtime != r.Engine {
		s += " (" + r.Runtime + ")"
	}
	if r.Topology != "" && r.Topology != "plaintext" {
		s += " " + r.Topology
	}
	return s
}

// better is the test's direction: "lower" or "higher".
func better(r *results.Result) string {
	if r.LowerIsBetter {
		return "lower"
	}
	return "higher"
}

// directions says which tests are better higher and which lower, naming
// the fewer: "higher is better for Grace hit ratio, lower for the others".
func directions(rs []*results.Result) string {
	var higher, lower []string
	for _, r := range rs {
		if r.LowerIsBetter && !slices.Contains(lower, r.Title) {
			lower = append(lower, r.Title)
		} else if !r.LowerIsBetter && !slices.Contains(higher, r.Title) {
			higher = append(higher, r.Title)
		}
	}
	if len(lower) < len(higher) {
		return "lower is better for " + strings.Join(lower, ", ") + ", higher for the others"
	}
	return "higher is better for " + strings.Join(higher, ", ") + ", lower for the others"
}

// carriedText is a rate test's carried and offered rate, "199.6/500";
// "" for a test that offers no rate.
func carriedText(r *results.Result) string {
	if r.OfferedRPS == nil {
		return ""
	}
	c := "—"
	if a := r.AchievedRPS; a != nil && *a >= 1000 {
		c = fmt.Sprintf("%.0f", *a)
	} else if a != nil {
		c = fmt.Sprintf("%.1f", *a)
	}
	return c + "/" + rps(*r.OfferedRPS)
}

// formatMs is a latency in ms, in seconds from 1000 ms on: "3.31 s".
func formatMs(v float64) string {
	if v >= 1000 {
		return results.Sig3(v/1000) + " s"
	}
	return results.Sig3(v) + " ms"
}

// FormatValue is a value with its unit and the spread of the passes behind
// it, all in one unit: "0.295 ms [0.251–0.410 ms]", "7.16 s [5.20–8.43 s]",
// "0.5 [0–1] per 1000 answers", "—" when nothing was measured.
func FormatValue(r *results.Result) string {
	if r.Value == nil {
		return "—"
	}
	switch {
	case r.LowerBound != "":
		return "≥ " + formatValue(r) + " (" + r.LowerBound + ")"
	case r.InstrumentCeiling:
		return formatValue(r) + " (the instrument's ceiling)"
	}
	return formatValue(r)
}

// sig3OrDash is a figure to three significant digits, "—" for none.
func sig3OrDash(v *float64) string {
	if v == nil {
		return "—"
	}
	return results.Sig3(*v)
}

func formatValue(r *results.Result) string {
	v := *r.Value
	hi := v
	many := r.Spread != nil && r.Spread.N > 1
	if many {
		hi = max(hi, r.Spread.Max)
	}
	unit, scale := r.Unit, 1.0
	if r.Unit == "ms" && hi >= 1000 {
		unit, scale = "s", 1000
	}
	if strings.Contains(unit, " ") {
		// A unit of several words ("per 1000 answers") is written once,
		// after the spread: the table stays within its width.
		s := results.Sig3(v / scale)
		if many {
			s += fmt.Sprintf(" [%s–%s]", results.Sig3(r.Spread.Min/scale), results.Sig3(r.Spread.Max/scale))
		}
		return s + " " + unit
	}
	s := results.Sig3(v/scale) + " " + unit
	if many {
		s += fmt.Sprintf(" [%s–%s %s]", results.Sig3(r.Spread.Min/scale), results.Sig3(r.Spread.Max/scale), unit)
	}
	return s
}

// causes groups invalid reasons by engine and cause: the same cause in
// several passes and tests (p50 and p99 of one pass) is printed once.
type causes struct {
	header string // "": the invalid passes' reasons
	order  []string
	by     map[string]*cause
	tests  map[string]int // tests per engine in the table
}

type cause struct {
	engine, text string
	first        int // the pass the text is from
	tests        []string
	passes       []int
}

func newCauses() *causes { return &causes{by: map[string]*cause{}, tests: map[string]int{}} }

var digits = regexp.MustCompile(`[0-9]+(\.[0-9]+)?`)

func (c *causes) add(engine string, r *results.Result) {
	c.each(engine, r, func(note func(string, int)) {
		for _, p := range r.Passes {
			if p.Warmup {
				continue
			}
			for _, why := range p.InvalidReasons {
				note(why, p.Index)
			}
		}
		if r.MeasuredPasses == 0 && r.NoValue != "" {
			note(r.NoValue, 0)
		}
	})
}

// addHost notes what the host did to r's measured passes that did not
// reject them: lateness its stalls account for, attempts it spoiled that
// were run again.
func (c *causes) addHost(engine string, r *results.Result) {
	c.each(engine, r, func(note func(string, int)) {
		for _, p := range r.Passes {
			if p.Warmup {
				continue
			}
			if p.Evidence != nil && p.Evidence.Stalls != nil {
				for _, why := range p.Evidence.Stalls.Excused {
					note(why, p.Index)
				}
			}
			for _, sp := range p.Spoiled {
				note("an attempt was run again: the host spoiled it: "+sp.Host, p.Index)
			}
		}
	})
}

func (c *causes) each(engine string, r *results.Result, walk func(note func(string, int))) {
	note := func(text string, pass int) {
		key := engine + "\x00" + digits.ReplaceAllString(text, "#")
		x := c.by[key]
		if x == nil {
			x = &cause{engine: engine, text: text, first: pass}
			c.by[key] = x
			c.order = append(c.order, key)
		}
		if !slices.Contains(x.tests, r.Test) {
			x.tests = append(x.tests, r.Test)
		}
		if pass > 0 && !slices.Contains(x.passes, pass) {
			x.passes = append(x.passes, pass)
		}
	}
	walk(note)
}

func (c *causes) write(w io.Writer) {
	if len(c.order) == 0 {
		return
	}
	header := c.header
	if header == "" {
		header = "why passes are invalid or have no value:"
	}
	fmt.Fprintln(w, "  "+header)
	for i, key := range c.order {
		if i == maxCauses {
			fmt.Fprintf(w, "    and %d more causes (the results file has every pass's reasons)\n", len(c.order)-maxCauses)
			break
		}
		x := c.by[key]
		tests := strings.Join(x.tests, ", ")
		if len(x.tests) > 1 && len(x.tests) == c.tests[x.engine] {
			tests = "every test"
		}
		where := x.engine + ", " + tests
		if len(x.passes) > 0 {
			sort.Ints(x.passes)
			where += ", " + passList(x.passes)
		}
		if len(x.passes) > 1 {
			// The numbers in the text are the first pass's.
			where += fmt.Sprintf(", e.g. pass %d", x.first)
		}
		fmt.Fprintln(w, wrap("- "+where+": "+x.text, TableWidth, "    ", "      "))
	}
}

// passList is "pass 3" or "5 passes (1, 2, 4, 7, 9)", shortened past eight.
func passList(ps []int) string {
	if len(ps) == 1 {
		return fmt.Sprintf("pass %d", ps[0])
	}
	var s []string
	for i, p := range ps {
		if i == 8 {
			s = append(s, "…")
			break
		}
		s = append(s, fmt.Sprint(p))
	}
	return fmt.Sprintf("%d passes (%s)", len(ps), strings.Join(s, ", "))
}

// wrap folds text at width: the first line starts with first, the others
// with indent.
func wrap(text string, width int, first, indent string) string {
	f := newFolder(width, first, indent)
	for _, word := range words(text) {
		f.word(word)
	}
	return f.String()
}

// wrapClauses folds clauses at width as wrap does text, but breaks the line
// between two clauses rather than inside one: a clause that does not fit
// where the line is starts the next, and only one longer than a whole line
// is folded between its words.
func wrapClauses(clauses []string, width int, first, indent string) string {
	f := newFolder(width, first, indent)
	for _, c := range clauses {
		ws := words(c)
		n := len([]rune(strings.Join(ws, " ")))
		if f.started && f.line+1+n > width && len([]rune(indent))+n <= width {
			f.newLine()
		}
		for _, word := range ws {
			f.word(word)
		}
	}
	return f.String()
}

// words splits text at ASCII white space only: a no-break space holds.
func words(text string) []string {
	return strings.FieldsFunc(text, func(r rune) bool { return r == ' ' || r == '\t' || r == '\n' })
}

// folder writes words into lines of at most width columns, but for a word
// longer than a line.
type folder struct {
	b       strings.Builder
	width   int
	line    int // columns on the current line
	indent  string
	started bool // a word is on the current line
}

func newFolder(width int, first, indent string) *folder {
	f := &folder{width: width, indent: indent, line: len([]rune(first))}
	f.b.WriteString(first)
	return f
}

func (f *folder) newLine() {
	f.b.WriteString("\n" + f.indent)
	f.line, f.started = len([]rune(f.indent)), false
}

func (f *folder) word(w string) {
	n := len([]rune(w))
	if f.started && f.line+1+n > f.width {
		f.newLine()
	}
	if f.started {
		f.b.WriteByte(' ')
		f.line++
	}
	f.b.WriteString(w)
	f.line += n
	f.started = true
}

func (f *folder) String() string { return f.b.String() }
