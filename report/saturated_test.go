package report

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hlsbench/hlsbench/results"
)

// The saturated fixture is one TLS run of three engines at the segment
// workload's 500 rps: Varnish 9.0.2 carried about 200 rps in every pass
// (saturated, no valid pass, a client saw 3.31 s), NGINX carried its rate
// in two passes, whose p99 is the lowest of the test, and not in the third,
// and the built-in cache carried it in all three. Origin-flap's grace ratio
// is a count: Varnish's pass 2 was saturated and stays valid. Miss-storm is
// a burst: no rate.

// TestReportSaturatedTables: every output shows the rate carried for every
// cell of a rate workload, and a saturated latency as saturated, never as
// the engine's TTFB.
func TestReportSaturatedTables(t *testing.T) {
	rep := build(t, "saturated")
	var md, html, csvb bytes.Buffer
	if err := WriteMarkdown(&md, rep); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&html, rep); err != nil {
		t.Fatal(err)
	}
	if err := WriteCSV(&csvb, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| Engine | Value | Rate carried | Valid passes | Spread of valid passes |",
		"| Varnish 9.0.2 (TLS) | saturated, not ranked; what a client saw: 3.31 s, queueing included, not a TTFB | saturated in 3 of 3 passes: carried 199.6 of 500 rps | 0 of 3 | — |",
		// Saturated in one pass of three, its median pass not: valid on
		// its two valid passes, the saturated one counted.
		"| NGINX 1.27.0 (TLS) | 0.0520 ms | 499.8 of 500 rps; 1 of 3 passes saturated | 2 of 3 |",
		"| Built-in (TLS, hlsbench's own reference cache) | 1.00 ms | 499.9 of 500 rps | 3 of 3 |",
		// A count stays a value; its row says the pass was saturated.
		"| Varnish 9.0.2 (TLS) | 100 % | 199.8 of 200 rps; 1 of 3 passes saturated | 3 of 3 |",
		"| NGINX 1.27.0 (TLS) | 100 % | 199.9 of 200 rps | 3 of 3 |",
		"Hatched bars are saturated cells",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
	// A burst offers no rate: its table has no rate column.
	coal := md.String()[strings.Index(md.String(), "### Coalescing efficiency"):]
	coal = coal[:strings.Index(coal, "\n\n| ")+200]
	if strings.Contains(coal, "Rate carried") {
		t.Errorf("the burst's table has a rate column:\n%s", coal)
	}
	for _, want := range []string{
		"<th>Rate carried</th>",
		`<td class="saturated">saturated, not ranked; what a client saw: 3.31 s, queueing included, not a TTFB</td>`,
		">saturated in 3 of 3 passes: carried 199.6 of 500 rps</td>",
		"<td>499.9 of 500 rps</td>",
		"Hatched bars are saturated cells",
	} {
		if !strings.Contains(html.String(), htmlEscapeText(want)) && !strings.Contains(html.String(), want) {
			t.Errorf("html lacks %q", want)
		}
	}
	// Neither page shows the saturated cell's p99 as a plain value.
	for name, page := range map[string]string{"md": md.String(), "html": html.String()} {
		for _, bad := range []string{"| 3.31 s |", ">3.31 s<"} {
			if strings.Contains(page, bad) {
				t.Errorf("%s shows %q as a value", name, bad)
			}
		}
	}

	rows, err := csv.NewReader(&csvb).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	for _, h := range []string{"offered_rps", "achieved_rps", "saturated_passes", "saturated_value", "seen_value"} {
		if _, ok := col[h]; !ok {
			t.Fatalf("csv has no column %s: %v", h, rows[0])
		}
	}
	got := map[string][]string{}
	for _, r := range rows[1:] {
		k := r[col["engine"]] + " " + r[col["test"]] + " " + r[col["pass"]]
		got[k] = []string{r[col["value"]], r[col["offered_rps"]], r[col["achieved_rps"]], r[col["saturated_passes"]], r[col["saturated_value"]], r[col["seen_value"]]}
	}
	// An invalid row's value is in seen_value, never in value: a reader
	// summing the value column takes in no figure the run rejected.
	for k, want := range map[string][]string{
		"varnish@9.0.2 full-p99-ttfb all": {"", "500", "199.6", "3", "3310", ""},
		"varnish@9.0.2 full-p99-ttfb 2":   {"", "500", "201.2", "1", "", "3310"},
		// Saturated in 1 of 3 passes: its median pass was not, so its
		// value is its valid passes'.
		"nginx full-p99-ttfb all":       {"0.052", "500", "499.8", "1", "250", ""},
		"builtin full-p99-ttfb all":     {"1", "500", "499.9", "0", "", ""},
		"varnish@9.0.2 grace-ratio all": {"100", "200", "199.8", "1", "", ""},
		"varnish@9.0.2 coalescing all":  {"200", "", "", "0", "", ""},
		"varnish@9.0.2 coalescing 1":    {"200", "", "", "0", "", ""},
	} {
		if g := got[k]; fmt.Sprint(g) != fmt.Sprint(want) {
			t.Errorf("csv %s: value, offered, achieved, saturated passes, saturated value, seen value = %q, want %q", k, g, want)
		}
	}
}

