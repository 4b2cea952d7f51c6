package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func near(got, want, tol float64) bool { return math.Abs(got-want) <= tol }

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		x    []float64
		want float64
	}{
		{[]float64{3}, 3},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{5, 5, 1, 9}, 5},
	} {
		x := append([]float64(nil), tc.x...)
		if got := Median(x); got != tc.want {
			t.Errorf("Median(%v) = %g, want %g", tc.x, got, tc.want)
		}
		for i := range x {
			if x[i] != tc.x[i] {
				t.Fatalf("Median reordered its argument: %v", x)
			}
		}
	}
	if !math.IsNaN(Median(nil)) {
		t.Error("Median of nothing is not NaN")
	}
}

// Published values: each names where it comes from.
func TestMannWhitneyUKnown(t *testing.T) {
	rep := func(counts ...int) []float64 { // R's rep(1:k, counts)
		var out []float64
		for v, n := range counts {
			for range n {
				out = append(out, float64(v+1))
			}
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		x, y   []float64
		u, p   float64
		tol    float64
		exact  bool
		source string
	}{
		{"scipy", []float64{19, 22, 16, 29, 24}, []float64{20, 11, 17, 12}, 17, 1.0 / 9, 1e-12, true,
			"scipy.stats.mannwhitneyu docs, method='exact': U1 17, p 0.1111111111111111"},
		{"ansm", []float64{23, 18, 17, 25, 22, 19, 31, 26, 29, 33}, []float64{21, 28, 32, 30, 41, 24, 35, 34, 27, 39, 36}, 21, 0.015871126, 5e-9, true,
			"Sprent & Smeeton, Applied Nonparametric Statistical Methods, example 6.1: U 21, exact p 0.015871126"},
		{"nag-exact",
			[]float64{13.0, 5.8, 11.7, 6.5, 12.3, 6.7, 9.2, 6.9, 10.0, 7.3, 16.0, 7.0, 10.5, 8.5, 9.0, 7.5},
			[]float64{17.0, 6.2, 10.1, 8.0, 15.3, 8.2, 15.0, 9.6, 14.9, 10.4, 14.2, 9.8, 13.8, 11.0, 14.0, 11.1, 12.9, 11.6, 12.8, 12.0, 13.1, 12.4, 11.9},
			86, 2 * 0.0022, 2 * 0.00005, true,
			"NAG g08ajf example: U 86, exact one-tailed probability 0.0022"},
		{"r-ties", rep(60, 21, 11, 4, 3, 1), rep(130, 50, 10, 6, 4, 0), 10756, 0.2126, 0.00005, false,
			"R wilcox.test(x, y, exact = FALSE): W 10756, p 0.2126 (garciparedes/r-examples, non-parametric exercise 10)"},
	} {
		got, err := MannWhitneyU(tc.x, tc.y)
		if err != nil {
			t.Fatal(err)
		}
		if got.U != tc.u || !near(got.P, tc.p, tc.tol) || got.Exact != tc.exact {
			t.Errorf("%s: U %g p %.10g exact %v; want U %g p %.10g±%g exact %v (%s)", tc.name, got.U, got.P, got.Exact, tc.u, tc.p, tc.tol, tc.exact, tc.source)
		}
		// Swapping the samples mirrors U and keeps p.
		sw, _ := MannWhitneyU(tc.y, tc.x)
		if sw.U != float64(len(tc.x)*len(tc.y))-tc.u || !near(sw.P, got.P, 1e-12) {
			t.Errorf("%s swapped: U %g p %g", tc.name, sw.U, sw.P)
		}
	}
}

// The normal approximation against SciPy's method='asymptotic' for its
// documented example (no ties): p 0.11134688653314041.
func TestNormalPSciPy(t *testing.T) {
	if p := normalP(17, 5, 4, 0); !near(p, 0.11134688653314041, 1e-12) {
		t.Errorf("normalP = %.17g, want 0.11134688653314041", p)
	}
	// NAG g08ajf: normal statistic -2.7838, one-tailed 0.0027.
	if p := normalP(86, 16, 23, 0); !near(p, math.Erfc(2.7838/math.Sqrt2), 2e-5) {
		t.Errorf("normalP = %g, want the normal statistic -2.7838's two tails", p)
	}
	// NAG g08ahf's example with ties: U 86, normal statistic -2.8039 (ties
	// and continuity corrected). Samples this small now take the exact
	// distribution given the ties (checked against enumeration in
	// TestExactTiesAgainstEnumeration); it lies near the approximation.
	x := []float64{13, 6, 12, 7, 12, 7, 10, 7, 10, 7, 16, 7, 10, 8, 9, 8}
	y := []float64{17, 6, 10, 8, 15, 8, 15, 10, 15, 10, 14, 10, 14, 11, 14, 11, 13, 12, 13, 12, 13, 12, 12}
	_, tieSum := rank(x, y)
	approx := normalP(86, 16, 23, tieSum)
	if !near(approx, math.Erfc(2.8039/math.Sqrt2), 2e-5) {
		t.Errorf("normalP with ties = %g, want the normal statistic -2.8039's two tails", approx)
	}
	if got, _ := MannWhitneyU(x, y); got.U != 86 || !got.Exact || !near(got.P, approx, 0.002) {
		t.Errorf("g08ahf's example: %+v, want U 86, exact, near the approximation's %g", got, approx)
	}
}

// The exact p-value agrees with counting every split of the pooled values.
func TestExactAgainstEnumeration(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 40 {
		n1, n2 := 1+r.IntN(6), 1+r.IntN(6)
		pool := r.Perm(n1 + n2)
		x, y := make([]float64, n1), make([]float64, n2)
		for i, v := range pool {
			if i < n1 {
				x[i] = float64(v)
			} else {
				y[i-n1] = float64(v)
			}
		}
		got, err := MannWhitneyU(x, y)
		if err != nil || !got.Exact {
			t.Fatalf("trial %d: %v exact %v", trial, err, got.Exact)
		}
		mean := float64(n1*n2) / 2
		extreme, all := 0, 0
		for mask := 0; mask < 1<<(n1+n2); mask++ {
			if popcount(mask) != n1 {
				continue
			}
			all++
			u := 0 // U of the values whose bit is set: ranks are the values
			for i := range n1 + n2 {
				for j := range n1 + n2 {
					if mask&(1<<i) != 0 && mask&(1<<j) == 0 && i > j {
						u++
					}
				}
			}
			if math.Abs(float64(u)-mean) >= math.Abs(got.U-mean)-1e-9 {
				extreme++
			}
		}
		if want := float64(extreme) / float64(all); !near(got.P, want, 1e-12) {
			t.Errorf("trial %d: %v vs %v: p %g, enumeration %d/%d = %g", trial, x, y, got.P, extreme, all, want)
		}
	}
}

func popcount(v int) int {
	n := 0
	for ; v != 0; v &= v - 1 {
		n++
	}
	return n
}

func TestMannWhitneyUProperties(t *testing.T) {
	seq := func(from, n int) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = float64(from + i)
		}
		return out
	}
	for _, x := range [][]float64{{1, 2, 3}, seq(0, 20), {7, 7, 7, 7}} {
		if got, _ := MannWhitneyU(x, x); got.P != 1 {
			t.Errorf("identical samples %v: p %g, want 1", x, got.P)
		}
	}
	if got, _ := MannWhitneyU(seq(0, 20), seq(100, 20)); !(got.P < 1e-6) || got.U != 0 || !got.Exact {
		t.Errorf("20 vs 20 fully separated: %+v, want p < 1e-6", got)
	}
	// Fully separated with ties inside each sample (counts such as
	// coalescing's 200×): exact given the ties, and as extreme as 20
	// against 20 can be, 2/C(40,20).
	a, b := make([]float64, 20), make([]float64, 20)
	for i := range a {
		a[i], b[i] = 200, 100
	}
	if got, _ := MannWhitneyU(a, b); !near(got.P, SmallestP(20, 20), 1e-20) || !got.Exact || got.MinP != got.P {
		t.Errorf("20 × 200 vs 20 × 100: %+v, want the exact p 2/C(40,20)", got)
	}
	if got, _ := MannWhitneyU([]float64{1, 2, 3}, []float64{4, 5, 6}); !near(got.P, 0.1, 1e-12) {
		t.Errorf("3 vs 3 fully separated: p %g, want 0.1", got.P)
	}
	if _, err := MannWhitneyU(nil, []float64{1}); err == nil {
		t.Error("empty sample: no error")
	}
	if _, err := MannWhitneyU([]float64{math.NaN()}, []float64{1}); err == nil {
		t.Error("NaN: no error")
	}
	// Large samples without ties use the normal approximation.
	if got, _ := MannWhitneyU(seq(0, 60), seq(30, 60)); got.Exact || !(got.P < 0.01) {
		t.Errorf("60 vs 60 half overlapping: %+v", got)
	}
}

