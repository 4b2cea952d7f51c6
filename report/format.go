package report

import (
	"math"
	"strconv"
	"strings"
)

// formatValue writes v with 3 significant figures and its unit: "0.0652 ms",
// "53.9 ms", "1050 req/s", "100 %". It uses no exponent between 1e-6 and
// 1e15, the range results come in.
func formatValue(v float64, unit string) string {
	s := sig3(v)
	if unit == "" {
		return s
	}
	return s + " " + unit
}

func sig3(v float64) string {
	if v == 0 {
		return "0"
	}
	if !finite(v) {
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	e := strconv.FormatFloat(v, 'e', 2, 64) // "-1.05e+03", rounded
	exp, err := strconv.Atoi(e[strings.IndexByte(e, 'e')+1:])
	if err != nil || exp < -6 || exp > 15 {
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	r, err := strconv.ParseFloat(e, 64)
	if err != nil {
		return e
	}
	return strconv.FormatFloat(r, 'f', max(0, 2-exp), 64)
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
