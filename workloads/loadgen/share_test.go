package loadgen

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// slotRec is one request as a test sees it: its intended time after the
// pass's start and its object.
type slotRec struct {
	at  time.Duration
	obj int
}

// recorder keeps every request's slot and corrected TTFB, from any number
// of generators at once.
type recorder struct {
	mu    sync.Mutex
	start time.Time
	slots []slotRec
	ttfb  []time.Duration
	done  []time.Duration // when each answer ended, after start
}

func (r *recorder) onRecord(_ int, rec *Record, _ BodyCheck) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.slots = append(r.slots, slotRec{at: rec.Intended.Sub(r.start), obj: rec.Object})
	if rec.Err == "" {
		r.ttfb = append(r.ttfb, rec.TTFB)
		r.done = append(r.done, rec.Intended.Add(rec.Total).Sub(r.start))
	}
}

func (r *recorder) sorted() []slotRec {
	out := slices.Clone(r.slots)
	sort.Slice(out, func(i, j int) bool { return out[i].at < out[j].at })
	return out
}

// runShares runs pass on of generators at once, generator i with shards[i]
// event loops and Share{i, of}, all from the same instant.
func runShares(t *testing.T, url string, shards []int, pass Pass, rec *recorder) []*Result {
	t.Helper()
	gens := make([]*Generator, len(shards))
	for i, n := range shards {
		gens[i] = newGen(t, Options{URL: url, Connections: 8, Shards: n, OnRecord: rec.onRecord})
	}
	pass.StartAt = time.Now().Add(100 * time.Millisecond)
	rec.start = pass.StartAt
	out := make([]*Result, len(gens))
	errs := make([]error, len(gens))
	var wg sync.WaitGroup
	for i, g := range gens {
		p := pass
		p.Share = Share{Index: i, Of: len(gens)}
		wg.Go(func() { out[i], errs[i] = g.Run(context.Background(), p) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("generator %d: %v", i, err)
		}
	}
	return out
}

// A pass split over several generators sends exactly the schedule one
// generator sends: the same slots at the same intended times, each asking
// for the same object, however many generators and event loops split it.
func TestShareSplitsOneSchedule(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("x")) }))
	defer srv.Close()
	paths := []string{"/a", "/b", "/c", "/d", "/e"}
	for _, arrival := range []Arrival{Uniform, Poisson} {
		pass := Pass{Rate: 2000, Duration: 400 * time.Millisecond, Arrival: arrival, Seed: 11, Paths: paths, Zipf: 1}
		one, split := &recorder{}, &recorder{}
		runShares(t, srv.URL, []int{2}, pass, one)
		parts := runShares(t, srv.URL, []int{1, 2, 1}, pass, split)
		a, b := one.sorted(), split.sorted()
		if len(a) != len(b) || len(a) < 600 {
			t.Fatalf("%s: one generator sent %d requests, three %d", arrival, len(a), len(b))
		}
		for i := range a {
			if d := a[i].at - b[i].at; d < -2*time.Microsecond || d > 2*time.Microsecond || a[i].obj != b[i].obj {
				t.Fatalf("%s: slot %d: one generator %v (object %d), three %v (object %d)", arrival, i, a[i].at, a[i].obj, b[i].at, b[i].obj)
			}
		}
		var sum float64
		for i, r := range parts {
			sum += r.Target
			if r.Shards != []int{1, 2, 1}[i] {
				t.Errorf("%s: generator %d ran %d loops", arrival, i, r.Shards)
			}
		}
		if math.Abs(sum-2000) > 1e-9 {
			t.Errorf("%s: the parts' targets add up to %v rps, want 2000", arrival, sum)
		}
		if arrival == Uniform {
			for i, r := range parts {
				if want := []int64{267, 267, 266}[i]; r.Requests != want {
					t.Errorf("uniform: generator %d sent %d of 800 slots, want %d", i, r.Requests, want)
				}
			}
		}
	}
}

