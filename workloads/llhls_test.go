package workloads

import (
	"errors"
	"testing"
	"time"

	"github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/results"
)

// llConfig is a short stream: parts of 200 ms, four a segment, 20 viewers
// for 2 s in one measured pass.
func llConfig() Config {
	c := testConfig()
	llViewersSetting.In(&c, 20)
	llWatchSetting.In(&c, 2*time.Second)
	llPassesSetting.In(&c, 1)
	partTargetSetting.In(&c, 200*time.Millisecond)
	return c
}

// ll-hls on the built-in cache: every test has a value, nothing comes
// before its part exists, and the cache's coalescing shows at the origin
// (about one origin request per part for a crowd of 20).
func TestLLHLSBuiltin(t *testing.T) {
	if testing.Short() {
		t.Skip("two passes of an LL-HLS crowd")
	}
	run := execute(t, RunSpec{Engines: []string{"builtin"}, Workloads: mustSpecs(t, LLHLS), Config: llConfig()})
	id := func(test string) string { return LLHLS + "/" + test }
	for _, d := range (llHLS{}).listTests() {
		r := find(t, run, "builtin", id(d.id))
		if r.MeasuredPasses != 1 || r.Value == nil {
			t.Errorf("%s: %d measured passes, value %v (%s; %v)", d.id, r.MeasuredPasses, val(r.Value), r.NoValue, r.InvalidReasons)
		}
	}
	if e := find(t, run, "builtin", id("early-answers")); e.Value == nil || *e.Value != 0 {
		t.Errorf("early answers %v, want 0", val(e.Value))
	}
	for _, test := range []string{"origin-part-requests", "origin-reload-requests"} {
		if r := find(t, run, "builtin", id(test)); r.Value == nil || *r.Value < 0.5 || *r.Value > 2 {
			t.Errorf("%s %v: want about 1 (a coalescing cache before 20 viewers)", test, val(r.Value))
		}
	}
	// Part delivery is a part's wait behind the cache: well under a part
	// for a cache that passes held requests on, never negative.
	if r := find(t, run, "builtin", id("p50-part-delivery")); r.Value == nil || *r.Value < 0 || *r.Value > 1000 {
		t.Errorf("p50 part delivery %v ms", val(r.Value))
	}
	var ev *LLEvidence
	for _, p := range find(t, run, "builtin", id("early-answers")).Passes {
		if !p.Warmup {
			ev = results.Part[LLEvidence](p.Evidence, llHLSPart)
		}
	}
	if ev == nil || ev.Requests["part"] == 0 || ev.Requests["reload"] == 0 || ev.PartsPublished < 5 || ev.Origin.Parts == 0 {
		t.Errorf("evidence %+v", ev)
	}
	w, ok := run.WorkloadOf(LLHLS)
	if l, _ := results.OwnCondition[LLConditions](w.Conditions, llCondition); !ok || l.Viewers != 20 || l.PartsPerSegment != 4 {
		t.Errorf("conditions %+v", w.Conditions)
	}
}

// The null engine has no cache: its cells are not applicable, each test
// with its reason.
func TestLLHLSNull(t *testing.T) {
	run := execute(t, RunSpec{Engines: []string{"null"}, Workloads: mustSpecs(t, LLHLS), Config: llConfig()})
	for _, d := range (llHLS{}).listTests() {
		if r := find(t, run, "null", LLHLS+"/"+d.id); r.NotApplicable != engines.NullNeedsCache || r.Value != nil {
			t.Errorf("%s on null: %q, %v", d.id, r.NotApplicable, val(r.Value))
		}
	}
}

// A stream the origin cannot serve is refused by the settings' check,
// naming the setting.
func TestLLHLSSettings(t *testing.T) {
	c := Defaults()
	partTargetSetting.In(&c, 5*time.Second)
	partsPerSegmentSetting.In(&c, 100)
	var fe *FieldError
	if err := c.Validate(); err == nil || !errors.As(err, &fe) || fe.Field != "parts-per-segment" {
		t.Errorf("500 s segments: %v", err)
	}
	if s, _ := LookupSetting("part-target"); s.Set(&c, "150500us") == nil {
		t.Error("part-target 150.5ms accepted")
	}
}
