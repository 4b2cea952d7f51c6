package results

import (
	"math"
	"testing"
)

func TestSig3(t *testing.T) {
	for v, want := range map[float64]string{
		0.38249: "0.382", 0.465: "0.465", 0.0504: "0.0504", 2.3456: "2.35", 56.78: "56.8",
		542.6: "543", 0: "0", 100: "100", 99.96: "100", 0.09996: "0.100", 1051.2: "1050",
		-0.0652: "-0.0652", 200: "200", 9.999: "10.0", math.Inf(1): "+Inf",
	} {
		if got := Sig3(v); got != want {
			t.Errorf("Sig3(%v) = %s, want %s", v, got, want)
		}
	}
}