func TestSmallestP(t *testing.T) {
	for _, tc := range []struct {
		n1, n2 int
		want   float64
	}{{3, 3, 0.1}, {4, 4, 2.0 / 70}, {1, 20, 2.0 / 21}, {2, 2, 1.0 / 3}, {0, 5, 1}} {
		if got := SmallestP(tc.n1, tc.n2); !near(got, tc.want, 1e-12) {
			t.Errorf("SmallestP(%d, %d) = %g, want %g", tc.n1, tc.n2, got, tc.want)
		}
	}
	for alpha, want := range map[float64]int{0.05: 4, 0.1: 4, 0.11: 3, 0.01: 5, 0.001: 7} {
		if got := MinSamples(alpha); got != want {
			t.Errorf("MinSamples(%g) = %d, want %d", alpha, got, want)
		}
	}
}

func TestCompare(t *testing.T) {
	seq := func(from, step float64, n int) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = from + step*float64(i)
		}
		return out
	}
	base := seq(10, 0.01, 20) // 10.00 … 10.19
	slower := seq(12, 0.01, 20)
	for _, tc := range []struct {
		name      string
		base, new []float64
		lower     bool
		want      Verdict
		reason    string
	}{
		{"slower, lower is better", base, slower, true, Regression, ""},
		{"slower, higher is better", base, slower, false, Improvement, ""},
		{"faster, lower is better", slower, base, true, Improvement, ""},
		{"fewer, higher is better", slower, base, false, Regression, ""},
		{"identical", base, base, true, NoChange, "p = 1 is not below alpha 0.05"},
		// The medians are equal (5), yet every pass moved up or stayed:
		// the Hodges–Lehmann shift (4) sees what the medians hide.
		{"significant, same median", []float64{1, 1, 1, 1, 1, 5, 5, 5, 5, 5, 5}, []float64{5, 5, 5, 5, 5, 5, 9, 9, 9, 9, 9}, true, Regression, ""},
		{"under the threshold", base, seq(10.3, 0.01, 20), true, NoChange, "under the 5% threshold"},
		{"not significant", []float64{1, 3, 5, 7, 9}, []float64{2, 4, 6, 8, 10}, true, NoChange, "not below alpha"},
		{"3 vs 3", []float64{1, 2, 3}, []float64{40, 50, 60}, true, NotComparable, "3 in base and 3 in new can never give p < 0.05 (the smallest p is 0.1); 4 in each can"},
		{"no base", nil, base, true, NotComparable, "no values in base"},
		{"no new", base, nil, true, NotComparable, "no values in new"},
	} {
		d := Compare(tc.base, tc.new, tc.lower, DefaultThreshold, DefaultAlpha)
		if d.Verdict != tc.want || !strings.Contains(d.Reason, tc.reason) {
			t.Errorf("%s: %s (%s), want %s (%s); %+v", tc.name, d.Verdict, d.Reason, tc.want, tc.reason, d)
		}
	}
	d := Compare(base, slower, true, DefaultThreshold, DefaultAlpha)
	if !near(d.BaseMedian, 10.095, 1e-9) || !near(d.NewMedian, 12.095, 1e-9) || !near(d.Change, 2/10.095*100, 1e-9) || !(d.P < 1e-6) || d.BaseN != 20 || d.NewN != 20 || !d.Exact {
		t.Errorf("delta %+v", d)
	}
	if d := Compare([]float64{0, 0, 0, 0}, []float64{1, 1, 1, 1}, true, 5, 0.05); !math.IsInf(d.Change, 1) || d.Verdict != Regression {
		t.Errorf("from 0: %+v, want +Inf%% and a regression", d)
	}
	for _, bad := range []struct{ threshold, alpha float64 }{{5, 0}, {5, 1}, {-1, 0.05}, {math.NaN(), 0.05}} {
		if d := Compare(base, slower, true, bad.threshold, bad.alpha); d.Verdict != NotComparable {
			t.Errorf("threshold %g alpha %g: %s", bad.threshold, bad.alpha, d.Verdict)
		}
	}
}

