package report

import (
	"math"

	"github.com/hlsbench/hlsbench/results"
)

// formatValue writes v with 3 significant figures and its unit, as the
// tables do: "0.0652 ms", "53.9 ms", "1.05 s", "100 %".
func formatValue(v float64, unit string) string {
	if unit == "" {
		return results.Sig3(v)
	}
	return valueText(v, unit)
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
