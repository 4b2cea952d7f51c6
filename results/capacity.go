package results

import (
	"encoding/json"
	"math"
)

// InstrumentEngine is the engine whose capacity is the instrument's own
// ceiling: a static server with no cache logic (--engine null).
const InstrumentEngine = "null"

// AtInstrumentLimit is the LowerBound of a capacity at the instrument's
// limit.
const AtInstrumentLimit = "at the instrument's limit"

// Ceiling is the null engine's capacity in one test and topology on one
// host, and how far from it a figure cannot be told from it.
type Ceiling struct {
	// Null is the null engine's result.
	Null *Result
	// Margin is null's spread across its searches (its largest value
	// less its smallest) plus the search's step (the largest gap, in any
	// of null's searches, between the rate it passed and the next rate it
	// probed above it): a figure within Margin of null's could be null's
	// on another search, so the run cannot tell it from the instrument's.
	Margin float64
	// Beaten is the first engine that carried more than null's value
	// plus Margin: the instrument carried more than null showed, so
	// null's figure is no ceiling here; nil when none did.
	Beaten *Result
}

// MarkInstrumentLimit marks, among the results of one workload of one
// run, the capacities the instrument may have limited (see
// ApplyInstrumentLimit), each test and topology apart. It needs every cell
// of the workload finished, and it is idempotent. Results of other
// workloads are left alone.
func MarkInstrumentLimit(rs []*Result, workload string) {
	type key struct{ test, topology string }
	groups := map[key][]*Result{}
	var order []key
	for _, r := range rs {
		if r.Workload != workload {
			continue
		}
		k := key{r.Test, r.Topology}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	for _, k := range order {
		ApplyInstrumentLimit(groups[k])
	}
}

// ApplyInstrumentLimit applies the null engine's capacity to the
// capacities of one test in one topology on one host, wherever they were
// measured (one run, a resumed suite, a page's several parts): each within
// the ceiling's margin below null's or above it becomes a lower bound at
// the instrument's limit, and null's own the ceiling — unless some engine
// carried more than null plus the margin, when null is no ceiling and no
// figure is marked. A value already a lower bound for another reason (the
// generator ran out) keeps that reason: it is no less a lower bound. Marks
// a run made before (with another margin, or over fewer cells) are undone
// first, so that the same cells always give the same marks. It returns
// the ceiling, nil when no null figure is among rs.
func ApplyInstrumentLimit(rs []*Result) *Ceiling {
	var c *Ceiling
	for _, r := range rs {
		if r.Engine == InstrumentEngine && r.Value != nil {
			c = &Ceiling{Null: r, Margin: nullSpread(r) + searchStep(r)}
		}
	}
	for _, r := range rs {
		if r.LowerBound == AtInstrumentLimit {
			r.LowerBound = ""
		}
		if r.Engine == InstrumentEngine {
			r.InstrumentCeiling = false
		}
	}
	if c == nil {
		return nil
	}
	null := *c.Null.Value
	for _, r := range rs {
		if r.Engine != InstrumentEngine && r.Value != nil && *r.Value > null+c.Margin {
			if c.Beaten == nil || *r.Value > *c.Beaten.Value {
				c.Beaten = r
			}
		}
	}
	if c.Beaten != nil {
		return c
	}
	c.Null.InstrumentCeiling = true
	for _, r := range rs {
		if r.Engine == InstrumentEngine || r.Value == nil || r.LowerBound != "" {
			continue
		}
		if *r.Value >= null-c.Margin {
			r.LowerBound = AtInstrumentLimit
		}
	}
	return c
}

// nullSpread is how far apart null's valid searches came: its largest
// value less its smallest (0 for one search).
func nullSpread(r *Result) float64 {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, p := range r.Passes {
		if p.Warmup || !p.Valid || p.Value == nil {
			continue
		}
		lo, hi = min(lo, *p.Value), max(hi, *p.Value)
	}
	if hi < lo {
		return 0
	}
	return hi - lo
}

// capacitySearch is what the margin needs of a pass's capacity evidence
// (the workload's CapacityEvidence): the rate that passed, and every rate
// probed.
type capacitySearch struct {
	CapacityRPS *float64 `json:"capacity_rps"`
	Probes      []struct {
		OfferedRPS float64 `json:"offered_rps"`
	} `json:"probes"`
}

// searchStep is the search's resolution at null's figure: the largest gap,
// over null's valid searches, between the rate a search passed and the
// lowest rate it probed above it (failed by the engine or by the
// generator). The search stops at that step, so the figure is that coarse.
func searchStep(r *Result) float64 {
	step := 0.0
	for _, p := range r.Passes {
		if p.Warmup || !p.Valid || p.Evidence == nil {
			continue
		}
		s, ok := searchOf(p.Evidence.Parts["capacity"])
		if !ok || s.CapacityRPS == nil {
			continue
		}
		above := math.Inf(1)
		for _, pr := range s.Probes {
			if pr.OfferedRPS > *s.CapacityRPS {
				above = min(above, pr.OfferedRPS)
			}
		}
		if !math.IsInf(above, 1) {
			step = max(step, above-*s.CapacityRPS)
		}
	}
	return step
}

// searchOf reads a capacity search from a pass's evidence: as read from a
// file (JSON) or as the workload left it (its own type, read through its
// JSON, which results does not import).
func searchOf(v any) (capacitySearch, bool) {
	var s capacitySearch
	raw, ok := v.(json.RawMessage)
	if !ok {
		if v == nil {
			return s, false
		}
		var err error
		if raw, err = json.Marshal(v); err != nil {
			return s, false
		}
	}
	return s, json.Unmarshal(raw, &s) == nil
}