// Any values: p is a probability, U within its range, swapping the
// samples keeps p.
func FuzzMannWhitneyU(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6}, uint8(3))
	f.Add([]byte{7, 7, 7, 1, 1, 200, 9}, uint8(2))
	f.Fuzz(func(t *testing.T, b []byte, split uint8) {
		if len(b) > 120 {
			b = b[:120]
		}
		k := int(split) % (len(b) + 1)
		x, y := make([]float64, k), make([]float64, len(b)-k)
		for i, v := range b {
			if i < k {
				x[i] = float64(v)
			} else {
				y[i-k] = float64(v)
			}
		}
		got, err := MannWhitneyU(x, y)
		if err != nil {
			if len(x) > 0 && len(y) > 0 {
				t.Fatal(err)
			}
			return
		}
		sw, _ := MannWhitneyU(y, x)
		if !(got.P > 0 && got.P <= 1) || got.U < 0 || got.U > float64(len(x)*len(y)) || math.Abs(got.P-sw.P) > 1e-9 {
			t.Errorf("%v vs %v: %+v, swapped %+v", x, y, got, sw)
		}
		if got.Exact && got.P < SmallestP(len(x), len(y))-1e-12 {
			t.Errorf("%v vs %v: exact p %g below the floor %g", x, y, got.P, SmallestP(len(x), len(y)))
		}
		if got.P < got.MinP*(1-1e-9) || !(got.MinP > 0) {
			t.Errorf("%v vs %v: p %g below the smallest p %g the ties allow", x, y, got.P, got.MinP)
		}
	})
}

