package report

import (
	"encoding/json"
	"path/filepath"
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
