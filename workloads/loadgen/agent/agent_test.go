package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hlsbench/hlsbench/workloads/loadgen"
	"github.com/hlsbench/hlsbench/workloads/loadgen/loadgentest"
)

// startAgent serves an agent on loopback, as `hlsbench agent` does.
func startAgent(t *testing.T, skew time.Duration) *Client {
	t.Helper()
	return startAgentWith(t, skew, nil)
}

// startAgentWith is startAgent with the agent's generators' OnRecord.
func startAgentWith(t *testing.T, skew time.Duration, onRecord func(int, *loadgen.Record, loadgen.BodyCheck)) *Client {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := NewServer()
	s.Skew, s.OnRecord = skew, onRecord
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("agent: %v", err)
		}
	})
	return &Client{URL: "http://" + ln.Addr().String(), HTTP: &http.Client{}}
}

// openParts opens one generator on each agent against url.
func openParts(t *testing.T, url string, skews ...time.Duration) []Part {
	t.Helper()
	var parts []Part
	for i, skew := range skews {
		c := startAgent(t, skew)
		r, err := c.Open(context.Background(), GeneratorSpec{URL: url, Connections: 50, Shards: 1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close(context.Background()) })
		parts = append(parts, Part{Name: "generator host " + string(rune('A'+i)), Remote: r})
	}
	return parts
}

func okServer() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("x")) }))
}

