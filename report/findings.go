package report

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/hlsbench/hlsbench/results"
	"github.com/hlsbench/hlsbench/results/compare"
	"github.com/hlsbench/hlsbench/results/stats"
)

// verdict is how one cell stands against the test's leader.
type verdict struct {
	cell  Cell
	delta stats.Delta
}

// standing sorts a test's cells against its leader: the cell with the best
// value, compared with every other valued cell by compare's statistics
// (Mann-Whitney U over the valid passes' values, the same threshold).
type standing struct {
	leader  *Cell
	ties    []verdict
	behind  []verdict // significantly worse than the leader
	ahead   []verdict // passes significantly better though the merged value is not
	unknown []verdict // too few passes to tell
	none    []Cell    // no value
	// saturated cells are never ranked: their latency is queueing, not
	// the engine's, and even their valid passes ran at its limit.
	saturated []Cell
	// bounded cells are lower bounds or the instrument's ceiling: never
	// ranked as exact figures (a capacity at the instrument's limit is the
	// host's). over are the lower bounds above the leader's exact value:
	// an engine known to carry at least L carries more than one that
	// carries E < L, so each of them ranks above every exact figure, and
	// no exact figure is the best. Two bounds, or a bound below an exact
	// figure, cannot be ordered.
	bounded []Cell
	over    []Cell
}

func stand(t Test, o Options) standing {
	var s standing
	for i := range t.Cells {
		c := t.Cells[i]
		if c.Unranked {
			s.saturated = append(s.saturated, c)
			continue
		}
		if c.Bounded() {
			s.bounded = append(s.bounded, c)
			continue
		}
		if c.Value == nil {
			s.none = append(s.none, c)
			continue
		}
		if s.leader == nil || better(*c.Value, *s.leader.Value, t.LowerIsBetter) {
			s.leader = &t.Cells[i]
		}
	}
	if s.leader == nil {
		return s
	}
	for _, c := range s.bounded {
		if c.LowerBound != "" && !t.LowerIsBetter && *c.Value > *s.leader.Value {
			s.over = append(s.over, c)
		}
	}
	for _, c := range t.Cells {
		if c.Unranked || c.Bounded() || c.Value == nil || c.Label == s.leader.Label {
			continue
		}
		d := compare.Judge(s.leader.ValidValues(), c.ValidValues(), t.Unit, t.LowerIsBetter, o.Compare)
		if d.Verdict == stats.NotComparable && same(s.leader.ValidValues(), c.ValidValues()) {
			// Every pass gave the same value (200 x, 100 %): equal, however few.
			d.Verdict, d.Reason = stats.NoChange, sameValues
		}
		v := verdict{c, d}
		switch d.Verdict {
		case stats.NoChange:
			s.ties = append(s.ties, v)
		case stats.Regression:
			s.behind = append(s.behind, v)
		case stats.Improvement:
			s.ahead = append(s.ahead, v)
		default:
			s.unknown = append(s.unknown, v)
		}
	}
	return s
}

// sameValues is the reason of a tie between cells whose passes all gave
// one value.
const sameValues = "every valid pass has the same value"

// same says every value of a and b is one value.
func same(a, b []float64) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	for _, v := range append(a[1:], b...) {
		if v != a[0] {
			return false
		}
	}
	return true
}

// unknownWhy says why cells cannot be told apart from the leader: too few
// valid passes for the U test ever to reach significance, or values so
// often equal (counts) that no split of them can (or no valid pass).
func unknownWhy(vs []verdict, o Options) string {
	d := vs[0].delta
	switch {
	case d.BaseN == 0 || d.NewN == 0:
		return d.Reason
	case stats.SmallestP(d.BaseN, d.NewN) < o.Compare.Alpha && d.MinP >= o.Compare.Alpha:
		return fmt.Sprintf("with %d and %d valid passes of so few distinct values no split of them can reach p < %g (the smallest p is %.3g)",
			d.BaseN, d.NewN, o.Compare.Alpha, d.MinP)
	}
	return fmt.Sprintf("with %d and %d valid passes no difference can reach p < %g; %d passes each can",
		d.BaseN, d.NewN, o.Compare.Alpha, stats.MinSamples(o.Compare.Alpha))
}

func better(a, b float64, lower bool) bool {
	if lower {
		return a < b
	}
	return a > b
}

func labels(vs []verdict) string {
	var l []string
	for _, v := range vs {
		l = append(l, v.cell.Label)
	}
	return list(l)
}

