package results

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// capResult is a capacity result whose passes are searches: each its value
// and the rates its search probed.
func capResult(engine, topo, test string, value float64, searches ...[]float64) *Result {
	r := &Result{Workload: "capacity", Test: test, Engine: engine, Topology: topo, Unit: "rps", Value: &value}
	for i, s := range searches {
		v := s[0]
		var probes []string
		for _, rate := range s[1:] {
			probes = append(probes, fmt.Sprintf(`{"offered_rps": %g}`, rate))
		}
		raw := json.RawMessage(fmt.Sprintf(`{"capacity_rps": %g, "probes": [%s]}`, v, strings.Join(probes, ", ")))
		r.Passes = append(r.Passes, Pass{Index: i, Value: &v, Valid: true, Evidence: &Evidence{Parts: map[string]any{"capacity": raw}}})
	}
	return r
}

func TestMarkInstrumentLimit(t *testing.T) {
	v := func(x float64) *float64 { return &x }
	cell := func(engine, topo, test string, value *float64) *Result {
		return &Result{Workload: "capacity", Test: test, Engine: engine, Topology: topo, Unit: "rps", Value: value}
	}
	// Null's searches: 28000, 30000 and 31500 (spread 3500), each probed
	// 1600 above the rate it passed at most (step 1600): margin 5100.
	null := capResult("null", "plaintext", "hit-path", 30000,
		[]float64{28000, 100, 28000, 29600}, []float64{30000, 30000, 31000}, []float64{31500, 31500, 33100})
	nullTLS := capResult("null", "tls", "hit-path", 10000, []float64{10000, 10500})
	nginx := cell("nginx", "plaintext", "hit-path", v(25000))      // within the margin below
	builtin := cell("builtin", "plaintext", "hit-path", v(24000))  // below the margin
	above := cell("varnish", "plaintext", "hit-path", v(35000))    // above null, within the margin
	tls := cell("nginx", "tls", "hit-path", v(8000))               // 20 % below null's TLS
	range_ := cell("nginx", "plaintext", "segment-range", v(9000)) // no null figure for it
	gen := cell("vinyl", "plaintext", "hit-path", v(29000))        // already a lower bound
	gen.LowerBound = "the generator ran out at 58000 rps"
	other := &Result{Workload: "hit-path", Test: "hit-path", Engine: "nginx", Topology: "plaintext", Value: v(29000)}
	rs := []*Result{nginx, builtin, null, above, nullTLS, tls, range_, gen, other}
	for range 2 { // idempotent
		MarkInstrumentLimit(rs, "capacity")
	}
	if !null.InstrumentCeiling || !nullTLS.InstrumentCeiling || null.LowerBound != "" {
		t.Fatalf("null: ceiling %v/%v, lower bound %q", null.InstrumentCeiling, nullTLS.InstrumentCeiling, null.LowerBound)
	}
	for _, r := range []*Result{nginx, above} {
		if r.LowerBound != AtInstrumentLimit {
			t.Errorf("%s %v: lower bound %q, want %q", r.Engine, *r.Value, r.LowerBound, AtInstrumentLimit)
		}
	}
	for _, r := range []*Result{builtin, tls, range_, other} {
		if r.LowerBound != "" || r.InstrumentCeiling {
			t.Errorf("%s %s %s: marked %q", r.Engine, r.Topology, r.Test, r.LowerBound)
		}
	}
	if gen.LowerBound != "the generator ran out at 58000 rps" {
		t.Errorf("a generator's lower bound was replaced: %q", gen.LowerBound)
	}
}

// TestInstrumentLimitBeaten: the site's 4 MiB full GET over plaintext.
// Null's searches carried 1920, 1920 and 2080 rps, each probed 80 rps
// above: its margin is 240 rps, and engines that carried 2240 rps beat it
// by more. Null is then no ceiling, and no engine's figure is the
// instrument's limit — not even one the run itself marked with a fixed
// 10 % margin.
func TestInstrumentLimitBeaten(t *testing.T) {
	null := capResult("null", "plaintext", "segment-full", 1920,
		[]float64{1920, 10, 1920, 2000}, []float64{1920, 1920, 2000}, []float64{2080, 2080, 2160})
	null.InstrumentCeiling = true // as a run marked it
	varnish := capResult("varnish", "plaintext", "segment-full", 2240, []float64{2240, 2320})
	varnish.LowerBound = AtInstrumentLimit
	builtin := capResult("builtin", "plaintext", "segment-full", 1920, []float64{1920, 2000})
	builtin.LowerBound = AtInstrumentLimit
	c := ApplyInstrumentLimit([]*Result{varnish, null, builtin})
	if c == nil || c.Margin != 240 || c.Beaten != varnish {
		t.Fatalf("ceiling %+v, want margin 240 beaten by varnish", c)
	}
	if null.InstrumentCeiling || varnish.LowerBound != "" || builtin.LowerBound != "" {
		t.Errorf("null beaten, yet ceiling %v, varnish %q, builtin %q", null.InstrumentCeiling, varnish.LowerBound, builtin.LowerBound)
	}
	// Without the engine that beat it, null is the ceiling again, and the
	// engine within its margin is at its limit.
	c = ApplyInstrumentLimit([]*Result{null, builtin})
	if c.Beaten != nil || !null.InstrumentCeiling || builtin.LowerBound != AtInstrumentLimit {
		t.Errorf("null unbeaten: beaten %v, ceiling %v, builtin %q", c.Beaten, null.InstrumentCeiling, builtin.LowerBound)
	}
	if ApplyInstrumentLimit([]*Result{builtin}) != nil || builtin.LowerBound != "" {
		t.Errorf("no null figure: builtin still %q", builtin.LowerBound)
	}
}
