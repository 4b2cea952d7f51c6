package report

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/hlsbench/hlsbench/results/stats"
)

// Verdict is one line of the box at the top of the page: for one job an
// operator has, which engine is better, by how much and how sure, or why
// the run cannot say. A reader who reads only these lines knows what to
// deploy for their case and what the host could not tell.
type Verdict struct {
	// Job is the operator's job: "Playlist hit path".
	Job string
	// Kind is what the line says: a lead, a tie or undecided.
	Kind VerdictKind
	// Text is the line, without its references.
	Text string
	// Cites are the comparisons the line rests on, each a row of a table
	// below; an undecided line cites none.
	Cites []Cite
}

// VerdictKind is what a verdict line concludes.
type VerdictKind string

const (
	// Leads: an engine is significantly better in a valid comparison.
	Leads VerdictKind = "leads"
	// Tied: every comparison with a value is a tie.
	Tied VerdictKind = "tie"
	// Undecided: no comparison decides the job; Text says why.
	Undecided VerdictKind = "undecided"
)

// Cite is one comparison a verdict rests on: the leader of a test in one
// topology (of all its engines, or of those a reader can deploy, without
// hlsbench's own reference cache) against another cell of the same
// topology, judged by the test's own standing (stand, over compare's
// Judge).
type Cite struct {
	// Test is the test's ID and Title its title; Workload its workload's
	// title.
	Test, Title, Workload string
	// Topology is both cells'.
	Topology string
	// Leader and Other are the two rows compared.
	Leader, Other Cell
	// Delta is compare's judgement of Other against Leader.
	Delta stats.Delta
	// Anchor is the id of Other's row in the page's table (the one the
	// claim is about); LeaderAnchor the leader's.
	Anchor, LeaderAnchor string
}

// job is what an operator asks of a cache, and the tests that answer it.
type job struct {
	title string
	// tests are test IDs, or a workload's name and "/*" for all of its.
	tests []string
	// why is said when a job's tests are left out on purpose.
	note string
}

// jobs are the operator's jobs, in the order the verdict lists them. The
// purge's own duration is left out of invalidation: NGINX removes one key
// per PURGE request where Varnish needs one ban, so the two durations time
// different operations and neither is the faster engine.
var jobs = []job{
	{title: "Playlist hit path", tests: []string{"hit-path/p50-ttfb", "hit-path/p99-ttfb"}},
	{title: "VOD segment, full GET", tests: []string{"segment/full-p50-ttfb", "segment/full-p99-ttfb"}},
	{title: "VOD segment, Range GET", tests: []string{"segment/range-p50-ttfb", "segment/range-p99-ttfb"}},
	{title: "Live edge under a miss storm", tests: []string{"miss-storm/p50-ttfb", "miss-storm/p99-ttfb", "miss-storm/coalescing"}},
	{title: "An origin that fails", tests: []string{"origin-flap/p50-ttfb-failing", "origin-flap/grace-ratio"}},
	{title: "Invalidation at scale", tests: []string{"purge-stampede/refill-amplification", "purge-stampede/recovery",
		"purge-stampede/stale-after-purge", "purge-stampede/p50-ttfb-refill", "purge-stampede/p99-ttfb-refill",
		"repeated-bans/p99-ttfb-bans", "repeated-bans/ttfb-drift", "repeated-bans/engine-cpu-drift", "repeated-bans/ban-list",
		"repeated-bans/stale-after-purge"},
		note: "the purge's own duration is not compared: NGINX removes one key per PURGE request where Varnish needs one ban"},
	{title: "A live audience", tests: []string{"live-audience/hit-ratio", "live-audience/byte-offload", "live-audience/origin-per-segment",
		"live-audience/p99-ttfb-playlist", "live-audience/p99-ttfb-segment", "live-audience/stall-risk", "live-audience/live-edge-staleness"}},
	{title: "Low-latency HLS", tests: []string{"ll-hls/*"}},
	{title: "Memory per object", tests: []string{"live-audience/bytes-per-object"}},
	{title: "Capacity per core", tests: []string{"capacity/*"}},
}

// verdictMost is how many comparisons one job's line states: the largest
// of different tests, not every one (the tables have those).
const verdictMost = 2

