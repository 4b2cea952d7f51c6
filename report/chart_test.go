package report

import (
	"bytes"
	"fmt"
	"image/png"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

func f64(v float64) *float64 { return &v }

// testCell is a cell whose passes have the values given; a pass whose value
// is negative is invalid (with the value's absolute), a NaN has no value.
func testCell(label string, value *float64, passes ...float64) Cell {
	c := Cell{Label: label, Value: value, Valid: value != nil}
	for i, v := range passes {
		p := PassPoint{Index: i + 1, Valid: true}
		switch {
		case v != v:
			p.Valid, p.NoValue = false, "no requests"
		case v < 0:
			p.Valid, p.Value = false, f64(-v)
		default:
			p.Value = f64(v)
		}
		c.Passes = append(c.Passes, p)
		c.MeasuredPasses++
		if p.Valid {
			c.ValidPasses++
		}
	}
	return c
}

// testTest is a test of n cells (n ≥ 3): values over four orders of
// magnitude, an invalid pass, a pass with no value and, as the third cell,
// one with no value.
func testTest(n int) Test {
	all := []Cell{
		testCell("varnish 7.1.1 (plaintext)", f64(0.0652), 0.0649, 0.0652, 0.0660, 0.0648, 0.0701),
		testCell("nginx 1.27.0 (plaintext)", f64(53.9), 52.1, 53.9, -310, 55.0, 53.0),
		testCell("squid 6.10 (tls)", nil, -0.4, -0.6),
		testCell("hlsbench-cache (plaintext)", f64(1.05), 1.01, 1.05, 1.2, 1.02, 1.09),
		testCell("varnish 7.1.1 behind hitch 1.8.0 (tls, docker runtime)", f64(2.31), 2.2, 2.31, 2.4, 2.25, 2.5),
		testCell("nginx 1.27.0 (tls)", f64(530), 520, 530, 541, 0.0/zero, 528),
		testCell("haproxy 3.0 (plaintext)", f64(12.4), 12.1, 12.4, 12.9),
		testCell("hlsbench-cache (tls)", f64(1.8), 1.7, 1.8, 1.9, 1.75, 1.85),
	}
	all[2].NoValue = "no valid pass: pass 1: 12% of requests failed (connection refused by the engine, " +
		"limit 1%); pass 2: 9% of requests failed"
	for len(all) < n {
		all = append(all, testCell(fmt.Sprintf("extra %d (plaintext)", len(all)), f64(float64(len(all))), float64(len(all))))
	}
	return Test{
		ID: "hit-path/p99-ttfb", Slug: "hit-path-p99-ttfb", Workload: "hit-path", Name: "p99-ttfb",
		Title: "p99 TTFB", Unit: "ms", LowerIsBetter: true,
		Cells: all[:n],
	}
}

var zero float64

func svgOf(t *testing.T, tt Test) string {
	t.Helper()
	var b bytes.Buffer
	if err := ChartSVG(&b, tt); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func pngOf(t *testing.T, tt Test) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := ChartPNG(&b, tt); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// barFill is how the SVG writes a bar's fill.
var barFill = fmt.Sprintf("fill:#%02X%02X%02X", barColor.R, barColor.G, barColor.B)

func TestChartSVGContent(t *testing.T) {
	tt := testTest(8)
	s := svgOf(t, tt)
	want := []string{"p99 TTFB (ms, lower is better)", "p99 TTFB (ms)",
		"0.0652 ms", "53.9 ms", "1.05 ms", "2.31 ms", "530 ms", "12.4 ms", "1.80 ms",
		"no value: no valid pass: pass 1: 12% of requests failed",
		"valid pass", "invalid pass (not in the value)", "value (from the valid passes)",
		"sans-serif",
	}
	for _, c := range tt.Cells {
		// A long label is split over two lines, each its own <text>.
		want = append(want, strings.Split(wrapLabel(c.Label, labelWrap), "\n")...)
	}
	for _, w := range want {
		if !strings.Contains(s, htmlEscape(w)) {
			t.Errorf("svg lacks %q", w)
		}
	}
	// One bar per cell with a value, and the legend's.
	if got, want := strings.Count(s, barFill), 7+1; got != want {
		t.Errorf("%d bar fills, want %d", got, want)
	}
	if strings.Contains(s, "@font-face") || strings.Contains(s, "url(") {
		t.Error("svg embeds or fetches a font")
	}
	if len(s) > 100_000 {
		t.Errorf("svg is %d bytes", len(s))
	}
}

func htmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "'", "&#39;", `"`, "&#34;").Replace(s)
}