// htmlEscapeText is html/template's escaping of text in an element.
func htmlEscapeText(s string) string {
	return strings.NewReplacer("'", "&#39;").Replace(s)
}

// TestReportSaturatedNotRanked: Varnish, saturated in every pass, is never
// ranked; NGINX's two valid passes are the lowest p99 of the test, and it
// was saturated in the third alone: its median pass was not saturated, so
// it is ranked on its valid passes (on 9e8fb7e one saturated pass of any
// number took a cell out of the ranking).
func TestReportSaturatedNotRanked(t *testing.T) {
	rep := build(t, "saturated")
	tt := testOf(t, rep, "segment/full-p99-ttfb")
	f := tt.Finding
	for _, want := range []string{
		"NGINX 1.27.0 (TLS) is lowest at 0.0520 ms.",
		"Varnish 9.0.2 (TLS) is saturated at 500 rps: carried 199.6; not ranked.",
	} {
		if !strings.Contains(f, want) {
			t.Errorf("finding lacks %q:\n%s", want, f)
		}
	}
	for _, bad := range []string{"Varnish 9.0.2 (TLS) is lowest", "3.31", "NGINX 1.27.0 (TLS) is saturated", "no value"} {
		if strings.Contains(f, bad) {
			t.Errorf("finding says %q:\n%s", bad, f)
		}
	}
	var w Workload
	for _, x := range rep.Workloads {
		if x.Name == "segment" {
			w = x
		}
	}
	if !strings.Contains(w.Takeaway, "NGINX 1.27.0 (TLS) at 0.0520 ms is lowest") || !strings.Contains(w.Takeaway, "Varnish 9.0.2 (TLS) saturated, not ranked") {
		t.Errorf("takeaway ranks a saturated cell or does not say it is saturated: %s", w.Takeaway)
	}
	// A count is still ranked: Varnish's saturated pass left its grace
	// ratio valid, and the three are at 100 % each.
	if g := testOf(t, rep, "origin-flap/grace-ratio").Finding; !strings.Contains(g, "A tie: Varnish 9.0.2 (TLS), NGINX 1.27.0 (TLS) and Built-in (TLS, hlsbench's own reference cache) are each at 100 %.") {
		t.Errorf("grace-ratio finding: %s", g)
	}
}

// TestFindingSaturatedExcluded: a saturated cell with the lowest value and
// ten passes, against two cells that differ, is neither the leader nor
// judged against it.
func TestFindingSaturatedExcluded(t *testing.T) {
	var a, b, c []float64
	for i := range 10 {
		a = append(a, 0.01+float64(i)*0.001)
		b = append(b, 1+float64(i)*0.01)
		c = append(c, 2+float64(i)*0.01)
	}
	sat := handCell("sat (tls)", a...)
	sat.Value, sat.OfferedRPS, sat.AchievedRPS, sat.SaturatedPasses, sat.Unranked = f64(0.015), f64(500), f64(480), 4, true
	tt := handTest(sat, handCell("b (tls)", b...), handCell("c (tls)", c...))
	tt.Cells[1].Value, tt.Cells[2].Value = f64(1.05), f64(2.05)
	s := stand(tt, DefaultOptions())
	if s.leader == nil || s.leader.Label != "b (tls)" || len(s.behind) != 1 || s.behind[0].cell.Label != "c (tls)" || len(s.saturated) != 1 {
		t.Fatalf("leader %v, behind %v, saturated %v; want b leading, c behind, sat saturated", s.leader, s.behind, s.saturated)
	}
	f := finding(tt, DefaultOptions())
	if !strings.HasPrefix(f, "b (tls) is lowest at 1.05 ms.") || !strings.Contains(f, "c (tls) is ") ||
		!strings.Contains(f, "sat (tls) is saturated at 500 rps in 4 of 10 passes: carried 480") ||
		strings.Count(f, "sat (tls)") != 1 {
		t.Errorf("finding: %s", f)
	}
}