// verdicts is the box at the top: one line per job, from the same
// standing the tables' findings come from. Only a significant comparison
// between two ranked cells of one topology makes a lead: saturated cells,
// bounds and the instrument are never in one (stand leaves them out).
func verdicts(rep *Report, o Options) []Verdict {
	causes := engineCauses(rep)
	var out []Verdict
	for _, j := range jobs {
		var tests []struct {
			wl string
			t  Test
		}
		for _, w := range rep.Workloads {
			for _, t := range w.Tests {
				if j.has(t.ID) {
					tests = append(tests, struct {
						wl string
						t  Test
					}{w.Title, t})
				}
			}
		}
		if len(tests) == 0 {
			out = append(out, Verdict{Job: j.title, Kind: Undecided, Text: "Not measured: these runs have no result for it."})
			continue
		}
		var leads, deploys, ties []Cite
		var unknown, saturated, bounded, limited []string
		partial := 0 // significant comparisons left out: a cell not whole
		for _, wt := range tests {
			var best *Cite       // the test's largest significant gap, any topology
			var bestDeploy *Cite // the same among the deployable engines
			for _, g := range byTopology(wt.t) {
				s := stand(g, o)
				for _, c := range s.saturated {
					if c.LimitedBy != "" {
						// Not the engine's saturation: the terminator's
						// limit, said once for the topology.
						limited = appendNew(limited, topologyName(c.Topology)+", where "+c.LimitedBy+" is the limit of every engine and of null")
						continue
					}
					saturated = appendNew(saturated, engineName(c)+" ("+topologyName(c.Topology)+")")
				}
				for _, c := range s.bounded {
					bounded = appendNew(bounded, c.Label+" "+valueWithBound(c, g.Unit))
				}
				if s.leader == nil {
					continue
				}
				for _, v := range s.behind {
					if !whole(*s.leader, g) || !whole(v.cell, g) {
						partial++
						continue
					}
					c := cite(wt.wl, g, *s.leader, v)
					if best == nil || gapSize(*c.Leader.Value, *c.Other.Value, g.LowerIsBetter) > gapSize(*best.Leader.Value, *best.Other.Value, g.LowerIsBetter) {
						best = &c
					}
				}
				if len(s.ties) > 0 && len(s.behind)+len(s.ahead)+len(s.unknown) == 0 && whole(*s.leader, g) && whole(s.ties[0].cell, g) {
					ties = append(ties, cite(wt.wl, g, *s.leader, s.ties[0]))
				}
				if len(s.unknown) > 0 && len(s.behind) == 0 {
					unknown = append(unknown, fmt.Sprintf("%s, %s: %s", g.Title, topologyName(g.Cells[0].Topology), unknownWhy(s.unknown, o)))
				}
				// The engines a reader can deploy, without hlsbench's own
				// reference cache: which of them to choose is the question,
				// and the reference cache leading tells nothing of it.
				if d, ok := deployable(g); ok {
					ds := stand(d, o)
					for _, v := range ds.behind {
						if ds.leader == nil || !whole(*ds.leader, d) || !whole(v.cell, d) {
							continue
						}
						c := cite(wt.wl, d, *ds.leader, v)
						if bestDeploy == nil || gapSize(*c.Leader.Value, *c.Other.Value, d.LowerIsBetter) > gapSize(*bestDeploy.Leader.Value, *bestDeploy.Other.Value, d.LowerIsBetter) {
							bestDeploy = &c
						}
					}
				}
			}
			if best != nil {
				leads = append(leads, *best)
			}
			if bestDeploy != nil {
				deploys = append(deploys, *bestDeploy)
			}
		}
		bySize := func(l []Cite) {
			sort.SliceStable(l, func(a, b int) bool {
				return gapSize(*l[a].Leader.Value, *l[a].Other.Value, lowerOf(rep, l[a].Test)) >
					gapSize(*l[b].Leader.Value, *l[b].Other.Value, lowerOf(rep, l[b].Test))
			})
		}
		bySize(leads)
		bySize(deploys)
		// The deployable engines' leads first, then the reference cache's.
		leads = append(deploys, leads...)
		// One engine behind in one topology and workload is one claim:
		// its p50 and p99 of one cause are not two findings, nor its gap to
		// the reference cache and to the best deployable engine.
		// p50 and p99 of one cause are not two findings.
		var kept []Cite
		for _, c := range leads {
			if !slices.ContainsFunc(kept, func(k Cite) bool {
				return k.Other.Engine == c.Other.Engine && k.Topology == c.Topology && k.Workload == c.Workload
			}) {
				kept = append(kept, c)
			}
		}
		leads = kept
		if len(leads) > verdictMost {
			leads = leads[:verdictMost]
		}
		var v Verdict
		switch {
		case len(leads) > 0:
			var parts []string
			for _, c := range leads {
				parts = append(parts, leadText(rep, c, causes))
			}
			v = Verdict{Kind: Leads, Text: strings.Join(parts, " "), Cites: leads}
		case len(ties) > 0 && len(unknown) == 0:
			c := ties[0]
			v = Verdict{Kind: Tied, Cites: ties[:1], Text: fmt.Sprintf("A tie: the host could not tell the engines apart in %d %s of %s (for example %s, %s, against %s, %s).",
				len(ties), plural(len(ties), "comparison", "comparisons"), list(citedTitles(ties)), engineName(c.Leader), valueText(*c.Leader.Value, unitOf(rep, c.Test)),
				engineName(c.Other), valueText(*c.Other.Value, unitOf(rep, c.Test)))}
		default:
			v = Verdict{Kind: Undecided, Text: undecidedText(tests[0].t, unknown, saturated, bounded, partial)}
		}
		if v.Kind != Undecided {
			v.Text += leftOut(saturated, partial)
		}
		if len(limited) > 0 {
			v.Text += " Nothing is ranked in " + list(limited) + "."
		}
		if j.note != "" {
			v.Text += " (" + strings.ToUpper(j.note[:1]) + j.note[1:] + ".)"
		}
		v.Job = j.title
		out = append(out, v)
	}
	return out
}

