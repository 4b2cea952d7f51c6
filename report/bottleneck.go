package report

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/hlsbench/hlsbench/results"
)

// carriedTolerance widens null's carried rates when the engines' are held
// against them: a rate within 5 % of what null carried (the capacity
// search's own tolerance) is the same rate on this instrument.
const carriedTolerance = 0.05

// terminatorLimits finds, per topology of a test, a terminator that is
// the limit of every cell there: null behind it carries what every engine
// carries, within null's own spread. A capacity's every engine is then at
// the instrument's limit beside null's ceiling; a latency's every engine
// and null are saturated at one carried rate. Then no engine's figure in
// that topology is the engine's: the page names the terminator, ranks
// nothing there, and marks each cell (LimitedBy) instead of calling it
// saturated or spoiled one by one.
func terminatorLimits(t *Test, terminators map[cellKey]string) {
	for _, n := range t.Instrument {
		term := terminators[cellKey{n.Engine, n.Runtime, n.Topology}]
		if term == "" {
			continue
		}
		var cells []int
		lo, hi := math.Inf(1), math.Inf(-1)
		all := true
		for i, c := range t.Cells {
			if c.Topology != n.Topology {
				continue
			}
			if c.Value == nil && c.AchievedRPS == nil {
				continue // no value, not applicable: nothing to limit
			}
			r, ok := limitedRate(c, n, t.Latency())
			if !ok {
				all = false
				break
			}
			cells = append(cells, i)
			lo, hi = min(lo, r), max(hi, r)
		}
		if !all || len(cells) < 2 {
			continue
		}
		nr, _ := nullRate(n, t.Latency())
		lo, hi = min(lo, nr), max(hi, nr)
		s := fmt.Sprintf("%s is the limit here, not the engines: null behind it carried %s rps and every engine carried as much, within null's spread (%s–%s rps): nothing is ranked in %s",
			term, rateText(nr), rateText(lo), rateText(hi), topologyName(n.Topology))
		if t.Latency() {
			s = fmt.Sprintf("%s is the limit here, not the engines: null behind it was saturated, carrying %s rps, and every engine was too, at the same rate within null's spread (%s–%s rps): nothing is ranked in %s",
				term, rateText(nr), rateText(lo), rateText(hi), topologyName(n.Topology))
		}
		if t.Limits == nil {
			t.Limits = map[string]string{}
		}
		t.Limits[n.Topology] = s + "."
		for _, i := range cells {
			t.Cells[i].LimitedBy = term
		}
	}
}

// nullRate is what null carried in a test: its capacity, or, for a
// latency, the rate its saturated passes carried; false when null is no
// limit there (not saturated, not the ceiling).
func nullRate(n Cell, latency bool) (float64, bool) {
	switch {
	case !latency && n.InstrumentCeiling && n.Value != nil:
		return *n.Value, true
	case latency && n.Saturated() && n.AchievedRPS != nil:
		return *n.AchievedRPS, true
	}
	return 0, false
}

// limitedRate is what an engine's cell carried when null's limit is its
// limit too, and whether it is.
func limitedRate(c, n Cell, latency bool) (float64, bool) {
	nr, ok := nullRate(n, latency)
	if !ok {
		return 0, false
	}
	if !latency {
		return valueOr(c.Value), c.Value != nil && c.LowerBound == results.AtInstrumentLimit
	}
	if !c.Saturated() || c.AchievedRPS == nil {
		return 0, false
	}
	// Null's spread: its passes' carried rates, widened by the tolerance.
	lo, hi := nr, nr
	for _, p := range n.Passes {
		if p.Saturated != "" && p.AchievedRPS > 0 {
			lo, hi = min(lo, p.AchievedRPS), max(hi, p.AchievedRPS)
		}
	}
	r := *c.AchievedRPS
	return r, r >= lo*(1-carriedTolerance) && r <= hi*(1+carriedTolerance)
}

func valueOr(v *float64) float64 {
	if v == nil {
		return 0
	}
	return *v
}

// sloOf is a capacity's service level as its searches recorded it
// ("p99:10ms", in each pass's capacity evidence), as a reader reads it:
// "p99 TTFB ≤ 10 ms"; "" for a test that is not a capacity, or when its
// passes disagree.
func sloOf(r *results.Result) string {
	slo := ""
	for _, p := range r.Passes {
		if p.Warmup || p.Evidence == nil {
			continue
		}
		var s struct {
			SLO string `json:"slo"`
		}
		raw, ok := p.Evidence.Parts["capacity"].(json.RawMessage)
		if !ok {
			b, err := json.Marshal(p.Evidence.Parts["capacity"])
			if err != nil {
				continue
			}
			raw = b
		}
		if json.Unmarshal(raw, &s) != nil || s.SLO == "" {
			continue
		}
		if slo != "" && slo != s.SLO {
			return ""
		}
		slo = s.SLO
	}
	return sloText(slo)
}

// sloText is "p99:10ms" as a reader reads it: "p99 TTFB ≤ 10 ms".
func sloText(slo string) string {
	q, ds, ok := strings.Cut(slo, ":")
	if !ok {
		return slo
	}
	d, err := time.ParseDuration(ds)
	if err != nil {
		return slo
	}
	if d >= time.Second {
		return q + " TTFB ≤ " + strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + " s"
	}
	return q + " TTFB ≤ " + strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', -1, 64) + " ms"
}

// SLO is the service level every capacity of the test was searched
// within, when it is one; "" when the test has none or its cells differ
// (then each cell's value says its own).
func (t Test) SLO() string {
	slo := ""
	for _, c := range t.Rows() {
		if c.SLO == "" {
			continue
		}
		if slo != "" && slo != c.SLO {
			return ""
		}
		slo = c.SLO
	}
	return slo
}
