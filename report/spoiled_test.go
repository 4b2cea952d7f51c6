package report

import (
	"strings"
	"testing"

	"github.com/hlsbench/hlsbench/results"
)

// Issue 50: a cell the host or the instrument spoiled 3 passes of 10 is
// valid on its 7 and says so wherever its passes are counted — the table's
// valid passes, the chart's label, the CSV's spoiled_passes (the pass's row
// with its own reason), the caveats — as saturated passes are counted.
func TestReportCountsSpoiledPasses(t *testing.T) {
	late := "the generator's own lateness moved TTFB p99 from 0.127 ms to 0.179 ms"
	r := results.Result{ID: "w/t", Workload: "w", Test: "t", Engine: "nginx", Runtime: "process", Topology: "plaintext",
		Unit: "ms", LowerIsBetter: true, Value: f64(0.127)}
	for i := 1; i <= 10; i++ {
		p := results.Pass{Index: i, Value: f64(0.127), Valid: true, Requests: 1000}
		if i > 7 {
			p.Value, p.Valid, p.InvalidReasons, p.InvalidBy = f64(0.179), false, []string{late}, results.InvalidByInstrument
		}
		r.Passes = append(r.Passes, p)
	}
	r.Recount()
	c := cellOf(&r, "NGINX (plaintext)", "1.27.0", "run.json")
	if !c.Valid || c.SpoiledPasses != 3 || len(c.Spoiled) != 3 || len(c.Invalid) != 0 || !c.Passes[7].Spoiled || c.Passes[6].Spoiled {
		t.Fatalf("cell: valid %v, %d spoiled %q, invalid %q: want valid, 3 spoiled, passes 8-10 marked", c.Valid, c.SpoiledPasses, c.Spoiled, c.Invalid)
	}
	if got, want := passesText(c), "7 of 10; 3 of 10 spoiled by the host or the instrument"; got != want {
		t.Errorf("valid passes %q, want %q", got, want)
	}
	if _, s := bar(c, "ms"); !strings.Contains(s, "(3 of 10 passes spoiled by the host or the instrument)") {
		t.Errorf("chart label %q does not count the spoiled passes", s)
	}
	tt := handTest(c)
	src := Source{Name: "run.json", Run: &results.Run{Host: results.Host{Cores: 2}}}
	rep := &Report{Workloads: []Workload{{Name: "w", Title: "W", Tests: []Test{tt}}}, Sources: []Source{src}}
	rows, col := csvRows(t, rep)
	if all, p8 := rows[1], rows[9]; all[col["spoiled_passes"]] != "3" || all[col["valid"]] != "true" ||
		p8[col["spoiled_passes"]] != "1" || rows[8][col["spoiled_passes"]] != "0" || p8[col["value"]] != "" ||
		p8[col["seen_value"]] != "0.179" || !strings.Contains(p8[col["no_value"]], "lateness") {
		t.Errorf("csv: cell %q, pass 8 %q", all, p8)
	}
	cav := strings.Join(caveats(&Input{Sources: []Source{src}}, rep), "\n")
	if !strings.Contains(cav, "3 of 10 measured passes invalid, left out of the value (3 spoiled by the host or the instrument, not the engine): pass 8: "+late+" (and 2 more)") {
		t.Errorf("caveats:\n%s", cav)
	}
}