// leftOut says what a decided line did not weigh: saturated cells, and
// significant differences on cells with spoiled passes.
func leftOut(saturated []string, partial int) string {
	var l []string
	if len(saturated) > 0 {
		l = append(l, list(saturated)+" saturated, not ranked")
	}
	if partial > 0 {
		l = append(l, fmt.Sprintf("%d significant %s a cell with invalid or saturated passes, not weighed",
			partial, plural(partial, "difference rests on", "differences rest on")))
	}
	if len(l) == 0 {
		return ""
	}
	return " Left out: " + strings.Join(l, "; ") + "."
}

// deployable is a test's cells without hlsbench's own reference cache,
// when it had one and at least two other cells remain to compare.
func deployable(t Test) (Test, bool) {
	var cells []Cell
	for _, c := range t.Cells {
		if baseEngine(c.Engine) != "builtin" {
			cells = append(cells, c)
		}
	}
	if len(cells) == len(t.Cells) || len(cells) < 2 {
		return t, false
	}
	t.Cells = cells
	return t, true
}

// whole says a cell can carry a verdict: it is valid, and no latency of a
// saturated cell (its median pass saturated, Cell.Saturated). A cell with
// fewer saturated passes is judged on its valid passes, as its table does
// and says ("1 of 20 passes saturated"): one pass that waited for a
// connection does not take twenty out of the verdict.
func whole(c Cell, t Test) bool {
	return c.Valid && !(t.Latency() && c.Saturated())
}

// has says the job answers with test id.
func (j job) has(id string) bool {
	for _, t := range j.tests {
		if wl, ok := strings.CutSuffix(t, "/*"); ok && wlOf(id) == wl || t == id {
			return true
		}
	}
	return false
}

func appendNew(l []string, s string) []string {
	if slices.Contains(l, s) {
		return l
	}
	return append(l, s)
}

// citedTitles are the titles of the tests cs cite, each once.
func citedTitles(cs []Cite) []string {
	var l []string
	for _, c := range cs {
		l = appendNew(l, c.Title)
	}
	return l
}

// cite is the comparison of v's cell against the leader in test t.
func cite(wl string, t Test, leader Cell, v verdict) Cite {
	return Cite{Test: t.ID, Title: t.Title, Workload: wl, Topology: leader.Topology, Leader: leader, Other: v.cell, Delta: v.delta,
		Anchor: RowAnchor(t, v.cell), LeaderAnchor: RowAnchor(t, leader)}
}

// RowAnchor is the id of a cell's row in its test's table.
func RowAnchor(t Test, c Cell) string {
	r := strings.NewReplacer("@", "-", ".", "-", " ", "-", "/", "-", ":", "-", "=", "-")
	return t.Slug + "--" + strings.ToLower(r.Replace(c.Engine+"-"+c.Runtime+"-"+c.Topology))
}

