package loadgen

import (
	"testing"
	"time"
)

// arrivals records answers at the given offsets from t0, as finish does.
func arrivals(at ...time.Duration) *metrics {
	m := newMetrics()
	for _, d := range at {
		m.recordArrival(0, int64(d))
	}
	return m
}

// The carried rate is counted over the answers' own arrivals: a server that
// keeps up carries the rate however long its answers take, one that answers
// at most 50 a second carries 50, and one late answer at the end does not
// make a steady server look saturated. Answers from t0 to the last outcome
// (AchievedRPS) call the steady server's 100 ms answers in a 2 s pass 95.2 %
// of the rate.
func TestCarriedRate(t *testing.T) {
	const rate, n = 100, 200 // a 2 s pass at 100 rps
	slot := func(i int) time.Duration { return time.Duration(i) * time.Second / rate }
	var steady, capped, tail []time.Duration
	for i := range n {
		steady = append(steady, slot(i)+100*time.Millisecond)
		// One at a time, 20 ms each: at most 50 a second, the backlog
		// drained after the last send.
		capped = append(capped, time.Duration(i+1)*20*time.Millisecond)
		d := slot(i) + time.Millisecond
		if i == n-1 || i%50 == 7 {
			d += 300 * time.Millisecond // a slow answer, the last one too
		}
		tail = append(tail, d)
	}
	drainEnd := func(at []time.Duration) float64 { // AchievedRPS: answers over t0 to the last outcome
		return float64(len(at)) / at[len(at)-1].Seconds()
	}
	for _, c := range []struct {
		name   string
		at     []time.Duration
		lo, hi float64
	}{
		{"steady, 100 ms answers", steady, 99.5, 100.5},
		{"at most 50 rps", capped, 49.5, 50.5},
		{"steady, a few slow answers and the last one", tail, 99, 101},
	} {
		got := carriedRate(arrivals(c.at...).arrive, -1)
		t.Logf("%s: carried %.2f rps; answers over t0 to the last outcome %.2f rps", c.name, got, drainEnd(c.at))
		if got < c.lo || got > c.hi {
			t.Errorf("%s: carried %.2f rps, want %g–%g", c.name, got, c.lo, c.hi)
		}
	}
	if a := drainEnd(steady); a >= 0.97*rate {
		t.Errorf("answers over t0 to the last outcome %.2f rps: the test means to show that count below 97 %%", a)
	}
	if got := carriedRate(arrivals(time.Second).arrive, 7); got != 7 {
		t.Errorf("one answer: carried %v, want the fallback", got)
	}
}
