package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hlsbench/hlsbench/results/stats"
)

// checkVerdict fails unless every verdict line of rep rests on what the
// tables below it show: a lead cites a significant comparison, a tie a
// tie, both between two ranked rows of one topology in the cited test
// (never saturated, a bound, the instrument, or a row without a value),
// and each cited row's anchor is on the page; an undecided line cites
// nothing.
func checkVerdict(t *testing.T, rep *Report, o Options) {
	t.Helper()
	if len(rep.Verdict) != len(jobs) {
		t.Errorf("%d verdict lines, want one per job (%d)", len(rep.Verdict), len(jobs))
	}
	var page bytes.Buffer
	if err := WriteHTML(&page, rep); err != nil {
		t.Fatal(err)
	}
	for _, v := range rep.Verdict {
		switch {
		case v.Kind == Undecided && len(v.Cites) > 0:
			t.Errorf("%s: undecided, yet cites %d comparisons", v.Job, len(v.Cites))
		case v.Kind == Undecided && !strings.HasPrefix(v.Text, "Undecided") && !strings.HasPrefix(v.Text, "Not measured"):
			t.Errorf("%s: an undecided line does not say so: %s", v.Job, v.Text)
		case v.Kind != Undecided && len(v.Cites) == 0:
			t.Errorf("%s: %s cites no comparison: %s", v.Job, v.Kind, v.Text)
		}
		for _, c := range v.Cites {
			tt := findTest(rep, c.Test)
			if tt.ID == "" {
				t.Errorf("%s: cites %s, not a test of the page", v.Job, c.Test)
				continue
			}
			for _, cell := range []Cell{c.Leader, c.Other} {
				row := -1
				for i, tc := range tt.Cells {
					if tc.Label == cell.Label {
						row = i
					}
				}
				switch {
				case row < 0:
					t.Errorf("%s: cites %q, not an engine's row of %s (the instrument is never ranked)", v.Job, cell.Label, c.Test)
				case cell.Topology != c.Topology:
					t.Errorf("%s: cites %q of %s across topologies (%s)", v.Job, cell.Label, cell.Topology, c.Topology)
				case cell.Unranked || cell.Saturated() && tt.Latency():
					t.Errorf("%s: cites %q, saturated", v.Job, cell.Label)
				case cell.Bounded():
					t.Errorf("%s: cites %q, a bound ranked as an exact figure", v.Job, cell.Label)
				case cell.Value == nil || cell.ValidPasses == 0 || !cell.Valid:
					t.Errorf("%s: cites %q, which has no valid value", v.Job, cell.Label)
				}
				if !strings.Contains(v.Text, engineName(cell)) {
					t.Errorf("%s: the line does not name %q it rests on: %s", v.Job, engineName(cell), v.Text)
				}
			}
			if !strings.Contains(page.String(), `<tr id="`+c.Anchor+`">`) || !strings.Contains(page.String(), `href="#`+c.Anchor+`"`) {
				t.Errorf("%s: the page lacks the row %q or the verdict's link to it", v.Job, c.Anchor)
			}
			// The comparison is the test's own: the same judge over the
			// same valid passes gives the same verdict.
			s := stand(Test{Unit: tt.Unit, LowerIsBetter: tt.LowerIsBetter, Cells: []Cell{c.Leader, c.Other}}, o)
			d := c.Delta
			switch v.Kind {
			case Leads:
				if d.Verdict != stats.Regression || !(d.P < o.Compare.Alpha) || len(s.behind) != 1 {
					t.Errorf("%s: a lead on a comparison that is not significant: %+v", v.Job, d)
				}
				if !better(*c.Leader.Value, *c.Other.Value, tt.LowerIsBetter) {
					t.Errorf("%s: %q leads with a worse value than %q", v.Job, c.Leader.Label, c.Other.Label)
				}
			case Tied:
				if d.Verdict != stats.NoChange || len(s.ties) != 1 {
					t.Errorf("%s: a tie on a comparison that is not one: %+v", v.Job, d)
				}
			}
		}
		if strings.Contains(v.Text, "Built-in") && !strings.Contains(v.Text, "hlsbench's own reference cache") {
			t.Errorf("%s: the built-in cache is not named hlsbench's own reference cache: %s", v.Job, v.Text)
		}
		for _, w := range rep.Workloads {
			for _, tt := range w.Tests {
				for _, c := range tt.Instrument {
					if strings.Contains(v.Text, engineName(c)+" ") {
						t.Errorf("%s: ranks the instrument %q: %s", v.Job, c.Label, v.Text)
					}
				}
			}
		}
	}
}