// The example (issue 23, item 16): six passes of 0 against
// 0,0,1,1,1,1, as counts and ban lists give. Pooled, 8 values are 0 and 4
// are 1, so every 0 has midrank 4.5 and every 1 midrank 10.5. Under the
// null hypothesis each of the C(12,6) = 924 ways of choosing which six
// values are base's is equally likely. Base's rank sum is 6·4.5 = 27 and
// its mean is 6·13/2 = 39, 12 below. As far from 39 or farther lie only
// the sums 27 (six of the eight 0s: C(8,6) = 28 ways) and 51 (all four 1s
// and two 0s: C(4,4)·C(8,2) = 28 ways), so the exact two-sided p is
// 56/924 = 0.0606. The normal approximation said 0.0246 and called a
// regression. It is also the smallest p any split of these twelve values
// into six and six can give: with these ties no difference reaches 0.05.
func TestCompareTiesExact(t *testing.T) {
	base, new := []float64{0, 0, 0, 0, 0, 0}, []float64{0, 0, 1, 1, 1, 1}
	got, err := MannWhitneyU(base, new)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Exact || !near(got.P, 56.0/924, 1e-12) || got.U != 6 {
		t.Errorf("MannWhitneyU: %+v, want U 6 and the exact p 56/924 = 0.0606", got)
	}
	d := Compare(base, new, true, DefaultThreshold, DefaultAlpha)
	if d.Verdict != NotComparable || !near(d.P, 56.0/924, 1e-12) || !d.Exact ||
		!strings.Contains(d.Reason, "12 values in base and new take only 2 distinct values") ||
		!strings.Contains(d.Reason, "no split of them into 6 and 6 can give p < 0.05 (the smallest p is 0.0606)") {
		t.Errorf("Compare: %s (%s) p %g exact %v; want not comparable, the ties named, p 0.0606", d.Verdict, d.Reason, d.P, d.Exact)
	}
}

// The exact p-value with ties agrees with counting every split of the
// pooled values (ties drawn from few distinct values): twice the smaller
// tail of the rank sum. The smallest p the ties allow is what the
// enumeration finds for the lowest or highest sum.
func TestExactTiesAgainstEnumeration(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for trial := range 60 {
		n1, n2 := 1+r.IntN(7), 1+r.IntN(7)
		levels := 1 + r.IntN(4)
		pool := make([]float64, n1+n2)
		for i := range pool {
			pool[i] = float64(r.IntN(levels)) * 10
		}
		x, y := pool[:n1], pool[n1:]
		got, err := MannWhitneyU(x, y)
		if err != nil || !got.Exact {
			t.Fatalf("trial %d: %v vs %v: %v exact %v", trial, x, y, err, got.Exact)
		}
		// Rank sums by enumeration, doubled so midranks are integers.
		ranks, _ := rank(x, y)
		r2 := make([]int, len(ranks))
		for i, v := range ranks {
			r2[i] = int(math.Round(2 * v))
		}
		obs := 0
		for _, v := range r2[:n1] {
			obs += v
		}
		var sums []int
		for mask := 0; mask < 1<<(n1+n2); mask++ {
			if popcount(mask) != n1 {
				continue
			}
			s := 0
			for i := range n1 + n2 {
				if mask&(1<<i) != 0 {
					s += r2[i]
				}
			}
			sums = append(sums, s)
		}
		tail := func(keep func(s int) bool) float64 {
			n := 0
			for _, s := range sums {
				if keep(s) {
					n++
				}
			}
			return float64(n) / float64(len(sums))
		}
		lo, hi := slices.Min(sums), slices.Max(sums)
		want := min(1, 2*min(tail(func(s int) bool { return s <= obs }), tail(func(s int) bool { return s >= obs })))
		wantMin := min(1, 2*min(tail(func(s int) bool { return s == lo }), tail(func(s int) bool { return s == hi })))
		if !near(got.P, want, 1e-12) || !near(got.MinP, wantMin, 1e-12) {
			t.Errorf("trial %d: %v vs %v: p %g min %g; enumeration over %d splits: %g, min %g",
				trial, x, y, got.P, got.MinP, len(sums), want, wantMin)
		}
	}
}

