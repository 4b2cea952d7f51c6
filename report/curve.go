package report

import (
	"cmp"
	"fmt"
	"image/color"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Curve is one figure over a workload's tests that differ only in a size
// their names end in: miss-ratio-512mib, -128mib and -32mib are one
// miss-ratio curve. The tests keep their own charts and
// tables; the curve puts their values on one axis, a line per cell.
type Curve struct {
	// Slug names the chart's files ("WORKLOAD-miss-ratio-curve").
	Slug, Title, Unit string
	LowerIsBetter     bool
	// What is the figure ("Miss ratio") and SizeLabel the size's name
	// ("store size"), both from the tests' titles.
	What, SizeLabel string
	// Sizes are the X values in bytes, ascending, and Tests the test at
	// each (its title and slug).
	Sizes []int64
	Tests []Test
	Lines []CurveLine
}

// CurveLine is one cell's values over the sizes.
type CurveLine struct {
	Label string
	// Points are in Sizes' order: a point without a value (Value nil)
	// says why and breaks the line.
	Points []Cell
}

// sizedName matches a test named after a size: "miss-ratio-128mib".
var sizedName = regexp.MustCompile(`^(.+)-([0-9]+)(kib|mib|gib)$`)

// sizeOf reads a test name's size: its stem and bytes.
func sizeOf(name string) (stem string, size int64, ok bool) {
	m := sizedName.FindStringSubmatch(name)
	if m == nil {
		return "", 0, false
	}
	n, err := strconv.ParseInt(m[2], 10, 64)
	if err != nil || n <= 0 || n > 1<<40 {
		return "", 0, false
	}
	return m[1], n << map[string]int{"kib": 10, "mib": 20, "gib": 30}[m[3]], true
}

// curves finds a workload's curves: a stem with tests at two sizes or more,
// in one unit. A curve's lines are the cells of its first test, in order.
func curves(w Workload) []Curve {
	var stems []string
	byStem := map[string][]Test{}
	for _, t := range w.Tests {
		stem, _, ok := sizeOf(t.Name)
		if !ok {
			continue
		}
		if byStem[stem] == nil {
			stems = append(stems, stem)
		}
		byStem[stem] = append(byStem[stem], t)
	}
	var out []Curve
	for _, stem := range stems {
		ts := byStem[stem]
		if len(ts) < 2 || slices.ContainsFunc(ts, func(t Test) bool { return t.Unit != ts[0].Unit || t.LowerIsBetter != ts[0].LowerIsBetter }) {
			continue
		}
		slices.SortStableFunc(ts, func(a, b Test) int {
			_, x, _ := sizeOf(a.Name)
			_, y, _ := sizeOf(b.Name)
			return cmp.Compare(x, y)
		})
		c := Curve{Slug: w.Name + "-" + stem + "-curve", Unit: ts[0].Unit, LowerIsBetter: ts[0].LowerIsBetter, Tests: ts}
		if slices.ContainsFunc(w.Tests, func(t Test) bool { return t.Slug == c.Slug }) {
			continue // a test has the name: its chart keeps it
		}
		for _, t := range ts {
			_, size, _ := sizeOf(t.Name)
			c.Sizes = append(c.Sizes, size)
		}
		if len(slices.Compact(slices.Clone(c.Sizes))) != len(c.Sizes) {
			continue // one size written two ways: not one curve
		}
		c.Title, c.What, c.SizeLabel = curveTitle(ts[0].Title, c.Sizes[0])
		for _, cell := range ts[0].Cells {
			l := CurveLine{Label: cell.Label}
			for _, t := range ts {
				p := Cell{Label: cell.Label, NoValue: "this cell has no result for the test"}
				for _, o := range t.Cells {
					if o.Label == cell.Label {
						p = o
					}
				}
				l.Points = append(l.Points, p)
			}
			c.Lines = append(c.Lines, l)
		}
		out = append(out, c)
	}
	return out
}

// curveTitle makes "Miss ratio, store 32 MiB" into "Miss ratio by store
// size", the figure ("Miss ratio") and the size's name ("store size"); a
// title that does not name its size as sizeText writes it is the figure,
// "by size".
func curveTitle(title string, size int64) (curve, what, sizeLabel string) {
	base := strings.TrimSpace(strings.Replace(title, sizeText(size), "", 1))
	base = strings.TrimRight(base, ",:;- ")
	if base == title || base == "" {
		return title + " by size", title, "size"
	}
	what, of, ok := strings.Cut(base, ", ")
	if !ok {
		return base + " by size", base, "size"
	}
	return what + " by " + of + " size", what, of + " size"
}

// sizeText is a size as the tests' titles write it: "512 MiB".
func sizeText(n int64) string {
	for _, u := range []struct {
		name  string
		shift uint
	}{{"GiB", 30}, {"MiB", 20}, {"KiB", 10}} {
		if n >= 1<<u.shift && n%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d %s", n>>u.shift, u.name)
		}
	}
	return fmt.Sprintf("%d B", n)
}

