// Package stats holds the statistics behind `hlsbench compare`: the median,
// the Mann-Whitney U test and a direction-aware verdict on two samples of
// pass values.
//
// The U test is chosen over a t-test because pass values (a pass's p99
// TTFB, say) are skewed and have outliers; it assumes only that passes are
// independent. Its p-value is two-sided and computed
//   - exactly when neither sample has more than ExactLimit values: from the
//     null distribution of U without ties, and with ties from the
//     permutation distribution of the rank sum given the pooled midranks
//     (every choice of which pooled values are the first sample's equally
//     likely), since the normal approximation is anti-conservative there:
//     six passes of 0 against 0,0,1,1,1,1 get 0.025 from it, 0.061 exactly;
//   - otherwise from the normal approximation with the tie correction of the
//     variance and a continuity correction of 1/2 (what R's wilcox.test and
//     SciPy's mannwhitneyu do by default).
//
// The exact p-value has a floor: with n1 and n2 values it is never below
// SmallestP(n1, n2) = 2/C(n1+n2, n1), so 3 passes against 3 can never reach
// p < 0.05 however far apart they are. Ties raise the floor further (UTest's
// MinP: counts, ban lists and coalescing ratios repeat values). Compare says
// so ("not comparable") rather than calling such a difference
// insignificant.
package stats

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// Defaults for Compare: the significance level, and the smallest change
// (in percent of the base median) that counts as one.
const (
	DefaultAlpha     = 0.05
	DefaultThreshold = 5.0
)

// ExactLimit is the largest sample size for which the exact distribution
// of U is used, with or without ties. Above it the normal approximation is
// close, and the exact distribution with ties would cost (n1+n2)²·n1² steps
// per test.
const ExactLimit = 50