// Without ties the smallest p is the table's: 3 against 3 fully separated
// gives 2/C(6,3) = 0.1 (exact tables of the U test, e.g. Mann and Whitney
// 1947: P(U = 0; 3, 3) = 0.05 one-sided).
func TestExactNoTiesTable(t *testing.T) {
	got, _ := MannWhitneyU([]float64{1, 2, 3}, []float64{4, 5, 6})
	if !got.Exact || !near(got.P, 0.1, 1e-12) || !near(got.MinP, 0.1, 1e-12) {
		t.Errorf("3 vs 3 fully separated: %+v, want exact p 0.1, smallest 0.1", got)
	}
}

// The guard judges what the tie structure allows, and only where p decides
// the verdict.
func TestCompareTiesGuard(t *testing.T) {
	rep := func(v float64, n int) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = v
		}
		return out
	}
	for _, tc := range []struct {
		name      string
		base, new []float64
		want      Verdict
		reason    string
	}{
		// 8 passes of 0 against 2 of 0 and 6 of 1: the extreme split's p is
		// 2·C(10,8)/C(16,8) = 90/12870 = 0.007, so these ties can reach 0.05.
		{"ties that allow it", rep(0, 8), append(rep(0, 2), rep(1, 6)...), Regression, ""},
		// One pass of 199 among 40 of 200: no split is ever significant,
		// but the medians are equal, so p never decided the verdict.
		{"equal medians", rep(200, 20), append(rep(200, 19), 199), NoChange, "not below alpha"},
		{"all one value", rep(200, 20), rep(200, 20), NoChange, "p = 1 is not below alpha 0.05"},
		// Two 1s among eight passes: the medians differ (0 and 0.5), yet
		// no split of six 0s and two 1s into 4 and 4 can reach p < 0.05:
		// the extreme ones, all 0s on a side, give (15 + 15)/70 = 0.43.
		{"too many ties", rep(0, 4), []float64{0, 0, 1, 1}, NotComparable, "8 values in base and new take only 2 distinct values"},
	} {
		d := Compare(tc.base, tc.new, true, DefaultThreshold, DefaultAlpha)
		if d.Verdict != tc.want || !strings.Contains(d.Reason, tc.reason) {
			t.Errorf("%s: %s (%s) p %g, want %s (%s)", tc.name, d.Verdict, d.Reason, d.P, tc.want, tc.reason)
		}
	}
}

// Above ExactLimit ties use the normal approximation with the tie and
// continuity corrections; where both apply they agree closely.
func TestTiesLargeSamples(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	draw := func(n, levels, shift int) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = float64(r.IntN(levels) + shift)
		}
		return out
	}
	x, y := draw(60, 8, 0), draw(60, 8, 1)
	got, _ := MannWhitneyU(x, y)
	_, tieSum := rank(x, y)
	if got.Exact || got.P != normalP(got.U, 60, 60, tieSum) {
		t.Errorf("60 vs 60 with ties: %+v, want the normal approximation %g", got, normalP(got.U, 60, 60, tieSum))
	}
	for trial := range 5 {
		x, y := draw(30, 6, 0), draw(30, 6, trial%3)
		got, _ := MannWhitneyU(x, y)
		_, tieSum := rank(x, y)
		if approx := normalP(got.U, 30, 30, tieSum); !got.Exact || !near(got.P, approx, 0.01) {
			t.Errorf("trial %d: 30 vs 30 with ties: exact p %g (exact %v), normal approximation %g", trial, got.P, got.Exact, approx)
		}
	}
}