// TestVerdictCitesValidComparisons checks the verdict over every
// fixture's page model and the committed page's runs.
func TestVerdictCitesValidComparisons(t *testing.T) {
	o := catalogOptions()
	for _, fx := range fixtures {
		t.Run(fx, func(t *testing.T) { checkVerdict(t, build(t, fx), o) })
	}
	site := filepath.Join("..", "site", "runs")
	if _, err := os.Stat(site); err != nil {
		return
	}
	t.Run("site", func(t *testing.T) {
		in, err := Read([]string{site})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := Build(in, o)
		if err != nil {
			t.Fatal(err)
		}
		checkVerdict(t, rep, o)
		leads := 0
		for _, v := range rep.Verdict {
			if v.Kind == Leads {
				leads++
			}
		}
		if leads == 0 {
			t.Error("the committed runs' verdict has no lead, though their tables separate cells")
		}
	})
}

// twenty are twenty pass values from v up, 0.01 apart: a hand cell's
// passes.
func twenty(v float64) []float64 {
	var vs []float64
	for i := range 20 {
		vs = append(vs, v+float64(i)*0.01)
	}
	return vs
}

// TestVerdictHand is a model built by hand: the fastest hit-path cells are
// saturated, in another topology, a bound or the instrument, so a verdict
// that ranked any of them would cite it; the only significant valid
// comparison is a against b.
func TestVerdictHand(t *testing.T) {
	o := catalogOptions()
	plain := func(c Cell) Cell { c.Topology, c.Label = "plaintext", c.Label+" (plaintext)"; return c }
	a, b := plain(handCell("varnish", twenty(1)...)), plain(handCell("nginx", twenty(5)...))
	sat := plain(handCell("vinyl", twenty(0.1)...))
	sat.Unranked, sat.SaturatedPasses = true, 20
	tls := handCell("builtin", twenty(0.2)...)
	tls.Topology, tls.Label = "tls", "Built-in x (TLS)"
	// hlsbench's own reference cache leads, yet the line is about the
	// engines a reader can deploy: varnish against nginx, once.
	ref := plain(handCell("builtin", twenty(0.5)...))
	null := plain(handCell("null", twenty(0.05)...))
	hit := Test{ID: "hit-path/p50-ttfb", Slug: "hit-path-p50-ttfb", Workload: "hit-path", Name: "p50-ttfb", Title: "p50 TTFB", Unit: "ms",
		LowerIsBetter: true, Cells: []Cell{sat, ref, a, b, tls}, Instrument: []Cell{null}}

	capA, capB := plain(handCell("varnish", 100, 110, 120)), plain(handCell("nginx", 500, 510, 520))
	capBound := plain(handCell("builtin", 900, 900, 900))
	capBound.LowerBound = "the generator ran out"
	capacity := Test{ID: "capacity/hit-path", Slug: "capacity-hit-path", Workload: "capacity", Name: "hit-path", Title: "Capacity, hit path",
		Unit: "rps", Ranked: true, Cells: []Cell{capA, capB, capBound}}

	rep := &Report{Title: "t", Workloads: []Workload{{Name: "hit-path", Title: "Hit-path TTFB", Tests: []Test{hit}},
		{Name: "capacity", Title: "Capacity", Tests: []Test{capacity}}}}
	rep.Verdict = verdicts(rep, o)
	checkVerdict(t, rep, o)

	got := map[string]Verdict{}
	for _, v := range rep.Verdict {
		got[v.Job] = v
	}
	v := got["Playlist hit path"]
	if v.Kind != Leads || len(v.Cites) != 1 || v.Cites[0].Leader.Engine != "varnish" || v.Cites[0].Other.Engine != "nginx" {
		t.Fatalf("hit path: %s %+v, want varnish leading nginx alone", v.Kind, v.Cites)
	}
	for _, w := range []string{"varnish beats nginx", "1.10 ms against 5.10 ms", "4.64× as long", "p < 0.001", "95 % interval", "20 and 20 valid passes"} {
		if !strings.Contains(v.Text, w) {
			t.Errorf("hit path lacks %q: %s", w, v.Text)
		}
	}
	if !strings.Contains(v.Text, "Left out: vinyl (plaintext) saturated, not ranked.") {
		t.Errorf("hit path does not say the saturated cell is left out: %s", v.Text)
	}
	for _, n := range []string{"vinyl beats", "null", "TLS", "Built-in"} {
		if strings.Contains(v.Text, n) {
			t.Errorf("hit path names %q, which nothing ranks against it: %s", n, v.Text)
		}
	}
	// A cause is said where the engine's recorded difference names the
	// workload's TTFB, and only there.
	causes := map[string][]string{"nginx": {"NGINX's lock makes its hit-path TTFB long.", "NGINX purges hit-path keys one by one."}}
	if why := causeOf(causes, "nginx", hit); why != "NGINX's lock makes its hit-path TTFB long." {
		t.Errorf("cause of nginx's hit-path p50 TTFB: %q", why)
	}
	if why := causeOf(causes, "nginx", capacity); why != "" {
		t.Errorf("cause of nginx's capacity: %q, want none (no difference names it)", why)
	}
	c := got["Capacity per core"]
	if c.Kind != Undecided || len(c.Cites) != 0 {
		t.Fatalf("capacity: %s citing %+v, want undecided (3 passes each)", c.Kind, c.Cites)
	}
	for _, w := range []string{"Undecided: the host could not tell them apart", "with 3 and 3 valid passes",
		"1 figure is a lower bound", "capacity within the SLO", "nginx 510 rps", "≥ 900 rps (the generator ran out)"} {
		if !strings.Contains(c.Text, w) {
			t.Errorf("capacity lacks %q: %s", w, c.Text)
		}
	}
	if l := got["Low-latency HLS"]; l.Kind != Undecided || !strings.Contains(l.Text, "Not measured") {
		t.Errorf("LL-HLS with no result: %s %q, want not measured", l.Kind, l.Text)
	}
}

