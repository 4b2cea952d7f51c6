package report

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/hlsbench/hlsbench/results/compare"
	"github.com/hlsbench/hlsbench/results/stats"
)

// The published comparison this page regenerates ("Benchmarks Caching
// proxies: HTTP caching proxies for HLS delivery"), held here as data so
// that the page can set each of its claims beside this run's figure
// without reading anything outside the repository. The wording, figures,
// versions and method below are copied from that page; each claim names
// its section there. What its runner measured differently comes from
// reading its runner (REFERENCE.md in the project's notes): the page
// must explain a difference by itself, not by a link.

// ClaimStatus is what this run says of a claim of the published page.
type ClaimStatus string

const (
	// ClaimSame: every comparison the claim makes is decided here, by a
	// significant comparison of valid cells, the same way.
	ClaimSame ClaimStatus = "same"
	// ClaimDifferent: some comparison the claim makes is decided here the
	// other way (a tie it claims is a significant difference here).
	ClaimDifferent ClaimStatus = "different"
	// ClaimNotDecided: measured here, but some comparison is a tie,
	// inconclusive, or rests on a cell that is invalid, saturated or a
	// bound: this run neither confirms nor contradicts it.
	ClaimNotDecided ClaimStatus = "not decided here"
	// ClaimNotMeasured: this run has no cell for some engine the claim
	// names, or no result for its test.
	ClaimNotMeasured ClaimStatus = "not measured here"
)

// ClaimRow is one claim of the published comparison beside this page.
type ClaimRow struct {
	// Section is the published page's section the claim is in.
	Section string
	// Claim is the claim as published, with its figures.
	Claim string
	// Ours are this page's figures for it, from the tables above; never
	// typed in.
	Ours string
	// Status and Why: same, different or not decided here, and why
	// (what each comparison gave here, the versions, the method).
	Status ClaimStatus
	Why    string
	// Slug is the section of the test the claim is judged on ("" when it
	// spans several).
	Slug string
}

// claimRule says how a row's status is decided; the page prints it above
// the table.
const claimRule = "A ranking claim is \"same\" when every comparison it makes (its leader against each engine behind it) is decided the same way here by a significant comparison of two valid cells of one topology, \"different\" when one is decided the other way (or a tie it claims is a significant difference here, or two engines behind the leader are significantly in the other order of their published figures), \"not decided here\" when one is a tie, inconclusive, or rests on a cell that is invalid, saturated or a bound, and \"not measured here\" when this run has no cell for an engine it names. Figures from another host, timed another way, are set side by side and never judged equal or different: a row judges the ranking its claim makes."

// refHost is the published page's rig ("Test conditions: rig, corpus,
// protocol").
const refHost = "a MacBook Pro (Apple M2 Max, 12 cores, 96 GB, macOS 26.0 arm64), each engine in a Docker container under OrbStack (a virtualised arm64 host, capped at 4 CPUs and 512 MB), with a shared origin"

// refMethod is how the published page timed: oha 1.16.0 with
// --latency-correction ("Output"), 3 unmeasured and 20 measured passes
// of 5 s ("Warmups", "Measured"), one p99 per pass, rounded to 0.1 ms.
const refMethod = "Its figures are oha 1.16.0's latency with --latency-correction, named TTFB but not the first byte (for a 4 MB body it includes the transfer); oha counts the wait for a connection but not its own pacer's lateness. Each figure is the median over 20 passes of 5 s of one figure per pass, rounded to 0.1 ms (0.382 to 0.465 ms all read 0.4 ms). hlsbench times the first byte from the intended send time, over the passes and conditions each workload lists above."

// refEngine is an engine as the published page names it, and ours.
type refEngine struct{ engine, label string }

var (
	refVarnish = refEngine{"varnish", "Varnish 9.0.3"}
	refVinyl   = refEngine{"vinyl", "Vinyl c67fd5f57"}
	refNGINX   = refEngine{"nginx", "NGINX stable"}
)

// refFig is one published figure: an engine's value in a test.
type refFig struct {
	e refEngine
	v float64
}

