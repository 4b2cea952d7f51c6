package report

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/hlsbench/hlsbench/results"
	"github.com/hlsbench/hlsbench/results/stats"
)

// learnedMost is how many differences "What did we learn?" states: the
// largest, not every comparison (each workload's takeaway has those).
const learnedMost = 5

// gap is one significant difference: a test's leader against the cell
// furthest behind it.
type gap struct {
	wl     string // the workload's title
	t      Test
	lead   Cell
	behind verdict
	// size orders the gaps: how many times the better value the worse
	// one is (for a higher-is-better figure, the other way round).
	size float64
}

// learned is the page's summary: how many tests separate the cells at all,
// the few largest significant differences in plain words, and the
// capacity ranking when the runs measured it.
func learned(rep *Report, o Options) []string {
	var out []string
	if most := mostValidPasses(rep); most > 0 && most < stats.MinSamples(o.Compare.Alpha) {
		out = append(out, fmt.Sprintf(
			"With at most %d valid passes per cell no difference here can reach p < %g (%d passes each can): nothing below is a tested difference.",
			most, o.Compare.Alpha, stats.MinSamples(o.Compare.Alpha)))
	}
	var gaps []gap // the largest of each test
	// Every test with a value is counted once: separated, tied, too few
	// passes, or alone (one ranked cell, nothing to compare it with), so
	// that the sentence's parts add up to its whole.
	tests, separated, tied, untested, alone := 0, 0, 0, 0, 0
	perTopology := false // some test has cells in several topologies
	for _, w := range rep.Workloads {
		for _, t := range w.Tests {
			perTopology = perTopology || !isCapacity(t) && len(byTopology(t)) > 1
		}
	}
	for _, w := range rep.Workloads {
		for _, all := range w.Tests {
			if isCapacity(all) {
				continue
			}
			// A test's largest gap in any of its topologies: the list is of
			// tests, not of one test seen three ways.
			var far *gap
			for _, t := range byTopology(all) {
				s := stand(t, o)
				if s.leader == nil {
					continue
				}
				tests++
				switch {
				case len(s.behind) > 0 || len(s.ahead) > 0:
					// Passes significantly better than the leader's
					// separate the cells too.
					separated++
				case len(s.unknown) > 0:
					untested++
				case len(s.ties) > 0:
					tied++
				default:
					alone++
				}
				for _, v := range s.behind {
					g := gap{wl: w.Title, t: t, lead: *s.leader, behind: v, size: gapSize(*s.leader.Value, *v.cell.Value, t.LowerIsBetter)}
					if far == nil || g.size > far.size {
						far = &g
					}
				}
			}
			if far != nil {
				gaps = append(gaps, *far)
			}
		}
	}
	if tests > 0 {
		what := plural(tests, "test", "tests")
		if perTopology {
			// Several topologies: each test is compared within each.
			what += " counted per topology (cells are compared within a topology, never across)"
		}
		s := fmt.Sprintf("Of %d %s with a value, %d %s the cells significantly (p < %g, a difference of at least %g %%)",
			tests, what, separated, plural(separated, "separates", "separate"), o.Compare.Alpha, o.Compare.Threshold)
		if tied > 0 {
			s += fmt.Sprintf("; %d %s a tie", tied, plural(tied, "is", "are"))
		}
		if untested > 0 {
			s += fmt.Sprintf("; %d %s too few valid passes to test", untested, plural(untested, "has", "have"))
		}
		if alone > 0 {
			s += fmt.Sprintf("; %d %s one ranked cell, nothing to compare it with", alone, plural(alone, "has", "have"))
		}
		out = append(out, s+".")
	}
	var sat []string
	for _, w := range rep.Workloads {
		for _, t := range w.Tests {
			var cells []string
			for _, c := range t.Cells {
				if c.Unranked && c.LimitedBy == "" {
					cells = append(cells, c.Label)
				}
			}
			if len(cells) > 0 {
				sat = append(sat, fmt.Sprintf("%s in %s — %s", list(cells), w.Title, t.Title))
			}
		}
	}
	if len(sat) > 0 {
		out = append(out, fmt.Sprintf("Saturated, so not ranked as latencies (what they carried is in their tables): %s.", strings.Join(sat, "; ")))
	}
	sort.SliceStable(gaps, func(i, j int) bool { return gaps[i].size > gaps[j].size })
	if len(gaps) > learnedMost {
		gaps = gaps[:learnedMost]
	}
	if len(gaps) == 0 && tests > 0 {
		out = append(out, "No difference between cells is significant.")
	}
	if len(gaps) > 0 {
		out = append(out, fmt.Sprintf("The %s largest significant %s:", countWord(len(gaps)), plural(len(gaps), "difference", "differences")))
	}
	for _, g := range gaps {
		out = append(out, gapText(g))
	}
	out = append(out, capacityRanking(rep)...)
	if len(out) == 0 {
		out = append(out, "No test has a value: nothing here tells the cells apart.")
	}
	return out
}

