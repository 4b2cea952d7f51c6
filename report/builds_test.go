package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hlsbench/hlsbench/results"
)

// TestBuildsSaidOnce: a table whose rows two hlsbench builds measured says
// so once, under it, and the summary says the page is merged from two
// builds; no label carries a build: the built-in cache is "Built-in
// (plaintext, hlsbench's own reference cache)", its builds in the engines
// table. A page from one build says nothing of builds beyond that table.
func TestBuildsSaidOnce(t *testing.T) {
	host := results.Host{Hostname: "bench", CPUModel: "AMD EPYC", Cores: 2}
	run := func(id, build string, rs ...results.Result) *results.Run {
		r := &results.Run{ID: id, Status: results.StatusComplete, Host: host, Tool: results.Tool{Name: "hlsbench", Version: build}, Results: rs}
		for _, x := range rs {
			v := "9.0.2"
			if x.Engine == "builtin" {
				v = build
			}
			r.Engines = append(r.Engines, results.Engine{Name: x.Engine, Version: v, Runtime: "process", Topology: x.Topology})
		}
		return r
	}
	a := run("a", "c46ef99", capRes("builtin", "plaintext", "hit-path", 1000, [2]float64{1000, 1100}),
		capRes("builtin", "plaintext", "segment-full", 100, [2]float64{100, 110}))
	b := run("b", "da9c4a4", capRes("varnish", "plaintext", "hit-path", 900, [2]float64{900, 1000}))
	rep, err := Build(&Input{Sources: []Source{{Name: "run-a.json", Run: a}, {Name: "run-b.json", Run: b}}}, catalogOptions())
	if err != nil {
		t.Fatal(err)
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, rep); err != nil {
		t.Fatal(err)
	}
	page := md.String()
	for _, want := range []string{
		"| Built-in (plaintext, hlsbench's own reference cache) |",
		"Measured with hlsbench builds c46ef99 (Built-in (plaintext, hlsbench's own reference cache)) and da9c4a4 (Varnish 9.0.2 (plaintext)): this table is merged from parts measured with different builds.",
		"As an exception, this page is merged from 2 hlsbench builds (c46ef99 and da9c4a4): 1 table measured with more than one says which rows each measured.",
		"| Built-in | c46ef99 |",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q:\n%s", want, page)
		}
	}
	if n := strings.Count(page, "Measured with hlsbench builds"); n != 1 {
		t.Errorf("%d tables say their builds, want 1 (the segment's has one build)", n)
	}
	// The test conditions list each run's engines as it recorded them;
	// no row of a table is labelled with a build.
	for _, bad := range []string{"| Built-in c46ef99", "| Built-in da9c4a4", "Built-in c46ef99 (plaintext)"} {
		if strings.Contains(page, bad) {
			t.Errorf("a label carries the build: %q:\n%s", bad, page)
		}
	}
	var html bytes.Buffer
	if err := WriteHTML(&html, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(html.String(), `<p class="note">Measured with hlsbench builds c46ef99`) {
		t.Error("the HTML table does not say its builds")
	}

	// Two builds, each its own tables: the summary says no table mixes
	// them, and no table says its builds.
	c := run("c", "da9c4a4", capRes("varnish", "plaintext", "segment-range", 900, [2]float64{900, 1000}))
	apart, err := Build(&Input{Sources: []Source{{Name: "run-a.json", Run: a}, {Name: "run-c.json", Run: c}}}, catalogOptions())
	if err != nil {
		t.Fatal(err)
	}
	if want := "this page is merged from 2 hlsbench builds (c46ef99 and da9c4a4), one per part (the parts are in the test conditions): no table mixes them."; !strings.Contains(apart.Summary, want) {
		t.Errorf("summary %q lacks %q", apart.Summary, want)
	}

	one, err := Build(&Input{Sources: []Source{{Name: "run-a.json", Run: a}}}, catalogOptions())
	if err != nil {
		t.Fatal(err)
	}
	md.Reset()
	if err := WriteMarkdown(&md, one); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(md.String(), "builds") || !strings.Contains(md.String(), "| Built-in | c46ef99 |") {
		t.Errorf("a page of one build speaks of builds, or its engines table lacks the build:\n%s", md.String())
	}
}