// refClaim is one claim of the published page.
type refClaim struct {
	section string
	// text is the claim as worded there; "" lets the row word it from the
	// figures ("Vinyl c67fd5f57 led: 0.8 ms against …").
	text string
	// test is our test the claim is judged on, in topology.
	test, topology string
	// theirTest is the test's title there, unit and lower its figures'.
	theirTest string
	unit      string
	lower     bool
	figs      []refFig
	// tie: the claim is that every engine is equal (200 x, 100 %), not
	// that one leads.
	tie bool
	// span: the claim is a range across every cell of the test, in all
	// topologies; nothing here ranks across topologies.
	span bool
	// method is what the published runner measured differently here.
	method string
}

// Method notes per workload, from reading the published runner.
const (
	hitPathMethod = "Their W1 ran 5000 rps over 50 connections on a playlist called 2 KB that was about 5.9 KB (200 entries); its NGINX had no background update, so expired 2 s playlists went to the origin: not a pure hit path for NGINX."
	segmentMethod = "Their W2 ran 500 rps over 20 connections (another file of theirs said otherwise); their NGINX cached on disk without upstream keepalive where Varnish cached in RAM, and haproxy in mode http, not a pure TLS terminator, stood in front for TLS and PROXYv2."
	stormMethod   = "Their W3 sent one burst of 200 requests on a cold segment, 20 times; what they called the p50 was the median of the bursts' p99s, and NGINX's proxy_cache_lock_timeout was raised to 30 s."
	flapMethod    = "Their W4 ran 200 rps over 10 connections through 5 cycles of 10 s phases; their p50 was a median of per-phase p99s mixing baseline, failure and recovery, and with a 60 s TTL outliving each ~32 s failure the answers counted as grace were most likely fresh hits: their runner could not tell fresh from stale."
)

// Section titles as published.
const (
	secHitPath = "Hit-path TTFB at 5000 rps"
	secSegment = "4 MB segment serve"
	secStorm   = "Miss-storm coalescing"
	secFlap    = "Origin-flap grace"
	secLearned = "What did we learn?"
)