func TestChartNoValueNoBar(t *testing.T) {
	tt := testTest(3)
	v := tt.Cells[0].Value
	s := svgOf(t, tt)
	if got := strings.Count(s, barFill); got != 2+1 {
		t.Errorf("%d bar fills with a no-value cell, want 3", got)
	}
	// The same cell with a value gets its bar.
	tt.Cells[2].Value, tt.Cells[2].NoValue = v, ""
	s = svgOf(t, tt)
	if got := strings.Count(s, barFill); got != 3+1 {
		t.Errorf("%d bar fills, want 4", got)
	}
	if strings.Contains(s, "no value") {
		t.Error("a valued cell shows a reason")
	}
}

func TestChartInvalidMarker(t *testing.T) {
	red := fmt.Sprintf("stroke:#%02X%02X%02X", invalidColor.R, invalidColor.G, invalidColor.B)
	tt := testTest(3)
	s := svgOf(t, tt)
	// nginx's pass 3 and squid's two, and the legend's.
	if got := strings.Count(s, red); got != 4 {
		t.Errorf("%d invalid markers, want 4", got)
	}
	// Without invalid passes, neither marker nor legend entry.
	tt.Cells = tt.Cells[:1]
	s = svgOf(t, tt)
	if strings.Contains(s, red) || strings.Contains(s, "invalid pass") {
		t.Error("an invalid marker with no invalid pass")
	}
}

func TestChartAllNoValue(t *testing.T) {
	tt := testTest(3)
	for i := range tt.Cells {
		tt.Cells[i].Value, tt.Cells[i].Passes = nil, nil
		tt.Cells[i].NoValue = fmt.Sprintf("reason %d", i)
	}
	s := svgOf(t, tt)
	for i := range tt.Cells {
		if !strings.Contains(s, fmt.Sprintf("no value: reason %d", i)) {
			t.Errorf("reason %d missing", i)
		}
	}
	if strings.Contains(s, barFill) {
		t.Error("a bar with no value")
	}
	pngOf(t, tt)
}

func TestChartErrors(t *testing.T) {
	var b bytes.Buffer
	if err := ChartSVG(&b, Test{ID: "w/t"}); err == nil {
		t.Error("no error for a test without cells")
	}
	tt := testTest(3)
	tt.Cells[0].Value = f64(0 / zero)
	if err := ChartPNG(&b, tt); err == nil {
		t.Error("no error for a NaN value")
	}
}

func TestChartPNGSize(t *testing.T) {
	var heights []int
	for _, n := range []int{3, 8, 20} {
		img, err := png.Decode(bytes.NewReader(pngOf(t, testTest(n))))
		if err != nil {
			t.Fatalf("%d cells: %v", n, err)
		}
		w, h := img.Bounds().Dx(), img.Bounds().Dy()
		if w < 750 || w > 900 {
			t.Errorf("%d cells: %d px wide", n, w)
		}
		if min := int(0.4 * float64(n) * ChartDPI); h < min {
			t.Errorf("%d cells: %d px high, want at least %d", n, h, min)
		}
		heights = append(heights, h)
	}
	if !(heights[0] < heights[1] && heights[1] < heights[2]) {
		t.Errorf("heights %v do not grow with cells", heights)
	}
}

func TestChartDeterministic(t *testing.T) {
	tt := testTest(8)
	if a, b := svgOf(t, tt), svgOf(t, tt); a != b {
		t.Error("two SVGs of one test differ")
	}
	if a, b := pngOf(t, tt), pngOf(t, tt); !bytes.Equal(a, b) {
		t.Error("two PNGs of one test differ")
	}
}

// TestChartValueTextFits checks that each value's text ends inside the data
// area, the smallest bar's too.
func TestChartValueTextFits(t *testing.T) {
	tt := testTest(8)
	f, err := newFigure(tt)
	if err != nil {
		t.Fatal(err)
	}
	c := vgsvg.New(f.w, f.h)
	dc := f.p.DataCanvas(f.plotArea(draw.New(c)))
	x, _ := f.p.Transforms(&dc)
	for _, cell := range tt.Cells {
		if cell.Value == nil {
			continue
		}
		text, edge, off := f.rows.place(cell, x)
		end := text + f.style.Width(formatValue(*cell.Value, tt.Unit))
		if right := x(edge) + off; right < end || right > dc.Max.X+vg.Points(0.5) {
			t.Errorf("%s: value text ends at %v, row at %v, data area at %v", cell.Label, end, right, dc.Max.X)
		}
		if *cell.Value == 53.9 && text > x(100) {
			t.Errorf("%s: value text at %v, pushed away by an outlier", cell.Label, text)
		}
	}
}