// gapSize is how many times better the leader's value is than the other's;
// +Inf when the better one is 0 and the other is not.
func gapSize(lead, other float64, lower bool) float64 {
	lo, hi := lead, other
	if !lower {
		lo, hi = other, lead
	}
	switch {
	case lo == hi:
		return 1
	case lo <= 0:
		return math.Inf(1)
	}
	return hi / lo
}

// gapText says one gap in plain words: "Hit-path TTFB — p99 TTFB: NGINX
// 1.2 ms against Varnish 9.0.2 (TLS) 2.8 ms, 2.3× as long (p = 0.0001,
// 20 and 20 valid passes)."
func gapText(g gap) string {
	lead, other := *g.lead.Value, *g.behind.cell.Value
	size := gapWords(lead, other, g.t)
	d := g.behind.delta
	return fmt.Sprintf("%s — %s: %s %s against %s %s, %s (p = %s, %d and %d valid passes).",
		g.wl, g.t.Title, g.lead.Label, valueText(lead, g.t.Unit), g.behind.cell.Label, valueText(other, g.t.Unit), size,
		results.Sig3(d.P), d.BaseN, d.NewN)
}

// isCapacity is a capacity test: a rate, ranked on its own line.
func isCapacity(t Test) bool { return t.Ranked }

// capacityRanking is one sentence per capacity test and topology, most
// first: the exact figures by value, and each lower bound ("≥ N (why)": the
// generator ran out, the instrument's limit) above every exact figure below
// it — an engine known to carry at least L carries more than one that
// carries E < L. A bound is listed after an exact figure at or above it,
// with which it cannot be ordered, and two bounds cannot be ordered against
// each other: the sentence says so. The instrument's ceiling is never
// placed among them; the cells with no value come last, and a topology
// with no ceiling measured says so.
func capacityRanking(rep *Report) []string {
	var out []string
	for _, w := range rep.Workloads {
		for _, all := range w.Tests {
			if !isCapacity(all) {
				continue
			}
			groups := byTopology(all)
			for _, t := range groups {
				var cells, ceilings []Cell
				var none []string
				noCeil := false
				for _, c := range t.Cells {
					noCeil = noCeil || c.NoCeiling
					switch {
					case c.Value == nil:
						none = append(none, c.Label)
					case c.LowerBound == "" && c.InstrumentCeiling:
						ceilings = append(ceilings, c)
					default:
						cells = append(cells, c)
					}
				}
				if len(cells)+len(ceilings) == 0 {
					continue
				}
				// By value, most first; at one value the exact figure
				// first: a bound equal to it is not above it.
				sort.SliceStable(cells, func(i, j int) bool {
					if *cells[i].Value != *cells[j].Value {
						return *cells[i].Value > *cells[j].Value
					}
					return cells[i].LowerBound == "" && cells[j].LowerBound != ""
				})
				var parts []string
				var exactAbove *Cell // the last exact figure listed
				bounds := 0
				for i, c := range cells {
					if c.LowerBound == "" {
						parts = append(parts, c.Label+" "+valueText(*c.Value, t.Unit))
						exactAbove = &cells[i]
						continue
					}
					bounds++
					p := c.Label + " " + valueWithBound(c, t.Unit)
					if exactAbove != nil {
						p += ", not ordered against " + exactAbove.Label
					}
					parts = append(parts, p)
				}
				s := t.Title
				if len(groups) > 1 {
					s += ", " + topologyName(t.Cells[0].Topology)
				}
				if slo := all.SLO(); slo != "" {
					s += " (within " + slo + ")"
				}
				if lim := all.Limits[t.Cells[0].Topology]; lim != "" {
					// Every figure there is the terminator's: no order.
					out = append(out, s+": "+lim)
					continue
				}
				if len(parts) > 0 {
					s += ", most first: " + strings.Join(parts, ", ")
				}
				if bounds > 1 {
					s += "; the bounds cannot be ordered against each other"
				}
				var cs []string
				for _, c := range ceilings {
					cs = append(cs, c.Label+" "+valueWithBound(c, t.Unit))
				}
				if len(cs) > 0 {
					s += "; not ranked: " + strings.Join(cs, ", ")
				}
				if len(none) > 0 {
					s += "; no value: " + list(none)
				}
				if noCeil {
					s += "; no ceiling measured (no null figure in " + topologyName(t.Cells[0].Topology) + "): any may be the instrument's limit"
				}
				out = append(out, s+".")
			}
		}
	}
	return out
}

func countWord(n int) string {
	if w := []string{"", "one", "two", "three", "four", "five"}; n < len(w) {
		return w[n]
	}
	return fmt.Sprint(n)
}