// list joins names as prose: "a", "a and b", "a, b and c".
func list(l []string) string {
	switch len(l) {
	case 0:
		return ""
	case 1:
		return l[0]
	}
	return strings.Join(l[:len(l)-1], ", ") + " and " + l[len(l)-1]
}

func pText(d stats.Delta) string {
	switch {
	case math.IsNaN(d.P):
		return ""
	case d.P < 0.001:
		return "p < 0.001"
	}
	return "p = " + results.Sig3(d.P)
}

// byTopology splits a test's cells by topology, in the order they come: a
// cell is compared only with cells reached the same way (an engine behind
// a TLS terminator against another behind the same terminator), never
// across topologies, where the difference would be the path's. A test of
// one topology is itself.
func byTopology(t Test) []Test {
	var order []string
	groups := map[string][]Cell{}
	for _, c := range t.Cells {
		if _, ok := groups[c.Topology]; !ok {
			order = append(order, c.Topology)
		}
		groups[c.Topology] = append(groups[c.Topology], c)
	}
	if len(order) <= 1 {
		return []Test{t}
	}
	out := make([]Test, 0, len(order))
	for _, top := range order {
		g := t
		g.Cells = groups[top]
		out = append(out, g)
	}
	return out
}

// inTopology prefixes a group's sentence with its topology when the test
// has several.
func inTopology(groups []Test, g Test, s string) string {
	if len(groups) == 1 || len(g.Cells) == 0 {
		return s
	}
	return "In " + topologyName(g.Cells[0].Topology) + ": " + s
}

// finding is a test's sentences, one per topology: who leads, who ties
// with it, who is behind and by how much, who cannot be told apart for
// lack of passes, and who has no value.
func finding(t Test, o Options) string {
	groups := byTopology(t)
	parts := make([]string, 0, len(groups))
	for _, g := range groups {
		if len(g.Cells) > 0 && t.Limits[g.Cells[0].Topology] != "" {
			// A terminator limits every cell there: said once, instead
			// of each cell's saturation or bound.
			parts = append(parts, inTopology(groups, g, t.Limits[g.Cells[0].Topology]))
			continue
		}
		parts = append(parts, inTopology(groups, g, findingIn(g, o)))
	}
	return strings.Join(parts, " ")
}

// findingIn is finding among cells of one topology.
func findingIn(t Test, o Options) string {
	s := stand(t, o)
	var b strings.Builder
	if s.leader == nil {
		if len(s.saturated) > 0 {
			fmt.Fprintf(&b, "No unsaturated cell has a value for %s.", t.Title)
		} else if len(s.bounded) > 0 {
			fmt.Fprintf(&b, "No cell of %s can be ranked.", t.Title)
		} else {
			fmt.Fprintf(&b, "No cell has a value for %s.", t.Title)
		}
		saturatedCells(&b, s.saturated)
		boundedCells(&b, s.bounded, t.Unit, nil)
		noValues(&b, s.none)
		noCeiling(&b, t)
		return b.String()
	}
	lead := valueText(*s.leader.Value, t.Unit)
	best := bestWord(t.LowerIsBetter)
	others := len(s.ties) + len(s.behind) + len(s.ahead) + len(s.unknown)
	if len(s.over) > 0 {
		overCells(&b, s.over, t.Unit)
		// No exact figure is the best: the leader is the first of the
		// exact ones, named so.
		best = "first of the exact figures"
	}
	switch {
	case others == 0 && len(s.over) > 0:
		fmt.Fprintf(&b, " %s has the only exact value: %s.", s.leader.Label, lead)
	case others == 0 && len(s.bounded) > 0:
		fmt.Fprintf(&b, "Only %s has a ranked value: %s.", s.leader.Label, lead)
	case others == 0 && len(s.saturated) > 0:
		fmt.Fprintf(&b, "Only %s has an unsaturated value: %s.", s.leader.Label, lead)
	case others == 0:
		fmt.Fprintf(&b, "Only %s has a value: %s.", s.leader.Label, lead)
	case len(s.ties) == others && allSame(s):
		fmt.Fprintf(&b, "A tie: %s are each at %s.", labels(append([]verdict{{cell: *s.leader}}, s.ties...)), lead)
	case len(s.ties) == others:
		fmt.Fprintf(&b, "A tie: %s %s not set apart from %s, %s at %s (%s).",
			labels(s.ties), plural(len(s.ties), "is", "are"), s.leader.Label, best, lead, tieReasons(s.ties, t.Unit, o))
	default:
		if len(s.over) > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s is %s at %s.", s.leader.Label, best, lead)
		if len(s.ties) > 0 {
			fmt.Fprintf(&b, " %s %s not set apart from it (%s): a tie.", labels(s.ties), plural(len(s.ties), "is", "are"), tieReasons(s.ties, t.Unit, o))
		}
		for _, v := range s.behind {
			fmt.Fprintf(&b, " %s is %s (%s).", v.cell.Label, gapWords(*s.leader.Value, *v.cell.Value, t), pText(v.delta))
		}
		for _, v := range s.ahead {
			fmt.Fprintf(&b, " %s's passes are better (%s) though its merged value is not.", v.cell.Label, pText(v.delta))
		}
		if len(s.unknown) > 0 {
			var gaps []string
			for _, v := range s.unknown {
				gaps = append(gaps, fmt.Sprintf("%s is %s", v.cell.Label, gapWords(*s.leader.Value, *v.cell.Value, t)))
			}
			fmt.Fprintf(&b, " %s, but %s cannot be told apart from it: %s.", list(gaps), plural(len(s.unknown), "it", "they"), unknownWhy(s.unknown, o))
		}
	}
	saturatedCells(&b, s.saturated)
	boundedCells(&b, without(s.bounded, s.over), t.Unit, s.leader)
	noValues(&b, s.none)
	noCeiling(&b, t)
	return b.String()
}

