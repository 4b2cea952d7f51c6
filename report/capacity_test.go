package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/hlsbench/hlsbench/results"
)

// The capacity fixture is one plaintext run of the capacity workload's
// hit path: null at 30000 rps (the instrument's ceiling; its searches
// 29500–31000, each probed 1600 above: a margin of 3100), NGINX at 28000
// (within the margin: at the instrument's limit), the built-in cache at
// 12000, and Varnish at 9000 when the generator ran out at 18000.

// TestReportCapacityMarks: every output says which capacities are lower
// bounds and which is the ceiling; the findings rank NGINX's bound above
// the built-in cache's exact figure below it, and Varnish's bound, below
// that figure, against nothing.
func TestReportCapacityMarks(t *testing.T) {
	rep := build(t, "capacity")
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
		"≥ 28000 rps (at the instrument's limit: null carried 30000 rps), 57.9 MiB/s",
		"30000 rps (the instrument's ceiling), 62.1 MiB/s",
		"≥ 9000 rps (the generator ran out at 18000 rps)",
		"12000 rps, 24.4 MiB/s",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q", want)
		}
		if !strings.Contains(html.String(), htmlEscapeText(want)) && !strings.Contains(html.String(), want) {
			t.Errorf("html lacks %q", want)
		}
	}
	var finding string
	for _, w := range rep.Workloads {
		for _, tt := range w.Tests {
			if tt.ID == "capacity/hit-path" {
				finding = tt.Finding
			}
		}
	}
	if !strings.HasPrefix(finding, "NGINX 1.27.0 (plaintext) is at least 28000 rps (at the instrument's limit: null carried 30000 rps): above every exact figure, so it carries the most.") ||
		!strings.Contains(finding, "Built-in (plaintext, hlsbench's own reference cache) has the only exact value: 12000 rps.") ||
		!strings.Contains(finding, "Varnish 9.0.2 (plaintext) is at least 9000 rps (the generator ran out at 18000 rps): not above Built-in (plaintext, hlsbench's own reference cache)'s 12000 rps, so the two cannot be ordered.") ||
		!strings.Contains(finding, "never ranked: null (plaintext) is the instrument's ceiling at 30000 rps") || strings.Contains(finding, "highest") {
		t.Errorf("finding %q: want NGINX's bound first, the built-in cache the only exact value, Varnish's bound not ordered, null the ceiling", finding)
	}
	rows, err := csv.NewReader(&csvb).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	seen := 0
	for _, r := range rows[1:] {
		if r[col["pass"]] != "all" {
			continue
		}
		switch r[col["engine"]] {
		case "nginx":
			seen++
			if r[col["lower_bound"]] != "at the instrument's limit" || r[col["mib_per_s"]] != "57.9" {
				t.Errorf("nginx row %v", r)
			}
		case "null":
			seen++
			if r[col["instrument_ceiling"]] != "true" {
				t.Errorf("null row %v", r)
			}
		}
	}
	if seen != 2 {
		t.Errorf("%d of the nginx and null rows found", seen)
	}
}

// TestInstrumentLimitNamed: behind a terminator, a capacity at the
// instrument's limit names the terminator the ceiling was measured behind,
// and the ceiling says it; a bound for another reason, and a cell in a
// topology without a ceiling, are left as they were.
func TestInstrumentLimitNamed(t *testing.T) {
	v := func(f float64) *float64 { return &f }
	tc := Test{Unit: "rps", Instrument: []Cell{
		{Label: "null (PROXYv2)", Engine: "null", Topology: "proxyv2", Value: v(360), InstrumentCeiling: true},
	}, Cells: []Cell{
		{Label: "nginx (PROXYv2)", Engine: "nginx", Topology: "proxyv2", Value: v(350), LowerBound: "at the instrument's limit"},
		{Label: "builtin (PROXYv2)", Engine: "builtin", Topology: "proxyv2", Value: v(340), LowerBound: "the generator ran out at 580 rps"},
		{Label: "nginx (TLS)", Engine: "nginx", Topology: "tls", Value: v(440), LowerBound: "at the instrument's limit"},
	}}
	nameInstrumentLimit(&tc, map[cellKey]string{{"null", "", "proxyv2"}: "hitch 1.7.2"})
	if got, want := boundedValue(tc.Instrument[0], tc.Unit), "360 rps (the instrument's ceiling, with hitch 1.7.2 in front)"; got != want {
		t.Errorf("ceiling: %q, want %q", got, want)
	}
	for i, want := range []string{
		"≥ 350 rps (at the instrument's limit: null behind hitch 1.7.2 carried 360 rps)",
		"≥ 340 rps (the generator ran out at 580 rps)",
		"≥ 440 rps (at the instrument's limit)",
	} {
		if got := boundedValue(tc.Cells[i], tc.Unit); got != want {
			t.Errorf("cell %d: %q, want %q", i, got, want)
		}
	}
}