// refTests are the published page's tests with their figures per
// topology, in its order.
var refClaims = func() []refClaim {
	var l []refClaim
	// perTopology adds one claim per topology of a test whose figures
	// cover three topologies: who led it there.
	perTopology := func(section, theirTest, test, method string, figs map[string][]refFig) {
		for _, top := range topologyOrder {
			if f, ok := figs[top]; ok {
				l = append(l, refClaim{section: section, theirTest: theirTest, test: test, topology: top, unit: "ms", lower: true, figs: f, method: method})
			}
		}
	}
	// "Hit-path TTFB at 5000 rps", Test 1 p50 TTFB.
	perTopology(secHitPath, "p50 TTFB", "hit-path/p50-ttfb", hitPathMethod, map[string][]refFig{
		"plaintext": {{refVarnish, 0.5}, {refVinyl, 0.4}, {refNGINX, 0.7}},
		"tls":       {{refVarnish, 0.4}, {refNGINX, 0.4}},
		"proxyv2":   {{refVarnish, 0.5}, {refVinyl, 0.5}, {refNGINX, 0.4}},
	})
	// Test 2 p99 TTFB.
	hitP99 := map[string][]refFig{
		"plaintext": {{refVarnish, 2.6}, {refVinyl, 0.8}, {refNGINX, 2.4}},
		"tls":       {{refVarnish, 3.1}, {refNGINX, 3.4}},
		"proxyv2":   {{refVarnish, 6.0}, {refVinyl, 5.3}, {refNGINX, 2.3}},
	}
	perTopology(secHitPath, "p99 TTFB", "hit-path/p99-ttfb", hitPathMethod, hitP99)
	// The section's line under its charts.
	l = append(l, refClaim{section: secHitPath, text: "p99 TTFB ranged from 0.774 ms (Vinyl c67fd5f57 (plaintext)) to 6.002 ms (Varnish 9.0.3 (PROXYv2))",
		test: "hit-path/p99-ttfb", unit: "ms", lower: true, span: true, method: hitPathMethod})
	// "4 MB segment serve", Tests 1 to 4.
	perTopology(secSegment, "p50 full GET", "segment/full-p50-ttfb", segmentMethod, map[string][]refFig{
		"plaintext": {{refVarnish, 2.0}, {refVinyl, 2.2}, {refNGINX, 2.2}},
		"tls":       {{refVarnish, 3.6}, {refNGINX, 9.3}},
		"proxyv2":   {{refVarnish, 5.0}, {refVinyl, 5.3}, {refNGINX, 5.2}},
	})
	perTopology(secSegment, "p50 range GET", "segment/range-p50-ttfb", segmentMethod, map[string][]refFig{
		"plaintext": {{refVarnish, 0.4}, {refVinyl, 0.5}, {refNGINX, 0.4}},
		"tls":       {{refVarnish, 0.5}, {refNGINX, 0.7}},
		"proxyv2":   {{refVarnish, 0.7}, {refVinyl, 0.9}, {refNGINX, 0.9}},
	})
	segFullP99 := map[string][]refFig{
		"plaintext": {{refVarnish, 2.8}, {refVinyl, 3.0}, {refNGINX, 5.7}},
		"tls":       {{refVarnish, 10.4}, {refNGINX, 64.9}},
		"proxyv2":   {{refVarnish, 17.2}, {refVinyl, 17.9}, {refNGINX, 15.9}},
	}
	perTopology(secSegment, "p99 full GET", "segment/full-p99-ttfb", segmentMethod, segFullP99)
	perTopology(secSegment, "p99 range GET", "segment/range-p99-ttfb", segmentMethod, map[string][]refFig{
		"plaintext": {{refVarnish, 1.0}, {refVinyl, 1.8}, {refNGINX, 1.2}},
		"tls":       {{refVarnish, 1.0}, {refNGINX, 3.6}},
		"proxyv2":   {{refVarnish, 2.8}, {refVinyl, 3.3}, {refNGINX, 3.8}},
	})
	// The section's line under its charts.
	l = append(l,
		refClaim{section: secSegment, text: "Full GET p99 TTFB ranged from 2.783 ms (Varnish 9.0.3 (plaintext)) to 64.856 ms (NGINX stable (TLS))",
			test: "segment/full-p99-ttfb", unit: "ms", lower: true, span: true, method: segmentMethod},
		refClaim{section: secSegment, text: "Range GET p99 0.96–3.75 ms",
			test: "segment/range-p99-ttfb", unit: "ms", lower: true, span: true, method: segmentMethod})
	// "Miss-storm coalescing", plaintext only: Tests 1 to 3 and the line
	// under them.
	l = append(l,
		refClaim{section: secStorm, theirTest: "p50 TTFB", test: "miss-storm/p50-ttfb", topology: "plaintext", unit: "ms", lower: true,
			figs: []refFig{{refVinyl, 743.6}, {refNGINX, 854.1}, {refVarnish, 1051}}, method: stormMethod},
		refClaim{section: secStorm, theirTest: "p99 TTFB", test: "miss-storm/p99-ttfb", topology: "plaintext", unit: "ms", lower: true,
			figs: []refFig{{refVinyl, 1245}, {refNGINX, 2719}, {refVarnish, 2713}}, method: stormMethod},
		refClaim{section: secStorm, text: "All three engines coalesced 200 concurrent requests to 1 origin fetch (200 x each)", theirTest: "Coalescing efficiency",
			test: "miss-storm/coalescing", topology: "plaintext", unit: "x", tie: true,
			figs: []refFig{{refVinyl, 200}, {refNGINX, 200}, {refVarnish, 200}}, method: stormMethod + " The ratio was 200 clients over the origin's count of requests."},
		// "Origin-flap grace", Tests 1 and 2 and the line under them.
		refClaim{section: secFlap, theirTest: "p50 TTFB", test: "origin-flap/p50-ttfb-failing", topology: "plaintext", unit: "ms", lower: true,
			figs: []refFig{{refNGINX, 5.9}, {refVinyl, 5.9}, {refVarnish, 6.1}}, method: flapMethod},
		refClaim{section: secFlap, text: "All three engines maintained 100% grace hit ratio across five origin failure cycles", theirTest: "Grace hit ratio",
			test: "origin-flap/grace-ratio", topology: "plaintext", unit: "%", tie: true,
			figs: []refFig{{refNGINX, 100}, {refVinyl, 100}, {refVarnish, 100}}, method: flapMethod},
	)
	// "What did we learn?": its leads are the sections' lines: Vinyl's
	// lowest hit-path p99 and Varnish's lowest full GET p99, both in
	// plaintext.
	l = append(l,
		refClaim{section: secLearned, text: "Vinyl c67fd5f57 (plaintext) led on hit-path (its p99 TTFB, 0.8 ms, the page's lowest)",
			test: "hit-path/p99-ttfb", topology: "plaintext", unit: "ms", lower: true, figs: hitP99["plaintext"], method: hitPathMethod},
		refClaim{section: secLearned, text: "Varnish 9.0.3 (plaintext) led on segment serve (its full GET p99 TTFB, 2.8 ms, the page's lowest)",
			test: "segment/full-p99-ttfb", topology: "plaintext", unit: "ms", lower: true, figs: segFullP99["plaintext"], method: segmentMethod},
	)
	return l
}()