// TestVerdictFirst: in both formats the verdict is the first thing under
// the title, before the summary, the tables and the test conditions.
func TestVerdictFirst(t *testing.T) {
	rep := build(t, "suite")
	var md, html bytes.Buffer
	if err := WriteMarkdown(&md, rep); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&html, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(md.String(), "# "+rep.Title+"\n\n## Verdict\n\n- **") {
		t.Errorf("the Markdown does not open with the verdict:\n%.300s", md.String())
	}
	h := html.String()
	title, verdict := strings.Index(h, "<h1>"), strings.Index(h, `<section id="verdict"`)
	for _, after := range []string{`<p class="lede">`, `<section id="learned">`, `<section id="` + rep.Workloads[0].Name + `">`, `<section id="conditions">`} {
		if i := strings.Index(h, after); title < 0 || verdict < title || i < verdict {
			t.Errorf("the HTML's verdict (at %d, title at %d) is not before %s (at %d)", verdict, title, after, i)
		}
	}
	if strings.Index(h, `<section id="learned">`) > strings.Index(h, `<section id="conditions">`) {
		t.Error("the HTML's summary comes after the test conditions")
	}
}

// TestTopShort: the page's top is one line of title with its facts, the
// verdict, the engines in a small table with their versions, and a short
// summary that lists no engine; the test conditions come after the
// results in both formats.
func TestTopShort(t *testing.T) {
	rep := build(t, "suite")
	if want := DefaultTitle + ": 3 engines, 1 topology, 4 workloads on AMD EPYC, 2 cores, 2026-12-01"; rep.Title != want {
		t.Errorf("title %q, want %q", rep.Title, want)
	}
	// A title the user gave is theirs, as given.
	in, err := Read([]string{filepath.Join("testdata", "suite")})
	if err != nil {
		t.Fatal(err)
	}
	o := catalogOptions()
	o.Title = "Mine"
	if mine, err := Build(in, o); err != nil {
		t.Fatal(err)
	} else if mine.Title != "Mine" {
		t.Errorf("a title given: %q, want Mine", mine.Title)
	}
	if strings.Contains(rep.Summary, "(plaintext)") || len(strings.Fields(rep.Summary)) > 40 {
		t.Errorf("the summary lists engines or is long (%d words): %s", len(strings.Fields(rep.Summary)), rep.Summary)
	}
	var md, html bytes.Buffer
	if err := WriteMarkdown(&md, rep); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&html, rep); err != nil {
		t.Fatal(err)
	}
	m := md.String()
	row := "| Varnish | 7.1.1 | plaintext |"
	for _, in := range []struct{ before, after string }{
		{"## Verdict", "| Engine | Versions measured | Topologies | Notes |"},
		{row, rep.Summary},
		{rep.Summary, "## What did we learn?"},
		{"## " + rep.Workloads[len(rep.Workloads)-1].Title, "## Test conditions"},
	} {
		if i, j := strings.Index(m, in.before), strings.Index(m, in.after); i < 0 || j < 0 || i > j {
			t.Errorf("the Markdown has %q at %d, not before %q at %d", in.before, i, in.after, j)
		}
	}
	h := html.String()
	if !strings.Contains(h, "<tr><td>Built-in</td><td>v0.9.0</td><td>plaintext</td><td>hlsbench&#39;s own reference cache</td></tr>") {
		t.Error("the HTML's engine table lacks the built-in cache's row, named for what it is")
	}
	if i, j := strings.Index(h, `<table class="engines">`), strings.Index(h, `<p class="lede">`); i < 0 || i > j {
		t.Error("the HTML's engine table is not at the top")
	}
}
