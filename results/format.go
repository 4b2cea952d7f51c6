package results

import (
	"fmt"
	"math"
)

// Sig3 prints v with three significant figures and no exponent: 0.0652,
// 1.05, 53.9, 532, 1051. The terminal table and the report print values
// with it, so a figure reads the same everywhere.
func Sig3(v float64) string {
	a := math.Abs(v)
	switch {
	case a == 0:
		return "0"
	case math.IsNaN(v) || math.IsInf(v, 0):
		return fmt.Sprint(v)
	}
	// Round first: 99.96 is "100", not "100.0"; 0.09996 is "0.100".
	p := math.Pow(10, math.Floor(math.Log10(a))-2)
	v = math.Round(v/p) * p
	a = math.Abs(v)
	switch {
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	}
	d := 2 - int(math.Floor(math.Log10(a)))
	return fmt.Sprintf("%.*f", d, v)
}