// noDominance is the published summary's first claim ("What did we
// learn?"); claims judges it over the four workloads' tests above.
const noDominance = "No single engine dominated all four workloads"

// refEngines are the engines the published page measured.
var refEngines = []refEngine{refVarnish, refVinyl, refNGINX}

// claims sets each claim of the published page beside this page's
// figures, computed from the report's tables with the same comparison
// their findings use.
func claims(rep *Report, o Options) []ClaimRow {
	var rows []ClaimRow
	measured := false
	for _, c := range refClaims {
		t := findTest(rep, c.test)
		if t.ID != "" {
			measured = true
		}
		rows = append(rows, claimRow(rep, c, t, o))
	}
	if !measured {
		// None of the published page's tests is on this page: no table.
		return nil
	}
	return append(rows, dominance(rep, o))
}

// pairOutcome is one comparison a claim makes, judged here.
type pairOutcome struct {
	status ClaimStatus
	text   string
}

func claimRow(rep *Report, c refClaim, t Test, o Options) ClaimRow {
	row := ClaimRow{Section: c.section, Claim: claimText(c), Slug: t.Slug}
	if t.ID == "" {
		row.Ours, row.Status = "—", ClaimNotMeasured
		row.Why = "These runs have no result for " + c.test + ". " + c.method
		return row
	}
	if c.span {
		return spanRow(rep, c, t, row)
	}
	cells := map[string]*Cell{}
	var ours []string
	for _, f := range c.figs {
		cell := refCell(t, f.e.engine, c.topology)
		cells[f.e.engine] = cell
		ours = append(ours, oursText(f.e, cell, t))
	}
	row.Ours = strings.Join(ours, "; ")
	// Figures equal at the published rounding are shown as a tie there:
	// the claim is that tie.
	var outs []pairOutcome
	for _, p := range claimPairs(c) {
		out := judgePair([2]refEngine{p.a, p.b}, cells, t, p.tie, o)
		if p.implied && out.status != ClaimDifferent {
			continue // said only when it contradicts the claim
		}
		outs = append(outs, out)
	}
	row.Status = overall(outs)
	var why []string
	for _, p := range outs {
		why = append(why, p.text)
	}
	row.Why = strings.Join(why, "; ") + ". " + versionsText(rep, c.figs) + " " + c.method
	return row
}

// claimText words a claim from its figures when the page's own words
// are its chart: "p99 TTFB, plaintext: Vinyl c67fd5f57 led, 0.8 ms,
// against NGINX stable 2.4 ms and Varnish 9.0.3 2.6 ms".
func claimText(c refClaim) string {
	if c.text != "" {
		return c.text
	}
	leaders, rest := splitLeaders(c)
	var l, r []string
	for _, f := range leaders {
		l = append(l, f.e.label+" "+refValue(f.v, c.unit))
	}
	for _, f := range rest {
		r = append(r, f.e.label+" "+refValue(f.v, c.unit))
	}
	if len(rest) == 0 {
		// Equal at the published rounding: the page shows a tie.
		return fmt.Sprintf("%s, %s: %s, equal", c.theirTest, topologyName(c.topology), list(l))
	}
	return fmt.Sprintf("%s, %s: %s led, against %s", c.theirTest, topologyName(c.topology), list(l), list(r))
}