func TestWrapLabel(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"varnish 7.1.1 (plaintext)", "varnish 7.1.1 (plaintext)"},
		{"varnish 7.1.1 behind hitch 1.8.0 (tls, docker runtime)", "varnish 7.1.1 behind hitch 1.8.0\n(tls, docker runtime)"},
		{strings.Repeat("x", 40), strings.Repeat("x", 40)},
	} {
		if got := wrapLabel(c.in, labelWrap); got != c.want {
			t.Errorf("wrapLabel(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestReasonText(t *testing.T) {
	long := strings.Repeat("abcde ", 20)
	got := reasonText(long)
	if !strings.HasPrefix(got, "no value: abcde") || !strings.HasSuffix(got, "…") {
		t.Errorf("reasonText(long) = %q", got)
	}
	if n := len([]rune(got)); n > len("no value: ")+reasonRunes+1 {
		t.Errorf("reasonText(long) is %d runes", n)
	}
	if got := reasonText(""); got != "no value" {
		t.Errorf("reasonText(\"\") = %q", got)
	}
}

// TestChartBounds: a lower bound is drawn open-ended — its bar, a fade past
// it and "≥" in its label — never as a plain bar of its value, and the
// instrument's ceiling is a line named with its value.
func TestChartBounds(t *testing.T) {
	nginx := testCell("NGINX (plaintext)", f64(99200), 99200, 67200, 128000)
	nginx.LowerBound = "at the instrument's limit"
	builtin := testCell("Built-in (plaintext)", f64(70400), 73600, 70400, 62400)
	null := testCell("null (plaintext, the instrument, not an engine)", f64(99200), 99200, 105600, 89600)
	null.InstrumentCeiling = true
	tt := Test{ID: "capacity/hit-path", Slug: "capacity-hit-path", Workload: "capacity", Name: "hit-path",
		Title: "Capacity, hit path", Unit: "rps", Ranked: true, Cells: []Cell{nginx, builtin}, Instrument: []Cell{null}}
	svg := svgOf(t, tt)
	fade := fmt.Sprintf("fill:#%02X%02X%02X", boundFade[0].R, boundFade[0].G, boundFade[0].B)
	ceiling := fmt.Sprintf("stroke:#%02X%02X%02X", ceilingColor.R, ceilingColor.G, ceilingColor.B)
	for _, want := range []string{"≥ 99200 rps (a lower bound)", "70400 rps", fade, ceiling,
		"instrument&#39;s ceiling (null): 99200 rps", "≥: a lower bound"} {
		if !strings.Contains(svg, want) {
			t.Errorf("svg lacks %q", want)
		}
	}
	if strings.Contains(svg, "≥ 70400") {
		t.Error("an exact figure drawn as a bound")
	}
	// One ceiling among cells of two topologies is named with its own.
	tls := builtin
	tls.Label, tls.Topology = "Built-in (TLS)", "tls"
	two := tt
	two.Cells = []Cell{nginx, builtin, tls}
	for i := range two.Cells[:2] {
		two.Cells[i].Topology = "plaintext"
	}
	two.Instrument[0].Topology = "plaintext"
	if svg := svgOf(t, two); !strings.Contains(svg, "instrument&#39;s ceiling (null, plaintext): 99200 rps") {
		t.Error("a ceiling among two topologies' cells does not name its own")
	}
	// Without a bound or a ceiling, neither is drawn.
	plain := tt
	plain.Cells, plain.Instrument = []Cell{builtin}, nil
	svg = svgOf(t, plain)
	if strings.Contains(svg, fade) || strings.Contains(svg, ceiling) || strings.Contains(svg, "≥") {
		t.Error("a chart with no bound or ceiling draws one")
	}
}

// A floor or ceiling of one topology is drawn across that topology's rows
// only: the PROXYv2 ceiling on the plaintext rows would read as theirs.
func TestFloorSpans(t *testing.T) {
	cells := []Cell{{Topology: "plaintext"}, {Topology: "tls"}, {Topology: "proxyv2"}, {Topology: "plaintext"}, {Topology: "proxyv2"}}
	// Row i is drawn at 4-i: proxyv2's rows are at 2 and 0.
	if got, want := floorSpans(cells, "proxyv2"), [][2]float64{{1.5, 2.5}, {-0.5, 0.5}}; !slices.Equal(got, want) {
		t.Errorf("proxyv2: spans %v, want %v", got, want)
	}
	same := []Cell{{Topology: "tls"}, {Topology: "tls"}}
	if got, want := floorSpans(same, "tls"), [][2]float64{{-0.5, 1.5}}; !slices.Equal(got, want) {
		t.Errorf("one topology: spans %v, want %v", got, want)
	}
	if got, want := floorSpans(same, ""), [][2]float64{{-0.5, 1.5}}; !slices.Equal(got, want) {
		t.Errorf("no topology: spans %v, want %v", got, want)
	}
}
