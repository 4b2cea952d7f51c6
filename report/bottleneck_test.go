package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/hlsbench/hlsbench/results"
)

// sloRes is a capacity result whose searches recorded their SLO, as the
// capacity workload writes it in each pass's evidence.
func sloRes(engine, topo string, slo string, value float64, searches ...[2]float64) results.Result {
	r := capRes(engine, topo, "segment-full", value, searches...)
	for i := range r.Passes {
		raw := json.RawMessage(fmt.Sprintf(`{"slo": %q, "capacity_rps": %g, "probes": [{"offered_rps": %g}, {"offered_rps": %g}]}`,
			slo, searches[i][0], searches[i][0], searches[i][1]))
		r.Passes[i].Evidence.Parts["capacity"] = raw
	}
	return r
}

// satRes is a latency whose three passes were all saturated, each
// carrying the rate given of 500 rps offered, or, with carried 0, none
// saturated.
func satRes(engine, topo, test string, carried ...float64) results.Result {
	v := 0.05
	r := results.Result{ID: "segment/" + test, Workload: "segment", Test: test, Title: test, Engine: engine, Runtime: "process", Topology: topo,
		Unit: "ms", LowerIsBetter: true, MeasuredPasses: len(carried), OfferedRPS: ptrF(500)}
	for i, c := range carried {
		p := results.Pass{Index: i + 1, OfferedRPS: 500, AchievedRPS: c}
		if c == 0 {
			p.AchievedRPS, p.Value, p.Valid = 499.9, &v, true
			r.ValidPasses++
		} else {
			p.Saturated = fmt.Sprintf("saturated: carried %g of 500 rps", c)
			p.InvalidReasons = []string{p.Saturated}
			r.SaturatedPasses++
		}
		r.Passes = append(r.Passes, p)
	}
	if r.SaturatedPasses > 0 {
		r.SaturatedValue, r.AchievedRPS = ptrF(950), ptrF(carried[len(carried)/2])
		r.NoValue = "no valid pass"
	} else {
		r.Value, r.Valid, r.AchievedRPS = &v, true, ptrF(499.9)
	}
	return r
}

func ptrF(f float64) *float64 { return &f }

// TestTerminatorIsTheLimit: behind one terminator, when null carries what
// every engine carries (a capacity: every engine at null's ceiling; a
// latency: every engine and null saturated at one rate), the page names
// the terminator as the limit and ranks nothing in that topology, instead
// of calling each cell saturated or a bound. Where one engine is not
// saturated, nothing changes. Each capacity says its SLO beside its unit
// and on its chart's axis.
func TestTerminatorIsTheLimit(t *testing.T) {
	host := results.Host{Hostname: "vm", CPUModel: "AMD EPYC", Cores: 2}
	run := &results.Run{ID: "a", Status: results.StatusComplete, Host: host, Results: []results.Result{
		sloRes("null", "proxyv2", "p99:100ms", 360, [2]float64{360, 370}, [2]float64{360, 370}, [2]float64{370, 380}),
		sloRes("varnish", "proxyv2", "p99:100ms", 350, [2]float64{350, 360}, [2]float64{350, 360}, [2]float64{350, 360}),
		sloRes("nginx", "proxyv2", "p99:100ms", 360, [2]float64{360, 370}, [2]float64{350, 360}, [2]float64{360, 370}),
		sloRes("varnish", "plaintext", "p99:100ms", 2240, [2]float64{2240, 2320}),
		satRes("null", "proxyv2", "full-p50-ttfb", 350, 354.6, 358),
		satRes("varnish", "proxyv2", "full-p50-ttfb", 356, 358.6, 359),
		satRes("nginx", "proxyv2", "full-p50-ttfb", 360, 361.5, 362),
		satRes("null", "proxyv2", "full-p99-ttfb", 350, 354.6, 358),
		satRes("varnish", "proxyv2", "full-p99-ttfb", 356, 358.6, 359),
		satRes("nginx", "proxyv2", "full-p99-ttfb", 0, 0, 0),
	}}
	for _, e := range []string{"null", "varnish", "nginx"} {
		run.Engines = append(run.Engines, results.Engine{Name: e, Version: "1", Runtime: "process", Topology: "proxyv2", Terminator: "hitch", TerminatorVersion: "1.7.2"},
			results.Engine{Name: e, Version: "1", Runtime: "process", Topology: "plaintext"})
	}
	rep, err := Build(&Input{Sources: []Source{{Name: "run-a.json", Run: run}}}, catalogOptions())
	if err != nil {
		t.Fatal(err)
	}
	capacity := testOf(t, rep, "capacity/segment-full")
	if want := "In PROXYv2: hitch 1.7.2 is the limit here, not the engines: null behind it carried 360 rps and every engine carried as much, within null's spread (350–360 rps): nothing is ranked in PROXYv2."; !strings.Contains(capacity.Finding, want) {
		t.Errorf("capacity finding lacks %q:\n%s", want, capacity.Finding)
	}
	if strings.Contains(capacity.Finding, "not ranked.") {
		t.Errorf("capacity finding still ranks out cell by cell:\n%s", capacity.Finding)
	}
	p50 := testOf(t, rep, "segment/full-p50-ttfb")
	if want := "hitch 1.7.2 is the limit here, not the engines: null behind it was saturated, carrying 354.6 rps, and every engine was too, at the same rate within null's spread (354.6–361.5 rps): nothing is ranked in PROXYv2."; !strings.Contains(p50.Finding, want) {
		t.Errorf("latency finding lacks %q:\n%s", want, p50.Finding)
	}
	for _, c := range p50.Cells {
		if c.LimitedBy != "hitch 1.7.2" {
			t.Errorf("%s: limited by %q, want hitch 1.7.2", c.Label, c.LimitedBy)
		}
	}
	// NGINX carried its rate in p99's passes: the terminator is no limit
	// of every engine there.
	if p99 := testOf(t, rep, "segment/full-p99-ttfb"); len(p99.Limits) > 0 || strings.Contains(p99.Finding, "is the limit here") {
		t.Errorf("p99 with an unsaturated engine names a limit: %v\n%s", p99.Limits, p99.Finding)
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, rep); err != nil {
		t.Fatal(err)
	}
	page := md.String()
	for _, want := range []string{
		"Unit: rps, higher is better; each figure is the highest rate served within p99 TTFB ≤ 100 ms.",
		"| Varnish 1 (PROXYv2) | at hitch 1.7.2's limit, as null is: not ranked; what a client saw: 950 ms",
		"at hitch 1.7.2's limit in 3 of 3 passes: carried 358.6 of 500 rps",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q:\n%s", want, page)
		}
	}
	for _, l := range rep.Learned {
		if strings.HasPrefix(l, "Saturated, so not ranked") && strings.Contains(l, "p50") {
			t.Errorf("what we learned calls the terminator's limit the engines' saturation: %s", l)
		}
	}
	if got := axisLabel(capacity); got != "Capacity, segment-full (rps within p99 TTFB ≤ 100 ms)" {
		t.Errorf("chart axis %q", got)
	}
}
