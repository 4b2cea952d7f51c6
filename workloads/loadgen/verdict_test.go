package loadgen

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A pass without a successful request has no figure: it is invalid, every
// latency value is null in JSON and a dash in text, and it says why, with
// the errors' own messages.
func TestNoSuccessHasNoFigures(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	g := newGen(t, Options{URL: srv.URL, Connections: 4})
	r := run(t, g, Pass{Rate: 100, Duration: 500 * time.Millisecond})
	if r.OK != 0 || r.Requests != 50 {
		t.Fatalf("ok %d requests %d", r.OK, r.Requests)
	}
	want := "no successful request: 50 of 50 failed (status 50)"
	if r.Valid || !strings.Contains(strings.Join(r.InvalidReasons, "\n"), want) {
		t.Errorf("valid %v %q, want invalid: %s", r.Valid, r.InvalidReasons, want)
	}
	if len(r.ErrorSamples) != 1 || r.ErrorSamples[0] != (ErrorSample{Kind: "status", Message: "status 404 (want 200)", Count: 50}) {
		t.Errorf("error samples %+v, want 50 × status 404 (want 200)", r.ErrorSamples)
	}
	b, err := json.Marshal(r.Summary())
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	for _, k := range []string{"ttfb", "ttfb_uncorrected", "ttfb_from_dispatch", "total", "total_uncorrected", "total_from_dispatch"} {
		l, ok := m[k].(map[string]any)
		if !ok {
			t.Fatalf("%s: %v, want an object", k, m[k])
		}
		for _, p := range []string{"p50_ms", "p90_ms", "p95_ms", "p99_ms", "p999_ms", "max_ms"} {
			if v, ok := l[p]; !ok || v != nil {
				t.Errorf("%s.%s = %v (present %v), want null", k, p, v, ok)
			}
		}
	}
	if m["schedule_lag"].(map[string]any)["p99_ms"] == nil {
		t.Error("schedule lag was measured, want a value")
	}
	var text bytes.Buffer
	r.WriteText(&text)
	for _, s := range []string{"—", want, "status 404 (want 200)"} {
		if !strings.Contains(text.String(), s) {
			t.Errorf("text lacks %q:\n%s", s, text.String())
		}
	}
	for _, line := range strings.Split(text.String(), "\n") {
		if (strings.Contains(line, "TTFB") || strings.Contains(line, "total")) && strings.ContainsAny(line, "0123456789") &&
			!strings.Contains(line, "invalid") && !strings.Contains(line, "Requests") && !strings.Contains(line, "warning") {
			t.Errorf("text prints a figure nobody measured: %q", line)
		}
	}
}

// The generator made late on purpose moves every figure of a fast server
// by its lateness: the pass is invalid and says by how much.
func TestLateGeneratorIsInvalid(t *testing.T) {
	url := zeroAllocServer(t, fixedResponse(100))
	g := newGen(t, Options{URL: url, Connections: 4})
	r := run(t, g, Pass{Rate: 200, Duration: 500 * time.Millisecond, lateBy: 3 * time.Millisecond})
	if r.OK != 100 {
		t.Fatalf("ok %d of 100: %v", r.OK, r.ErrorsByKind)
	}
	var p50 LagEffect
	for _, e := range r.LagEffects {
		if e.Figure == "ttfb" && e.Quantile == 50 {
			p50 = e
		}
	}
	t.Logf("ttfb p50 corrected %v from dispatch %v; reasons %q", p50.Corrected, p50.FromDispatch, r.InvalidReasons)
	if moved := p50.Corrected - p50.FromDispatch; !p50.Exceeded || moved < 2500*time.Microsecond {
		t.Errorf("TTFB p50 moved %v (exceeded %v), want about the 3 ms of lateness", moved, p50.Exceeded)
	}
	valid, why := r.Verdict(50, 99)
	if valid || r.Valid || !strings.Contains(strings.Join(why, "\n"), "lateness moved TTFB p50") ||
		!strings.Contains(strings.Join(why, "\n"), "lower the rate") {
		t.Errorf("Verdict(50, 99) %v %q, want invalid naming TTFB p50 and what to do", valid, why)
	}
	// Only non-lateness checks without a quantile.
	if valid, why := r.Verdict(); !valid {
		t.Errorf("Verdict() %v %q, want valid: nothing but lateness is wrong", valid, why)
	}
}

// A little lateness on a slow server moves nothing that matters: 2 ms on
// a 200 ms answer is within the 5% tolerance (10 ms), so the pass stays
// valid (a fixed "schedule lag p99 over 1 ms" rule would have failed it).
func TestSmallLagOnSlowServerIsValid(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(200 * time.Millisecond)
		w.Write([]byte("x"))
	}))
	defer srv.Close()
	g := newGen(t, Options{URL: srv.URL, Connections: 20})
	// The pass sends 2 ms late on purpose. A shared machine can add a
	// hiccup of its own (12 ms was seen under -race), which rightly
	// invalidates the pass: such a pass proves nothing here, so up to
	// three are tried for one whose lateness stayed well under the
	// tolerance (at most 8 ms: CI under -race saw 5.7 to 9.7 ms).
	for attempt := 1; attempt <= 3; attempt++ {
		r := run(t, g, Pass{Rate: 50, Duration: time.Second, lateBy: 2 * time.Millisecond})
		lag := time.Duration(r.ScheduleLag.ValueAtQuantile(99))
		t.Logf("attempt %d: ok %d schedule lag p99 %v valid %v %q", attempt, r.OK, lag, r.Valid, r.InvalidReasons)
		if r.OK != 50 || lag < 2*time.Millisecond {
			t.Fatalf("ok %d, schedule lag p99 %v: want 50 answers sent 2 ms late", r.OK, lag)
		}
		if lag > 8*time.Millisecond {
			continue // the machine's hiccup, near the 10 ms tolerance
		}
		if !r.Valid {
			t.Errorf("invalid %q, want valid: the lateness moved no figure past its tolerance", r.InvalidReasons)
		}
		if len(r.LagEffects) != 12 {
			t.Errorf("%d lag effects, want 6 quantiles of TTFB and total", len(r.LagEffects))
		}
		return
	}
	t.Fatal("every attempt was more than 8 ms late: the machine is too busy to test this")
}

// An event loop's CPU share is over its sending window, not over the wait
// for the last answers: a loop kept busy while sending, then idle through
// a long tail, still reads busy.
func TestCPUShareOverSendingWindow(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 40 {
			time.Sleep(1200 * time.Millisecond) // the tail
		}
		w.Write([]byte("x"))
	}))
	defer srv.Close()
	// Each outcome costs the loop 6 ms of its own CPU: at 100 rps about
	// 60% of a core while sending.
	burn := func(int, *Record, BodyCheck) {
		for c0 := threadCPU(); threadCPU()-c0 < 6*time.Millisecond; {
		}
	}
	g := newGen(t, Options{URL: srv.URL, Connections: 4, Shards: 1, OnRecord: burn})
	r := run(t, g, Pass{Rate: 100, Duration: 400 * time.Millisecond})
	t.Logf("ok %d elapsed %v shard CPU %v", r.OK, r.Elapsed, r.ShardCPU)
	if r.OK != 40 || r.Elapsed < 1500*time.Millisecond {
		t.Fatalf("ok %d elapsed %v, want 40 answers and a tail of over a second", r.OK, r.Elapsed)
	}
	// Over the whole pass (1.6 s) the share would be at most 0.25.
	if r.ShardCPU[0] < 0.35 {
		t.Errorf("CPU share %.2f, want the sending window's (about 0.6)", r.ShardCPU[0])
	}
}