func findTest(rep *Report, id string) Test {
	for _, w := range rep.Workloads {
		for _, t := range w.Tests {
			if t.ID == id {
				return t
			}
		}
	}
	return Test{}
}

func unitOf(rep *Report, id string) string { return findTest(rep, id).Unit }
func lowerOf(rep *Report, id string) bool  { return findTest(rep, id).LowerIsBetter }

// engineName is a cell's engine as the verdict says it: its label without
// the topology (the line says it once), and the built-in cache named for
// what it is.
func engineName(c Cell) string {
	if c.Engine == "builtin" {
		return "Built-in (hlsbench's own reference cache)"
	}
	n := strings.TrimSuffix(c.Label, " ("+topologyName(c.Topology)+")")
	if baseEngine(c.Engine) == "builtin" {
		n = strings.TrimSuffix(c.Label, " ("+topologyName(c.Topology)+referenceNote+")")
		return "hlsbench's own reference cache (" + n + ")"
	}
	return n
}

// leadText says one lead: who is better, by how much, with the U test's p
// and the shift's interval, and the engine's recorded difference that
// explains it when there is one for the workload.
func leadText(rep *Report, c Cite, causes map[string][]string) string {
	t := findTest(rep, c.Test)
	lead, other := *c.Leader.Value, *c.Other.Value
	d := c.Delta
	conf := pText(d)
	// The shift's interval, where it is on one side of zero (a
	// significant shift's is): the difference, and how sure.
	if lo, hi := d.Shift.Lo, d.Shift.Hi; d.Shift.Level > 0 && !math.IsNaN(lo) && !math.IsNaN(hi) && lo*hi > 0 {
		lo, hi = math.Abs(lo), math.Abs(hi)
		if lo > hi {
			lo, hi = hi, lo
		}
		conf += fmt.Sprintf(", a difference of %s, %g %% interval %s to %s", valueText(math.Abs(d.Shift.Estimate), t.Unit), d.Shift.Level*100,
			valueText(lo, t.Unit), valueText(hi, t.Unit))
	}
	s := fmt.Sprintf("%s beats %s on %s — %s (%s): %s against %s, %s (%s; %d and %d valid passes).",
		engineName(c.Leader), engineName(c.Other), c.Workload, c.Title, topologyName(c.Topology),
		valueText(lead, t.Unit), valueText(other, t.Unit), gapWords(lead, other, t), conf, d.BaseN, d.NewN)
	if why := causeOf(causes, c.Other.Engine, t); why != "" {
		s += " Why: " + why
	}
	return s
}

// engineCauses are the differences the runs recorded beside each engine:
// what no configuration makes equal, by engine name.
func engineCauses(rep *Report) map[string][]string {
	m := map[string][]string{}
	for _, s := range rep.Sources {
		for _, e := range s.Run.Engines {
			for _, d := range e.Differences {
				if !slices.Contains(m[e.Name], d) {
					m[e.Name] = append(m[e.Name], d)
				}
			}
		}
	}
	return m
}

// causeOf is the engine's recorded difference that names the test's
// workload and its TTFB: the cause the engine's own documentation gives
// for a latency there (NGINX's cache lock and its miss-storm TTFB). A
// difference about something else of the workload (how NGINX purges)
// explains no figure of it the run measured: nothing is said.
func causeOf(causes map[string][]string, engine string, t Test) string {
	if !strings.Contains(t.Title, "TTFB") {
		return ""
	}
	for _, d := range causes[engine] {
		if strings.Contains(d, t.Workload) && strings.Contains(d, "TTFB") {
			return d
		}
	}
	return ""
}