// overCells says which lower bounds are above every exact figure: each
// carries more than any engine with an exact figure, and none can be
// ordered against another.
func overCells(b *strings.Builder, over []Cell, unit string) {
	var each []string
	for _, c := range over {
		each = append(each, fmt.Sprintf("%s is at least %s (%s)", c.Label, valueText(*c.Value, unit), c.Bound()))
	}
	if len(over) == 1 {
		fmt.Fprintf(b, "%s: above every exact figure, so it carries the most.", each[0])
		return
	}
	fmt.Fprintf(b, "%s: each above every exact figure, so each carries more than any of them; two bounds cannot be ordered.", strings.Join(each, "; "))
}

// without is cells less those in drop, by label.
func without(cells, drop []Cell) []Cell {
	var out []Cell
	for _, c := range cells {
		if !slices.ContainsFunc(drop, func(d Cell) bool { return d.Label == c.Label }) {
			out = append(out, c)
		}
	}
	return out
}

// boundedCells says which cells are lower bounds or the instrument's
// ceiling, each with its value: none is ranked. A lower bound not above the
// leader's exact figure cannot be ordered against it.
func boundedCells(b *strings.Builder, cells []Cell, unit string, leader *Cell) {
	for _, c := range cells {
		switch {
		case c.LowerBound != "" && leader != nil:
			fmt.Fprintf(b, " %s is at least %s (%s): not above %s's %s, so the two cannot be ordered.",
				c.Label, valueText(*c.Value, unit), c.Bound(), leader.Label, valueText(*leader.Value, unit))
		case c.LowerBound != "":
			fmt.Fprintf(b, " %s is at least %s (%s), not ranked.", c.Label, valueText(*c.Value, unit), c.Bound())
		default:
			fmt.Fprintf(b, " %s is the instrument's ceiling at %s, not ranked.", c.Label, valueText(*c.Value, unit))
		}
	}
}

// noCeiling says a capacity's cells have no ceiling beside them: nothing
// measured the instrument in their topology, so any of them may be the
// instrument's limit rather than the engine's.
func noCeiling(b *strings.Builder, t Test) {
	for _, c := range t.Cells {
		if c.NoCeiling {
			fmt.Fprintf(b, " No ceiling was measured in %s (no null figure): any of these capacities may be the instrument's limit, not the engine's.", topologyName(c.Topology))
			return
		}
	}
}

// saturatedCells says which cells were saturated, at what rate and what
// they carried: "Varnish 9.0.2 (TLS) is saturated at 500 rps: carried
// 199.6; not ranked."
func saturatedCells(b *strings.Builder, cells []Cell) {
	for _, c := range cells {
		fmt.Fprintf(b, " %s is saturated", c.Label)
		if c.OfferedRPS != nil {
			fmt.Fprintf(b, " at %s rps", rateText(*c.OfferedRPS))
		}
		if c.SaturatedPasses < c.MeasuredPasses {
			fmt.Fprintf(b, " in %d of %d passes", c.SaturatedPasses, c.MeasuredPasses)
		}
		if c.OfferedRPS != nil && c.AchievedRPS != nil {
			fmt.Fprintf(b, ": carried %s", rateText(*c.AchievedRPS))
			if c.SaturatedPasses < c.MeasuredPasses {
				b.WriteString(" (the median of its passes)")
			}
		}
		b.WriteString("; not ranked.")
	}
}

