// Package report turns result files into what a reader sees: charts, an
// HTML page, Markdown and CSV. It reads runs (package results) and nothing
// else: no workload code, no re-measuring. Each output is a small writer
// over the Report model, writing to an io.Writer (the vegeta way).
package report

import (
	"fmt"

	"github.com/hlsbench/hlsbench/results"
)

// Report is everything the outputs show, built from result files by Build.
// It holds no clock and no map iteration order: the same runs give the same
// Report, and every writer gives the same bytes.
type Report struct {
	Title   string
	Summary string
	// Verdict is the box at the top: per job an operator has, which
	// engine is better and how sure, or why the run cannot say.
	Verdict []Verdict
	// Engines are the engines with their versions, a row each.
	Engines []EngineRow
	// Sources are the result files read, in the order given (a suite
	// directory's in its manifest's order).
	Sources []Source
	// Workloads in the order the catalog ranks them (Options.Catalog).
	Workloads []Workload
	// Learned is the page's summary: how many tests separate the cells,
	// the largest significant differences, the capacity ranking.
	Learned []string
	// Claims set each claim of the published comparison this page
	// regenerates beside this page's figures (reference.go); ClaimsNote
	// says how a row is judged and how the two pages were measured. Nil
	// when none of its tests is on the page.
	Claims     []ClaimRow
	ClaimsNote []string
	// Conditions are the test conditions, as label/value rows.
	Conditions []Fact
	// Parts are how the page was measured: each part's workloads, how
	// long it took, on what host, with which build.
	Parts []Part
	// Caveats are "What this does not prove", generated from the runs.
	Caveats []string
	// Warnings are about the inputs (a killed run, a cell that did not
	// finish); they are shown on the page too.
	Warnings []string

	// manifest is the suite's manifest, copied beside the runs.
	manifest    bool
	manifestRaw []byte
}

// Source is one result file.
type Source struct {
	// Name is the file's base name; the page links to runs/Name.
	Name string
	// Path is where it was read from.
	Path string
	Run  *results.Run
	// Raw is the file's bytes, copied under the output directory as is.
	Raw []byte
}

// Fact is one row of the test conditions.
type Fact = results.Fact

// Workload is one section of the page.
type Workload struct {
	Name        string
	Title       string
	Description string
	// Conditions are the workload's conditions as they ran, as text rows
	// (one set when every run agrees; otherwise each run's, named).
	Conditions []Fact
	Tests      []Test
	// Curves put tests that differ only in a size on one chart (the
	// miss-ratio curve); the tests are in Tests too.
	Curves []Curve
	// Takeaway is a sentence computed from the data; ties are called ties.
	Takeaway string
	// Cost is the engines' CPU time and memory in this workload.
	Cost []Cost
}

// Test is one chart and one table: a figure of a workload across cells.
type Test struct {
	// ID is "WORKLOAD/TEST", Slug its file-name form ("WORKLOAD-TEST").
	ID, Slug string
	Workload string
	Name     string // the result's Test
	Title    string
	Unit     string
	// UnitName says what the unit counts, where the test's workload says
	// more than the unit does.
	UnitName      string
	LowerIsBetter bool
	// Ranked is a capacity: a rate, ranked on its own line.
	Ranked bool
	Cells  []Cell
	// Instrument are the null engine's cells: the instrument's own
	// figures (engines.Null answers prebuilt copies, no cache), shown in
	// the tables under the engines with a label that says so, drawn on a
	// latency chart as the host's floor, and never ranked or compared.
	Instrument []Cell
	// Limits are, by topology, why nothing is ranked there: a terminator
	// that limits every cell, null's included (terminatorLimits).
	Limits map[string]string
	// Builds says which hlsbench build measured which rows, when the
	// table's rows were not all measured with one; "" when they were.
	Builds string
	// Finding says which cell leads and which do not differ from it
	// significantly (a tie), computed with results/stats.Compare.
	Finding string
	// Meaning says what a figure means where the figure alone would
	// mislead (an engine's worst answers far outside its p99, and why),
	// computed from the run's evidence; "" when nothing needs saying.
	Meaning string
}