// Median is the middle value of x (the mean of the two middle values for
// an even count), NaN when x is empty. x is not modified.
func Median(x []float64) float64 {
	if len(x) == 0 {
		return math.NaN()
	}
	s := slices.Clone(x)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// UTest is the outcome of a two-sided Mann-Whitney U test.
type UTest struct {
	// U counts the pairs (x[i], y[j]) with x[i] > y[j], a tie counting
	// one half; it ranges from 0 to len(x)·len(y).
	U float64
	// P is the two-sided p-value: the probability, were both samples
	// drawn from one distribution, of a U at least as far from its mean.
	P float64
	// Exact says P comes from the exact distribution of U (given the
	// ties, where there are); false means the normal approximation (a
	// sample over ExactLimit).
	Exact bool
	// MinP is the smallest P any split of the pooled values into samples
	// of these sizes could give, computed as P is: SmallestP without
	// ties, more with them (one value everywhere gives 1).
	MinP float64
}

// ErrEmpty is returned for a test on an empty sample.
var ErrEmpty = errors.New("a sample is empty")

// MannWhitneyU tests whether x and y come from the same distribution.
func MannWhitneyU(x, y []float64) (UTest, error) {
	n1, n2 := len(x), len(y)
	if n1 == 0 || n2 == 0 {
		return UTest{}, ErrEmpty
	}
	for _, v := range append(slices.Clone(x), y...) {
		if math.IsNaN(v) {
			return UTest{}, errors.New("a value is NaN")
		}
	}
	ranks, tieSum := rank(x, y)
	r1 := 0.0
	for _, r := range ranks[:n1] {
		r1 += r
	}
	u := r1 - float64(n1*(n1+1))/2
	switch {
	case n1 > ExactLimit || n2 > ExactLimit:
		// The most extreme split puts the n1 lowest (or highest) ranks in
		// x: the farther of the two from the mean decides the floor.
		sorted := slices.Clone(ranks)
		slices.Sort(sorted)
		lo, hi := 0.0, 0.0
		for i := range n1 {
			lo += sorted[i]
			hi += sorted[len(sorted)-1-i]
		}
		base := float64(n1*(n1+1)) / 2
		mean := float64(n1*n2) / 2
		ext := lo - base
		if hi-base-mean > mean-ext {
			ext = hi - base
		}
		return UTest{U: u, P: normalP(u, n1, n2, tieSum), MinP: normalP(ext, n1, n2, tieSum)}, nil
	case tieSum > 0:
		p, minP := exactTies(ranks, n1)
		return UTest{U: u, P: p, Exact: true, MinP: minP}, nil
	}
	// The distribution is symmetric: the lower tail of the nearer end.
	k := int(math.Round(min(u, float64(n1*n2)-u)))
	return UTest{U: u, P: min(1, 2*exactCDF(n1, n2, k)), Exact: true, MinP: SmallestP(n1, n2)}, nil
}

// exactTies is the two-sided p-value of the first n1 ranks' sum W from its
// permutation distribution given the pooled midranks: twice the smaller
// tail, P(W ≤ w) or P(W ≥ w), over the C(N, n1) equally likely ways of
// choosing n1 of the N pooled values, as the exact test without ties does.
// With ties the distribution need not be symmetric, and "as far from the
// mean" could then fall below 2/C(N, n1): 7,7 against 48 would give 1/3.
// minP is the smallest p of any W: that of the lowest or highest sum.
//
// Midranks are multiples of 1/2, so the sums are counted doubled, as
// integers, by the subset-sum recurrence over the pooled values
// (count[j][s]: ways to choose j of the values seen so far with doubled
// sum s). The counts are floats: past 2⁵³ they lose digits, not range.
// The smaller sample is counted: its sum's distance from its mean equals
// the other's.
func exactTies(ranks []float64, n1 int) (p, minP float64) {
	n := len(ranks)
	k := min(n1, n-n1)
	r2 := make([]int, n)
	for i, r := range ranks {
		r2[i] = int(math.Round(2 * r))
	}
	obs := 0
	if k == n1 {
		for _, v := range r2[:n1] {
			obs += v
		}
	} else {
		for _, v := range r2[n1:] {
			obs += v
		}
	}
	maxSum := 0
	for _, v := range slices.Sorted(slices.Values(r2))[n-k:] {
		maxSum += v
	}
	width := maxSum + 1
	count := make([]float64, (k+1)*width)
	count[0] = 1
	for i, r := range r2 {
		for j := min(i+1, k); j >= 1; j-- {
			row, prev := count[j*width:(j+1)*width], count[(j-1)*width:j*width]
			for s := maxSum; s >= r; s-- {
				row[s] += prev[s-r]
			}
		}
	}
	dist := count[k*width:]
	lowest, highest := slices.IndexFunc(dist, func(c float64) bool { return c > 0 }), maxSum
	total, below, above := 0.0, 0.0, 0.0
	for s, c := range dist {
		total += c
		if s <= obs {
			below += c
		}
		if s >= obs {
			above += c
		}
	}
	p = min(1, 2*min(below, above)/total)
	minP = min(1, 2*min(dist[lowest], dist[highest])/total)
	return p, minP
}

// rank gives the pooled samples' ranks (x's first, then y's), ties getting
// the mean of the ranks they span, and Σ(t³−t) over the groups of t tied
// values.
func rank(x, y []float64) ([]float64, float64) {
	n := len(x) + len(y)
	idx := make([]int, n)
	val := func(i int) float64 {
		if i < len(x) {
			return x[i]
		}
		return y[i-len(x)]
	}
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		va, vb := val(a), val(b)
		switch {
		case va < vb:
			return -1
		case va > vb:
			return 1
		}
		return 0
	})
	ranks := make([]float64, n)
	tieSum := 0.0
	for i := 0; i < n; {
		j := i + 1
		for j < n && val(idx[j]) == val(idx[i]) {
			j++
		}
		mid := float64(i+j+1) / 2 // ranks i+1..j
		for k := i; k < j; k++ {
			ranks[idx[k]] = mid
		}
		if t := float64(j - i); t > 1 {
			tieSum += t*t*t - t
		}
		i = j
	}
	return ranks, tieSum
}