// TestChartSaturated: the chart draws a saturated latency as a hatched bar
// at what a client saw, labelled so, with a legend entry saying what it is;
// no value bar for it. A cell saturated in a minority of its passes keeps
// its value bar and says how many.
func TestChartSaturated(t *testing.T) {
	rep := build(t, "saturated")
	tt := testOf(t, rep, "segment/full-p99-ttfb")
	s := svgOf(t, tt)
	for _, want := range []string{
		"saturated: 3.31 s seen, carried 199.6 of 500 rps",
		"0.0520 ms (1 of 3 passes saturated)",
		"saturated: what a client saw, queueing included (not a TTFB, not ranked)",
	} {
		if !strings.Contains(s, htmlEscape(want)) {
			t.Errorf("svg lacks %q", want)
		}
	}
	// Two value bars, NGINX's and the built-in cache's, and the legend's.
	if got := strings.Count(s, barFill); got != 2+1 {
		t.Errorf("%d value bars, want 3 (NGINX, built-in and the legend)", got)
	}
	// The hatched bars are outlined in the saturation's colour.
	stroke := fmt.Sprintf("stroke:#%02X%02X%02X", saturatedColor.R, saturatedColor.G, saturatedColor.B)
	if !strings.Contains(s, stroke) {
		t.Errorf("svg has no %s", stroke)
	}
	if len(s) > 100_000 {
		t.Errorf("svg is %d bytes", len(s))
	}
	// A count with a saturated pass keeps its bar and says so.
	g := svgOf(t, testOf(t, rep, "origin-flap/grace-ratio"))
	if !strings.Contains(g, "100 % (1 of 3 passes saturated)") || strings.Contains(g, stroke) {
		t.Error("the grace ratio's chart does not say Varnish's pass was saturated, or hatches a count")
	}
	pngOf(t, tt)
}