// Cell is one engine × runtime × topology's result for a test.
type Cell struct {
	// Label is what a reader sees: "varnish 7.1.1 (plaintext)".
	Label    string
	Engine   string
	Version  string
	Runtime  string
	Topology string
	// Value is the result's value (valid passes only); nil with NoValue
	// saying why.
	Value   *float64
	NoValue string
	Valid   bool
	// ValidPasses of MeasuredPasses are behind Value.
	ValidPasses, MeasuredPasses int
	// Passes are the measured passes, in order: each with its value (nil
	// when it has none) and whether it was valid.
	Passes []PassPoint
	// Spread is nil when no valid pass has a value.
	Spread *results.Spread
	// Invalid explains invalid passes ("pass 3: …").
	Invalid []string
	Errors  int64
	// Requests behind the figure.
	Requests int64
	// CPUMsPer1000 and PeakRSSBytes are the engine's cost while this
	// test's traffic ran (nil: not measured).
	CPUMsPer1000 *float64
	PeakRSSBytes *int64
	// Source is the result file's name, Build the hlsbench build that
	// measured it (its run's tool version).
	Source string
	Build  string

	// OfferedRPS is the rate the cell's passes were offered and
	// AchievedRPS the median they carried; nil for a workload that offers
	// no rate, and in files written before they were recorded.
	OfferedRPS, AchievedRPS *float64
	// SaturatedPasses of MeasuredPasses did not carry their rate, or their
	// requests waited for a free connection; SaturatedWhy is the first
	// one's reason, what ran out.
	SaturatedPasses int
	SaturatedWhy    string
	// SpoiledPasses of MeasuredPasses the host or the instrument spoiled
	// (results.Result.SpoiledPasses): left out of the value, not against
	// the cell while the valid passes are at least half. Spoiled are
	// their reasons ("pass 8: …") when the cell is valid, where Invalid
	// does not list them.
	SpoiledPasses int
	Spoiled       []string
	// SaturatedValue is a latency over the saturated passes: what a client
	// saw, queueing included, never the engine's TTFB.
	SaturatedValue *float64
	// Unranked: saturation made the test's passes invalid (a latency), so
	// the cell is shown as saturated and never ranked, whatever its value.
	Unranked bool
	// LowerBound, when set, says Value is a lower bound and why (the
	// generator ran out, the instrument's limit): shown as "≥ N (why)" and
	// never ranked. InstrumentCeiling marks the null engine's capacity,
	// the instrument's own ceiling, not an engine's figure: not ranked
	// either. MiBPerSecond is a capacity's body carried at capacity.
	LowerBound        string
	InstrumentCeiling bool
	MiBPerSecond      *float64
	// Limit says what the instrument's limit was, beside LowerBound "at
	// the instrument's limit" ("null behind hitch 1.7.2 carried 360 rps")
	// and beside the ceiling ("with hitch 1.7.2 in front"): behind a
	// terminator the limit is often the terminator's, not the generator's.
	Limit string
	// NoCeiling marks an engine's capacity with no ceiling measured beside
	// it (no null figure in its topology on its host): nothing says it is
	// not the instrument's. CeilingBeaten, on the null engine's capacity,
	// says which engine carried more than null plus its margin: then null
	// is no ceiling here.
	NoCeiling     bool
	CeilingBeaten string
	// SLO is the service level a capacity was searched within, as a
	// reader reads it ("p99 TTFB ≤ 10 ms"); "" for other tests.
	SLO string
	// ownSLO: the test's cells were searched within different service
	// levels, so each value says its own.
	ownSLO bool
	// LimitedBy names the terminator that is the limit of every cell of
	// the cell's topology, null's included (terminatorLimits): the cell
	// is not ranked, and says so instead of "saturated".
	LimitedBy string
}

// Bound is why the cell's value is a lower bound, with what the limit was:
// "at the instrument's limit: null behind hitch 1.7.2 carried 360 rps".
func (c Cell) Bound() string {
	if c.LowerBound != "" && c.Limit != "" {
		return c.LowerBound + ": " + c.Limit
	}
	return c.LowerBound
}

// Bounded says the cell's value is not an engine's exact figure: a lower
// bound, or the instrument's ceiling. It is shown, never ranked.
func (c Cell) Bounded() bool { return c.Value != nil && (c.LowerBound != "" || c.InstrumentCeiling) }

// Saturated says the cell is saturated: its median pass was, the rule of
// results.Result.Saturated, one rule for the run and the page. A cell with
// fewer saturated passes is judged on its valid passes, and says how many
// saturated (SaturatedPasses): one pass of twenty that waited for a
// connection does not make twenty a saturated cell.
func (c Cell) Saturated() bool {
	return c.SaturatedPasses > 0 && c.SaturatedPasses >= (c.MeasuredPasses+1)/2
}

// saturatedText says how many of the cell's passes saturated: "saturated
// in 12 of 20 passes" for a saturated cell, "1 of 20 passes saturated" for
// one judged on its other passes; "" when none did.
func (c Cell) saturatedText() string {
	switch {
	case c.SaturatedPasses == 0:
		return ""
	case c.Saturated():
		return fmt.Sprintf("saturated in %d of %d passes", c.SaturatedPasses, c.MeasuredPasses)
	}
	return fmt.Sprintf("%d of %d %s saturated", c.SaturatedPasses, c.MeasuredPasses, plural(c.MeasuredPasses, "pass", "passes"))
}

// Rated says some cell of the test was offered a rate or saturated: its
// table has a column for the rate carried.
func (t Test) Rated() bool {
	for _, c := range t.Cells {
		if c.OfferedRPS != nil || c.SaturatedPasses > 0 {
			return true
		}
	}
	return false
}

