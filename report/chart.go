package report

import (
	"bytes"
	"fmt"
	"image/color"
	"io"
	"math"
	"sort"
	"strings"
	"unicode/utf8"

	xfont "golang.org/x/image/font"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/recorder"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// The chart's geometry. Bars are horizontal so that a cell's label, however
// long, sits on the Y axis in full; the chart grows by a row per cell and
// keeps one width, the width of the page's column.
const (
	chartWidth  = 7.5 * vg.Inch
	chartRow    = 0.45 * vg.Inch
	chartMargin = 0.12 * vg.Inch
	// chartFixed is the height of everything but the rows: title, X axis,
	// legend and margins.
	chartFixed  = 1.3 * vg.Inch
	legendStrip = 0.3 * vg.Inch
	// ChartDPI makes a PNG 825 pixels wide, a page column's size.
	ChartDPI = 110

	// barHalf is half a bar's thickness and jitter half the band the passes
	// are spread over, in rows.
	barHalf = 0.3
	jitter  = 0.18
	// textPad is the gap between a bar (or its passes) and its text.
	textPad = vg.Length(5) // points
	// labelWrap is the length past which a cell's label is split over two
	// lines, so that one long label does not squeeze the bars.
	labelWrap = 32
	// reasonRunes is how much of a cell's NoValue its row shows.
	reasonRunes = 60
)

var (
	barColor     = color.RGBA{R: 0xa9, G: 0xc4, B: 0xe0, A: 0xff}
	passColor    = color.RGBA{R: 0x1f, G: 0x2a, B: 0x44, A: 0xff}
	invalidColor = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	reasonColor  = color.RGBA{R: 0x55, G: 0x55, B: 0x55, A: 0xff}
	gridColor    = color.RGBA{R: 0xdd, G: 0xdd, B: 0xdd, A: 0xff}
	// A saturated cell's bar is hatched in these: not the value's blue,
	// so it cannot be read as a latency beside the others.
	// boundFade is the bar's colour past a lower bound, fading out: the
	// figure is at least the bar, and how much more is not known.
	boundFade      = []color.RGBA{{R: 0xc4, G: 0xd6, B: 0xea, A: 0xff}, {R: 0xd8, G: 0xe4, B: 0xf1, A: 0xff}, {R: 0xeb, G: 0xf1, B: 0xf8, A: 0xff}}
	boundArrow     = color.RGBA{R: 0x3b, G: 0x5f, B: 0x8a, A: 0xff}
	ceilingColor   = color.RGBA{R: 0x7b, G: 0x2d, B: 0x8e, A: 0xff}
	saturatedFill  = color.RGBA{R: 0xfd, G: 0xf0, B: 0xdc, A: 0xff}
	saturatedColor = color.RGBA{R: 0xb3, G: 0x59, B: 0x00, A: 0xff}

	passGlyph    = draw.GlyphStyle{Color: passColor, Radius: vg.Points(2.5), Shape: draw.CircleGlyph{}}
	invalidGlyph = draw.GlyphStyle{Color: invalidColor, Radius: vg.Points(4), Shape: crossGlyph{}}
)

// ChartSVG and ChartPNG write one test's chart. The same Test gives the same
// bytes.
func ChartSVG(w io.Writer, t Test) error {
	f, err := newFigure(t)
	if err != nil {
		return err
	}
	return writeSVG(w, t.ID, f.w, f.h, f.draw)
}

// ChartPNG writes the chart as a PNG at ChartDPI.
func ChartPNG(w io.Writer, t Test) error {
	f, err := newFigure(t)
	if err != nil {
		return err
	}
	return writePNG(w, t.ID, f.w, f.h, f.draw)
}

// writeSVG and writePNG render a drawing of width × height; name is the
// chart's, for errors.
func writeSVG(w io.Writer, name string, width, height vg.Length, paint func(draw.Canvas)) error {
	c := vgsvg.New(width, height)
	paint(draw.New(c))
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return fmt.Errorf("chart %s: write svg: %w", name, err)
	}
	if _, err := w.Write(fontFallback(b.Bytes())); err != nil {
		return fmt.Errorf("chart %s: write svg: %w", name, err)
	}
	return nil
}