// splitLeaders are a claim's engines with the best published figure, and
// the others. Equal figures at the published rounding make no claim of
// order between them.
func splitLeaders(c refClaim) (leaders, rest []refFig) {
	best := c.figs[0].v
	for _, f := range c.figs {
		if better(f.v, best, c.lower) {
			best = f.v
		}
	}
	for _, f := range c.figs {
		if f.v == best {
			leaders = append(leaders, f)
		} else {
			rest = append(rest, f)
		}
	}
	return leaders, rest
}

// claimPair is one comparison a claim makes: a ahead of b, or, when
// tie, a and b equal. An implied one orders two engines behind the
// leader: the claim's figures say it, its words do not, so it can only
// contradict the claim (a significant reversal), never be needed for
// "same".
type claimPair struct {
	a, b    refEngine
	tie     bool
	implied bool
}

// claimPairs are the comparisons a claim makes: every pair of its
// engines, the one with the better published figure first — a ranking of
// three figures orders the two behind the leader too — and a tie for two
// figures equal at the published rounding (or every pair, for a claimed
// tie).
func claimPairs(c refClaim) []claimPair {
	var p []claimPair
	for i := range c.figs {
		for j := i + 1; j < len(c.figs); j++ {
			a, b := c.figs[i], c.figs[j]
			switch {
			case c.tie || a.v == b.v:
				p = append(p, claimPair{a: a.e, b: b.e, tie: true})
			case better(b.v, a.v, c.lower):
				p = append(p, claimPair{a: b.e, b: a.e})
			default:
				p = append(p, claimPair{a: a.e, b: b.e})
			}
		}
	}
	// The leader's comparisons first, as the claim words them.
	leaders, _ := splitLeaders(c)
	lead := func(e refEngine) bool {
		return slices.ContainsFunc(leaders, func(f refFig) bool { return f.e == e })
	}
	for i := range p {
		p[i].implied = !c.tie && len(leaders) < len(c.figs) && !lead(p[i].a) && !lead(p[i].b)
	}
	slices.SortStableFunc(p, func(x, y claimPair) int {
		switch lx, ly := lead(x.a), lead(y.a); {
		case lx && !ly:
			return -1
		case ly && !lx:
			return 1
		}
		return 0
	})
	return p
}

// refCell is our cell of an engine in a topology of a test, nil when the
// run has none.
func refCell(t Test, engine, topology string) *Cell {
	for i := range t.Cells {
		if baseEngine(t.Cells[i].Engine) == engine && t.Cells[i].Topology == topology {
			return &t.Cells[i]
		}
	}
	return nil
}

// oursText is our figure for an engine the claim names, with what it is
// when it is no exact figure.
func oursText(e refEngine, c *Cell, t Test) string {
	if c == nil {
		return displayNames[e.engine] + ": not measured here"
	}
	s := engineName(*c) + ": " + cellValue(*c, t.Unit)
	if why := notRankable(c, t); why != "" && c.Value != nil && !c.Unranked && !c.Bounded() {
		s += " (" + why + ")"
	}
	return s
}

// notRankable says why a cell can carry no comparison, "" when it can:
// the verdict's rule (whole), and never a bound.
func notRankable(c *Cell, t Test) string {
	switch {
	case c == nil:
		return "not measured here"
	case c.Unranked:
		return "saturated, not ranked"
	case c.Value == nil:
		return "no value: " + c.NoValue
	case c.Bounded():
		return "a bound, not ranked"
	case !whole(*c, t) && c.Saturated():
		return fmt.Sprintf("saturated in %d of %d passes, not weighed", c.SaturatedPasses, c.MeasuredPasses)
	case !whole(*c, t):
		return fmt.Sprintf("invalid in %d of %d passes, not weighed", c.MeasuredPasses-c.ValidPasses, c.MeasuredPasses)
	}
	return ""
}