// The merged result of a split pass holds exactly the requests of its
// parts: its histogram equals the one made from every part's records.
func TestMergeSharesIsExact(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(time.Duration(len(r.URL.Path)) * 100 * time.Microsecond)
		w.Write([]byte("x"))
	}))
	defer srv.Close()
	rec := &recorder{}
	parts := runShares(t, srv.URL, []int{1, 1}, Pass{Rate: 1000, Duration: 300 * time.Millisecond,
		Paths: []string{"/a", "/bbbb", "/cccccccc"}, Seed: 3}, rec)
	// Through the wire, as an agent's results come.
	for i, r := range parts {
		b, err := r.MarshalWire()
		if err != nil {
			t.Fatal(err)
		}
		if parts[i], err = UnmarshalWire(b); err != nil {
			t.Fatal(err)
		}
		if parts[i].Valid != r.Valid || !slices.Equal(parts[i].InvalidReasons, r.InvalidReasons) || !parts[i].TTFB.Equals(r.TTFB) {
			t.Fatalf("generator %d through the wire: valid %v %v, want %v %v", i, parts[i].Valid, parts[i].InvalidReasons, r.Valid, r.InvalidReasons)
		}
	}
	m := MergeShares(parts)
	want := NewHistogram()
	for _, d := range rec.ttfb {
		Clamp(want, int64(d))
	}
	if !m.TTFB.Equals(want) {
		t.Errorf("merged TTFB: %d values, p99 %d; the records': %d values, p99 %d", m.TTFB.TotalCount(), m.TTFB.ValueAtQuantile(99),
			want.TotalCount(), want.ValueAtQuantile(99))
	}
	if m.Requests != 300 || m.OK != 300 || m.Target != 1000 || m.Connections != 16 || m.Shards != 2 {
		t.Errorf("merged: requests %d ok %d target %v connections %d loops %d, want 300 300 1000 16 2", m.Requests, m.OK, m.Target, m.Connections, m.Shards)
	}
	// The carried rate is the records' answers' over the time they took
	// to arrive, side by side from the common start.
	arr := newArrivals()
	for _, d := range rec.done {
		_ = arr.RecordValue(max(d.Microseconds(), 1))
	}
	if w := carriedRate(arr, -1); math.Abs(m.CarriedRPS-w) > 0.01*w {
		t.Errorf("merged carried rate %.1f rps, the records' %.1f rps", m.CarriedRPS, w)
	}
}

// A part's check that is not lateness makes the merged pass invalid, named
// by the generator it came from.
func TestMergeSharesKeepsChecks(t *testing.T) {
	a, b := &Result{TTFB: NewHistogram(), Total: NewHistogram()}, &Result{TTFB: NewHistogram(), Total: NewHistogram()}
	for _, r := range []*Result{a, b} {
		r.TTFBFromDispatch, r.TotalFromDispatch = NewHistogram(), NewHistogram()
		r.OK, r.Requests = 1, 1
		Clamp(r.TTFB, 1e6)
		Clamp(r.TTFBFromDispatch, 1e6)
		Clamp(r.Total, 1e6)
		Clamp(r.TotalFromDispatch, 1e6)
	}
	b.checks = []string{"generator CPU saturated"}
	m := MergeShares([]*Result{a, b})
	if m.Valid || len(m.InvalidReasons) != 1 || m.InvalidReasons[0] != "generator 2: generator CPU saturated" {
		t.Errorf("merged: valid %v %q, want invalid for generator 2", m.Valid, m.InvalidReasons)
	}
}

// A shared pass is checked before it runs.
func TestShareConfigErrors(t *testing.T) {
	at := time.Now().Add(time.Hour)
	for _, c := range []struct {
		p     Pass
		field string
	}{
		{Pass{Rate: 10, Duration: time.Second, Share: Share{Index: 2, Of: 2}}, "share"},
		{Pass{Rate: 10, Duration: time.Second, Share: Share{Index: 1}}, "share"},
		{Pass{Rate: 10, Duration: time.Second, Share: Share{Of: -1}}, "share"},
		{Pass{Duration: time.Second, Plan: func(int) Plan { return nil }, Share: Share{Of: 2}}, "share"},
		{Pass{Rate: 10, Duration: time.Second, Arrival: Poisson, Share: Share{Of: 2}}, "seed"},
		{Pass{Rate: 10, Duration: time.Second, StartAt: at}, "start_at"},
		{Pass{Burst: 9, Share: Share{Index: 0, Of: 2}}, "burst"}, // 5 of 9 on a pool of 4
	} {
		var ce *ConfigError
		if err := c.p.Validate(4); !asCE(err, &ce) || ce.Field != c.field {
			t.Errorf("%+v: %v, want a %s error", c.p.Share, err, c.field)
		}
	}
	if err := (&Pass{Burst: 8, Share: Share{Index: 1, Of: 2}}).Validate(4); err != nil {
		t.Errorf("a burst of 8 over 2 generators with 4 connections each: %v", err)
	}
}

