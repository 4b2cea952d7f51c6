package report

import (
	"embed"
	"html/template"
	"io"
	"strings"

	"github.com/hlsbench/hlsbench/results"
)

//go:embed templates/index.html.tmpl
var templates embed.FS

var page = template.Must(template.New("index.html.tmpl").Funcs(template.FuncMap{
	"inc":           func(i int) int { return i + 1 },
	"unitName":      unitName,
	"direction":     direction,
	"value":         boundedValue,
	"passes":        passesText,
	"spread":        spreadText,
	"cost":          costText,
	"rss":           rssText,
	"costTests":     costTests,
	"sig3":          results.Sig3,
	"curveText":     curveText,
	"sizeText":      sizeText,
	"saturated":     saturatedValueText,
	"carried":       carriedText,
	"saturatedNote": func() string { return saturatedNote },
	"rowAnchor":     RowAnchor,
	"topologyName":  topologyName,
	"claimsTitle":   func() string { return claimsTitle },
	"join":          strings.Join,
	"joinOr":        joinOr,
	"partsTotal":    partsTotal,
	"sloNote":       sloNote,
}).ParseFS(templates, "templates/index.html.tmpl"))

// WriteHTML writes the page. Every link and image in it is a relative path
// into the directory WriteDir lays out: charts/, runs/, report.md and
// figures.csv; it loads nothing from the network.
func WriteHTML(w io.Writer, rep *Report) error {
	return page.Execute(w, struct {
		*Report
		Manifest bool
		// ManySources: a table names each cell's result file only when
		// there is more than one.
		ManySources bool
	}{rep, rep.manifest, len(rep.Sources) > 1})
}
