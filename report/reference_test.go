package report

import (
	"bytes"
	"strings"
	"testing"
)

// TestClaimsSection: both formats carry the published comparison claim by
// claim, after the verdict and the results and before the test
// conditions, with every row of the model in it.
func TestClaimsSection(t *testing.T) {
	rep := build(t, "suite")
	if len(rep.Claims) == 0 {
		t.Fatal("the suite's page has no claims of the published comparison")
	}
	var md, html bytes.Buffer
	if err := WriteMarkdown(&md, rep); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&html, rep); err != nil {
		t.Fatal(err)
	}
	m := md.String()
	last := "## " + rep.Workloads[len(rep.Workloads)-1].Title + "\n"
	verdict, results, claims, conds := strings.Index(m, "## Verdict"), strings.Index(m, last), strings.Index(m, "## "+claimsTitle), strings.Index(m, "## Test conditions")
	if claims < 0 || !(verdict < results && results < claims && claims < conds) {
		t.Errorf("Markdown: verdict at %d, last workload at %d, claims at %d, conditions at %d: want them in that order", verdict, results, claims, conds)
	}
	h := html.String()
	verdict, results, claims, conds = strings.Index(h, `<section id="verdict"`), strings.Index(h, `<section id="`+rep.Workloads[len(rep.Workloads)-1].Name+`">`),
		strings.Index(h, `<section id="claims">`), strings.Index(h, `<section id="conditions">`)
	if claims < 0 || !(verdict < results && results < claims && claims < conds) {
		t.Errorf("HTML: verdict at %d, last workload at %d, claims at %d, conditions at %d: want them in that order", verdict, results, claims, conds)
	}
	for _, c := range rep.Claims {
		for name, out := range map[string]string{"Markdown": m, "HTML": h} {
			claim, ours := mdEscape(c.Claim), mdEscape(c.Ours)
			if name == "HTML" {
				claim, ours = htmlText(c.Claim), htmlText(c.Ours)
			}
			if !strings.Contains(out, claim) || !strings.Contains(out, ours) {
				t.Errorf("%s lacks the row %q / %q", name, c.Claim, c.Ours)
			}
		}
	}
	// The rule is on the page: a reader sees how "same" is decided.
	if !strings.Contains(m, "is \"same\" when") || !strings.Contains(h, "is &#34;same&#34; when") {
		t.Error("the page does not state the rule for same, different and not decided")
	}
}

func htmlText(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;").Replace(s)
}

// TestClaimsEveryClaim: every claim of the published page encoded in
// refClaims has a row, in order, and the summary's "no single engine
// dominated" one after them; each of the four workloads' published tests
// is judged by at least one row.
func TestClaimsEveryClaim(t *testing.T) {
	rep := build(t, "suite")
	if got, want := len(rep.Claims), len(refClaims)+1; got != want {
		t.Fatalf("%d rows, want %d (one per encoded claim and the summary's)", got, want)
	}
	for i, c := range refClaims {
		if rep.Claims[i].Claim != claimText(c) || rep.Claims[i].Section != c.section {
			t.Errorf("row %d is %q in %q, want %q in %q", i, rep.Claims[i].Claim, rep.Claims[i].Section, claimText(c), c.section)
		}
	}
	if last := rep.Claims[len(rep.Claims)-1]; last.Claim != noDominance {
		t.Errorf("last row %q, want %q", last.Claim, noDominance)
	}
	judged := map[string]bool{}
	figures := 0
	for _, c := range refClaims {
		judged[c.test] = true
		if c.section != secLearned {
			figures += len(c.figs)
		}
	}
	for _, id := range []string{"hit-path/p50-ttfb", "hit-path/p99-ttfb", "segment/full-p50-ttfb", "segment/full-p99-ttfb",
		"segment/range-p50-ttfb", "segment/range-p99-ttfb", "miss-storm/p50-ttfb", "miss-storm/p99-ttfb", "miss-storm/coalescing",
		"origin-flap/p50-ttfb-failing", "origin-flap/grace-ratio"} {
		if !judged[id] {
			t.Errorf("no row judges %s, a test of the published page", id)
		}
	}
	// The published page's charts hold 6 tests of 8 cells (hit path and
	// segment: Vinyl had no TLS) and 5 of 3 (miss storm and origin flap).
	if want := 6*8 + 5*3; figures != want {
		t.Errorf("the rows hold %d published figures, want %d", figures, want)
	}
	// No row reads 0 for a figure it does not have, and none of the
	// fixture's rows naming Vinyl Cache (not in it) is "same".
	for _, r := range rep.Claims {
		if strings.Contains(r.Claim, "Vinyl") && r.Status == ClaimSame {
			t.Errorf("%q is %q, with no Vinyl Cache cell in the fixture", r.Claim, r.Status)
		}
		if strings.Contains(r.Ours, ": 0 ") {
			t.Errorf("%q reads a 0 for ours: %q", r.Claim, r.Ours)
		}
	}
}

