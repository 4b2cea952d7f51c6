package report

import (
	"os"
	"path/filepath"
	"testing"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	vgsvg "gonum.org/v1/plot/vg/vgsvg"
)

// TestChartLabelsInsidePlot checks, over every chart of the fixtures and
// of the committed page's runs, that each value's text ends inside the
// data area: a label past it runs off the plot (NGINX's "≥ 99200 rps"
// on the capacity chart did).
func TestChartLabelsInsidePlot(t *testing.T) {
	reps := map[string]*Report{}
	for _, fx := range fixtures {
		reps[fx] = build(t, fx)
	}
	if site := filepath.Join("..", "site", "runs"); func() bool { _, err := os.Stat(site); return err == nil }() {
		in, err := Read([]string{site})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := Build(in, catalogOptions())
		if err != nil {
			t.Fatal(err)
		}
		reps["site"] = rep
	}
	for name, rep := range reps {
		for _, w := range rep.Workloads {
			for _, tt := range w.Tests {
				f, err := newFigure(tt)
				if err != nil {
					t.Fatal(err)
				}
				dc := f.p.DataCanvas(f.plotArea(draw.New(vgsvg.New(f.w, f.h))))
				x, _ := f.p.Transforms(&dc)
				for _, cell := range f.rows.cells {
					if cell.Value == nil {
						continue
					}
					_, label := bar(cell, f.rows.unit)
					text, _, _ := f.rows.place(cell, x)
					if end := text + f.rows.value.Width(label); end > dc.Max.X+vg.Points(0.5) {
						t.Errorf("%s: %s: %s's %q ends at %v, past the data area's %v", name, tt.ID, cell.Label, label, end, dc.Max.X)
					}
				}
			}
		}
	}
}
