package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/hlsbench/hlsbench/results"
)

// TestPartsTable: the test conditions say how long each part of a page
// measured in parts took, on what host and with which build, from the
// merged manifest's parts and the runs each started; a list of runs
// without a manifest gives a row per run.
func TestPartsTable(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 6, 29, 34, 0, time.UTC)
	host := results.Host{Hostname: "vm", CPUModel: "AMD EPYC", Cores: 2}
	run := func(id, build string, start time.Time, took time.Duration, wl string, r results.Result) *results.Run {
		return &results.Run{ID: id, Status: results.StatusComplete, Host: host, StartedAt: start, FinishedAt: start.Add(took),
			Tool:      results.Tool{Name: "hlsbench", Version: build},
			Workloads: []results.Workload{{Name: wl, Title: wl}}, Results: []results.Result{r},
			Engines: []results.Engine{{Name: r.Engine, Version: "9.0.2", Runtime: "process", Topology: r.Topology}}}
	}
	a := run("a", "c46ef99", t0, 82*time.Minute, "capacity", capRes("varnish", "plaintext", "hit-path", 1000, [2]float64{1000, 1100}))
	seg := capRes("varnish", "plaintext", "segment-full", 100, [2]float64{100, 110})
	seg.Workload, seg.ID = "segment", "segment/full-p50-ttfb"
	b := run("b", "c7ce56a", t0.Add(24*time.Hour), 20*time.Minute, "segment", seg)
	m := &results.Manifest{Runs: []string{"run-a.json", "run-b.json"}, Cells: []results.SuiteCell{
		{Engine: "varnish", Workload: "capacity", Complete: true, File: "run-a.json"},
		{Engine: "varnish", Workload: "segment", Complete: true, File: "run-b.json"},
	}, Parts: []results.ManifestPart{
		{Name: "capacity", CreatedAt: t0, UpdatedAt: t0.Add(82*time.Minute + 46*time.Second), Workloads: []string{"capacity"}},
		{Name: "segment", CreatedAt: t0.Add(24 * time.Hour), UpdatedAt: t0.Add(24*time.Hour + 20*time.Minute + 18*time.Second), Workloads: []string{"segment"}},
	}}
	srcs := []Source{{Name: "run-a.json", Run: a}, {Name: "run-b.json", Run: b}}
	rep, err := Build(&Input{Sources: srcs, Manifest: m}, catalogOptions())
	if err != nil {
		t.Fatal(err)
	}
	var md, html bytes.Buffer
	if err := WriteMarkdown(&md, rep); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&html, rep); err != nil {
		t.Fatal(err)
	}
	page := md.String()
	conds := page[strings.Index(page, "## Test conditions"):]
	for _, want := range []string{
		"How the page was measured, part by part (1 h 43 min in all):",
		"| Part | Workloads | Duration | Host | Build |",
		"| capacity | capacity | 1 h 23 min | vm (AMD EPYC, 2 cores) | c46ef99 |",
		"| segment | segment | 20 min | vm (AMD EPYC, 2 cores) | c7ce56a |",
	} {
		if !strings.Contains(conds, want) {
			t.Errorf("test conditions lack %q:\n%s", want, conds)
		}
	}
	if !strings.Contains(html.String(), "<tr><td>capacity</td><td>capacity</td><td class=\"num\">1 h 23 min</td><td>vm (AMD EPYC, 2 cores)</td><td>c46ef99</td></tr>") {
		t.Error("the HTML's test conditions lack the capacity part's row")
	}

	// Without a manifest: a row per run.
	rep, err = Build(&Input{Sources: srcs}, catalogOptions())
	if err != nil {
		t.Fatal(err)
	}
	md.Reset()
	if err := WriteMarkdown(&md, rep); err != nil {
		t.Fatal(err)
	}
	if want := "| b | segment | 20 min | vm (AMD EPYC, 2 cores) | c7ce56a |"; !strings.Contains(md.String(), want) {
		t.Errorf("runs without a manifest: no row %q:\n%s", want, md.String())
	}
}