// claimModel is a page with one test the published page has: hit-path
// p99 TTFB, plaintext, Varnish, Vinyl Cache and NGINX, 20 valid passes
// each around the given values (ms).
func claimModel(varnish, vinyl, nginx float64) *Report {
	cell := func(engine, version string, v float64) Cell {
		c := Cell{Label: displayNames[engine] + " " + version + " (plaintext)", Engine: engine, Version: version, Runtime: "process",
			Topology: "plaintext", Valid: true, ValidPasses: 20, MeasuredPasses: 20}
		vals := make([]float64, 20)
		for i := range vals {
			vals[i] = v + float64(i%5)*0.01
			c.Passes = append(c.Passes, PassPoint{Index: i + 1, Value: &vals[i], Valid: true})
		}
		c.Value = &vals[2]
		return c
	}
	t := Test{ID: "hit-path/p99-ttfb", Slug: "hit-path-p99-ttfb", Workload: "hit-path", Name: "p99-ttfb", Title: "p99 TTFB", Unit: "ms", LowerIsBetter: true,
		Cells: []Cell{cell("varnish", "9.0.2", varnish), cell("vinyl", "trunk", vinyl), cell("nginx", "1.22.1", nginx)}}
	return &Report{
		Workloads: []Workload{{Name: "hit-path", Title: "Hit-path TTFB", Tests: []Test{t}}},
		Engines:   []EngineRow{{Engine: "Varnish", Versions: []string{"9.0.2"}}, {Engine: "Vinyl Cache", Versions: []string{"trunk"}}, {Engine: "NGINX", Versions: []string{"1.22.1"}}},
	}
}

// hitP99Plaintext is the row of the published "Test 2 p99 TTFB" in
// plaintext (Vinyl 0.8 ms led, against NGINX 2.4 ms and Varnish 2.6 ms).
func hitP99Plaintext(t *testing.T, rep *Report) ClaimRow {
	t.Helper()
	for _, r := range claims(rep, DefaultOptions()) {
		if r.Section == secHitPath && strings.HasPrefix(r.Claim, "p99 TTFB, plaintext:") {
			return r
		}
	}
	t.Fatal("no row for the published hit-path p99 TTFB in plaintext")
	return ClaimRow{}
}