// exactCDF is P(U ≤ k) for samples of n1 and n2 distinct values under the
// null hypothesis, from the recurrence (Mann and Whitney, 1947)
//
//	p(u; m, n) = m/(m+n)·p(u−n; m−1, n) + n/(m+n)·p(u; m, n−1)
//
// kept as probabilities (no overflowing counts) and only up to k.
func exactCDF(n1, n2, k int) float64 {
	if k < 0 {
		return 0
	}
	// prev[n] is p(·; m−1, n) and cur[n] is p(·; m, n), each over 0..k.
	prev := make([][]float64, n2+1)
	cur := make([][]float64, n2+1)
	for n := range prev {
		prev[n] = make([]float64, k+1)
		cur[n] = make([]float64, k+1)
		prev[n][0] = 1 // m = 0: U is 0
	}
	for m := 1; m <= n1; m++ {
		clear(cur[0])
		cur[0][0] = 1 // n = 0: U is 0
		for n := 1; n <= n2; n++ {
			a, b := float64(m)/float64(m+n), float64(n)/float64(m+n)
			row, left, down := cur[n], prev[n], cur[n-1]
			for u := 0; u <= k; u++ {
				v := b * down[u]
				if u >= n {
					v += a * left[u-n]
				}
				row[u] = v
			}
		}
		prev, cur = cur, prev
	}
	sum := 0.0
	for _, p := range prev[n2] {
		sum += p
	}
	return min(sum, 1)
}

// normalP is the two-sided p-value of U from the normal approximation, the
// variance corrected for ties and |U − mean| reduced by 1/2 for continuity.
func normalP(u float64, n1, n2 int, tieSum float64) float64 {
	f1, f2 := float64(n1), float64(n2)
	n := f1 + f2
	mean := f1 * f2 / 2
	variance := f1 * f2 / 12 * ((n + 1) - tieSum/(n*(n-1)))
	if variance <= 0 {
		return 1 // every value is the same
	}
	z := (math.Abs(u-mean) - 0.5) / math.Sqrt(variance)
	if z <= 0 {
		return 1
	}
	return min(1, math.Erfc(z/math.Sqrt2))
}

// SmallestP is the smallest two-sided p-value the exact test can give for
// samples of n1 and n2 values: 2/C(n1+n2, n1), when one sample lies wholly
// above the other. 1 when a sample is empty.
func SmallestP(n1, n2 int) float64 {
	if n1 <= 0 || n2 <= 0 {
		return 1
	}
	// C(n2+i, i) for i = 1..n1: each step an integer, exact while it
	// fits in 53 bits (so 3 against 3 gives 0.1, not 0.0999…).
	c := 1.0
	for i := 1; i <= n1; i++ {
		c = c * float64(n2+i) / float64(i)
	}
	return min(1, 2/c)
}

// MinSamples is the smallest n for which n values against n can reach
// p < alpha.
func MinSamples(alpha float64) int {
	n := 1
	for SmallestP(n, n) >= alpha && n < 1000 {
		n++
	}
	return n
}

// Verdict is Compare's conclusion.
type Verdict string

const (
	Regression    Verdict = "regression"
	Improvement   Verdict = "improvement"
	NoChange      Verdict = "no significant change"
	NotComparable Verdict = "not comparable"
)

// Delta compares a new sample with a base one.
type Delta struct {
	// BaseMedian and NewMedian are the samples' medians (NaN when empty).
	BaseMedian float64
	NewMedian  float64
	// Change is the new median's change from the base median, in percent:
	// +10 when it is 10 % higher. ±Inf when the base median is 0 and the
	// new one is not; NaN when either is missing.
	Change float64
	// P is the U test's two-sided p-value (NaN when it could not run) and
	// Exact whether it came from the exact distribution. MinP is the
	// smallest p the samples' sizes and ties allow (UTest.MinP).
	P     float64
	Exact bool
	MinP  float64
	// Shift is the Hodges–Lehmann shift of new from base with its
	// 1 − alpha interval (zero when a sample is empty), and ShiftPct the
	// estimate in percent of the base median (±Inf when that is 0 and the
	// shift is not, NaN when a sample is empty): the effect the threshold
	// is held against. Unlike the change of the medians it uses every
	// pair of values, and it is the shift the U test's interval brackets.
	Shift    Shift
	ShiftPct float64
	// BaseN and NewN are the samples' sizes.
	BaseN int
	NewN  int
	// Verdict is the conclusion and Reason, for anything but a
	// regression or an improvement, why.
	Verdict Verdict
	Reason  string
}