// gapWords is how far a cell's value is from the leader's, in the one
// convention of the whole page (findings, takeaways, what we learned):
// from the values the page shows, never the medians of the passes the U
// test compares, so that one gap has one size. A percentage is apart by
// points; where lower is better a value 1.5 times the leader's or more is
// "N× as long" (or as high), a smaller one "N % higher"; where higher is
// better, "N % lower".
func gapWords(lead, other float64, t Test) string {
	higher := other > lead
	switch {
	case lead == other:
		return "at the same value"
	case t.Unit == "%":
		return results.Sig3(math.Abs(other-lead)) + " points " + worse(higher)
	case t.LowerIsBetter && lead <= 0:
		return valueText(other-lead, t.Unit) + " higher"
	case t.LowerIsBetter && other/lead >= 1.5:
		if t.Unit == "ms" || t.Unit == "s" {
			return results.Sig3(other/lead) + "× as long"
		}
		return results.Sig3(other/lead) + "× as high"
	case lead == 0:
		return valueText(math.Abs(other-lead), t.Unit) + " " + worse(higher)
	}
	return results.Sig3(math.Abs(other-lead)/math.Abs(lead)*100) + " % " + worse(higher)
}

// changeText is how far a cell's passes are from the leader's, in percent
// of the leader's median: what compare's threshold is held to, so a tie's
// reason says it.
func changeText(d stats.Delta) string {
	if math.IsNaN(d.Change) || math.IsInf(d.Change, 0) {
		return "further"
	}
	return results.Sig3(math.Abs(d.Change)) + " %"
}

// tieReasons says why each tie is one: the U test's p, a difference under
// the threshold or the generator's timing tolerance, or equal passes.
func tieReasons(vs []verdict, unit string, o Options) string {
	var r []string
	for _, v := range vs {
		d := v.delta
		var why string
		switch {
		case d.Reason == sameValues:
			why = sameValues
		case !math.IsNaN(d.P) && d.P >= o.Compare.Alpha:
			why = pText(d)
		case unit == "ms" && math.Abs(d.NewMedian-d.BaseMedian) < o.Compare.ToleranceMs:
			// Say what the U test found too: a consistent gap smaller
			// than the generator can vouch for is still a gap.
			why = fmt.Sprintf("%s %s, %s, but %s ms apart: under the generator's %g ms timing tolerance", changeText(d), worse(d.NewMedian > d.BaseMedian),
				pText(d), results.Sig3(math.Abs(d.NewMedian-d.BaseMedian)), o.Compare.ToleranceMs)
		default:
			why = fmt.Sprintf("%s apart, under the %g %% threshold", changeText(d), o.Compare.Threshold)
		}
		if len(vs) > 1 {
			why = v.cell.Label + ": " + why
		}
		r = append(r, why)
	}
	return strings.Join(r, "; ")
}

// allSame says every tied cell has the leader's value: none of them is
// "lowest".
func allSame(s standing) bool {
	for _, v := range s.ties {
		if *v.cell.Value != *s.leader.Value {
			return false
		}
	}
	return true
}

