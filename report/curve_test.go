package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hlsbench/hlsbench/results"
)

// withMissRatio reads the failing fixture and adds a live-audience
// miss-ratio test per engine at each size (MiB), valued as vals gives (a
// NaN: no valid pass), in the order given (not the sizes' order).
func withMissRatio(t *testing.T, sizes []int64, vals map[string][]float64) *Report {
	t.Helper()
	in, err := Read([]string{filepath.Join("testdata", "failing")})
	if err != nil {
		t.Fatal(err)
	}
	run := in.Sources[0].Run
	for _, engine := range []string{"builtin", "varnish", "nginx"} {
		var base *results.Result
		for i := range run.Results {
			if r := &run.Results[i]; r.Engine == engine && r.Test == "p50-ttfb" {
				base = r
			}
		}
		if base == nil {
			t.Fatalf("the fixture has no %s hit-path p50", engine)
		}
		for k, size := range sizes {
			r := *base
			r.Workload, r.Title, r.Unit, r.LowerIsBetter, r.Histogram = "live-audience", "Miss ratio, store "+sizeText(size<<20), "%", true, ""
			r.Test = "miss-ratio-" + strings.ToLower(strings.ReplaceAll(sizeText(size<<20), " ", ""))
			r.ID = r.Workload + "/" + r.Test
			v := vals[engine][k]
			r.Passes = []results.Pass{{Index: 1, Value: &v, Valid: true, Requests: 100}}
			if v != v {
				r.Passes[0] = results.Pass{Index: 1, NoValue: "no requests answered", Requests: 100, Errors: 100}
			}
			r.Recount()
			r.Value, r.NoValue = nil, "no valid pass"
			if v == v {
				r.Value, r.NoValue = &v, ""
			}
			run.Results = append(run.Results, r)
		}
	}
	rep, err := Build(in, catalogOptions())
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func curvesOf(rep *Report, wl string) []Curve {
	for _, w := range rep.Workloads {
		if w.Name == wl {
			return w.Curves
		}
	}
	return nil
}

// TestCurveFromSizedTests: three miss-ratio tests make one curve, its
// sizes ascending whatever order they ran in; a size without a value is a
// point without one, never 0, in the chart, the page and the Markdown.
func TestCurveFromSizedTests(t *testing.T) {
	nan := 0.0 / zero
	rep := withMissRatio(t, []int64{512, 128, 32}, map[string][]float64{
		"builtin": {9.9, 14.1, 14.9},
		"varnish": {9.91, 14.1, 15.1},
		"nginx":   {12.3, 15.7, nan},
	})
	cs := curvesOf(rep, "live-audience")
	if len(cs) != 1 {
		t.Fatalf("%d curves, want 1", len(cs))
	}
	c := cs[0]
	if c.Slug != "live-audience-miss-ratio-curve" || c.Title != "Miss ratio by store size" || c.What != "Miss ratio" ||
		c.SizeLabel != "store size" || c.Unit != "%" || !c.LowerIsBetter {
		t.Errorf("curve %q %q %q %q %q %v", c.Slug, c.Title, c.What, c.SizeLabel, c.Unit, c.LowerIsBetter)
	}
	if want := []int64{32 << 20, 128 << 20, 512 << 20}; len(c.Sizes) != 3 || c.Sizes[0] != want[0] || c.Sizes[1] != want[1] || c.Sizes[2] != want[2] {
		t.Errorf("sizes %v, want %v", c.Sizes, want)
	}
	if len(c.Lines) != 3 {
		t.Fatalf("%d lines, want one per engine", len(c.Lines))
	}
	for _, l := range c.Lines {
		if !strings.HasPrefix(l.Label, "nginx") {
			continue
		}
		if l.Points[0].Value != nil || l.Points[0].NoValue == "" {
			t.Errorf("nginx at 32 MiB: value %v, reason %q; want none, with its reason", l.Points[0].Value, l.Points[0].NoValue)
		}
		if l.Points[2].Value == nil || *l.Points[2].Value != 12.3 {
			t.Errorf("nginx at 512 MiB: %v, want 12.3", l.Points[2].Value)
		}
	}

	dir := filepath.Join(t.TempDir(), "site")
	if err := WriteDir(dir, rep); err != nil {
		t.Fatal(err)
	}
	for _, f := range Files(rep) {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("Files lists %s, not written: %v", f, err)
		}
	}
	svg, err := os.ReadFile(filepath.Join(dir, "charts", c.Slug+".svg"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Miss ratio by store size", "32 MiB", "512 MiB", "no value at 32 MiB"} {
		if !strings.Contains(string(svg), want) {
			t.Errorf("the curve's SVG lacks %q", want)
		}
	}
	page, _ := os.ReadFile(filepath.Join(dir, "index.html"))
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	for _, want := range []string{`<img src="charts/live-audience-miss-ratio-curve.png"`, "<th>32 MiB</th><th>128 MiB</th><th>512 MiB</th>",
		`<td class="none">no value: `} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	for _, want := range []string{"| Engine | 32 MiB | 128 MiB | 512 MiB |", "![Miss ratio by store size](charts/live-audience-miss-ratio-curve.png)"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("the Markdown lacks %q", want)
		}
	}
	if rows := grepLines(string(md), "| ", " | 15.7 % | 12.3 % |"); len(rows) != 1 || !strings.Contains(rows[0], "| no value: ") {
		t.Errorf("the Markdown's NGINX curve row %q, want no value at 32 MiB", rows)
	}
	if strings.Contains(string(md), "| 0 % |") {
		t.Error("the Markdown shows a 0 % where nothing was measured")
	}
}