// Unranked says some cell of the test is saturated and not ranked: its
// chart draws it hatched and says so.
func (t Test) Unranked() bool {
	for _, c := range t.Cells {
		if c.Unranked {
			return true
		}
	}
	return false
}

// PassPoint is one measured pass of a cell.
type PassPoint struct {
	Index   int
	Value   *float64
	NoValue string
	Valid   bool
	// OfferedRPS is the pass's offered rate (0: none) and AchievedRPS what
	// it carried; Saturated is why it was saturated ("" when it was not).
	OfferedRPS, AchievedRPS float64
	Saturated               string
	// Spoiled: the host or the instrument made the pass invalid, not the
	// engine.
	Spoiled bool
}

// Cost is one engine's cost in a workload.
type Cost struct {
	Label string
	// Tests are the titles of the tests the cost was measured in, when the
	// engine's cost differs between the workload's tests (segment's full
	// and Range GETs are separate traffic); nil when it is one for all.
	Tests []string
	// CPUMsPer1000 is the engine's CPU-ms per 1000 requests (median of the
	// passes), nil when not measured; PeakRSSBytes its largest resident set.
	CPUMsPer1000 *float64
	PeakRSSBytes *int64
	// IRQ and NetIRQ are the percent of the engine's CPUs in interrupts
	// and, of it, in network softirqs (medians of the passes), nil when
	// not measured: the kernel's work of moving the answers, charged to
	// no process, said beside the engine's own CPU.
	IRQ, NetIRQ *float64
}

// CostByTest says whether a cost row names its tests: some engine's cost
// differs between the workload's tests.
func (w Workload) CostByTest() bool {
	for _, c := range w.Cost {
		if len(c.Tests) > 0 {
			return true
		}
	}
	return false
}

// ValidValues are the values of a cell's valid measured passes: the sample
// its value and the statistics rest on.
func (c Cell) ValidValues() []float64 {
	var v []float64
	for _, p := range c.Passes {
		if p.Valid && p.Value != nil {
			v = append(v, *p.Value)
		}
	}
	return v
}

// Floor is the null engine's latency in one topology: the host's floor,
// below which no engine on this host can be measured.
type Floor struct {
	// Label is the line's name on the chart: "host floor (null)", with
	// the topology when there are several.
	Label    string
	Topology string
	Value    float64
	// Ceiling marks the instrument's ceiling on a capacity's chart
	// (Ceilings), not a latency's floor.
	Ceiling bool
}

// Latency says the test is a latency (milliseconds, lower is better): the
// tests whose charts carry the host's floor.
func (t Test) Latency() bool { return t.Unit == "ms" && t.LowerIsBetter }

// Floors are the lines a latency test's chart draws: the null engine's
// value in each topology it has a valid one for. A saturated null is no
// floor: its latency is queueing.
func (t Test) Floors() []Floor {
	if !t.Latency() {
		return nil
	}
	var f []Floor
	for _, c := range t.Instrument {
		if c.Value == nil || c.Unranked || !finite(*c.Value) {
			continue
		}
		f = append(f, Floor{Label: "host floor (null)", Topology: c.Topology, Value: *c.Value})
	}
	if len(f) > 1 {
		for i := range f {
			f[i].Label = "host floor (null, " + topologyName(f[i].Topology) + ")"
		}
	}
	return f
}

// Ceilings are the lines a capacity's chart draws: the null engine's
// capacity in each topology where it is the instrument's ceiling. Where an
// engine beat it, or no null was measured, there is no line: nothing
// measured a ceiling there.
func (t Test) Ceilings() []Floor {
	var f []Floor
	for _, c := range t.Instrument {
		if c.Value == nil || !c.InstrumentCeiling || !finite(*c.Value) {
			continue
		}
		f = append(f, Floor{Label: "instrument's ceiling (null)", Topology: c.Topology, Value: *c.Value, Ceiling: true})
	}
	// Name the topology when the chart has several, even for one line: a
	// ceiling drawn across every row is one topology's only.
	if len(f) > 1 || len(byTopology(t)) > 1 {
		for i := range f {
			f[i].Label = "instrument's ceiling (null, " + topologyName(f[i].Topology) + ")"
		}
	}
	return f
}

// InstrumentEngine is the null engine's name in results: the instrument,
// never an engine to rank.
const InstrumentEngine = "null"

// instrumentNote ends the null engine's label everywhere it is shown, in
// its parentheses: "null v1.2 (plaintext, the instrument, not an engine)".
const instrumentNote = ", the instrument, not an engine"

// referenceNote ends the built-in cache's label the same way: "Built-in
// (plaintext, hlsbench's own reference cache)".
const referenceNote = ", hlsbench's own reference cache"

// Rows are a test's table rows: the engines' cells, then the
// instrument's.
func (t Test) Rows() []Cell {
	if len(t.Instrument) == 0 {
		return t.Cells
	}
	return append(append([]Cell{}, t.Cells...), t.Instrument...)
}