// judgePair judges one comparison a claim makes: a (a leader there)
// against b, or a tie of a and b.
func judgePair(p [2]refEngine, cells map[string]*Cell, t Test, tie bool, o Options) pairOutcome {
	a, b := cells[p[0].engine], cells[p[1].engine]
	what := fmt.Sprintf("%s against %s", displayNames[p[0].engine], displayNames[p[1].engine])
	for _, x := range []struct {
		e refEngine
		c *Cell
	}{{p[0], a}, {p[1], b}} {
		if x.c == nil {
			return pairOutcome{ClaimNotMeasured, fmt.Sprintf("%s: not measured, no %s cell here", what, displayNames[x.e.engine])}
		}
		if why := notRankable(x.c, t); why != "" {
			return pairOutcome{ClaimNotDecided, fmt.Sprintf("%s: not decided, %s here is %s", what, displayNames[x.e.engine], why)}
		}
	}
	d := compare.Judge(a.ValidValues(), b.ValidValues(), t.Unit, t.LowerIsBetter, o.Compare)
	if d.Verdict == stats.NotComparable && same(a.ValidValues(), b.ValidValues()) {
		d.Verdict, d.Reason = stats.NoChange, sameValues
	}
	conf := pText(d)
	if conf != "" {
		conf = " (" + conf + ")"
	}
	tieWhy := ""
	if d.Reason != "" {
		tieWhy = " (" + d.Reason + ")"
	}
	switch {
	case d.Verdict == stats.NoChange && tie:
		return pairOutcome{ClaimSame, what + ": a tie here too" + tieWhy}
	case d.Verdict == stats.NoChange:
		return pairOutcome{ClaimNotDecided, what + ": a tie here" + tieWhy}
	case d.Verdict == stats.Regression && tie, d.Verdict == stats.Improvement && tie:
		better := p[0]
		if d.Verdict == stats.Improvement {
			better = p[1]
		}
		return pairOutcome{ClaimDifferent, what + ": not a tie here, " + displayNames[better.engine] + " is better" + conf}
	case d.Verdict == stats.Regression:
		return pairOutcome{ClaimSame, what + ": " + displayNames[p[0].engine] + " is better here too" + conf}
	case d.Verdict == stats.Improvement:
		return pairOutcome{ClaimDifferent, what + ": " + displayNames[p[1].engine] + " is better here" + conf}
	}
	return pairOutcome{ClaimNotDecided, what + ": inconclusive here (" + unknownWhy([]verdict{{*b, d}}, o) + ")"}
}

// overall is a claim's status from its comparisons: different when one
// is decided the other way; else not measured when an engine it names
// has no cell here; same only when every one is decided the same way;
// else not decided.
func overall(outs []pairOutcome) ClaimStatus {
	st := map[ClaimStatus]int{}
	for _, p := range outs {
		st[p.status]++
	}
	switch {
	case len(outs) == 0:
		return ClaimNotDecided
	case st[ClaimDifferent] > 0:
		return ClaimDifferent
	case st[ClaimNotMeasured] > 0:
		return ClaimNotMeasured
	case st[ClaimSame] == len(outs):
		return ClaimSame
	}
	return ClaimNotDecided
}

// spanRow is a claim of the range of a test's figures across every cell:
// our range over the cells with an exact, valid figure, never ranked,
// since a range across topologies compares paths, not engines.
func spanRow(rep *Report, c refClaim, t Test, row ClaimRow) ClaimRow {
	var lo, hi *Cell
	left := 0
	for i := range t.Cells {
		x := &t.Cells[i]
		if !isRefEngine(x.Engine) {
			continue
		}
		if notRankable(x, t) != "" {
			left++
			continue
		}
		if lo == nil || *x.Value < *lo.Value {
			lo = x
		}
		if hi == nil || *x.Value >= *hi.Value {
			hi = x
		}
	}
	row.Status = ClaimNotDecided
	row.Slug = t.Slug
	if lo == nil {
		row.Ours = "no cell of Varnish, Vinyl Cache or NGINX has a valid figure"
	} else {
		row.Ours = fmt.Sprintf("%s (%s) to %s (%s)", valueText(*lo.Value, t.Unit), lo.Label, valueText(*hi.Value, t.Unit), hi.Label)
	}
	if left > 0 {
		row.Ours += fmt.Sprintf("; %d %s invalid, saturated, a bound or without a value, left out", left, plural(left, "cell", "cells"))
	}
	row.Why = "A range across topologies compares the paths as much as the engines: this page ranks only within one topology, and figures from another host and timing are not judged equal or different. " +
		versionsText(rep, refFigsOf(refEngines)) + " " + c.method
	return row
}

func refFigsOf(es []refEngine) []refFig {
	f := make([]refFig, len(es))
	for i, e := range es {
		f[i] = refFig{e: e}
	}
	return f
}