// TestSaturatedFixtureRecount: the fixture is what Recount makes of its
// passes, so the report is tested on what a run writes.
func TestSaturatedFixtureRecount(t *testing.T) {
	run, err := results.Load(filepath.Join("testdata", "saturated", "run-20261202T010000Z-5a7a5a7a.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range run.Results {
		c := r
		c.Passes = append([]results.Pass(nil), r.Passes...)
		c.Recount()
		str := func(x results.Result) string {
			return fmt.Sprint(x.MeasuredPasses, x.ValidPasses, x.Valid, x.InvalidReasons, x.NoValue, fv(x.OfferedRPS), fv(x.AchievedRPS),
				x.SaturatedPasses, x.Saturated(), x.Requests, x.Errors, spreadOf(x.Spread))
		}
		if a, b := str(r), str(c); a != b {
			t.Errorf("%s %s: file %s, recounted %s", r.ID, r.Engine, a, b)
		}
	}
}

func spreadOf(s *results.Spread) string {
	if s == nil {
		return "nil"
	}
	return fmt.Sprint(*s)
}

func fv(v *float64) string {
	if v == nil {
		return "nil"
	}
	return fmt.Sprint(*v)
}

// TestVerdictOnePassSaturated: a latency cell with one saturated pass of
// twenty, its median pass not, is judged on its nineteen valid passes: it
// takes part in the verdict, and its table and chart say "1 of 20 passes
// saturated", not "saturated". A cell whose median pass saturated is left
// out, as before.
func TestVerdictOnePassSaturated(t *testing.T) {
	o := catalogOptions()
	plain := func(c Cell) Cell {
		c.Topology, c.Label = "plaintext", c.Label+" (plaintext)"
		c.OfferedRPS, c.AchievedRPS = f64(500), f64(499.9)
		return c
	}
	varnish := plain(handCell("varnish", twenty(1)...))
	nginx := plain(handCell("nginx", twenty(5)...))
	// Its last pass waited for a connection: invalid, left out of the
	// value, counted.
	nginx.Passes[19].Valid, nginx.Passes[19].Saturated = false, "saturated: 8 of 2500 requests waited for a connection"
	nginx.ValidPasses, nginx.SaturatedPasses, nginx.SaturatedWhy = 19, 1, nginx.Passes[19].Saturated
	half := plain(handCell("vinyl", twenty(0.5)...))
	half.SaturatedPasses, half.ValidPasses, half.Unranked = 10, 10, true
	for i := 10; i < 20; i++ {
		half.Passes[i].Valid, half.Passes[i].Saturated = false, "saturated: carried 300 of 500 rps"
	}
	tt := Test{ID: "segment/full-p50-ttfb", Slug: "segment-full-p50-ttfb", Workload: "segment", Name: "full-p50-ttfb",
		Title: "p50 TTFB, 4 MiB full GET", Unit: "ms", LowerIsBetter: true, Cells: []Cell{varnish, nginx, half}}
	rep := &Report{Title: "t", Workloads: []Workload{{Name: "segment", Title: "4 MB segment serve", Tests: []Test{tt}}}}
	rep.Verdict = verdicts(rep, o)
	checkVerdict(t, rep, o)

	if nginx.Saturated() || !half.Saturated() {
		t.Fatalf("saturated: 1 of 20 %v, 10 of 20 %v; want false, true (the median pass's rule)", nginx.Saturated(), half.Saturated())
	}
	var v Verdict
	for _, l := range rep.Verdict {
		if l.Job == "VOD segment, full GET" {
			v = l
		}
	}
	if v.Kind != Leads || len(v.Cites) != 1 || v.Cites[0].Other.Engine != "nginx" {
		t.Fatalf("segment: %s %+v, want varnish leading nginx (1 of 20 passes saturated): %s", v.Kind, v.Cites, v.Text)
	}
	if !strings.Contains(v.Text, "20 and 19 valid passes") || !strings.Contains(v.Text, "vinyl (plaintext) saturated, not ranked") {
		t.Errorf("segment verdict: %s", v.Text)
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, rep); err != nil {
		t.Fatal(err)
	}
	if want := "| nginx (plaintext) | 5.10 ms | 499.9 of 500 rps; 1 of 20 passes saturated | 19 of 20 |"; !strings.Contains(md.String(), want) {
		t.Errorf("markdown lacks %q:\n%s", want, md.String())
	}
	if _, s := bar(nginx, "ms"); s != "5.10 ms (1 of 20 passes saturated)" {
		t.Errorf("chart label %q", s)
	}
}

// Issue 45, item 6: a run recorded by a build whose rule made one
// saturated pass of twenty the cell's end (valid false) is judged again
// by this build's rule on the page: valid on its 19 valid passes, the
// saturated one counted and said with its reason.
func TestOlderRunJudgedByTodaysRule(t *testing.T) {
	sat := "saturated: carried 499.8 of 500 rps; every one of 20 connections busy (8 of 2500 requests waited for one)"
	r := results.Result{ID: "segment/full-p50-ttfb", Workload: "segment", Test: "full-p50-ttfb", Engine: "nginx", Runtime: "process",
		Topology: "plaintext", Unit: "ms", LowerIsBetter: true, Value: f64(0.066)}
	for i := 1; i <= 20; i++ {
		p := results.Pass{Index: i, Value: f64(0.066), Valid: true, Requests: 2500, OfferedRPS: 500, AchievedRPS: 500}
		if i == 11 {
			p.Valid, p.Saturated, p.InvalidReasons, p.AchievedRPS = false, sat, []string{sat}, 499.8
		}
		r.Passes = append(r.Passes, p)
	}
	r.Recount()
	// As the older build recorded it.
	r.Valid, r.InvalidReasons = false, []string{"pass 11: " + sat}
	c := cellOf(&r, "NGINX (plaintext)", "1.22.1", "run.json")
	if !c.Valid || len(c.Invalid) != 0 || c.Saturated() || c.SaturatedPasses != 1 {
		t.Fatalf("cell: valid %v, invalid %q, saturated %v (%d passes): want valid, no reason against it, 1 saturated pass",
			c.Valid, c.Invalid, c.Saturated(), c.SaturatedPasses)
	}
	tt := handTest(c)
	src := Source{Name: "run.json", Run: &results.Run{Host: results.Host{Cores: 2}}}
	rep := &Report{Workloads: []Workload{{Name: "segment", Title: "Segment", Tests: []Test{tt}}}, Sources: []Source{src}}
	var said bool
	lines := caveats(&Input{Sources: rep.Sources}, rep)
	for _, line := range lines {
		said = said || strings.Contains(line, "1 of 20 measured passes invalid, left out of the value (1 saturated, too few to make the cell saturated): pass 11: "+sat)
	}
	if !said {
		t.Errorf("the caveats do not say the saturated pass and its reason: %q", lines)
	}
}