// undecidedText says why no comparison decides a job: too few passes,
// saturation, bounds; for a capacity, what each cell of the first
// topology carried within the SLO, so that the reader still sees the
// figures.
func undecidedText(first Test, unknown, saturated, bounded []string, partial int) string {
	var why []string
	if partial > 0 {
		why = append(why, fmt.Sprintf("%d significant %s a cell with invalid or saturated passes, left out",
			partial, plural(partial, "difference rests on", "differences rest on")))
	}
	if len(unknown) > 0 {
		why = append(why, "the host could not tell them apart ("+unknown[0]+")")
	}
	if len(saturated) > 0 {
		why = append(why, list(saturated)+" saturated, not ranked")
	}
	if len(bounded) > 0 {
		why = append(why, fmt.Sprintf("%d %s a lower bound or the instrument's ceiling, never ranked as an exact figure",
			len(bounded), plural(len(bounded), "figure is", "figures are")))
	}
	if len(why) == 0 {
		why = append(why, "no comparison has a ranked value on each side")
	}
	s := "Undecided: " + strings.Join(why, "; ")
	if g := byTopology(first)[0]; first.Ranked && len(g.Cells) > 0 {
		var vals []string
		for _, c := range g.Cells {
			if c.Value != nil && !c.Unranked {
				vals = append(vals, engineName(c)+" "+valueWithBound(c, first.Unit))
			}
		}
		if len(vals) > 0 {
			slo := "the SLO"
			if first.SLO() != "" {
				slo = first.SLO()
			}
			s += fmt.Sprintf("; capacity within %s, %s, %s: %s", slo, first.Title, topologyName(g.Cells[0].Topology), strings.Join(vals, ", "))
		}
	}
	return s + "."
}

// EngineRow is one engine of the page's small table at the top: its
// versions as the runs measured them, where it ran, and what it is.
type EngineRow struct {
	Engine     string
	Versions   []string
	Topologies []string
	// Note says what the row is when it is not a cache under test (the
	// built-in cache, the instrument) and what stood in front of it.
	Note string
}

// engineRows are the page's engines, one row each, in the cells' order:
// the versions every run measured (a page merged from several builds
// shows them all), the topologies it ran in.
func (b *builder) engineRows() []EngineRow {
	var rows []EngineRow
	at := map[string]int{}
	for _, k := range b.cellOrder {
		i, ok := at[k.engine]
		if !ok {
			i = len(rows)
			at[k.engine] = i
			// The version goes in its own column, even for a build
			// selected as NAME@VERSION.
			name := displayName(baseEngine(k.engine))
			if kind := b.kinds[k.engine]; kind != "" {
				name = k.engine + ": " + displayName(kind)
			}
			rows = append(rows, EngineRow{Engine: name})
			switch baseEngine(k.engine) {
			case "builtin":
				rows[i].Note = "hlsbench's own reference cache"
			case InstrumentEngine:
				rows[i].Note = "the instrument, not an engine: answers prebuilt copies, never ranked"
			}
		}
		r := &rows[i]
		r.Topologies = appendNew(r.Topologies, topologyName(k.topology))
		for _, src := range b.in.Sources {
			if v := b.runVersions[src.Name][k]; v != "" && v != "unknown" {
				r.Versions = appendNew(r.Versions, v)
			}
		}
		if t := b.terminators[k]; t != "" && !strings.Contains(r.Note, t) {
			note := "behind " + t + " in " + topologyName(k.topology)
			if r.Note != "" {
				note = r.Note + "; " + note
			}
			r.Note = note
		}
	}
	return rows
}

// heading is the title's one line of facts: how many engines, topologies
// and workloads, the host, the dates measured.
func heading(rep *Report, rows []EngineRow) string {
	engines, tops := 0, []string{}
	for _, r := range rows {
		if !strings.HasPrefix(r.Note, "the instrument") {
			engines++
		}
		for _, t := range r.Topologies {
			tops = appendNew(tops, t)
		}
	}
	h := rep.Sources[0].Run.Host
	host := fmt.Sprintf("%s, %d cores", orUnknown(h.CPUModel), h.Cores)
	var first, last string
	for _, s := range rep.Sources {
		if len(s.Run.Placement) > 0 {
			host = "several hosts"
		}
		if s.Run.StartedAt.IsZero() {
			continue
		}
		d := s.Run.StartedAt.UTC().Format("2006-01-02")
		if first == "" || d < first {
			first = d
		}
		if d > last {
			last = d
		}
	}
	s := fmt.Sprintf("%d %s, %d %s, %d %s on %s", engines, plural(engines, "engine", "engines"), len(tops), plural(len(tops), "topology", "topologies"),
		len(rep.Workloads), plural(len(rep.Workloads), "workload", "workloads"), host)
	switch {
	case first == "":
	case first == last:
		s += ", " + first
	default:
		s += ", " + first + " to " + last
	}
	return s
}
