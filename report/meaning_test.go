package report

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hlsbench/hlsbench/results"
)

// staleRun is a live-audience staleness result whose passes started every
// 160 s, the measured ones with the given worst staleness each.
func staleRun(engine string, p99 float64, worst ...float64) results.Result {
	t0 := time.Date(2026, 12, 4, 18, 43, 0, 0, time.UTC)
	r := results.Result{ID: "live-audience/live-edge-staleness", Workload: "live-audience", Test: "live-edge-staleness",
		Title: "Live-edge staleness, p99", Engine: engine, Runtime: "process", Topology: "plaintext", Unit: "s", LowerIsBetter: true,
		Value: &p99, Valid: true}
	r.Passes = append(r.Passes, results.Pass{Index: 1, Warmup: true, Valid: true, StartedAt: t0})
	for i, w := range worst {
		e := &results.Evidence{}
		e.SetPart("audience", json.RawMessage(`{"staleness_max_s":`+results.Sig3(w)+`}`))
		r.Passes = append(r.Passes, results.Pass{Index: i + 1, Valid: true, Value: &p99, StartedAt: t0.Add(time.Duration(i+1) * 160 * time.Second), Evidence: e})
	}
	return r
}

// TestStaleMeaning: the page explains an engine's worst live playlist when
// it is far outside the p99 and about as old as the idle time between the
// cell's passes — NGINX's 122 s stale copies in live-audience, which the
// page showed as a p99 of 1.17 s with nothing to say why (issue 45, item 8).
func TestStaleMeaning(t *testing.T) {
	r := staleRun("nginx", 1.17, 122.4, 123.4, 121.2)
	got := staleMeaning("NGINX 1.22.1 (plaintext)", "nginx", &r)
	for _, want := range []string{"up to 123 s stale", "105× its p99", "started every 160 s", "proxy_cache_use_stale updating", "the age, set by the idle time, is the workload's"} {
		if !strings.Contains(got, want) {
			t.Errorf("meaning %q\nlacks %q", got, want)
		}
	}
	// Varnish's worst answers are the tail its p99 already describes.
	v := staleRun("varnish", 0.96, 1.27, 1.92, 1.38)
	if got := staleMeaning("Varnish 9.0.2 (plaintext)", "varnish", &v); got != "" {
		t.Errorf("varnish's worst, within 10× its p99: meaning %q, want none", got)
	}
	// A worst copy far outside the p99 but much younger than the time
	// between passes is not the idle gap: nothing here explains it.
	y := staleRun("nginx", 1.17, 20, 21, 22)
	if got := staleMeaning("NGINX 1.22.1 (plaintext)", "nginx", &y); got != "" {
		t.Errorf("worst 22 s against passes 160 s apart: meaning %q, want none", got)
	}
	// Another engine's copies that old are explained by the gap, without
	// NGINX's cause.
	b := staleRun("builtin", 1.0, 100)
	if got := staleMeaning("Built-in (plaintext)", "builtin", &b); got == "" || strings.Contains(got, "NGINX") {
		t.Errorf("builtin's 100 s copy: meaning %q, want the gap without NGINX's cause", got)
	}
}

// TestStaleMeaningOnPage: the sentence is under the staleness table in
// both formats.
func TestStaleMeaningOnPage(t *testing.T) {
	in, err := Read([]string{filepath.Join("testdata", "suite")})
	if err != nil {
		t.Fatal(err)
	}
	run := in.Sources[0].Run
	run.Results = append(run.Results, staleRun("nginx", 1.17, 122.4, 123.4, 121.2))
	in.Manifest.Cells = append(in.Manifest.Cells, results.SuiteCell{Engine: "nginx", Workload: "live-audience", Complete: true, File: in.Sources[0].Name})
	rep, err := Build(in, catalogOptions())
	if err != nil {
		t.Fatal(err)
	}
	tt := testOf(t, rep, "live-audience/live-edge-staleness")
	if !strings.Contains(tt.Meaning, "proxy_cache_use_stale") {
		t.Fatalf("staleness test's meaning %q, want NGINX's cause", tt.Meaning)
	}
	var mdb, htmlb strings.Builder
	if err := WriteMarkdown(&mdb, rep); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&htmlb, rep); err != nil {
		t.Fatal(err)
	}
	md, html := mdb.String(), htmlb.String()
	if !strings.Contains(md, "up to 123 s stale") || !strings.Contains(html, `<p class="meaning">`) {
		t.Errorf("the meaning is not on the page: markdown has it %v, HTML %v", strings.Contains(md, "up to 123 s stale"), strings.Contains(html, `<p class="meaning">`))
	}
}

