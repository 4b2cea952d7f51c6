package report

import (
	"bytes"
	"encoding/csv"
	"strings"
	"testing"
)

// The capacity fixture is one plaintext run of the capacity workload's
// hit path: null at 30000 rps (the instrument's ceiling), NGINX at 28000
// (within 10 % of it: at the instrument's limit), the built-in cache at
// 12000, and Varnish at 9000 when the generator ran out at 18000.

// TestReportCapacityMarks: every output says which capacities are lower
// bounds and which is the ceiling, and the findings rank none of them.
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
	if !strings.HasPrefix(finding, "Only Built-in v0.9.0 (plaintext) has a ranked value: 12000 rps.") ||
		!strings.Contains(finding, "is at least 28000 rps (at the instrument's limit: null carried 30000 rps), not ranked") ||
		!strings.Contains(finding, "never ranked: null 0.1.0 (plaintext) is the instrument's ceiling at 30000 rps") {
		t.Errorf("finding %q: want the built-in cache alone ranked, NGINX a lower bound, null the ceiling", finding)
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