// Compare judges new against base: a regression when new is worse (higher
// when lowerIsBetter, lower otherwise) by a Hodges–Lehmann shift of at
// least threshold percent of the base median with p < alpha; an
// improvement likewise the other way; no significant change when p ≥
// alpha or the shift is under threshold; not comparable when a sample is
// empty or too small to ever reach p < alpha.
func Compare(base, new []float64, lowerIsBetter bool, threshold, alpha float64) Delta {
	d := Delta{BaseMedian: Median(base), NewMedian: Median(new), Change: math.NaN(), P: math.NaN(), MinP: math.NaN(),
		ShiftPct: math.NaN(), BaseN: len(base), NewN: len(new)}
	if len(base) > 0 && len(new) > 0 {
		d.Change = change(d.BaseMedian, d.NewMedian)
		level := 1 - alpha
		if !(level > 0 && level < 1) {
			level = 1 - DefaultAlpha
		}
		if sh, err := HodgesLehmann(base, new, level); err == nil {
			d.Shift = sh
			d.ShiftPct = change(d.BaseMedian, d.BaseMedian+sh.Estimate)
		}
	}
	switch {
	case !(alpha > 0 && alpha < 1):
		return d.not(fmt.Sprintf("alpha %g: want a level between 0 and 1", alpha))
	case !(threshold >= 0) || math.IsInf(threshold, 0):
		return d.not(fmt.Sprintf("threshold %g%%: want 0 or more", threshold))
	case len(base) == 0 && len(new) == 0:
		return d.not("no values in base or new")
	case len(base) == 0:
		return d.not("no values in base")
	case len(new) == 0:
		return d.not("no values in new")
	}
	t, err := MannWhitneyU(base, new)
	if err != nil {
		return d.not(err.Error())
	}
	d.P, d.Exact, d.MinP = t.P, t.Exact, t.MinP
	if floor := SmallestP(d.BaseN, d.NewN); floor >= alpha {
		need := MinSamples(alpha)
		return d.not(fmt.Sprintf("too few valid passes: %d in base and %d in new can never give p < %g (the smallest p is %.3g); %d in each can",
			d.BaseN, d.NewN, alpha, floor, need))
	}
	// Ties can keep every split of the pooled values from p < alpha. That
	// matters only where p would decide the verdict: medians that differ by
	// at least the threshold. Elsewhere (one value everywhere, say) the
	// verdict is no change whatever p is.
	if t.MinP >= alpha && d.Shift.Estimate != 0 && math.Abs(d.ShiftPct) >= threshold {
		return d.not(fmt.Sprintf("too many ties: the %d values in base and new take only %d distinct values, and no split of them into %d and %d can give p < %g (the smallest p is %.3g)",
			d.BaseN+d.NewN, distinct(base, new), d.BaseN, d.NewN, alpha, t.MinP))
	}
	if d.P >= alpha {
		d.Verdict, d.Reason = NoChange, fmt.Sprintf("p = %.3g is not below alpha %g", d.P, alpha)
		return d
	}
	if d.Shift.Estimate == 0 {
		d.Verdict, d.Reason = NoChange, "the shift is 0"
		return d
	}
	if !(math.Abs(d.ShiftPct) >= threshold) {
		d.Verdict, d.Reason = NoChange, fmt.Sprintf("the shift, %+.2f%%, is under the %g%% threshold", d.ShiftPct, threshold)
		return d
	}
	worse := d.Shift.Estimate > 0
	if !lowerIsBetter {
		worse = d.Shift.Estimate < 0
	}
	d.Verdict = Improvement
	if worse {
		d.Verdict = Regression
	}
	return d
}

// distinct counts the distinct values of x and y together.
func distinct(x, y []float64) int {
	all := slices.Sorted(slices.Values(append(slices.Clone(x), y...)))
	return len(slices.Compact(all))
}

func (d Delta) not(reason string) Delta {
	d.Verdict, d.Reason = NotComparable, reason
	return d
}

