package results

import "testing"

func costPass(index int, valid bool, engine, term float64) Pass {
	v := 1.0
	p := Pass{Index: index, Valid: valid, Value: &v,
		Evidence: &Evidence{Cost: &Cost{EngineCPUMsPer1000: &engine, TerminatorCPUMsPer1000: &term}}}
	if !valid {
		p.InvalidReasons = []string{"3 of 500 requests failed"}
	}
	return p
}

// The engine's and the terminator's CPU per 1000 requests are medians over
// the valid measured passes: a pass whose requests failed cheaply is not
// behind the cost any more than behind the value.
func TestRecountCostValidPassesOnly(t *testing.T) {
	r := &Result{Passes: []Pass{
		{Index: 1, Warmup: true, Valid: true, Evidence: &Evidence{Cost: &Cost{EngineCPUMsPer1000: costPtr(1)}}},
		costPass(1, true, 10, 20),
		costPass(2, false, 1, 2),
		costPass(3, true, 12, 24),
	}}
	r.Recount()
	if r.EngineCPUMsPer1000 == nil || *r.EngineCPUMsPer1000 != 11 {
		t.Errorf("engine CPU-ms per 1000 %v, want 11: the median of the valid passes' 10 and 12", costVal(r.EngineCPUMsPer1000))
	}
	if tc, _ := r.TerminatorCost(); tc == nil || *tc != 22 {
		t.Errorf("terminator CPU-ms per 1000 %v, want 22: the median of the valid passes' 20 and 24", costVal(tc))
	}
	none := &Result{Passes: []Pass{costPass(1, false, 1, 2)}}
	none.Recount()
	if tc, _ := none.TerminatorCost(); none.EngineCPUMsPer1000 != nil || tc != nil {
		t.Errorf("no valid pass: engine %v, terminator %v, want null", costVal(none.EngineCPUMsPer1000), costVal(tc))
	}
}

func costPtr(v float64) *float64 { return &v }

func costVal(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}