// TestClaimsFromModel: a row's figures and status come from the page's
// cells: change a cell and the row changes with it; an invalid, saturated
// or missing cell is said, and never "same".
func TestClaimsFromModel(t *testing.T) {
	// Vinyl Cache ahead of both, by far more than the tolerance: the
	// published lead holds.
	rep := claimModel(2, 1, 2)
	r := hitP99Plaintext(t, rep)
	if r.Status != ClaimSame {
		t.Errorf("Vinyl Cache well ahead: status %q, want %q (%s)", r.Status, ClaimSame, r.Why)
	}
	if !strings.Contains(r.Ours, "Vinyl Cache trunk: 1.02 ms") || !strings.Contains(r.Ours, "NGINX 1.22.1: 2.02 ms") {
		t.Errorf("ours %q does not read the model's cells", r.Ours)
	}
	if !strings.Contains(r.Why, "here Varnish 9.0.2, Vinyl Cache trunk and NGINX 1.22.1") {
		t.Errorf("why %q does not give the engines table's versions", r.Why)
	}

	// The lead holds, but the figures behind it are reversed: published
	// NGINX 2.4 ms ahead of Varnish 2.6 ms, here Varnish well ahead of
	// NGINX. A ranking of three orders all three: different.
	rep = claimModel(1.5, 1, 3)
	r = hitP99Plaintext(t, rep)
	if r.Status != ClaimDifferent || !strings.Contains(r.Why, "NGINX against Varnish: Varnish is better here") {
		t.Errorf("Varnish ahead of NGINX behind the lead: status %q, why %q; want %q", r.Status, r.Why, ClaimDifferent)
	}

	// NGINX ahead of Vinyl Cache: the published lead is contradicted.
	rep = claimModel(2, 1, 0.5)
	r = hitP99Plaintext(t, rep)
	if r.Status != ClaimDifferent || !strings.Contains(r.Ours, "NGINX 1.22.1: 0.520 ms") {
		t.Errorf("NGINX ahead: status %q, ours %q; want %q and NGINX's 0.520 ms", r.Status, r.Ours, ClaimDifferent)
	}

	// A tie (a shift under the tolerance) decides nothing.
	rep = claimModel(1.01, 1, 1.02)
	if r = hitP99Plaintext(t, rep); r.Status != ClaimNotDecided {
		t.Errorf("a tie: status %q, want %q", r.Status, ClaimNotDecided)
	}

	// An invalid cell: not decided, said so, never same.
	rep = claimModel(2, 1, 2)
	c := &rep.Workloads[0].Tests[0].Cells[2]
	c.Valid, c.ValidPasses = false, 12
	r = hitP99Plaintext(t, rep)
	if r.Status != ClaimNotDecided || !strings.Contains(r.Ours, "NGINX 1.22.1: 2.02 ms (invalid in 8 of 20 passes, not weighed)") ||
		!strings.Contains(r.Why, "NGINX here is invalid in 8 of 20 passes") {
		t.Errorf("invalid NGINX: status %q, ours %q, why %q", r.Status, r.Ours, r.Why)
	}

	// A saturated cell: not ranked, not decided.
	rep = claimModel(2, 1, 2)
	c = &rep.Workloads[0].Tests[0].Cells[0]
	c.Unranked, c.SaturatedPasses = true, 20
	r = hitP99Plaintext(t, rep)
	if r.Status != ClaimNotDecided || !strings.Contains(r.Ours, "Varnish 9.0.2: saturated, not ranked") {
		t.Errorf("saturated Varnish: status %q, ours %q", r.Status, r.Ours)
	}

	// No cell for an engine the claim names: not measured here, never 0.
	rep = claimModel(2, 1, 2)
	rep.Workloads[0].Tests[0].Cells = rep.Workloads[0].Tests[0].Cells[:2]
	r = hitP99Plaintext(t, rep)
	if r.Status != ClaimNotMeasured || !strings.Contains(r.Ours, "NGINX: not measured here") {
		t.Errorf("no NGINX: status %q, ours %q", r.Status, r.Ours)
	}

	// A cell without a value says why, never 0.
	rep = claimModel(2, 1, 2)
	c = &rep.Workloads[0].Tests[0].Cells[1]
	c.Value, c.NoValue, c.Passes, c.ValidPasses = nil, "the engine did not start", nil, 0
	r = hitP99Plaintext(t, rep)
	if r.Status != ClaimNotDecided || !strings.Contains(r.Ours, "no value: the engine did not start") {
		t.Errorf("Vinyl Cache without a value: status %q, ours %q", r.Status, r.Ours)
	}

	// A published tie (200 x each) is contradicted by a significant
	// difference, and holds when every pass gives one value.
	rep = claimModel(200, 200, 200)
	rep.Workloads[0].Tests[0].ID = "miss-storm/coalescing"
	for i := range rep.Workloads[0].Tests[0].Cells {
		rep.Workloads[0].Tests[0].Cells[i].Topology = "plaintext"
	}
	tie := func(rep *Report) ClaimRow {
		for _, r := range claims(rep, DefaultOptions()) {
			if strings.HasPrefix(r.Claim, "All three engines coalesced") {
				return r
			}
		}
		t.Fatal("no coalescing row")
		return ClaimRow{}
	}
	rep.Workloads[0].Tests[0].Unit, rep.Workloads[0].Tests[0].LowerIsBetter = "x", false
	for i := range rep.Workloads[0].Tests[0].Cells {
		for j := range rep.Workloads[0].Tests[0].Cells[i].Passes {
			v := 200.0
			rep.Workloads[0].Tests[0].Cells[i].Passes[j].Value = &v
		}
	}
	if r = tie(rep); r.Status != ClaimSame {
		t.Errorf("200 x in every pass of every engine: status %q, want %q (%s)", r.Status, ClaimSame, r.Why)
	}
	for j := range rep.Workloads[0].Tests[0].Cells[2].Passes {
		v := 20.0 + float64(j%5)
		rep.Workloads[0].Tests[0].Cells[2].Passes[j].Value = &v
	}
	if r = tie(rep); r.Status != ClaimDifferent {
		t.Errorf("NGINX at 20 x: status %q, want %q (%s)", r.Status, ClaimDifferent, r.Why)
	}
}