// The curve chart's geometry: the bar chart's width, a fixed plot height
// and a legend row per line.
const (
	curvePlot      = 3.2 * vg.Inch
	curveLegendRow = 0.24 * vg.Inch
)

// curveStyles are the lines' colours (Okabe and Ito's, which stay apart
// for colour-blind readers), glyphs and dashes, in cell order; past eight
// they repeat with another dash.
var curveStyles = []struct {
	color color.Color
	glyph draw.GlyphDrawer
}{
	{color.RGBA{0x00, 0x72, 0xb2, 0xff}, draw.CircleGlyph{}},
	{color.RGBA{0xd5, 0x5e, 0x00, 0xff}, draw.SquareGlyph{}},
	{color.RGBA{0x00, 0x9e, 0x73, 0xff}, draw.TriangleGlyph{}},
	{color.RGBA{0xcc, 0x79, 0xa7, 0xff}, draw.RingGlyph{}},
	{color.RGBA{0xe6, 0x9f, 0x00, 0xff}, draw.BoxGlyph{}},
	{color.RGBA{0x56, 0xb4, 0xe9, 0xff}, draw.PyramidGlyph{}},
	{color.RGBA{0x00, 0x00, 0x00, 0xff}, draw.CrossGlyph{}},
	{color.RGBA{0x99, 0x99, 0x99, 0xff}, draw.PlusGlyph{}},
}

func curveStyle(i int) (draw.LineStyle, draw.GlyphStyle) {
	s := curveStyles[i%len(curveStyles)]
	ls := draw.LineStyle{Color: s.color, Width: vg.Points(1.5)}
	if i >= len(curveStyles) {
		ls.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
	}
	return ls, draw.GlyphStyle{Color: s.color, Radius: vg.Points(3.5), Shape: s.glyph}
}

// CurveSVG and CurvePNG write a curve's chart. The same Curve gives the
// same bytes.
func CurveSVG(w io.Writer, c Curve) error {
	f, err := newCurveFigure(c)
	if err != nil {
		return err
	}
	return writeSVG(w, c.Slug, f.w, f.h, f.draw)
}

// CurvePNG writes the chart as a PNG at ChartDPI.
func CurvePNG(w io.Writer, c Curve) error {
	f, err := newCurveFigure(c)
	if err != nil {
		return err
	}
	return writePNG(w, c.Slug, f.w, f.h, f.draw)
}

type curveFigure struct {
	p     *plot.Plot
	c     Curve
	style text.Style
	w, h  vg.Length
}