func writePNG(w io.Writer, name string, width, height vg.Length, paint func(draw.Canvas)) error {
	c := vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(ChartDPI))
	paint(draw.New(c))
	if _, err := (vgimg.PngCanvas{Canvas: c}).WriteTo(w); err != nil {
		return fmt.Errorf("chart %s: write png: %w", name, err)
	}
	return nil
}

// fontFallback names fonts a browser has after the Liberation fonts the chart
// was measured with: the SVG does not embed fonts (it would triple its size)
// and the page is read offline, so nothing may be fetched. Arial and
// Helvetica have Liberation Sans's metrics.
func fontFallback(svg []byte) []byte {
	return bytes.ReplaceAll(svg,
		[]byte("font-family:Liberation Sans;"),
		[]byte("font-family:Liberation Sans,Arial,Helvetica,sans-serif;"))
}

// figure is a test's plot and the legend drawn below it (gonum draws a
// legend inside the data area, where it would cover bars).
type figure struct {
	p    *plot.Plot
	rows *rows
	// legend is in lines, each as wide as the chart allows; legendH is
	// their height.
	legend  [][]legendEntry
	legendH vg.Length
	style   text.Style
	w, h    vg.Length
	// floors are the instrument's lines across the rows.
	floors []Floor
}

type legendEntry struct {
	label string
	thumb func(c *draw.Canvas, r vg.Rectangle)
}

func newFigure(t Test) (*figure, error) {
	// The instrument's cells are drawn as the host's floor beside the
	// engines, or as the rows when it was measured alone.
	cells, floors := t.Cells, append(t.Floors(), t.Ceilings()...)
	if len(cells) == 0 {
		cells, floors = t.Instrument, nil
	}
	if len(cells) == 0 {
		return nil, fmt.Errorf("chart %s: no cells", t.ID)
	}
	for _, c := range cells {
		if c.Value != nil && !finite(*c.Value) {
			return nil, fmt.Errorf("chart %s: cell %q: value %v is not a number to draw", t.ID, c.Label, *c.Value)
		}
	}
	n := len(cells)
	f := &figure{
		p:      plot.New(),
		w:      chartWidth,
		floors: floors,
	}
	p := f.p
	hdlr := p.TextHandler
	f.style = text.Style{Color: color.Black, Font: sans(10, false), XAlign: draw.XLeft, YAlign: draw.YCenter, Handler: hdlr}
	f.legend = f.legendLines(append(legendFor(cells), floorLegend(floors, t.Unit)...))
	f.legendH = legendStrip * vg.Length(max(len(f.legend), 1))
	f.h = chartFixed + vg.Length(n)*chartRow + f.legendH - legendStrip

	p.Title.Text = chartTitle(t)
	p.Title.TextStyle.Font = sans(12, true)
	p.Title.Padding = vg.Points(8)
	p.X.Label.Text = axisLabel(t)
	p.X.Label.TextStyle.Font = sans(11, false)
	p.X.Tick.Label.Font = sans(10, false)
	p.Y.Tick.Label.Font = sans(10, false)

	// Row 0 is at the bottom: the first cell goes on top, as the table
	// reads.
	labels := make([]string, n)
	for i, c := range cells {
		labels[n-1-i] = wrapLabel(c.Label, labelWrap)
	}
	p.NominalY(labels...)
	p.Y.Min, p.Y.Max = -0.5, float64(n)-0.5
	// NominalY hides the axis line and ticks; the line is the bars' zero
	// and the ticks keep the labels off it.
	p.Y.Width = vg.Points(0.5)
	p.Y.Tick.Width = vg.Points(0.5)
	p.Y.Tick.Length = vg.Points(4)
	p.Y.Padding = 0
	p.X.Padding = 0

	grid := plotter.NewGrid()
	grid.Horizontal.Color = nil
	grid.Vertical.Color = gridColor
	r := &rows{cells: cells, unit: t.Unit, value: f.style}
	r.reason = f.style
	r.reason.Color = reasonColor
	r.reason.Font.Style = xfont.StyleItalic
	p.Add(grid, r)
	// The floors go over the bars, across the rows of their topology (a
	// PROXYv2 ceiling drawn across the plaintext rows would read as
	// theirs), and the X axis reaches them (scaleX).
	for i, fl := range floors {
		for _, span := range floorSpans(cells, fl.Topology) {
			line, err := plotter.NewLine(plotter.XYs{{X: fl.Value, Y: span[0]}, {X: fl.Value, Y: span[1]}})
			if err != nil {
				return nil, fmt.Errorf("chart %s: %s: %w", t.ID, fl.Label, err)
			}
			line.LineStyle = floorStyle(i, fl.Ceiling)
			p.Add(line)
		}
	}
	f.rows = r

	f.scaleX(r)
	return f, nil
}