func TestHodgesLehmannKnown(t *testing.T) {
	// Differences 1,2,2,3,3,3,4,4,5: the estimate is 3; 3 against 3 has no
	// 95 % interval (P(U = 0) = 1/20 > 2.5 %).
	s, err := HodgesLehmann([]float64{1, 2, 3}, []float64{4, 5, 6}, 0.95)
	if err != nil || s.Estimate != 3 || !math.IsInf(s.Lo, -1) || !math.IsInf(s.Hi, 1) {
		t.Fatalf("3 against 3: %+v, %v; want estimate 3, no interval", s, err)
	}
	// 10 against 10 at 95 %: R's qwilcox(0.025, 10, 10) is 24, so the
	// interval runs from the 24th to the 77th of the 100 sorted differences.
	if k := shiftRank(10, 10, 0.025); k != 24 {
		t.Errorf("shiftRank(10, 10, 0.025) = %d, want 24", k)
	}
	base := []float64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	new := []float64{10, 11, 12, 13, 14, 15, 16, 17, 18, 19}
	s, _ = HodgesLehmann(base, new, 0.95)
	// Differences 1..19, value d appearing 10−|d−10| times: the 24th is 7
	// (1+2+…+6 = 21 below it), the 77th 13, the median 10.
	if s.Estimate != 10 || s.Lo != 7 || s.Hi != 13 {
		t.Errorf("10 against 10: %+v, want 10 in [7, 13]", s)
	}
	if _, err := HodgesLehmann(nil, new, 0.95); err == nil {
		t.Error("an empty base gave no error")
	}
	if _, err := HodgesLehmann(base, new, 95); err == nil || !strings.Contains(err.Error(), "between 0 and 1") {
		t.Errorf("level 95: %v, want an error naming what is accepted", err)
	}
}

// TestHodgesLehmannCoverage draws samples that differ by a known shift and
// checks the 95 % interval covers it in at least 93 % of 2000 draws, for an
// exact and an approximated size; and that it is not wildly conservative.
func TestHodgesLehmannCoverage(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for _, n := range []int{8, 60} {
		covered, trials := 0, 2000
		for range trials {
			base, new := make([]float64, n), make([]float64, n)
			for i := range n {
				base[i] = rng.ExpFloat64()
				new[i] = rng.ExpFloat64() + 0.5
			}
			s, err := HodgesLehmann(base, new, 0.95)
			if err != nil {
				t.Fatal(err)
			}
			if s.Lo <= 0.5 && 0.5 <= s.Hi {
				covered++
			}
		}
		if got := float64(covered) / float64(trials); got < 0.93 || got > 0.99 {
			t.Errorf("n = %d: the 95 %% interval covered the shift in %.3f of %d draws", n, got, trials)
		}
	}
}

func TestAdjustBH(t *testing.T) {
	// R: p.adjust(c(.01, .04, .03, .005), "BH") is 0.02 0.04 0.04 0.02.
	got := AdjustBH([]float64{0.01, 0.04, 0.03, 0.005})
	want := []float64{0.02, 0.04, 0.04, 0.02}
	for i := range want {
		if !near(got[i], want[i], 1e-12) {
			t.Fatalf("AdjustBH = %v, want %v", got, want)
		}
	}
	got = AdjustBH([]float64{0.5, math.NaN(), 0.9})
	if !near(got[0], 0.9, 1e-12) || !math.IsNaN(got[1]) || got[2] != 0.9 {
		t.Errorf("with a NaN: %v, want [0.9 NaN 0.9] (m = 2)", got)
	}
	// Twenty true nulls: judged one by one at 0.05 some pass; after the
	// adjustment, in all but a few of 500 draws, none does.
	rng := rand.New(rand.NewPCG(3, 5))
	raw, adjusted := 0, 0
	for range 500 {
		p := make([]float64, 20)
		for i := range p {
			p[i] = rng.Float64()
		}
		if slices.ContainsFunc(p, func(v float64) bool { return v < 0.05 }) {
			raw++
		}
		if slices.ContainsFunc(AdjustBH(p), func(v float64) bool { return v < 0.05 }) {
			adjusted++
		}
	}
	if adjusted > 40 || raw < 250 {
		t.Errorf("500 draws of 20 null p-values: some p < 0.05 in %d, some q < 0.05 in %d; want about 320 and 25", raw, adjusted)
	}
}