// TestCurveNeedsTwoSizes: one sized test is not a curve, and tests of one
// stem in different units are not one.
func TestCurveNeedsTwoSizes(t *testing.T) {
	rep := withMissRatio(t, []int64{512}, map[string][]float64{"builtin": {9.9}, "varnish": {9.9}, "nginx": {12}})
	if cs := curvesOf(rep, "live-audience"); len(cs) != 0 {
		t.Errorf("one size made %d curves", len(cs))
	}
	w := Workload{Name: "w", Tests: []Test{
		{Name: "miss-ratio-32mib", Unit: "%", Cells: []Cell{{Label: "a"}}},
		{Name: "miss-ratio-64mib", Unit: "ms", Cells: []Cell{{Label: "a"}}},
	}}
	if cs := curves(w); len(cs) != 0 {
		t.Errorf("two units made %d curves", len(cs))
	}
	w.Tests[1].Name, w.Tests[1].Unit = "miss-ratio-32768kib", "%"
	if cs := curves(w); len(cs) != 0 {
		t.Errorf("one size written two ways made %d curves", len(cs))
	}
}

func TestSizeOf(t *testing.T) {
	for _, c := range []struct {
		name, stem string
		size       int64
		ok         bool
	}{
		{"miss-ratio-512mib", "miss-ratio", 512 << 20, true},
		{"miss-ratio-1gib", "miss-ratio", 1 << 30, true},
		{"x-64kib", "x", 64 << 10, true},
		{"p99-ttfb", "", 0, false},
		{"miss-ratio-0mib", "", 0, false},
		{"miss-ratio-mib", "", 0, false},
		{"miss-ratio-99999999999999999999mib", "", 0, false},
	} {
		stem, size, ok := sizeOf(c.name)
		if stem != c.stem || size != c.size || ok != c.ok {
			t.Errorf("sizeOf(%q) = %q, %d, %v; want %q, %d, %v", c.name, stem, size, ok, c.stem, c.size, c.ok)
		}
	}
}

// TestCurveChartDeterministic: the same curve draws the same bytes, and a
// malformed one is an error, not a picture.
func TestCurveChartDeterministic(t *testing.T) {
	c := Curve{Slug: "w-m-curve", Title: "Miss ratio by store size", What: "Miss ratio", SizeLabel: "store size", Unit: "%", LowerIsBetter: true,
		Sizes: []int64{32 << 20, 128 << 20},
		Lines: []CurveLine{{Label: "a", Points: []Cell{{Value: f64(15)}, {Value: f64(10)}}}}}
	var a, b bytes.Buffer
	if err := CurvePNG(&a, c); err != nil {
		t.Fatal(err)
	}
	if err := CurvePNG(&b, c); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) || a.Len() == 0 {
		t.Error("the same curve drew different PNGs")
	}
	bad := c
	bad.Lines = []CurveLine{{Label: "a", Points: []Cell{{Value: f64(1)}}}}
	if err := CurveSVG(&a, bad); err == nil {
		t.Error("a line with fewer points than sizes drew")
	}
	bad.Lines = []CurveLine{{Label: "a", Points: []Cell{{Value: f64(1)}, {Value: f64(0.0 / zero)}}}}
	if err := CurveSVG(&a, bad); err == nil {
		t.Error("a NaN point drew")
	}
}