func isRefEngine(engine string) bool {
	for _, e := range refEngines {
		if baseEngine(engine) == e.engine {
			return true
		}
	}
	return false
}

// versionsText sets the published versions of a claim's engines beside
// this page's, from its engines table.
func versionsText(rep *Report, figs []refFig) string {
	var theirs, ours []string
	for _, f := range figs {
		theirs = append(theirs, f.e.label)
		v := "not measured"
		for _, r := range rep.Engines {
			if r.Engine == displayNames[f.e.engine] && len(r.Versions) > 0 {
				v = strings.Join(r.Versions, ", ")
			}
		}
		ours = append(ours, displayNames[f.e.engine]+" "+v)
	}
	return "Versions: theirs " + list(theirs) + "; here " + list(ours) + "."
}

// dominance judges "No single engine dominated all four workloads" over
// the four workloads' tests in every topology: the engines that led a
// test here, significantly ahead of every other of the three, among
// valid cells.
func dominance(rep *Report, o Options) ClaimRow {
	row := ClaimRow{Section: secLearned, Claim: noDominance}
	var leaders []string
	decided, open := 0, 0
	seen := map[string]bool{}
	for _, c := range refClaims {
		if c.span || c.tie || seen[c.test] {
			continue
		}
		seen[c.test] = true
		t := findTest(rep, c.test)
		for _, g := range byTopology(t) {
			var cells []Cell
			ok := true
			for _, x := range g.Cells {
				if !isRefEngine(x.Engine) {
					continue
				}
				if notRankable(&x, g) != "" {
					ok = false
				}
				cells = append(cells, x)
			}
			if len(cells) < 2 {
				continue
			}
			g.Cells = cells
			s := stand(g, o)
			if !ok || s.leader == nil || len(s.behind) != len(cells)-1 {
				open++
				continue
			}
			decided++
			leaders = appendNew(leaders, displayNames[baseEngine(s.leader.Engine)])
		}
	}
	row.Ours = fmt.Sprintf("in %d of %d tests (each topology apart) one of Varnish, Vinyl Cache and NGINX is significantly ahead of the other two; leaders: %s", decided, decided+open, orNone(list(leaders)))
	switch {
	case len(leaders) >= 2:
		row.Status = ClaimSame
		row.Why = "More than one engine leads a test here, each significantly ahead of the other two in valid cells of one topology."
	case len(leaders) == 1 && open == 0:
		row.Status = ClaimDifferent
		row.Why = leaders[0] + " leads every test here, significantly, in valid cells of each topology."
	default:
		row.Status = ClaimNotDecided
		row.Why = fmt.Sprintf("%d %s no single leader here (a tie, inconclusive, or a cell invalid, saturated or a bound): too few decided to say.", open, plural(open, "test has", "tests have"))
	}
	return row
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// claimsNote is what the page says above the claims: how a row is
// judged, and the two rigs and methods, this one's from its runs.
func claimsNote(rep *Report) []string {
	h := rep.Sources[0].Run.Host
	ours := fmt.Sprintf("%s, %d cores, %s", orUnknown(h.CPUModel), h.Cores, osName(h.OS))
	for _, s := range rep.Sources {
		if len(s.Run.Placement) > 0 {
			ours = "several hosts (see the test conditions)"
		}
	}
	var runtimes []string
	for _, w := range rep.Workloads {
		for _, t := range w.Tests {
			for _, c := range t.Cells {
				if c.Runtime != "" {
					runtimes = appendNew(runtimes, c.Runtime)
				}
			}
		}
	}
	run := ""
	if len(runtimes) > 0 {
		run = " (engines run as: " + strings.Join(runtimes, ", ") + ")"
	}
	return []string{
		claimRule,
		"The published page was measured on " + refHost + "; this one on " + ours + run + ". " + refMethod,
	}
}

// claimsTitle heads the claims' section in both formats.
const claimsTitle = "The published comparison, claim by claim"

// refValue is a published figure as published: "0.4 ms", "1.051 s",
// "200 x".
func refValue(v float64, unit string) string {
	if unit == "ms" && v >= 1000 {
		return strconv.FormatFloat(v/1000, 'f', -1, 64) + " s"
	}
	return strconv.FormatFloat(v, 'f', -1, 64) + " " + unit
}