func newCurveFigure(c Curve) (*curveFigure, error) {
	if len(c.Sizes) < 2 || len(c.Lines) == 0 {
		return nil, fmt.Errorf("chart %s: a curve needs two sizes and a line", c.Slug)
	}
	hi := 0.0
	for _, l := range c.Lines {
		if len(l.Points) != len(c.Sizes) {
			return nil, fmt.Errorf("chart %s: line %q has %d points for %d sizes", c.Slug, l.Label, len(l.Points), len(c.Sizes))
		}
		for _, p := range l.Points {
			if p.Value == nil {
				continue
			}
			if !finite(*p.Value) {
				return nil, fmt.Errorf("chart %s: line %q: value %v is not a number to draw", c.Slug, l.Label, *p.Value)
			}
			hi = math.Max(hi, *p.Value)
		}
	}
	f := &curveFigure{p: plot.New(), c: c, w: chartWidth,
		h: curvePlot + 2*chartMargin + vg.Length(len(c.Lines))*curveLegendRow}
	p := f.p
	f.style = text.Style{Color: color.Black, Font: sans(10, false), XAlign: draw.XLeft, YAlign: draw.YCenter, Handler: p.TextHandler}
	better := "higher is better"
	if c.LowerIsBetter {
		better = "lower is better"
	}
	if c.Unit != "" {
		better = c.Unit + ", " + better
	}
	p.Title.Text = fmt.Sprintf("%s (%s)", c.Title, better)
	p.Title.TextStyle.Font = sans(12, true)
	p.Title.Padding = vg.Points(8)
	p.X.Label.Text = c.SizeLabel + " (log scale)"
	p.Y.Label.Text = c.What
	if c.Unit != "" {
		p.Y.Label.Text += " (" + c.Unit + ")"
	}
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = sans(11, false)
		a.Tick.Label.Font = sans(10, false)
	}
	mib := func(n int64) float64 { return float64(n) / (1 << 20) }
	p.X.Scale = plot.LogScale{}
	var ticks []plot.Tick
	for _, s := range c.Sizes {
		ticks = append(ticks, plot.Tick{Value: mib(s), Label: sizeText(s)})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	// A little room either side on the log axis, so end points and their
	// glyphs are not on the frame.
	lo, top := mib(c.Sizes[0]), mib(c.Sizes[len(c.Sizes)-1])
	pad := math.Pow(top/lo, 0.06)
	p.X.Min, p.X.Max = lo/pad, top*pad
	p.Y.Min, p.Y.Max = 0, hi*1.15
	if hi == 0 {
		p.Y.Max = 1
	}
	grid := plotter.NewGrid()
	grid.Vertical.Color = gridColor
	grid.Horizontal.Color = gridColor
	p.Add(grid)
	for i, l := range c.Lines {
		ls, gs := curveStyle(i)
		// A line joins neighbouring sizes that both have a value.
		var run plotter.XYs
		flush := func() {
			if len(run) > 1 {
				ln, err := plotter.NewLine(run)
				if err == nil {
					ln.LineStyle = ls
					p.Add(ln)
				}
			}
			run = nil
		}
		var pts plotter.XYs
		for k, pt := range l.Points {
			if pt.Value == nil {
				flush()
				continue
			}
			xy := plotter.XY{X: mib(c.Sizes[k]), Y: *pt.Value}
			run = append(run, xy)
			pts = append(pts, xy)
		}
		flush()
		if len(pts) > 0 {
			sc, err := plotter.NewScatter(pts)
			if err != nil {
				return nil, fmt.Errorf("chart %s: line %q: %w", c.Slug, l.Label, err)
			}
			sc.GlyphStyle = gs
			p.Add(sc)
		}
	}
	return f, nil
}

func (f *curveFigure) draw(c draw.Canvas) {
	c.SetColor(color.White)
	c.Fill(c.Rectangle.Path())
	legend := vg.Length(len(f.c.Lines)) * curveLegendRow
	f.p.Draw(draw.Crop(c, chartMargin, -chartMargin, chartMargin+legend, -chartMargin))

	// The legend, a line per cell under the plot: its line and glyph, its
	// label, and which sizes have no value.
	const thumbW = 22
	x0 := c.Min.X + chartMargin + vg.Points(8)
	for i, l := range f.c.Lines {
		y := c.Min.Y + chartMargin + legend - (vg.Length(i)+0.5)*curveLegendRow
		ls, gs := curveStyle(i)
		c.StrokeLine2(ls, x0, y, x0+vg.Points(thumbW), y)
		c.DrawGlyphNoClip(gs, vg.Point{X: x0 + vg.Points(thumbW/2), Y: y})
		label := l.Label
		var none []string
		for k, p := range l.Points {
			if p.Value == nil {
				none = append(none, sizeText(f.c.Sizes[k]))
			}
		}
		if len(none) > 0 {
			label += " — no value at " + strings.Join(none, ", ")
		}
		tx := x0 + vg.Points(thumbW) + textPad
		c.FillText(f.style, vg.Point{X: tx, Y: y}, fit(f.style, label, c.Max.X-chartMargin-tx))
	}
}