// floorSpans are the Y ranges a line of topology top covers: each run of
// consecutive rows of that topology (row i of n is drawn at n-1-i), or
// every row when the line names no topology or no row is of it.
func floorSpans(cells []Cell, top string) [][2]float64 {
	n := len(cells)
	var spans [][2]float64
	for i := 0; i < n; {
		if top == "" || cells[i].Topology != top {
			i++
			continue
		}
		j := i
		for j < n && cells[j].Topology == top {
			j++
		}
		// Rows i..j-1 are at n-1-i down to n-j.
		spans = append(spans, [2]float64{float64(n-j) - 0.5, float64(n-1-i) + 0.5})
		i = j
	}
	if len(spans) == 0 {
		return [][2]float64{{-0.5, float64(n) - 0.5}}
	}
	return spans
}

// scaleX sets the X axis from 0 (or the lowest value) to where every row's
// value text still fits right of its bar and passes. The room a row needs
// depends on the scale (an invalid pass may push the text past it) and on
// the data area's width, which depends a little on the axis's tick labels,
// so it is worked out again until it settles.
func (f *figure) scaleX(r *rows) {
	lo, hi := 0.0, 0.0
	for _, c := range r.cells {
		for _, v := range plotted(c) {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	for _, fl := range f.floors {
		lo, hi = math.Min(lo, fl.Value), math.Max(hi, fl.Value)
	}
	f.p.X.Min, f.p.X.Max = lo, hi
	if hi <= lo {
		f.p.X.Max = lo + 1
		return
	}
	rec := draw.NewCanvas(new(recorder.Canvas), f.w, f.h)
	for range 8 {
		dc := f.p.DataCanvas(f.plotArea(rec))
		width := dc.Max.X - dc.Min.X
		xmax := f.p.X.Max
		x := func(v float64) vg.Length { return vg.Length((v-lo)/(xmax-lo)) * width }
		need := xmax
		for _, c := range r.cells {
			_, edge, off := r.place(c, x)
			off = min(off, width/2)
			need = math.Max(need, lo+(edge-lo)*float64(width/(width-off)))
		}
		if need == xmax {
			break
		}
		f.p.X.Max = need
	}
}

// plotArea is the part of the canvas the plot takes: all but the margins
// and the legend strip.
func (f *figure) plotArea(c draw.Canvas) draw.Canvas {
	return draw.Crop(c, chartMargin, -chartMargin, chartMargin+f.legendH, -chartMargin)
}

// The legend's geometry: an entry's thumb and the gap between entries.
const thumbW, legendGap = 14, 12

// legendLines breaks the legend into lines no wider than the chart, so
// that an entry is never cut off at its edge.
func (f *figure) legendLines(entries []legendEntry) [][]legendEntry {
	var lines [][]legendEntry
	var width vg.Length
	for _, e := range entries {
		w := vg.Points(thumbW) + textPad + f.style.Width(e.label)
		if len(lines) > 0 && width+vg.Points(legendGap)+w <= f.w-2*chartMargin {
			lines[len(lines)-1] = append(lines[len(lines)-1], e)
			width += vg.Points(legendGap) + w
			continue
		}
		lines = append(lines, []legendEntry{e})
		width = w
	}
	return lines
}

func (f *figure) draw(c draw.Canvas) {
	c.SetColor(color.White)
	c.Fill(c.Rectangle.Path())
	f.p.Draw(f.plotArea(c))

	// The legend's lines, each centred under the X axis.
	for i, line := range f.legend {
		var total vg.Length
		for j, e := range line {
			if j > 0 {
				total += vg.Points(legendGap)
			}
			total += vg.Points(thumbW) + textPad + f.style.Width(e.label)
		}
		x := c.Center().X - total/2
		y := c.Min.Y + chartMargin + f.legendH - (vg.Length(i)+0.5)*legendStrip
		for _, e := range line {
			r := vg.Rectangle{
				Min: vg.Point{X: x, Y: y - vg.Points(4)},
				Max: vg.Point{X: x + vg.Points(thumbW), Y: y + vg.Points(4)},
			}
			e.thumb(&c, r)
			x = r.Max.X + textPad
			c.FillText(f.style, vg.Point{X: x, Y: y}, e.label)
			x += f.style.Width(e.label) + vg.Points(legendGap)
		}
	}
}

// legendFor lists what the chart shows: a bar only when some cell has a
// value, the invalid-pass marker only when there is one.
func legendFor(cells []Cell) []legendEntry {
	var bars, valid, invalid, saturated, bounds bool
	for _, c := range cells {
		bars = bars || (c.Value != nil && !c.Unranked)
		bounds = bounds || (c.Value != nil && c.LowerBound != "")
		saturated = saturated || (c.Unranked && c.SaturatedValue != nil)
		for _, p := range c.Passes {
			if p.Value == nil || !finite(*p.Value) {
				continue
			}
			valid = valid || p.Valid
			invalid = invalid || !p.Valid
		}
	}
	var l []legendEntry
	if bars {
		l = append(l, legendEntry{"value (from the valid passes)", func(c *draw.Canvas, r vg.Rectangle) {
			c.FillPolygon(barColor, rectangle(r))
		}})
	}
	if bounds {
		l = append(l, legendEntry{"≥: a lower bound, at least the bar (more not measured)", func(c *draw.Canvas, r vg.Rectangle) {
			mid := (r.Min.X + r.Max.X) / 2
			c.FillPolygon(barColor, rectangle(vg.Rectangle{Min: r.Min, Max: vg.Point{X: mid, Y: r.Max.Y}}))
			openEnd(c, vg.Rectangle{Min: vg.Point{X: mid, Y: r.Min.Y}, Max: r.Max})
		}})
	}
	if valid {
		l = append(l, legendEntry{"valid pass", func(c *draw.Canvas, r vg.Rectangle) {
			c.DrawGlyphNoClip(passGlyph, center(r))
		}})
	}
	if invalid {
		l = append(l, legendEntry{"invalid pass (not in the value)", func(c *draw.Canvas, r vg.Rectangle) {
			c.DrawGlyphNoClip(invalidGlyph, center(r))
		}})
	}
	if saturated {
		l = append(l, legendEntry{saturatedLegend, hatched})
	}
	return l
}

// floorColor is the host floor's line: neither a value's blue nor the
// saturation's brown.
var floorColor = color.RGBA{R: 0x2c, G: 0x8a, B: 0x3e, A: 0xff}

// floorStyle is the i-th floor's line: dashed, each topology's dashes
// their own length; the instrument's ceiling in a colour of its own.
func floorStyle(i int, ceiling bool) draw.LineStyle {
	on := vg.Points(float64(5 + 3*i))
	c := floorColor
	if ceiling {
		c = ceilingColor
	}
	return draw.LineStyle{Color: c, Width: vg.Points(1.5), Dashes: []vg.Length{on, vg.Points(3)}}
}

// floorLegend names each floor line with its value.
func floorLegend(floors []Floor, unit string) []legendEntry {
	var l []legendEntry
	for i, fl := range floors {
		sty := floorStyle(i, fl.Ceiling)
		l = append(l, legendEntry{fl.Label + ": " + formatValue(fl.Value, unit), func(c *draw.Canvas, r vg.Rectangle) {
			c.SetLineStyle(sty)
			var p vg.Path
			p.Move(vg.Point{X: r.Min.X, Y: (r.Min.Y + r.Max.Y) / 2})
			p.Line(vg.Point{X: r.Max.X, Y: (r.Min.Y + r.Max.Y) / 2})
			c.Stroke(p)
		}})
	}
	return l
}

// saturatedLegend says what a hatched bar is.
const saturatedLegend = "saturated: what a client saw, queueing included (not a TTFB, not ranked)"

// hatched draws a saturated cell's bar: a pale fill, diagonal hatching and
// an outline, all in the saturation's colour.
func hatched(c *draw.Canvas, r vg.Rectangle) {
	c.FillPolygon(saturatedFill, rectangle(r))
	c.SetLineStyle(draw.LineStyle{Color: saturatedColor, Width: vg.Points(0.75)})
	// Lines x = y + k at 45°, each cut to the rectangle.
	const step = vg.Length(4)
	for k := r.Min.X - r.Max.Y; k < r.Max.X-r.Min.Y; k += step {
		y0, y1 := max(r.Min.Y, r.Min.X-k), min(r.Max.Y, r.Max.X-k)
		if y1 <= y0 {
			continue
		}
		var p vg.Path
		p.Move(vg.Point{X: y0 + k, Y: y0})
		p.Line(vg.Point{X: y1 + k, Y: y1})
		c.Stroke(p)
	}
	c.SetLineStyle(draw.LineStyle{Color: saturatedColor, Width: vg.Points(1.25)})
	var outline vg.Path
	outline.Move(r.Min)
	for _, pt := range rectangle(r)[1:] {
		outline.Line(pt)
	}
	outline.Close()
	c.Stroke(outline)
}

// boundTail is how far past a lower bound's bar its open end reaches:
// the figure is at least the bar, and the fade says more was not measured.
const boundTail = vg.Length(22) // points

// openEnd draws a lower bound's open end in r: the bar's colour fading out
// in steps, and an arrow pointing on.
func openEnd(c *draw.Canvas, r vg.Rectangle) {
	w := (r.Max.X - r.Min.X) / vg.Length(len(boundFade))
	for i, col := range boundFade {
		x0 := r.Min.X + vg.Length(i)*w
		c.FillPolygon(col, rectangle(vg.Rectangle{Min: vg.Point{X: x0, Y: r.Min.Y}, Max: vg.Point{X: x0 + w, Y: r.Max.Y}}))
	}
	midY, h := (r.Min.Y+r.Max.Y)/2, (r.Max.Y-r.Min.Y)/4
	c.SetLineStyle(draw.LineStyle{Color: boundArrow, Width: vg.Points(1.25)})
	var shaft vg.Path
	shaft.Move(vg.Point{X: r.Min.X, Y: midY})
	shaft.Line(vg.Point{X: r.Max.X - h, Y: midY})
	c.Stroke(shaft)
	c.FillPolygon(boundArrow, []vg.Point{{X: r.Max.X - 1.5*h, Y: midY - h}, {X: r.Max.X, Y: midY}, {X: r.Max.X - 1.5*h, Y: midY + h}})
}

// bounded says a row's bar is a lower bound: drawn open-ended.
func bounded(c Cell) bool { return c.Value != nil && c.LowerBound != "" && !c.Unranked }

// bar is the value a row's bar reaches and the text after it: the cell's
// value ("≥ N" for a lower bound), or, for a saturated latency, what a
// client saw; nil (and the text is the row's reason) for none.
func bar(c Cell, unit string) (*float64, string) {
	switch {
	case c.Unranked && c.SaturatedValue != nil && finite(*c.SaturatedValue):
		s := "saturated: " + formatValue(*c.SaturatedValue, unit) + " seen"
		if c.LimitedBy != "" {
			s = c.LimitedBy + "'s limit: " + formatValue(*c.SaturatedValue, unit) + " seen"
		}
		if c.OfferedRPS != nil && c.AchievedRPS != nil {
			s += ", carried " + rateText(*c.AchievedRPS) + " of " + rateText(*c.OfferedRPS) + " rps"
		}
		return c.SaturatedValue, s
	case c.Unranked:
		return nil, carriedText(c)
	case c.Value != nil:
		s := formatValue(*c.Value, unit)
		if c.LowerBound != "" {
			s = "≥ " + s + " (a lower bound)"
		}
		if sat := c.saturatedText(); sat != "" {
			s += " (" + sat + ")"
		}
		if c.SpoiledPasses > 0 {
			s += fmt.Sprintf(" (%d of %d passes spoiled by the host or the instrument)", c.SpoiledPasses, c.MeasuredPasses)
		}
		return c.Value, s
	}
	return nil, reasonText(c.NoValue)
}

// rows draws each cell's row: its bar, its passes as a strip, and its value,
// or, for a cell with no value, why.
type rows struct {
	cells         []Cell
	unit          string
	value, reason text.Style
}

func (r *rows) Plot(c draw.Canvas, p *plot.Plot) {
	x, y := p.Transforms(&c)
	n := len(r.cells)
	for i, cell := range r.cells {
		row := float64(n - 1 - i)
		center, spread := row, jitter
		valid, invalid := passValues(cell)
		v, label := bar(cell, r.unit)
		if v == nil && len(valid)+len(invalid) > 0 {
			// The reason takes the row's upper half, the passes its lower.
			center, spread = row-0.2, 0.1
		}

		if v != nil {
			box := vg.Rectangle{
				Min: vg.Point{X: x(0), Y: y(row - barHalf)},
				Max: vg.Point{X: x(*v), Y: y(row + barHalf)},
			}
			switch {
			case cell.Unranked:
				hatched(&c, box)
			case bounded(cell):
				c.FillPolygon(barColor, rectangle(box))
				openEnd(&c, vg.Rectangle{Min: vg.Point{X: box.Max.X, Y: box.Min.Y}, Max: vg.Point{X: box.Max.X + boundTail, Y: box.Max.Y}})
			default:
				c.FillPolygon(barColor, rectangle(box))
			}
		}

		// Spread the plotted passes over the band by their order, top to
		// bottom: no randomness, so the same runs draw the same chart.
		// Invalid passes are drawn last, on top.
		var dots []vg.Point
		var ok []bool
		for _, pp := range cell.Passes {
			if pp.Value != nil && finite(*pp.Value) {
				dots = append(dots, vg.Point{X: x(*pp.Value)})
				ok = append(ok, pp.Valid)
			}
		}
		for k := range dots {
			off := 0.0
			if m := len(dots); m > 1 {
				off = spread * (1 - 2*float64(k)/float64(m-1))
			}
			dots[k].Y = y(center + off)
		}
		for _, want := range []bool{true, false} {
			for k, d := range dots {
				if ok[k] != want {
					continue
				}
				if want {
					c.DrawGlyphNoClip(passGlyph, d)
				} else {
					c.DrawGlyphNoClip(invalidGlyph, d)
				}
			}
		}

		if v != nil {
			tx, _, _ := r.place(cell, x)
			sty := r.value
			if cell.Unranked {
				sty.Color = saturatedColor
			}
			c.FillText(sty, vg.Point{X: tx, Y: y(row)}, label)
			continue
		}
		ty := row
		if len(dots) > 0 {
			ty = row + 0.2
		}
		tx := x(0) + textPad
		sty := r.reason
		if cell.Unranked {
			sty.Color = saturatedColor
		}
		c.FillText(sty, vg.Point{X: tx, Y: y(ty)}, fit(sty, label, c.Max.X-tx))
	}
}

// place lays out a row on the scale x: its value text goes after its bar
// and valid passes, and past any invalid pass it would cover (not after
// every invalid pass: an outlier far off would take the value away from its
// bar). It returns where the text starts and where the row ends on the
// right, as a value and a length after it.
func (r *rows) place(cell Cell, x func(float64) vg.Length) (text vg.Length, edge float64, off vg.Length) {
	extend := func(v float64, o vg.Length) {
		if x(v)+o > x(edge)+off {
			edge, off = v, o
		}
	}
	valid, invalid := passValues(cell)
	bv, label := bar(cell, r.unit)
	if bv != nil {
		extend(*bv, 0)
		if bounded(cell) {
			extend(*bv, boundTail)
		}
	}
	for _, v := range valid {
		extend(v, passGlyph.Radius)
	}
	if bv != nil {
		tw := r.value.Width(label)
		tv, to := edge, off+textPad
		sort.Float64s(invalid)
		for _, v := range invalid {
			xi, start := x(v), x(tv)+to
			if xi+invalidGlyph.Radius+textPad/2 > start && xi-invalidGlyph.Radius-textPad/2 < start+tw {
				tv, to = v, invalidGlyph.Radius+textPad
			}
		}
		text = x(tv) + to
		extend(tv, to+tw)
	}
	for _, v := range invalid {
		extend(v, invalidGlyph.Radius)
	}
	return text, edge, off
}

// passValues are the values of a cell's valid and invalid passes that have
// one.
func passValues(c Cell) (valid, invalid []float64) {
	for _, p := range c.Passes {
		switch {
		case p.Value == nil || !finite(*p.Value):
		case p.Valid:
			valid = append(valid, *p.Value)
		default:
			invalid = append(invalid, *p.Value)
		}
	}
	return valid, invalid
}

// plotted are the values of a cell the chart draws: its value and its
// passes' values.
func plotted(c Cell) []float64 {
	var v []float64
	if b, _ := bar(c, ""); b != nil {
		v = append(v, *b)
	}
	for _, p := range c.Passes {
		if p.Value != nil && finite(*p.Value) {
			v = append(v, *p.Value)
		}
	}
	return v
}

func center(r vg.Rectangle) vg.Point {
	return vg.Point{X: (r.Min.X + r.Max.X) / 2, Y: (r.Min.Y + r.Max.Y) / 2}
}

func rectangle(r vg.Rectangle) []vg.Point {
	return []vg.Point{r.Min, {X: r.Max.X, Y: r.Min.Y}, r.Max, {X: r.Min.X, Y: r.Max.Y}}
}

// crossGlyph is gonum's cross drawn thick enough to see at a page's size.
type crossGlyph struct{}

func (crossGlyph) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	c.SetLineStyle(draw.LineStyle{Color: sty.Color, Width: vg.Points(1.5)})
	r := sty.Radius * 0.7071
	var p vg.Path
	p.Move(vg.Point{X: pt.X - r, Y: pt.Y - r})
	p.Line(vg.Point{X: pt.X + r, Y: pt.Y + r})
	p.Move(vg.Point{X: pt.X - r, Y: pt.Y + r})
	p.Line(vg.Point{X: pt.X + r, Y: pt.Y - r})
	c.Stroke(p)
}

func sans(size vg.Length, bold bool) font.Font {
	f := font.Font{Typeface: "Liberation", Variant: "Sans", Size: size}
	if bold {
		f.Weight = xfont.WeightBold
	}
	return f
}

// chartTitle is "p99 TTFB (ms, lower is better)".
func chartTitle(t Test) string {
	better := "higher is better"
	if t.LowerIsBetter {
		better = "lower is better"
	}
	if t.Unit != "" {
		better = t.Unit + ", " + better
	}
	return fmt.Sprintf("%s (%s)", testTitle(t), better)
}

// axisLabel is "p99 TTFB (ms)".
func axisLabel(t Test) string {
	if t.Unit == "" {
		return testTitle(t)
	}
	if slo := t.SLO(); slo != "" {
		// A capacity means nothing without its service level.
		return fmt.Sprintf("%s (%s within %s)", testTitle(t), t.Unit, slo)
	}
	return fmt.Sprintf("%s (%s)", testTitle(t), t.Unit)
}

func testTitle(t Test) string {
	for _, s := range []string{t.Title, t.Name, t.ID} {
		if s != "" {
			return s
		}
	}
	return "test"
}

// reasonText is what a row without a value shows: "no value: " and the
// start of the reason.
func reasonText(noValue string) string {
	s := strings.Join(strings.Fields(noValue), " ")
	if s == "" {
		return "no value"
	}
	if utf8.RuneCountInString(s) > reasonRunes {
		s = strings.TrimSpace(string([]rune(s)[:reasonRunes])) + "…"
	}
	return "no value: " + s
}

// fit shortens s, ending it with "…", until it is no wider than width.
func fit(sty text.Style, s string, width vg.Length) string {
	if sty.Width(s) <= width {
		return s
	}
	r := []rune(strings.TrimSuffix(s, "…"))
	for len(r) > 0 {
		r = r[:len(r)-1]
		t := strings.TrimSpace(string(r)) + "…"
		if sty.Width(t) <= width {
			return t
		}
	}
	return "…"
}

// wrapLabel splits a label longer than n runes at the last space before n
// into two lines; it never cuts one.
func wrapLabel(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	for i := n; i > 0; i-- {
		if r[i] == ' ' {
			return string(r[:i]) + "\n" + string(r[i+1:])
		}
	}
	return s
}

var _ plot.Plotter = (*rows)(nil)
