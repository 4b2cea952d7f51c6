package results

import "testing"

func TestMarkInstrumentLimit(t *testing.T) {
	v := func(x float64) *float64 { return &x }
	cell := func(engine, topo, test string, value *float64) *Result {
		return &Result{Workload: "capacity", Test: test, Engine: engine, Topology: topo, Unit: "rps", Value: value}
	}
	null := cell("null", "plaintext", "hit-path", v(30000))
	nullTLS := cell("null", "tls", "hit-path", v(10000))
	nginx := cell("nginx", "plaintext", "hit-path", v(28000))      // within 10 %
	builtin := cell("builtin", "plaintext", "hit-path", v(12000))  // far below
	above := cell("varnish", "plaintext", "hit-path", v(31000))    // above null
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