// change is new's change from base in percent.
func change(base, new float64) float64 {
	switch {
	case base == new:
		return 0
	case base == 0:
		return math.Inf(int(math.Copysign(1, new)))
	}
	return (new - base) / math.Abs(base) * 100
}

// Shift is the Hodges–Lehmann estimate of how far new lies from base — the
// median of the n1·n2 differences new[j] − base[i] — and its
// distribution-free confidence interval (Bauer, 1972; R's wilcox.test with
// conf.int): the differences of order k and n1·n2 + 1 − k, k the largest
// count with P(U < k) ≤ (1 − Level)/2 under the null distribution of U
// without ties (exact up to ExactLimit values a side, else the normal
// approximation). The interval covers the true shift with probability at
// least Level when the samples differ by a shift alone; ties make it
// approximate. Lo and Hi are ±Inf when the samples are too small for any
// interval at that level (3 against 3 at 95 %: every difference lies
// inside it).
type Shift struct {
	Estimate float64
	Lo, Hi   float64
	Level    float64
}

// HodgesLehmann is the shift of new from base with a Level interval
// (0.95 for 95 %).
func HodgesLehmann(base, new []float64, level float64) (Shift, error) {
	n1, n2 := len(base), len(new)
	switch {
	case n1 == 0 || n2 == 0:
		return Shift{}, ErrEmpty
	case !(level > 0 && level < 1):
		return Shift{}, fmt.Errorf("level %g: want a confidence level between 0 and 1, e.g. 0.95", level)
	}
	diffs := make([]float64, 0, n1*n2)
	for _, b := range base {
		for _, v := range new {
			d := v - b
			if math.IsNaN(d) {
				return Shift{}, errors.New("a value is NaN")
			}
			diffs = append(diffs, d)
		}
	}
	slices.Sort(diffs)
	s := Shift{Estimate: Median(diffs), Lo: math.Inf(-1), Hi: math.Inf(1), Level: level}
	if k := shiftRank(n1, n2, (1-level)/2); k >= 1 {
		s.Lo, s.Hi = diffs[k-1], diffs[len(diffs)-k]
	}
	return s, nil
}

// shiftRank is the largest k with P(U < k) = P(U ≤ k−1) ≤ tail under the
// null distribution of U for n1 and n2 distinct values; 0 when even
// P(U = 0) exceeds tail.
func shiftRank(n1, n2 int, tail float64) int {
	mn := n1 * n2
	if n1 > ExactLimit || n2 > ExactLimit {
		// P(U ≤ k−1) ≈ Φ((k − 1/2 − mean)/sd), continuity corrected.
		mean := float64(mn) / 2
		sd := math.Sqrt(float64(mn) * float64(n1+n2+1) / 12)
		z := -math.Sqrt2 * math.Erfcinv(2*tail) // Φ⁻¹(tail), negative
		k := int(math.Floor(mean + z*sd + 0.5))
		return max(0, min(k, mn/2))
	}
	k := 0
	for k+1 <= mn/2 && exactCDF(n1, n2, k) <= tail {
		k++
	}
	return k
}

// AdjustBH is the Benjamini–Hochberg adjustment of m p-values: q[i] is the
// smallest false-discovery rate at which test i would be declared
// significant, min over j with p_(j) ≥ p[i] of p_(j)·m/rank(j), at most 1.
// Calling a test significant when q < alpha keeps the expected share of
// false discoveries among them at alpha or below (for independent or
// positively dependent tests), where judging each at p < alpha would let
// one of twenty true nulls through on average. NaN p-values are left out
// of m and get NaN.
func AdjustBH(p []float64) []float64 {
	q := make([]float64, len(p))
	var idx []int
	for i, v := range p {
		if math.IsNaN(v) {
			q[i] = math.NaN()
			continue
		}
		idx = append(idx, i)
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmpFloat(p[a], p[b]) })
	m := float64(len(idx))
	running := 1.0
	for r := len(idx); r >= 1; r-- {
		i := idx[r-1]
		running = min(running, p[i]*m/float64(r))
		q[i] = running
	}
	return q
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