// A burst and a request count are the whole pass's: split, each generator
// sends its slots of them.
func TestShareCounts(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("x")) }))
	defer srv.Close()
	parts := runShares(t, srv.URL, []int{1, 2, 1}, Pass{Requests: 100, Duration: 10 * time.Second}, &recorder{})
	for i, want := range []int64{34, 33, 33} {
		if parts[i].Requests != want {
			t.Errorf("100 requests over 3 generators: generator %d sent %d, want %d", i, parts[i].Requests, want)
		}
	}
	parts = runShares(t, srv.URL, []int{1, 2}, Pass{Burst: 16}, &recorder{})
	for i, r := range parts {
		if r.Requests != 8 || r.Mode != "burst" {
			t.Errorf("a burst of 16 over 2 generators: generator %d sent %d (%s), want 8", i, r.Requests, r.Mode)
		}
	}
	if m := MergeShares(parts); m.Requests != 16 || m.OK != 16 {
		t.Errorf("merged burst: %d requests, %d ok, want 16", m.Requests, m.OK)
	}
}

// A pass whose start instant has passed does not run late: it fails.
func TestStartAtPassed(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("x")) }))
	defer srv.Close()
	g := newGen(t, Options{URL: srv.URL, Connections: 1})
	if _, err := g.Run(context.Background(), Pass{Rate: 10, Duration: time.Second, StartAt: time.Now().Add(-time.Second)}); err == nil {
		t.Fatal("a pass that was to start a second ago ran")
	}
	start := time.Now().Add(200 * time.Millisecond)
	r := run(t, g, Pass{Rate: 100, Requests: 5, Duration: time.Second, StartAt: start})
	if !r.Start.Equal(start) || r.Requests != 5 {
		t.Errorf("start %v (want %v), requests %d", r.Start, start, r.Requests)
	}
}

// The checks that are the instrument's (a saturated event loop, a
// generator host's clock: Invalidate) are said apart from the server's,
// through the wire and a merge, so that a pass's class is recorded where
// it is judged (issue 50); a check of the server's is not among them.
func TestInstrumentChecks(t *testing.T) {
	mk := func() *Result {
		r := &Result{TTFB: NewHistogram(), Total: NewHistogram(), TTFBFromDispatch: NewHistogram(), TotalFromDispatch: NewHistogram()}
		r.OK, r.Requests = 1, 1
		for _, h := range []*hdr.Histogram{r.TTFB, r.Total, r.TTFBFromDispatch, r.TotalFromDispatch} {
			Clamp(h, 1e6)
		}
		for _, h := range wireHists(r) {
			if *h == nil {
				*h = NewHistogram()
			}
		}
		return r
	}
	a, b := mk(), mk()
	a.checks = []string{"3 of 9 requests were dropped"}
	clock := "the generator host's clock moved 9 ms during the pass"
	b.Invalidate(clock)
	if b.Valid || !slices.Equal(b.InstrumentChecks(), []string{clock}) {
		t.Fatalf("invalidated: valid %v, instrument checks %q, want %q", b.Valid, b.InstrumentChecks(), clock)
	}
	wb, err := b.MarshalWire()
	if err != nil {
		t.Fatal(err)
	}
	if b, err = UnmarshalWire(wb); err != nil {
		t.Fatal(err)
	}
	m := MergeShares([]*Result{a, b})
	want := "generator 2: " + clock
	if !slices.Equal(m.InstrumentChecks(), []string{want}) || !slices.Contains(m.InvalidReasons, want) || len(m.InvalidReasons) != 2 {
		t.Errorf("merged: reasons %q, instrument checks %q; want both reasons, %q alone the instrument's", m.InvalidReasons, m.InstrumentChecks(), want)
	}
}