func worse(lower bool) string {
	if lower {
		return "higher"
	}
	return "lower"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func noValues(b *strings.Builder, none []Cell) {
	for _, c := range none {
		fmt.Fprintf(b, " %s has no value: %s.", c.Label, strings.TrimSuffix(c.NoValue, "."))
	}
}

// takeaway is a workload's sentence: each test's leader, ties and the
// cells too few passes cannot separate from it, short.
func takeaway(w Workload, o Options) string {
	var parts []string
	var tests []Test
	for _, t := range w.Tests {
		groups := byTopology(t)
		for _, g := range groups {
			if len(groups) > 1 {
				g.Title += " (" + topologyName(g.Cells[0].Topology) + ")"
			}
			tests = append(tests, g)
		}
	}
	for _, t := range tests {
		s := stand(t, o)
		var sat []string
		for _, c := range s.saturated {
			sat = append(sat, c.Label)
		}
		if s.leader == nil {
			if len(sat) > 0 {
				parts = append(parts, fmt.Sprintf("%s: no unsaturated value (%s saturated)", t.Title, list(sat)))
				continue
			}
			if len(s.bounded) > 0 {
				parts = append(parts, t.Title+": no ranked value (lower bounds or the instrument's ceiling)")
				continue
			}
			parts = append(parts, t.Title+": no value")
			continue
		}
		lead := fmt.Sprintf("%s at %s", s.leader.Label, valueText(*s.leader.Value, t.Unit))
		others := len(s.behind) + len(s.ahead) + len(s.unknown)
		var p string
		switch {
		case len(s.over) > 0:
			// A bound above every exact figure comes first: it carries
			// more than each of them.
			var bs []string
			for _, c := range s.over {
				bs = append(bs, c.Label+" at "+valueWithBound(c, t.Unit))
			}
			p = fmt.Sprintf("%s: %s above every exact figure", t.Title, list(bs))
			if len(s.over) > 1 {
				p += " (the bounds cannot be ordered)"
			}
			p += fmt.Sprintf(", then %s", lead)
		case len(s.ties) > 0 && others == 0:
			p = fmt.Sprintf("%s: a tie between %s", t.Title, labels(append([]verdict{{cell: *s.leader}}, s.ties...)))
		case len(s.behind)+len(s.ahead) > 0:
			p = fmt.Sprintf("%s: %s leads", t.Title, lead)
			if len(s.ties) > 0 {
				p += ", tied with " + labels(s.ties)
			}
		case len(s.unknown) > 0:
			var gaps []string
			for _, v := range s.unknown {
				gaps = append(gaps, fmt.Sprintf("%s %s", v.cell.Label, gapWords(*s.leader.Value, *v.cell.Value, t)))
			}
			p = fmt.Sprintf("%s: %s is %s (%s; too few passes to test)", t.Title, lead, bestWord(t.LowerIsBetter), list(gaps))
			if len(s.ties) > 0 {
				p += ", tied with " + labels(s.ties)
			}
		case len(sat) > 0:
			p = fmt.Sprintf("%s: only %s has an unsaturated value", t.Title, lead)
		default:
			p = fmt.Sprintf("%s: only %s has a value", t.Title, lead)
		}
		if len(sat) > 0 {
			p += fmt.Sprintf(" (%s saturated, not ranked)", list(sat))
		}
		if rest := without(s.bounded, s.over); len(rest) > 0 {
			var bs []string
			for _, c := range rest {
				bs = append(bs, c.Label)
			}
			p += fmt.Sprintf(" (%s at a lower bound or the instrument's ceiling, not ranked)", list(bs))
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "; ") + "."
}

func bestWord(lower bool) string {
	if lower {
		return "lowest"
	}
	return "highest"
}

// summary says what the page holds: the workloads and tests, from how
// many files, on what. The engines and their versions are in their own
// table (Report.Engines), not in this sentence.
func summary(rep *Report) string {
	var wls []string
	tests := 0
	for _, w := range rep.Workloads {
		wls = append(wls, strings.ToLower(w.Title[:1])+w.Title[1:])
		tests += len(w.Tests)
	}
	h := rep.Sources[0].Run.Host
	where := fmt.Sprintf("on one machine (%s, %d cores)", orUnknown(h.CPUModel), h.Cores)
	for _, s := range rep.Sources {
		if len(s.Run.Placement) > 0 {
			where = "with the generators, the engine and the origin on hosts of their own (see the conditions)"
			break
		}
	}
	s := fmt.Sprintf("%d %s (%s): %d tests, from %d result %s measured %s.",
		len(wls), plural(len(wls), "workload", "workloads"), list(wls), tests,
		len(rep.Sources), plural(len(rep.Sources), "file", "files"), where)
	// One build per page is the rule; a page merged from several says so
	// here once, and each table that mixes them says which rows.
	if builds := pageBuilds(rep); len(builds) > 1 {
		s += fmt.Sprintf(" As an exception, this page is merged from %d hlsbench builds (%s)", len(builds), list(builds))
		mixed := 0
		for _, w := range rep.Workloads {
			for _, t := range w.Tests {
				if t.Builds != "" {
					mixed++
				}
			}
		}
		if mixed > 0 {
			s += fmt.Sprintf(": %d %s which rows each measured.", mixed,
				plural(mixed, "table measured with more than one says", "tables measured with more than one say"))
		} else {
			s += ", one per part (the parts are in the test conditions): no table mixes them."
		}
	}
	return s
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// conditions are the test conditions from the recorded host, tool, engines
// and runs.
func conditions(in *Input) []Fact {
	var f []Fact
	add := func(l, v string) { f = append(f, Fact{Label: l, Value: v}) }
	hosts := map[string]bool{}
	for _, s := range in.Sources {
		h := s.Run.Host
		key := fmt.Sprintf("%s, %d cores, %s memory; %s %s (%s)", orUnknown(h.CPUModel), h.Cores, gib(h.MemBytes), osName(h.OS), orUnknown(h.Kernel), h.Arch)
		if !hosts[key] {
			hosts[key] = true
			add("Machine", key)
		}
	}
	for _, s := range in.Sources {
		if len(s.Run.Placement) == 0 {
			continue
		}
		var where []string
		for _, p := range s.Run.Placement {
			where = append(where, fmt.Sprintf("%s on %s (%s)", p.Role, p.Addr, p.Endpoint))
		}
		key := strings.Join(where, ", ") + "; the machine above is the controller's"
		if !hosts[key] {
			hosts[key] = true
			add("Hosts", key)
		}
	}
	tools := map[string]bool{}
	for _, s := range in.Sources {
		t := s.Run.Tool
		key := fmt.Sprintf("%s %s (commit %s, %s)", t.Name, t.Version, shortCommit(t.Commit), t.GoVersion)
		if !tools[key] {
			tools[key] = true
			add("Tool", key)
		}
	}
	seen := map[string]bool{}
	for _, s := range in.Sources {
		for _, e := range s.Run.Engines {
			v := fmt.Sprintf("%s, %s, %s", engineVersion(e.Name, e.Version), e.Runtime, e.Topology)
			if p := pinning(e.Pinning); p != "" {
				v += "; " + p
			}
			if !seen[v] {
				seen[v] = true
				add("Engine", v)
			}
		}
	}
	add("Load generator", "hlsbench's own open-loop generator: latency counts from each request's intended send time (corrected for coordinated omission); TTFB is the first response byte (kernel receive timestamp); each pass's requests go into one HDR histogram and percentiles are taken from the merged histograms; a pass where the generator itself fell behind is marked invalid")
	add("Process", "every engine up at once, each with its own origin; passes interleaved (pass k of every engine before pass k+1 of any); the engine's CPU time and memory measured per pass")
	for _, s := range in.Sources {
		r := s.Run
		v := fmt.Sprintf("%s, started %s, %s", r.ID, r.StartedAt.UTC().Format("2006-01-02 15:04:05 UTC"), r.Status)
		if !r.FinishedAt.IsZero() {
			v += fmt.Sprintf(" after %s", r.FinishedAt.Sub(r.StartedAt).Round(1e9))
		}
		add("Run", v)
	}
	return f
}

func osName(goos string) string {
	if goos == "linux" {
		return "Linux"
	}
	return orUnknown(goos)
}

func gib(b uint64) string {
	if b == 0 {
		return "unknown"
	}
	return results.Sig3(float64(b)/(1<<30)) + " GiB"
}

func shortCommit(c string) string {
	base, dirty := strings.CutSuffix(c, "+dirty")
	if len(base) > 12 {
		base = base[:12]
	}
	if dirty {
		base += "+dirty"
	}
	return base
}

// pinning says which CPUs each party had: "generator on CPU 1; engine on
// CPU 0; origin on CPU 0".
func pinning(p map[string]string) string {
	if len(p) == 0 {
		return ""
	}
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var l []string
	for _, k := range keys {
		l = append(l, fmt.Sprintf("%s on CPU %s", k, p[k]))
	}
	return strings.Join(l, ", ")
}

// caveats is "What this does not prove", from the runs.
func caveats(in *Input, rep *Report) []string {
	var c []string
	// Invalid passes, per cell and test.
	var invalid []string
	for _, w := range rep.Workloads {
		for _, t := range w.Tests {
			for _, cell := range t.Cells {
				if cell.MeasuredPasses == 0 || cell.ValidPasses == cell.MeasuredPasses {
					continue
				}
				why := ""
				if len(cell.Invalid) > 0 {
					why = ": " + cell.Invalid[0]
					if len(cell.Invalid) > 1 {
						why += fmt.Sprintf(" (and %d more)", len(cell.Invalid)-1)
					}
				}
				if len(cell.Spoiled) > 0 {
					// A valid cell's invalid passes are the host's or the
					// instrument's: said as such, with the first reason.
					why = fmt.Sprintf(" (%d spoiled by the host or the instrument, not the engine): %s", cell.SpoiledPasses, cell.Spoiled[0])
					if len(cell.Spoiled) > 1 {
						why += fmt.Sprintf(" (and %d more)", len(cell.Spoiled)-1)
					}
				}
				if why == "" && cell.SaturatedPasses > 0 {
					// A cell whose median pass carried its rate is valid
					// on its valid passes: the saturated ones are left out,
					// said as such.
					for _, p := range cell.Passes {
						if p.Saturated != "" {
							why = fmt.Sprintf(" (%d saturated, too few to make the cell saturated): pass %d: %s", cell.SaturatedPasses, p.Index, p.Saturated)
							break
						}
					}
				}
				what := "left out of the value"
				if cell.ValidPasses == 0 {
					what = "so it has no value"
				}
				invalid = append(invalid, fmt.Sprintf("%s — %s, %s: %d of %d measured passes invalid, %s%s",
					cell.Label, w.Title, t.Title, cell.MeasuredPasses-cell.ValidPasses, cell.MeasuredPasses, what, why))
			}
		}
	}
	if len(invalid) > 0 {
		c = append(c, fmt.Sprintf("%d %s had invalid passes; a value rests on its valid passes only, and the charts mark the invalid ones:", len(invalid), plural(len(invalid), "figure", "figures")))
		const most = 12
		for i, s := range invalid {
			if i == most {
				c = append(c, fmt.Sprintf("· and %d more (each table lists them)", len(invalid)-most))
				break
			}
			c = append(c, "· "+s)
		}
	}
	// Cells not applicable: a topology or engine some workload did not run.
	topos := map[string][]string{}
	var allTopos []string
	for _, w := range rep.Workloads {
		for _, t := range w.Tests {
			for _, cell := range t.Cells {
				if cell.Topology != "" && !slices.Contains(topos[w.Name], cell.Topology) {
					topos[w.Name] = append(topos[w.Name], cell.Topology)
				}
				if cell.Topology != "" && !slices.Contains(allTopos, cell.Topology) {
					allTopos = append(allTopos, cell.Topology)
				}
			}
		}
	}
	for _, w := range rep.Workloads {
		var not []string
		for _, tp := range allTopos {
			if !slices.Contains(topos[w.Name], tp) {
				not = append(not, tp)
			}
		}
		if len(not) > 0 {
			c = append(c, fmt.Sprintf("%s has no %s cells: it was run over %s only.", w.Title, list(not), list(topos[w.Name])))
		}
	}
	if len(allTopos) == 1 {
		c = append(c, fmt.Sprintf("Only the %s topology was run: nothing here measures TLS termination or PROXYv2.", allTopos[0]))
	}
	if missing := missingReference(rep); len(missing) > 0 {
		c = append(c, fmt.Sprintf("Of the reference page's eight cells, these are not in these runs: %s.", list(missing)))
	}
	if m := in.Manifest; m != nil {
		for _, e := range m.Missing {
			c = append(c, fmt.Sprintf("%s was not run: it is not available on this machine (%s).", displayName(e.Name), strings.TrimSuffix(e.Reason, ".")))
		}
	}
	// One host.
	shared := "The load generator, the engines and the origins share one machine"
	for _, s := range in.Sources {
		for _, e := range s.Run.Engines {
			if p := pinning(e.Pinning); p != "" {
				shared += fmt.Sprintf(" (%s)", p)
				break
			}
		}
		break
	}
	h := rep.Sources[0].Run.Host
	c = append(c, fmt.Sprintf("%s with %d cores: the figures are relative efficiency under shared contention, not isolated network performance, and they compare engines within these runs only — absolute latencies move from run to run on a shared machine.", shared, h.Cores))
	for _, s := range in.Sources {
		if i := s.Run.Interference; i != nil && i.BusyPasses > 0 {
			c = append(c, fmt.Sprintf("%s: in %d of %d measured passes other processes used more than %g %% of the measured CPUs (at most %s %%).",
				s.Name, i.BusyPasses, i.Passes, i.Threshold*100, results.Sig3(i.MaxOtherShare*100)))
		}
	}
	hostsSeen := map[string]bool{}
	for _, s := range in.Sources {
		hostsSeen[s.Run.Host.Hostname+"|"+s.Run.Host.CPUModel] = true
	}
	if len(hostsSeen) > 1 {
		c = append(c, fmt.Sprintf("These result files come from %d machines: figures from different machines do not compare.", len(hostsSeen)))
	}
	// What no configuration makes equal, as each engine recorded it.
	seen := map[string]bool{}
	for _, s := range in.Sources {
		for _, e := range s.Run.Engines {
			for _, d := range e.Differences {
				if !seen[d] {
					seen[d] = true
					c = append(c, d)
				}
			}
		}
	}
	// A configuration of the user's own: which, and what hlsbench could
	// not guarantee of it.
	for _, s := range in.Sources {
		for _, e := range s.Run.Engines {
			if e.Config == nil || seen[e.Name+"\x00"+e.Config.SHA256] {
				continue
			}
			seen[e.Name+"\x00"+e.Config.SHA256] = true
			c = append(c, fmt.Sprintf("%s ran a configuration of its own, %s (sha256 %.12s), as given: %s.",
				e.Name, e.Config.Path, e.Config.SHA256, strings.Join(e.Config.Caveats, "; ")))
		}
	}
	c = append(c, "The traffic is synthetic HLS-shaped load from one client machine, not a captured production trace.")
	return c
}

// referenceCells are the published page's eight: Varnish and NGINX over
// plaintext, TLS and PROXYv2, Vinyl Cache over plaintext and PROXYv2 (it
// has no TLS listener).
var referenceCells = []struct{ engine, topology string }{
	{"varnish", "plaintext"}, {"varnish", "tls"}, {"varnish", "proxyv2"},
	{"vinyl", "plaintext"}, {"vinyl", "proxyv2"},
	{"nginx", "plaintext"}, {"nginx", "tls"}, {"nginx", "proxyv2"},
}

// missingReference lists the reference page's cells no test here has.
func missingReference(rep *Report) []string {
	have := map[[2]string]bool{}
	for _, w := range rep.Workloads {
		for _, t := range w.Tests {
			for _, c := range t.Cells {
				have[[2]string{baseEngine(c.Engine), c.Topology}] = true
			}
		}
	}
	var out []string
	for _, rc := range referenceCells {
		if !have[[2]string{rc.engine, rc.topology}] {
			out = append(out, displayName(rc.engine)+" ("+topologyName(rc.topology)+")")
		}
	}
	return out
}

// instrumentFinding says what the null engine measured in a test, apart
// from the finding: the instrument's figure, never compared with an
// engine's. On a latency test it is the host's floor, drawn on the chart.
func instrumentFinding(t Test) string {
	var parts []string
	for _, c := range t.Instrument {
		name := strings.Replace(c.Label, instrumentNote, "", 1)
		switch {
		case c.Unranked:
			parts = append(parts, fmt.Sprintf("%s was saturated (%s): no floor", name, carriedText(c)))
		case c.Value != nil && c.CeilingBeaten != "":
			parts = append(parts, fmt.Sprintf("%s carried %s, and null is no ceiling here: %s", name, valueText(*c.Value, t.Unit), c.CeilingBeaten))
		case c.Value != nil && c.InstrumentCeiling:
			parts = append(parts, fmt.Sprintf("%s is the instrument's ceiling at %s", name, valueText(*c.Value, t.Unit)))
		case c.Value != nil && t.Latency():
			parts = append(parts, fmt.Sprintf("%s measured %s, the host's floor, drawn as a line on the chart", name, valueText(*c.Value, t.Unit)))
		case c.Value != nil:
			parts = append(parts, fmt.Sprintf("%s measured %s", name, valueText(*c.Value, t.Unit)))
		case strings.HasPrefix(c.NoValue, "not applicable"):
			continue
		default:
			parts = append(parts, fmt.Sprintf("%s has no value (%s)", name, c.NoValue))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " The instrument, not an engine and never ranked: " + strings.Join(parts, "; ") + "."
}

// engineVersion names an engine with its version once: "Varnish 9.0.2" for
// varnish@9.0.2 reporting 9.0.2, "Vinyl Cache trunk (7.7.0-dev)" when the
// selected version and the reported one differ.
func engineVersion(name, version string) string {
	label := displayName(baseEngine(name))
	_, sel, _ := strings.Cut(name, "@")
	switch {
	case version == "":
		if sel != "" {
			label += " " + sel
		}
	case sel == "" || strings.Contains(version, sel):
		label += " " + version
	default:
		label += " " + sel + " (" + version + ")"
	}
	return label
}
