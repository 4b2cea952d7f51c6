package report

import (
	"bytes"
	"encoding/csv"
	"strings"
	"testing"
)

// The null fixture is a real run (hit-path at 5000 rps and miss-storm, on
// null, the built-in cache and NGINX, 1 warm-up and 3 passes of 1 s) with
// one edit: null's hit-path p99 passes, rejected on this shared 2-core host
// for the generator's own lateness, are marked valid (value the median of
// their own, engine cost as its p50's), so that the p99 chart has a floor
// to draw. Everything else is as the run wrote it.

// TestReportNull: the null engine is the instrument, never an engine: it is
// in no test's cells (so nothing ranks or compares it), it is a row of
// every table labelled as the instrument, its latency is each latency
// chart's floor, drawn as a line, and a workload that needs a cache shows
// it not applicable with its reason.
func TestReportNull(t *testing.T) {
	rep := build(t, "null")
	floors := 0
	for _, w := range rep.Workloads {
		if strings.Contains(w.Takeaway, "null") {
			t.Errorf("%s: the takeaway mentions null: %q", w.Name, w.Takeaway)
		}
		for _, ts := range w.Tests {
			for _, c := range ts.Cells {
				if c.Engine == InstrumentEngine {
					t.Errorf("%s: null is among the cells ranked", ts.ID)
				}
			}
			if len(ts.Instrument) != 1 || !strings.Contains(ts.Instrument[0].Label, instrumentNote) {
				t.Errorf("%s: instrument cells %+v, want null's, labelled as the instrument", ts.ID, ts.Instrument)
				continue
			}
			lead, _, _ := strings.Cut(ts.Finding, "The instrument")
			if strings.Contains(lead, "null") {
				t.Errorf("%s: the finding compares null: %q", ts.ID, ts.Finding)
			}
			if w.Name != "hit-path" {
				if len(ts.Floors()) != 0 || !strings.Contains(ts.Instrument[0].NoValue, "null has no cache") {
					t.Errorf("%s: floors %v, null's reason %q: want none, and not applicable for want of a cache", ts.ID, ts.Floors(), ts.Instrument[0].NoValue)
				}
				continue
			}
			fl := ts.Floors()
			if len(fl) != 1 || fl[0].Label != "host floor (null)" || fl[0].Value != *ts.Instrument[0].Value {
				t.Fatalf("%s: floors %+v, want one at null's value", ts.ID, fl)
			}
			floors++
			var svg bytes.Buffer
			if err := ChartSVG(&svg, ts); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(svg.String(), "host floor (null): "+formatValue(fl[0].Value, "ms")) {
				t.Errorf("%s: the chart does not name the floor line", ts.ID)
			}
			if !strings.Contains(ts.Finding, "the host's floor") {
				t.Errorf("%s: the finding does not give the floor: %q", ts.ID, ts.Finding)
			}
		}
	}
	if floors != 2 {
		t.Errorf("%d floors drawn, want hit-path's p50 and p99", floors)
	}
	var md, csvb bytes.Buffer
	if err := WriteMarkdown(&md, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "| null (plaintext, the instrument, not an engine) | 3.63 ms |") {
		t.Errorf("markdown lacks null's p99 row labelled as the instrument")
	}
	if err := WriteCSV(&csvb, rep); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&csvb).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	nulls := 0
	for _, r := range rows {
		if r[3] == InstrumentEngine && r[7] == "all" {
			nulls++
		}
	}
	if nulls != 5 {
		t.Errorf("%d CSV rows of null's values, want its 5 tests", nulls)
	}
}

// TestChartInstrumentAlone: a test only the instrument measured draws its
// cells as rows (there is nothing for a floor to be under).
func TestChartInstrumentAlone(t *testing.T) {
	rep := build(t, "null")
	ts := rep.Workloads[0].Tests[1]
	ts.Cells = nil
	var svg bytes.Buffer
	if err := ChartSVG(&svg, ts); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(svg.String(), "host floor") {
		t.Errorf("a chart of the instrument alone draws a floor")
	}
}