// Two agents carry one pass: every slot is sent once, the clocks of agents
// on this host agree with the controller's, and the pass is valid.
func TestSharedPass(t *testing.T) {
	srv := okServer()
	defer srv.Close()
	parts := openParts(t, srv.URL, 0, 0)
	m, reps, err := Shared(context.Background(), parts, PassSpec{Rate: 1000, Duration: time.Second}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if m.Requests != 1000 || m.OK != 1000 || m.Target != 1000 {
		t.Errorf("requests %d ok %d target %v, want 1000 1000 1000", m.Requests, m.OK, m.Target)
	}
	for _, r := range reps {
		if r.Result.Requests != 500 {
			t.Errorf("%s sent %d, want 500", r.Name, r.Result.Requests)
		}
		if r.Before.Offset.Abs() > time.Millisecond || r.Before.Samples != ClockSamples {
			t.Errorf("%s: offset %v from %d samples on one host, want under 1 ms from %d", r.Name, r.Before.Offset, r.Before.Samples, ClockSamples)
		}
		for _, why := range r.Result.InvalidReasons {
			if strings.Contains(why, "clock") || strings.Contains(why, "started") {
				t.Errorf("%s: %s", r.Name, why)
			}
		}
	}
}

// An agent whose clock is a quarter second ahead is found out: its offset
// is measured and the pass is invalid with it, yet it starts with the
// others (its start instant is read on its own clock).
func TestSkewedClockIsFound(t *testing.T) {
	srv := okServer()
	defer srv.Close()
	parts := openParts(t, srv.URL, 0, 250*time.Millisecond)
	m, reps, err := Shared(context.Background(), parts, PassSpec{Rate: 200, Duration: 500 * time.Millisecond}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if off := reps[1].Before.Offset; off < 249*time.Millisecond || off > 251*time.Millisecond {
		t.Errorf("skewed agent's offset %v, want 250 ms", off)
	}
	if strings.Contains(strings.Join(reps[0].Result.InvalidReasons, " "), "clock") {
		t.Errorf("the agent with a good clock is blamed: %v", reps[0].Result.InvalidReasons)
	}
	found := false
	for _, why := range m.InvalidReasons {
		found = found || strings.HasPrefix(why, "generator 2: generator host B's clock is ") && strings.Contains(why, " ms ahead of the controller's")
	}
	if m.Valid || !found {
		t.Errorf("merged: valid %v, reasons %q; want invalid for host B's clock", m.Valid, m.InvalidReasons)
	}
	// Each part's start is on this host's clock, the one they share here.
	if d := reps[0].Result.Start.Sub(reps[1].Result.Start).Abs(); d > 2*time.Millisecond {
		t.Errorf("the parts started %v apart, want together", d)
	}
}

// The coordinated-omission test across two agents: a server that stalls
// every request arriving in a one-second window, at 1000 rps for 10 s,
// gives a merged corrected p99 of about 900 ms, as one generator does.
func TestSharedStallIsCorrected(t *testing.T) {
	if testing.Short() {
		t.Skip("10 s run")
	}
	srv := httptest.NewServer(loadgentest.StallHandler(4*time.Second, time.Second))
	defer srv.Close()
	// Every request either agent sent, as it recorded it.
	var mu sync.Mutex
	recs := loadgen.NewHistogram()
	onRecord := func(_ int, rec *loadgen.Record, _ loadgen.BodyCheck) {
		if rec.Err == "" {
			mu.Lock()
			loadgen.Clamp(recs, int64(rec.TTFB))
			mu.Unlock()
		}
	}
	var parts []Part
	for i := range 2 {
		r, err := startAgentWith(t, 0, onRecord).Open(context.Background(), GeneratorSpec{URL: srv.URL, Connections: 50, Shards: 1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close(context.Background()) })
		parts = append(parts, Part{Name: fmt.Sprintf("generator host %d", i+1), Remote: r})
	}
	m, _, err := Shared(context.Background(), parts, PassSpec{Rate: 1000, Duration: 10 * time.Second}, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The merged histogram, from the agents' histograms through the wire,
	// is the histogram of every record of both agents.
	if !m.TTFB.Equals(recs) {
		t.Errorf("merged TTFB: %d values, p99 %v; the agents' records: %d values, p99 %v", m.TTFB.TotalCount(),
			time.Duration(m.TTFB.ValueAtQuantile(99)), recs.TotalCount(), time.Duration(recs.ValueAtQuantile(99)))
	}
	p99 := time.Duration(m.TTFB.ValueAtQuantile(99))
	t.Logf("merged: requests %d, TTFB p99 %v, uncorrected p99 %v", m.Requests, p99, time.Duration(m.TTFBUncorrected.ValueAtQuantile(99)))
	if m.Requests != 10000 || m.Errors != 0 {
		t.Errorf("requests %d errors %d, want 10000 and 0", m.Requests, m.Errors)
	}
	if p99 < 850*time.Millisecond || p99 > 990*time.Millisecond {
		t.Errorf("merged corrected TTFB p99 %v, want about 900 ms", p99)
	}
}

// A setting an agent refuses comes back naming the setting, and a pass
// whose part is refused fails whole.
func TestAgentRefusals(t *testing.T) {
	srv := okServer()
	defer srv.Close()
	c := startAgent(t, 0)
	_, err := c.Open(context.Background(), GeneratorSpec{URL: "ftp://x", Connections: 1})
	var ae *Error
	if !errors.As(err, &ae) || ae.Field != "url" || ae.Status != http.StatusBadRequest {
		t.Fatalf("open ftp://: %v, want a url error", err)
	}
	parts := openParts(t, srv.URL, 0, 0)
	_, _, err = Shared(context.Background(), parts, PassSpec{Burst: 500}, 0) // 250 each on 50 connections
	if !errors.As(err, &ae) || ae.Field != "burst" {
		t.Fatalf("a burst past the pools: %v, want a burst error", err)
	}
	if err := parts[0].Remote.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := parts[0].Remote.Run(context.Background(), PassSpec{Rate: 1, Duration: time.Second}); !errors.As(err, &ae) || ae.Status != http.StatusNotFound {
		t.Fatalf("a pass on a closed generator: %v, want not found", err)
	}
}

// Cancelling a shared pass (the controller's Ctrl-C) interrupts every
// agent, and the pass keeps what they measured.
func TestSharedInterrupted(t *testing.T) {
	srv := okServer()
	defer srv.Close()
	parts := openParts(t, srv.URL, 0, 0)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(1500*time.Millisecond, cancel)
	begun := time.Now()
	m, reps, err := Shared(ctx, parts, PassSpec{Rate: 200, Duration: 20 * time.Second}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(begun); took > 10*time.Second {
		t.Errorf("the interrupted pass ended after %v", took)
	}
	if !m.Interrupted || m.Requests < 100 || m.Requests > 400 {
		t.Errorf("merged: interrupted %v after %d requests, want interrupted after about 250", m.Interrupted, m.Requests)
	}
	for _, r := range reps {
		if !r.Result.Interrupted || r.After.Samples != ClockSamples {
			t.Errorf("%s: interrupted %v, clock after from %d samples", r.Name, r.Result.Interrupted, r.After.Samples)
		}
	}
}

// A pass that asks for its records gets every request of every part, on
// its agent's clock, with the headers the generator captures.
func TestSharedRecords(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Stamp", "1234567")
		w.Write([]byte("x"))
	}))
	defer srv.Close()
	var parts []Part
	for i := range 2 {
		r, err := startAgent(t, 0).Open(context.Background(), GeneratorSpec{URL: srv.URL, Connections: 10, Shards: 1, Capture: []string{"X-Stamp", "X-None"}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close(context.Background()) })
		parts = append(parts, Part{Name: fmt.Sprintf("generator host %d", i+1), Remote: r})
	}
	m, reps, err := Shared(context.Background(), parts, PassSpec{Rate: 200, Duration: 500 * time.Millisecond, Records: true}, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, rep := range reps {
		for _, rec := range rep.Records {
			n++
			if rec.Status != 200 || len(rec.Captured) != 2 || rec.Captured[0] != 1234567 || rec.Captured[1] != 0 || rec.TTFB <= 0 || rec.Shard != 0 {
				t.Fatalf("%s: record %+v", rep.Name, rec)
			}
		}
	}
	if n != int(m.Requests) || n != 100 {
		t.Errorf("%d records of %d requests, want 100", n, m.Requests)
	}
	// A pass that does not ask gets none.
	_, reps, err = Shared(context.Background(), parts, PassSpec{Rate: 200, Duration: 200 * time.Millisecond}, 0)
	if err != nil || len(reps[0].Records)+len(reps[1].Records) != 0 {
		t.Errorf("records of a pass that did not ask: %v", err)
	}
}