// TestRunSpeedMeaning: a latency table whose TLS cells come from a run
// where the generator spent much less CPU a request — decrypting — than
// in the plaintext run says the host, not TLS, made TLS faster: the page's
// Range p50 of 0.016 ms over TLS against 0.088 ms in plaintext (issue 45,
// item 8), cells of runs 11 hours apart; one run of both measured them
// equal (0.141 and 0.139 ms).
func TestRunSpeedMeaning(t *testing.T) {
	lat := Test{Unit: "ms", LowerIsBetter: true}
	day := func(h int) time.Time { return time.Date(2026, 12, 4, h, 0, 0, 0, time.UTC) }
	plain := runCost{source: "run-b.json", topology: "plaintext", cpuPerRequest: []float64{0.23, 0.24, 0.22}, started: day(30)}
	tls := runCost{source: "run-a.json", topology: "tls", cpuPerRequest: []float64{0.125, 0.13, 0.12}, started: day(19)}
	proxy := runCost{source: "run-a.json", topology: "proxyv2", cpuPerRequest: []float64{0.125}, started: day(19).Add(time.Minute)}
	got := runSpeedMeaning(lat, []runCost{plain, tls, proxy})
	for _, want := range []string{"different runs (run-b.json, from 2026-12-05 06:00 UTC; run-a.json, from 2026-12-04 19:00 UTC)",
		"0.125 ms of CPU a request", "against 0.230 ms in plaintext (1.84× as much)", "lower figures in TLS and PROXYv2 than in plaintext here are the host's speed"} {
		if !strings.Contains(got, want) {
			t.Errorf("meaning %q\nlacks %q", got, want)
		}
	}
	// One run of both topologies: the topologies compare.
	same := tls
	same.source = plain.source
	if got := runSpeedMeaning(lat, []runCost{plain, same}); got != "" {
		t.Errorf("one run: meaning %q, want none", got)
	}
	// TLS costing the generator more is TLS's own cost, not a host that
	// changed: nothing is said.
	dear := tls
	dear.cpuPerRequest = []float64{0.5}
	if got := runSpeedMeaning(lat, []runCost{plain, dear}); got != "" {
		t.Errorf("TLS run dearer: meaning %q, want none", got)
	}
	// Within the passes' spread: nothing is said.
	near := tls
	near.cpuPerRequest = []float64{0.2}
	if got := runSpeedMeaning(lat, []runCost{plain, near}); got != "" {
		t.Errorf("1.15× apart: meaning %q, want none", got)
	}
	// Not a latency: a count is not the host's speed.
	if got := runSpeedMeaning(Test{Unit: "rps"}, []runCost{plain, tls}); got != "" {
		t.Errorf("a rate: meaning %q, want none", got)
	}
}

// TestRunCostOf: the generator's CPU a request comes from the measured
// passes, in ms, and the first of them dates the run.
func TestRunCostOf(t *testing.T) {
	at := time.Date(2026, 12, 5, 6, 26, 0, 0, time.UTC)
	r := results.Result{Topology: "tls", Passes: []results.Pass{
		{Warmup: true, Requests: 2500, StartedAt: at.Add(-time.Minute), Evidence: &results.Evidence{Generator: &results.GeneratorFigures{CPUSeconds: 9}}},
		{Requests: 2500, StartedAt: at.Add(time.Minute), Evidence: &results.Evidence{Generator: &results.GeneratorFigures{CPUSeconds: 0.5}}},
		{Requests: 2500, StartedAt: at, Evidence: &results.Evidence{Generator: &results.GeneratorFigures{CPUSeconds: 0.25}}},
		{Requests: 2500, StartedAt: at},
	}}
	c := runCostOf("run.json", &r)
	if !slices.Equal(c.cpuPerRequest, []float64{0.2, 0.1}) || !c.started.Equal(at) || c.source != "run.json" || c.topology != "tls" {
		t.Errorf("runCostOf = %+v, want [0.2 0.1] ms from %v", c, at)
	}
}