// capRes is a capacity result whose passes are searches, each given as its
// value and the next rate probed above it.
func capRes(engine, topo, test string, value float64, searches ...[2]float64) results.Result {
	r := results.Result{ID: "capacity/" + test, Workload: "capacity", Test: test, Title: "Capacity, " + test, Engine: engine,
		Runtime: "process", Topology: topo, Unit: "rps", Value: &value, Valid: true, MeasuredPasses: len(searches), ValidPasses: len(searches)}
	for i, s := range searches {
		raw := json.RawMessage(fmt.Sprintf(`{"capacity_rps": %g, "probes": [{"offered_rps": %g}, {"offered_rps": %g}]}`, s[0], s[0], s[1]))
		r.Passes = append(r.Passes, results.Pass{Index: i + 1, Value: &s[0], Valid: true, Evidence: &results.Evidence{Parts: map[string]any{"capacity": raw}}})
	}
	return r
}

// TestInstrumentLimitWhereCellsMeet: the instrument's limit is applied
// over the cells of two runs on one host, not within each run. Null's 4 MiB
// searches (1920, 1920, 2080; 80 rps steps) give a margin of 240 rps: the
// other run's Varnish at 2240 rps beats it, so null is no ceiling, and
// Varnish's mark, made by its own run, goes; the built-in cache at 1920 is
// exact. On the hit path the other run's NGINX, unmarked by its own run,
// is within null's margin: at the instrument's limit. TLS has no null
// figure: its capacities say no ceiling was measured.
func TestInstrumentLimitWhereCellsMeet(t *testing.T) {
	host := results.Host{Hostname: "bench", CPUModel: "AMD EPYC", Cores: 2}
	nullTLS := results.Result{ID: "capacity/segment-full", Workload: "capacity", Test: "segment-full", Title: "Capacity, segment-full",
		Engine: "null", Runtime: "process", Topology: "tls", Unit: "rps", NoValue: "not applicable: null has no TLS listener", NotApplicable: "null has no TLS listener"}
	a := &results.Run{ID: "a", Status: results.StatusComplete, Host: host, Results: []results.Result{
		capRes("null", "plaintext", "segment-full", 1920, [2]float64{1920, 2000}, [2]float64{1920, 2000}, [2]float64{2080, 2160}),
		capRes("builtin", "plaintext", "segment-full", 1920, [2]float64{1920, 2000}),
		nullTLS,
		capRes("null", "plaintext", "hit-path", 30000, [2]float64{29000, 30600}, [2]float64{30000, 31600}, [2]float64{31000, 32600}),
	}}
	varnish := capRes("varnish", "plaintext", "segment-full", 2240, [2]float64{2240, 2320})
	varnish.LowerBound = results.AtInstrumentLimit // as its run marked it, beside no null
	b := &results.Run{ID: "b", Status: results.StatusComplete, Host: host, Results: []results.Result{
		varnish,
		capRes("nginx", "tls", "segment-full", 440, [2]float64{440, 460}),
		capRes("nginx", "plaintext", "hit-path", 27000, [2]float64{27000, 28600}),
	}}
	rep, err := Build(&Input{Sources: []Source{{Name: "run-a.json", Run: a}, {Name: "run-b.json", Run: b}}}, catalogOptions())
	if err != nil {
		t.Fatal(err)
	}
	cells := map[string]Cell{}
	findings := map[string]string{}
	for _, w := range rep.Workloads {
		for _, tt := range w.Tests {
			findings[tt.Name] = tt.Finding
			for _, c := range tt.Rows() {
				cells[tt.Name+" "+c.Engine+" "+c.Topology] = c
			}
		}
	}
	if c := cells["segment-full varnish plaintext"]; c.LowerBound != "" {
		t.Errorf("varnish beat null by more than its margin, yet is %q", c.Bound())
	}
	if c := cells["segment-full null plaintext"]; c.InstrumentCeiling || !strings.Contains(c.CeilingBeaten, "Varnish (plaintext) carried 2240 rps, more than null's 1920 rps and its margin of 240 rps") {
		t.Errorf("null: ceiling %v, beaten %q", c.InstrumentCeiling, c.CeilingBeaten)
	}
	if c := cells["segment-full builtin plaintext"]; c.LowerBound != "" {
		t.Errorf("builtin is %q beside a null that is no ceiling", c.Bound())
	}
	if c := cells["hit-path nginx plaintext"]; c.LowerBound != results.AtInstrumentLimit || c.Limit != "null carried 30000 rps" {
		t.Errorf("nginx within null's margin (3600 rps) of another run: %q", c.Bound())
	}
	if c := cells["segment-full nginx tls"]; !c.NoCeiling || boundedValue(c, "rps") != "440 rps (no ceiling measured)" {
		t.Errorf("nginx in TLS: no ceiling %v, %q", c.NoCeiling, boundedValue(c, "rps"))
	}
	f := findings["segment-full"]
	for _, want := range []string{
		"In plaintext: Varnish (plaintext) is highest at 2240 rps.",
		"null (plaintext) carried 1920 rps, and null is no ceiling here",
		"No ceiling was measured in TLS (no null figure)",
	} {
		if !strings.Contains(f, want) {
			t.Errorf("finding lacks %q:\n%s", want, f)
		}
	}
	if strings.Contains(f, "instrument's ceiling at 1920") {
		t.Errorf("null still called the ceiling:\n%s", f)
	}
}
