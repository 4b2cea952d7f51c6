package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/pem"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"golang.org/x/sys/unix"

	"github.com/hlsbench/hlsbench/workloads/loadgen/loadgentest"
)

// ChecksumHeader is the header the tests' servers declare a body's CRC-32C
// in (the origin's, which this package does not import).
const ChecksumHeader = "X-Hlsbench-Crc32c"

func newGen(t testing.TB, o Options) *Generator {
	t.Helper()
	if o.ChecksumHeader == "" {
		o.ChecksumHeader = ChecksumHeader
	}
	g, err := New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

func run(t testing.TB, g *Generator, p Pass) *Result {
	t.Helper()
	r, err := g.Run(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func msOf(ns int64) float64 { return float64(ns) / 1e6 }

// The coordinated-omission test: a server that holds every request arriving
// in a one-second window. At 1000 rps for 10 s, 1000 of 10000 requests are
// sent (or due) during the stall and wait up to a second, so the corrected p99
// is about 900 ms and p95 about 500 ms, while the 50 requests written before
// the pool filled are too few to move the uncorrected p99.
func TestStallIsCorrected(t *testing.T) {
	if testing.Short() {
		t.Skip("10 s run")
	}
	srv := httptest.NewServer(loadgentest.StallHandler(4*time.Second, time.Second))
	defer srv.Close()

	g := newGen(t, Options{URL: srv.URL, Connections: 50})
	r := run(t, g, Pass{Rate: 1000, Duration: 10 * time.Second})
	s := r.Summary()
	t.Logf("requests %d ttfb p50 %.3f p95 %.1f p99 %.1f ms; uncorrected p99 %.3f ms; lag p99 %.3f ms; valid %v %v; pool limited %v; queued %d",
		s.Requests, val(s.TTFB.P50), val(s.TTFB.P95), val(s.TTFB.P99), val(s.TTFBUncorrected.P99), val(s.ScheduleLag.P99), s.Valid, s.InvalidReasons, s.PoolLimited, s.Queued)
	if s.Requests != 10000 || s.Errors != 0 {
		t.Errorf("requests %d errors %d, want 10000 and 0", s.Requests, s.Errors)
	}
	// Under the race detector the server's handlers run several times
	// slower, so the pool drains the stall's backlog later: the upper
	// margins widen (the lower ones are the stall itself and stay).
	hi99, hi95 := 950.0, 550.0
	if raceEnabled {
		hi99, hi95 = 990, 650
	}
	if val(s.TTFB.P99) < 850 || val(s.TTFB.P99) > hi99 {
		t.Errorf("corrected TTFB p99 %.1f ms, want 850–%.0f", val(s.TTFB.P99), hi99)
	}
	if val(s.TTFB.P95) < 450 || val(s.TTFB.P95) > hi95 {
		t.Errorf("corrected TTFB p95 %.1f ms, want 450–%.0f", val(s.TTFB.P95), hi95)
	}
	if val(s.TTFBUncorrected.P99) >= 50 {
		t.Errorf("uncorrected TTFB p99 %.1f ms, want under 50", val(s.TTFBUncorrected.P99))
	}
	// The stall must not be blamed on the generator: the quantiles the
	// stall is in stay valid. At the fast answers' p50 the loop, sharing
	// its process with the server on a busy machine (and under the race
	// detector always), may be late by more than the 0.05 ms tolerance,
	// which is true but not this test's subject.
	if ok, why := r.Verdict(95, 99, 99.9, 100); !ok {
		t.Errorf("invalid at the stall's quantiles: %v", why)
	}
	if !s.PoolLimited {
		t.Error("pool_limited false, want true: every connection was held")
	}
	// Requests queued behind the stalled pool waited for the server, not
	// for the generator: from dispatch, the stall is all there.
	for _, e := range r.LagEffects {
		if (e.Exceeded && e.Quantile >= 95) || (e.Quantile == 99 && e.FromDispatch < 850*time.Millisecond) {
			t.Errorf("lag effect %+v: the stall is the server's, not the generator's", e)
		}
	}
}

// Headers at once, body 200 ms later: TTFB is the first byte, not the last.
func TestTTFBIsFirstByte(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "5")
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		time.Sleep(200 * time.Millisecond)
		w.Write([]byte("hello"))
	}))
	defer srv.Close()
	g := newGen(t, Options{URL: srv.URL, Connections: 10})
	r := run(t, g, Pass{Rate: 20, Duration: 2 * time.Second})
	s := r.Summary()
	if s.OK != 40 {
		t.Fatalf("ok %d of %d, want 40: %v", s.OK, s.Requests, s.ErrorsByKind)
	}
	if val(s.TTFB.P50) >= 20 {
		t.Errorf("TTFB p50 %.3f ms, want < 20", val(s.TTFB.P50))
	}
	if val(s.Total.P50) < 200 {
		t.Errorf("total p50 %.3f ms, want ≥ 200", val(s.Total.P50))
	}
}

func crcHex(b []byte) string {
	return fmt.Sprintf("%08x", crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
}

// Each failure is counted under its own kind and kept out of the latency
// histograms; timeouts are recorded at the timeout value.
func TestErrorKinds(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789"), 100)
	cases := []struct {
		name    string
		handler http.HandlerFunc
		header  [][2]string
		kind    string
		msg     string // the first error sample's message
	}{
		{"status", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(503)
		}, nil, "status", "status 503 (want 200)"},
		{"short_body", func(w http.ResponseWriter, r *http.Request) {
			conn, buf, _ := w.(http.Hijacker).Hijack()
			buf.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n")
			buf.Write(body[:500])
			buf.Flush()
			conn.Close()
		}, nil, "short_body", "short body: 500 of 1000 bytes"},
		{"checksum", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set(ChecksumHeader, crcHex(body))
			b := append([]byte(nil), body...)
			b[700] ^= 1 // same length, one bit wrong
			w.Write(b)
		}, nil, "checksum", "checksum mismatch"},
		{"range", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Range", "bytes 1-100/1000")
			w.WriteHeader(206)
			w.Write(body[1:101])
		}, [][2]string{{"Range", "bytes=0-99"}}, "range", "range: Content-Range bytes 1-100 does not answer the request"},
		{"protocol", func(w http.ResponseWriter, r *http.Request) {
			conn, buf, _ := w.(http.Hijacker).Hijack()
			buf.WriteString("HTTP/1.1 2OO OK\r\n\r\n")
			buf.Flush()
			conn.Close()
		}, nil, "protocol", "malformed response header"},
		{"io", func(w http.ResponseWriter, r *http.Request) {
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
		}, nil, "io", "connection closed before any byte of the answer"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			g := newGen(t, Options{URL: srv.URL, Connections: 4, Header: tc.header})
			r := run(t, g, Pass{Rate: 100, Duration: 500 * time.Millisecond})
			if r.Requests != 50 || r.ErrorsByKind[tc.kind] != 50 || r.Errors != 50 {
				t.Fatalf("requests %d errors %v, want 50 of kind %s", r.Requests, r.ErrorsByKind, tc.kind)
			}
			if n := r.TTFB.TotalCount(); n != 0 {
				t.Errorf("%d failed requests in the latency histogram, want none", n)
			}
			if len(r.ErrorSamples) == 0 || r.ErrorSamples[0].Kind != tc.kind || !strings.HasPrefix(r.ErrorSamples[0].Message, tc.msg) {
				t.Errorf("error samples %+v, want %s first", r.ErrorSamples, tc.msg)
			}
		})
	}

	t.Run("timeout", func(t *testing.T) {
		block := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-block:
			case <-r.Context().Done():
			}
		}))
		defer srv.Close()
		defer close(block)
		g := newGen(t, Options{URL: srv.URL, Connections: 4, Timeout: 200 * time.Millisecond})
		start := time.Now()
		r := run(t, g, Pass{Rate: 100, Duration: 500 * time.Millisecond})
		if el := time.Since(start); el > 500*time.Millisecond+200*time.Millisecond+300*time.Millisecond {
			t.Errorf("pass took %v, want at most duration + timeout (+ slack)", el)
		}
		if r.Requests != 50 || r.ErrorsByKind["timeout"] != 50 {
			t.Fatalf("requests %d errors %v, want 50 timeouts", r.Requests, r.ErrorsByKind)
		}
		if r.TTFB.TotalCount() != 50 {
			t.Errorf("%d timeouts in the TTFB histogram, want 50", r.TTFB.TotalCount())
		}
		if got := msOf(r.TTFB.Max()); got < 199 || got > 201 {
			t.Errorf("timeouts recorded at %.1f ms, want the 200 ms timeout", got)
		}
		if r.SocketsOpened < 8 {
			t.Errorf("sockets opened %d: connections with a timed-out request must be replaced", r.SocketsOpened)
		}
		// Timeouts are recorded at the timeout value, but no latency was
		// measured: the summary has none.
		if s := r.Summary(); s.TTFB.P50 != nil || s.Total.Max != nil || r.Valid {
			t.Errorf("no answer: TTFB p50 %v, total max %v, valid %v; want null figures and invalid", s.TTFB.P50, s.Total.Max, r.Valid)
		}
	})
}

func TestGoodBodiesChunkedRangeAndClose(t *testing.T) {
	body := bytes.Repeat([]byte("abcdefghij"), 10000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(ChecksumHeader, crcHex(body))
		switch r.URL.Path {
		case "/chunked":
			for i := 0; i < len(body); i += 7000 {
				w.Write(body[i:min(i+7000, len(body))])
				w.(http.Flusher).Flush()
			}
		case "/close":
			w.Header().Set("Connection", "close")
			w.Write(body)
		case "/range":
			http.ServeContent(w, r, "x", time.Time{}, bytes.NewReader(body))
		default:
			w.Write(body)
		}
	}))
	defer srv.Close()
	for _, tc := range []struct {
		path   string
		header [][2]string
		status int
	}{
		{"/plain", nil, 200},
		{"/chunked", nil, 200},
		{"/close", nil, 200},
		{"/range", [][2]string{{"Range", "bytes=0-65535"}}, 206},
		{"/range", [][2]string{{"Range", "bytes=-100"}}, 206},
	} {
		g := newGen(t, Options{URL: srv.URL, Connections: 4})
		r := run(t, g, Pass{Path: tc.path, Header: tc.header, Rate: 200, Duration: 250 * time.Millisecond})
		if r.OK != 50 || r.Errors != 0 || r.StatusCodes[tc.status] != 50 {
			t.Errorf("%s %v: ok %d errors %v status %v", tc.path, tc.header, r.OK, r.ErrorsByKind, r.StatusCodes)
		}
		if tc.path == "/close" && r.SocketsOpened < 50 {
			t.Errorf("/close: %d sockets opened for 50 answers that close the connection", r.SocketsOpened)
		}
		if tc.path != "/close" && r.SocketsOpened != 4 {
			t.Errorf("%s: %d sockets opened, want the pool's 4 and no reconnect on keep-alive answers", tc.path, r.SocketsOpened)
		}
	}
}

func TestTLS(t *testing.T) {
	var handshakes atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(bytes.Repeat([]byte("x"), 50000))
	}))
	srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateNew {
			handshakes.Add(1)
		}
	}
	srv.StartTLS()
	defer srv.Close()
	ca := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600)

	g := newGen(t, Options{URL: srv.URL, Connections: 5, CAFile: ca})
	r := run(t, g, Pass{Rate: 200, Duration: 500 * time.Millisecond})
	if r.OK != 100 || r.Errors != 0 {
		t.Fatalf("ok %d errors %v", r.OK, r.ErrorsByKind)
	}
	if n := handshakes.Load(); n != 5 {
		t.Errorf("%d connections, want the pool's 5 opened before t0", n)
	}

	// Without the CA the handshake fails, before any pass.
	if _, err := New(context.Background(), Options{URL: srv.URL, Connections: 1}); err == nil {
		t.Error("untrusted certificate accepted")
	}
	// --insecure accepts it.
	g2 := newGen(t, Options{URL: srv.URL, Connections: 1, Insecure: true})
	if r := run(t, g2, Pass{Requests: 10, Duration: time.Second}); r.OK != 10 {
		t.Errorf("insecure: ok %d", r.OK)
	}
}

func TestTLSResumption(t *testing.T) {
	var resumed atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS.DidResume {
			resumed.Add(1)
		}
		w.Header().Set("Connection", "close")
		w.Write([]byte("x"))
	}))
	srv.StartTLS()
	defer srv.Close()
	g := newGen(t, Options{URL: srv.URL, Connections: 1, TLSConfig: &tls.Config{InsecureSkipVerify: true}})
	r := run(t, g, Pass{Requests: 10, Duration: 5 * time.Second})
	if r.OK != 10 {
		t.Fatalf("ok %d errors %v", r.OK, r.ErrorsByKind)
	}
	if resumed.Load() == 0 {
		t.Error("no TLS session was resumed over 10 reconnects")
	}
	if r.TLS == nil || r.TLS.Handshakes != r.SocketsOpened || r.TLS.Resumed == 0 || r.TLS.Resumed >= r.TLS.Handshakes {
		t.Errorf("TLS %+v for %d sockets: want a handshake per socket, the pool's not resumed, some later ones resumed", r.TLS, r.SocketsOpened)
	}
}

// A burst releases every request at one instant; the server sees them all
// within a few milliseconds.
func TestBurst(t *testing.T) {
	var mu sync.Mutex
	var arrivals []time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		arrivals = append(arrivals, time.Now())
		mu.Unlock()
		time.Sleep(50 * time.Millisecond)
		w.Write([]byte("x"))
	}))
	defer srv.Close()
	g := newGen(t, Options{URL: srv.URL, Connections: 40})
	for rep := 0; rep < 3; rep++ {
		mu.Lock()
		arrivals = nil
		mu.Unlock()
		r := run(t, g, Pass{Burst: 40, Path: fmt.Sprintf("/seg-%d", rep)})
		if r.OK != 40 || r.Mode != "burst" {
			t.Fatalf("burst: ok %d mode %s errors %v", r.OK, r.Mode, r.ErrorsByKind)
		}
		// The handlers appended before answering; the lock orders their
		// writes before these reads for the race detector too.
		mu.Lock()
		arrivals := append([]time.Time(nil), arrivals...)
		mu.Unlock()
		if len(arrivals) != 40 {
			t.Fatalf("server saw %d requests", len(arrivals))
		}
		lo, hi := arrivals[0], arrivals[0]
		for _, a := range arrivals {
			if a.Before(lo) {
				lo = a
			}
			if a.After(hi) {
				hi = a
			}
		}
		if spread := hi.Sub(lo); spread > 40*time.Millisecond {
			t.Errorf("burst spread over %v at the server", spread)
		}
		if msOf(r.TTFB.ValueAtQuantile(50)) < 50 {
			t.Errorf("TTFB p50 %.3f ms, want ≥ the server's 50 ms", msOf(r.TTFB.ValueAtQuantile(50)))
		}
		if want := int64(map[bool]int{true: 40}[rep == 0]); r.SocketsOpened != want {
			t.Errorf("burst %d opened %d sockets, want %d (the pool counts in the first pass)", rep, r.SocketsOpened, want)
		}
	}
	if _, err := g.Run(context.Background(), Pass{Burst: 41}); !IsConfigError(err) {
		t.Errorf("burst larger than the pool: %v, want a config error", err)
	}
}

// The schedule never skips a slot and never waits for answers.
func TestScheduleExact(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("x")) }))
	defer srv.Close()
	g := newGen(t, Options{URL: srv.URL, Connections: 10})
	r := run(t, g, Pass{Rate: 1000, Duration: time.Second})
	if r.Requests != 1000 || r.OK != 1000 {
		t.Errorf("uniform: requests %d ok %d, want exactly 1000", r.Requests, r.OK)
	}
	r = run(t, g, Pass{Rate: 2000, Duration: time.Second, Arrival: Poisson, Seed: 7})
	if r.Requests < 1800 || r.Requests > 2200 {
		t.Errorf("poisson: requests %d, want about 2000", r.Requests)
	}
	r = run(t, g, Pass{Requests: 777, Duration: 10 * time.Second})
	if r.Requests != 777 || r.Mode != "closed" {
		t.Errorf("closed loop with a count: requests %d mode %s", r.Requests, r.Mode)
	}
	if r.Elapsed > 5*time.Second {
		t.Errorf("closed loop with a count: elapsed %v, want the time it took, not the 10 s allowed", r.Elapsed)
	}
}

func TestInterrupt(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(20 * time.Millisecond)
		w.Write([]byte("x"))
	}))
	defer srv.Close()
	g := newGen(t, Options{URL: srv.URL, Connections: 10})
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	r, err := g.Run(ctx, Pass{Rate: 200, Duration: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("interrupted pass returned after %v", el)
	}
	if !r.Interrupted || r.Valid || r.OK < 50 {
		t.Errorf("interrupted %v valid %v ok %d: want interrupted, invalid, with what finished", r.Interrupted, r.Valid, r.OK)
	}
	// The pass ran for half a second, not the 30 s planned.
	if r.Elapsed < 400*time.Millisecond || r.Elapsed > 1500*time.Millisecond || r.AchievedRPS < 150 || r.AchievedRPS > 250 {
		t.Errorf("elapsed %v achieved %.1f rps, want the half second that ran at about 200 rps", r.Elapsed, r.AchievedRPS)
	}
	// The generator is still usable: dropped connections are reopened.
	if r2 := run(t, g, Pass{Requests: 20, Duration: 5 * time.Second}); r2.OK != 20 {
		t.Errorf("after interrupt: ok %d errors %v", r2.OK, r2.ErrorsByKind)
	}
}

func TestHDRLog(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("x")) }))
	defer srv.Close()
	var buf bytes.Buffer
	g := newGen(t, Options{URL: srv.URL, Connections: 4, Shards: 2, HDRLog: &buf})
	r := run(t, g, Pass{Rate: 400, Duration: 2500 * time.Millisecond})
	r2 := run(t, g, Pass{Rate: 400, Duration: 500 * time.Millisecond})
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	rd := hdr.NewHistogramLogReader(&buf)
	counts := map[string]int64{}
	intervals := 0
	for {
		h, err := rd.NextIntervalHistogram()
		if err != nil {
			t.Fatal(err)
		}
		if h == nil {
			break
		}
		intervals++
		counts[h.Tag()] += h.TotalCount()
	}
	want := r.OK + r2.OK
	if counts["ttfb"] != want || counts["total"] != want {
		t.Errorf("log holds ttfb %d total %d samples, want %d each", counts["ttfb"], counts["total"], want)
	}
	if intervals < 8 {
		t.Errorf("%d intervals, want one per second per tag (at least 8)", intervals)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		o     Options
		field string
	}{
		{Options{URL: "ftp://127.0.0.1/"}, "url"},
		{Options{URL: "http:///x"}, "url"},
		{Options{URL: "http://127.0.0.1:99999/"}, "url"},
		{Options{URL: "http://127.0.0.1/", Connections: -1}, "connections"},
		{Options{URL: "http://127.0.0.1/", Timeout: time.Hour}, "timeout"},
		{Options{URL: "http://127.0.0.1/", Method: "POST"}, "method"},
		{Options{URL: "http://127.0.0.1/", Header: [][2]string{{"Bad Name", "x"}}}, "header"},
		{Options{URL: "http://127.0.0.1/", Header: [][2]string{{"Range", "bytes=1-2,4-5"}}}, "header"},
		{Options{URL: "https://127.0.0.1/", CAFile: "/nonexistent/ca.pem"}, "ca"},
		// Two loops on one core would measure each other.
		{Options{URL: "http://127.0.0.1/", CPUs: []int{0, 0}}, "cpus"},
		{Options{URL: "http://127.0.0.1/", CPUs: []int{-1}}, "cpus"},
	} {
		_, err := New(context.Background(), tc.o)
		if tc.field == "header" && err == nil {
			// Range is checked when a pass is built.
			ln, _ := net.Listen("tcp", "127.0.0.1:0")
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					defer c.Close()
				}
			}()
			o := tc.o
			o.URL = "http://" + ln.Addr().String()
			g := newGen(t, o)
			_, err = g.Run(context.Background(), Pass{Requests: 1, Duration: time.Second})
			ln.Close()
		}
		var ce *ConfigError
		if !IsConfigError(err) || !asCE(err, &ce) || ce.Field != tc.field {
			t.Errorf("%+v: %v, want a config error on %s", tc.o, err, tc.field)
		}
	}
	for _, p := range []Pass{{Rate: -1, Duration: time.Second}, {Rate: 1}, {Rate: 1, Duration: -time.Second}, {Burst: -1}} {
		if err := p.Validate(10); !IsConfigError(err) {
			t.Errorf("%+v: %v, want a config error", p, err)
		}
	}
}

func asCE(err error, ce **ConfigError) bool {
	c, ok := err.(*ConfigError)
	*ce = c
	return ok
}

func TestConnectRefused(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	_, err := New(context.Background(), Options{URL: "http://" + addr, Connections: 2})
	if err == nil || !strings.Contains(err.Error(), "connect") {
		t.Errorf("connect to a closed port: %v", err)
	}
}

// A server that goes away mid-run: requests fail as connect errors, each
// counted once, and the pass still ends on time.
func TestServerGoesAway(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go func() {
				br := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					io.Copy(io.Discard, req.Body)
					c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx"))
				}
			}()
		}
	}()
	g := newGen(t, Options{URL: "http://" + ln.Addr().String(), Connections: 2, Timeout: time.Second})
	go func() {
		time.Sleep(300 * time.Millisecond)
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	}()
	start := time.Now()
	r := run(t, g, Pass{Rate: 100, Duration: time.Second})
	if el := time.Since(start); el > 3*time.Second {
		t.Errorf("pass took %v", el)
	}
	if r.Requests != 100 || r.OK < 20 || r.ErrorsByKind["connect"] < 50 {
		t.Errorf("requests %d ok %d errors %v: want 100 with the late ones failing to connect", r.Requests, r.OK, r.ErrorsByKind)
	}
	refused := false
	for _, e := range r.ErrorSamples {
		refused = refused || (e.Kind == "connect" && strings.HasPrefix(e.Message, "connect: connection refused"))
	}
	if !refused {
		t.Errorf("error samples %+v, want connect: connection refused", r.ErrorSamples)
	}
	if r.SocketsOpened > 30 {
		t.Errorf("%d sockets opened against a closed port: want a few tries, then one at a time with backoff", r.SocketsOpened)
	}
}

// zeroAllocServer answers every request on a connection with one fixed
// response, allocating nothing per request.
func zeroAllocServer(t testing.TB, resp []byte) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 4096)
				for {
					if _, err := c.Read(buf); err != nil {
						return
					}
					if _, err := c.Write(resp); err != nil {
						return
					}
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String() + "/m3u8"
}

func fixedResponse(n int) []byte {
	body := bytes.Repeat([]byte("#"), n)
	return append([]byte(fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Length: %d\r\nX-Cache: HIT\r\nAge: 3\r\n%s: %s\r\n\r\n",
		n, ChecksumHeader, crcHex(body))), body...)
}

// A whole request cycle (write, read, validate, record) allocates nothing: the
// allocations of a pass do not grow with its request count.
func TestNoAllocationPerRequest(t *testing.T) {
	url := zeroAllocServer(t, fixedResponse(2048))
	g := newGen(t, Options{URL: url, Connections: 1})
	count := func(n int64) uint64 {
		var a, b runtime.MemStats
		runtime.ReadMemStats(&a)
		r := run(t, g, Pass{Requests: n, Duration: time.Minute})
		runtime.ReadMemStats(&b)
		if r.OK != n {
			t.Fatalf("ok %d of %d: %v", r.OK, n, r.ErrorsByKind)
		}
		return b.Mallocs - a.Mallocs
	}
	count(100) // warm up
	small, large := count(100), count(20100)
	per := float64(int64(large)-int64(small)) / 20000
	t.Logf("allocations: %d for 100 requests, %d for 20100 (%.4f per request)", small, large, per)
	if per > 0.01 {
		t.Errorf("%.4f allocations per request, want 0", per)
	}
}

func BenchmarkRequestCycle(b *testing.B) {
	url := zeroAllocServer(b, fixedResponse(2048))
	g := newGen(b, Options{URL: url, Connections: 1})
	b.ReportAllocs()
	b.ResetTimer()
	r, err := g.Run(context.Background(), Pass{Requests: int64(b.N), Duration: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	if r.OK != int64(b.N) {
		b.Fatalf("ok %d of %d", r.OK, b.N)
	}
}

// Hit-path latencies are tens of microseconds: the histograms must resolve
// them to well under a microsecond, and stay small when merged.
func TestHistogramResolution(t *testing.T) {
	for _, ns := range []int64{1_000, 10_000, 55_555, 250_000} {
		h := NewHistogram()
		h.RecordValue(ns)
		// 3 significant digits: within 0.1% (the old 512 ns unit read
		// 10 µs back as 10.239 µs).
		if got := h.ValueAtQuantile(50); got < ns || got-ns >= 1000 || float64(got-ns) > 0.001*float64(ns) {
			t.Errorf("%d ns reads back as %d ns, want within 1 µs and 0.1%%", ns, got)
		}
		if got := h.Max(); got-ns >= 1000 {
			t.Errorf("%d ns: max reads back as %d ns", ns, got)
		}
	}
	merged := NewHistogram()
	for i := 0; i < 16; i++ {
		h := NewHistogram()
		for v := int64(1); v < int64(MaxLatency); v *= 3 {
			h.RecordValue(v)
		}
		merged.Merge(h)
	}
	if size := merged.ByteSize(); size > 300_000 {
		t.Errorf("a merged histogram takes %d bytes, want under 300 KB", size)
	}
	t.Logf("one histogram: %d bytes", merged.ByteSize())
}

// With CPUs set there is one event loop per pinned CPU, never two on one.
func TestShardsFollowCPUs(t *testing.T) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	cpu := -1
	for i := 0; i < 1024 && cpu < 0; i++ {
		if set.IsSet(i) {
			cpu = i
		}
	}
	url := zeroAllocServer(t, fixedResponse(10))
	g := newGen(t, Options{URL: url, Connections: 8, CPUs: []int{cpu}})
	if g.Shards() != 1 {
		t.Errorf("CPUs %v: %d event loops, want 1", []int{cpu}, g.Shards())
	}
	_, err := New(context.Background(), Options{URL: url, Connections: 8, CPUs: []int{cpu}, Shards: 2})
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Field != "shards" || !strings.Contains(ce.Msg, "cpus") {
		t.Errorf("2 shards on 1 CPU: %v, want a config error on shards naming cpus", err)
	}
}

// val reads a summary value; NaN when nothing was measured.
func val(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

// ownCPU is the highest CPU this process may run on, for a pinned loop.
func ownCPU(t testing.TB) int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	cpu := -1
	for i := 0; i < 1024; i++ {
		if set.IsSet(i) {
			cpu = i
		}
	}
	return cpu
}

// A pinned loop wakes before its slots and polls until they are due; the
// polling is reported apart and is not the loop's work. An unpinned loop
// never polls: it would take the CPU from what it measures.
func TestSpinOnlyWhenPinned(t *testing.T) {
	url := zeroAllocServer(t, fixedResponse(10))
	pinned := run(t, newGen(t, Options{URL: url, Connections: 4, CPUs: []int{ownCPU(t)}}), Pass{Rate: 1000, Duration: time.Second})
	if pinned.SpinSeconds <= 0 || pinned.SpinMargin < time.Duration(spinSlack) {
		t.Errorf("pinned: spin %.4fs, margin %v: want polling before the slots, woken at least %v early",
			pinned.SpinSeconds, pinned.SpinMargin, time.Duration(spinSlack))
	}
	if pinned.SpinSeconds >= pinned.CPUSeconds {
		t.Errorf("pinned: spin %.4fs of %.4fs generator CPU: polling is part of the CPU it used", pinned.SpinSeconds, pinned.CPUSeconds)
	}
	if s := pinned.Summary(); s.SpinSeconds != round(pinned.SpinSeconds, 4) || s.SpinMarginMs <= 0 {
		t.Errorf("summary: spin_seconds %v, spin_margin_ms %v", s.SpinSeconds, s.SpinMarginMs)
	}
	free := run(t, newGen(t, Options{URL: url, Connections: 4, Shards: 1}), Pass{Rate: 1000, Duration: time.Second})
	if free.SpinSeconds != 0 || free.SpinMargin != 0 {
		t.Errorf("unpinned: spin %.4fs, margin %v: want none", free.SpinSeconds, free.SpinMargin)
	}
	var text strings.Builder
	free.WriteText(&text)
	if strings.Contains(text.String(), "polling") {
		t.Errorf("unpinned text names polling:\n%s", text.String())
	}
}

// BenchmarkScheduleLag measures how late a 5000 rps schedule sends: a loop
// that sleeps to every slot (unpinned) against one pinned to a CPU of its own
// that wakes early and polls (see spinSlack). Figures: the schedule lag's
// p50 and p99 in µs over all passes, and the share of the loop's CPU spent
// polling. Run: go test -run '^$' -bench ScheduleLag -benchtime 5x ./workloads/loadgen
func BenchmarkScheduleLag(b *testing.B) {
	url := zeroAllocServer(b, fixedResponse(2048))
	for _, c := range []struct {
		name string
		o    Options
	}{
		{"sleep", Options{URL: url, Connections: 50, Shards: 1}},
		{"spin", Options{URL: url, Connections: 50, CPUs: []int{ownCPU(b)}}},
	} {
		b.Run(c.name, func(b *testing.B) {
			g := newGen(b, c.o)
			lag := NewHistogram()
			var spin, cpu float64
			for range b.N {
				r := run(b, g, Pass{Rate: 5000, Duration: time.Second})
				lag.Merge(r.ScheduleLag)
				spin, cpu = spin+r.SpinSeconds, cpu+r.CPUSeconds
			}
			b.ReportMetric(float64(lag.ValueAtQuantile(50))/1e3, "lag-p50-µs")
			b.ReportMetric(float64(lag.ValueAtQuantile(99))/1e3, "lag-p99-µs")
			if cpu > 0 {
				b.ReportMetric(spin/cpu, "spin/cpu")
			}
		})
	}
}

// A pass over several paths asks for each with its Zipf share, and every
// Record names the path its request asked for: the server's own counts per
// path equal the records'.
func TestPathsZipf(t *testing.T) {
	var mu sync.Mutex
	served := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		served[r.URL.Path]++
		mu.Unlock()
		w.Write([]byte("x"))
	}))
	defer srv.Close()
	paths := []string{"/a", "/b", "/c", "/d"}
	recorded := make([][]int, 2)
	g := newGen(t, Options{URL: srv.URL, Connections: 8, Shards: 2, OnRecord: func(shard int, rec *Record, _ BodyCheck) {
		if recorded[shard] == nil {
			recorded[shard] = make([]int, len(paths))
		}
		recorded[shard][rec.Object]++
	}})
	const n = 6000
	r := run(t, g, Pass{Paths: paths, Zipf: 1, Requests: n, Duration: time.Minute, Seed: 3})
	if r.OK != n {
		t.Fatalf("ok %d of %d: %v", r.OK, n, r.ErrorsByKind)
	}
	// Weights 1, 1/2, 1/3, 1/4 of 25/12.
	want := []float64{12.0 / 25, 6.0 / 25, 4.0 / 25, 3.0 / 25}
	mu.Lock()
	defer mu.Unlock()
	for i, p := range paths {
		got := recorded[0][i] + recorded[1][i]
		if got != served[p] {
			t.Errorf("%s: %d records, the server served %d", p, got, served[p])
		}
		if share := float64(got) / n; math.Abs(share-want[i]) > 0.03 {
			t.Errorf("%s: share %.3f, want %.3f (Zipf 1)", p, share, want[i])
		}
	}
	for _, bad := range []Pass{
		{Path: "/a", Paths: paths, Requests: 1},
		{Paths: paths, Zipf: -1, Requests: 1},
		{Path: "/a", Zipf: 1, Requests: 1},
		{Paths: []string{"/a", "no-slash"}, Requests: 1},
	} {
		if _, err := g.Run(context.Background(), bad); !IsConfigError(err) {
			t.Errorf("%+v: %v, want a config error", bad, err)
		}
	}
}

func TestDraw(t *testing.T) {
	cdf := Popularity(3, 0)
	for _, c := range []struct {
		u    float64
		want int
	}{{0, 0}, {0.3333, 0}, {0.3334, 1}, {0.6666, 1}, {0.6667, 2}, {0.9999999, 2}} {
		if got := Draw(cdf, c.u); got != c.want {
			t.Errorf("Draw(%v) = %d, want %d (cdf %v)", c.u, got, c.want, cdf)
		}
	}
	if Popularity(0, 1) != nil {
		t.Errorf("no paths: want no popularity")
	}
}

// hostCPUs lists the CPUs this process may run on, in order.
func hostCPUs(t testing.TB) []int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	var cpus []int
	for i := 0; i < 1024; i++ {
		if set.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	return cpus
}

// Each event loop runs on the CPU it was given, not on the list's first:
// the loops are asked for the host's CPUs in reverse order, and each
// reports, from its own thread, the CPU it runs on and its affinity.
func TestLoopsRunOnTheirCPUs(t *testing.T) {
	host := hostCPUs(t)
	if len(host) < 2 {
		t.Skipf("this process may use %d CPU (%v): two loops need two", len(host), host)
	}
	cpus := host[max(0, len(host)-4):] // at most four loops on a large host
	cpus = append([]int(nil), cpus...)
	slices.Reverse(cpus)
	url := zeroAllocServer(t, fixedResponse(10))
	g := newGen(t, Options{URL: url, Connections: 2 * len(cpus), CPUs: cpus})
	if g.Shards() != len(cpus) {
		t.Fatalf("CPUs %v: %d event loops, want %d", cpus, g.Shards(), len(cpus))
	}
	for i, s := range g.shards {
		var ran int
		var set unix.CPUSet
		var err error
		s.do(func() {
			ran = currentCPU()
			err = unix.SchedGetaffinity(0, &set)
		})
		if err != nil {
			t.Fatal(err)
		}
		if ran != cpus[i] || set.Count() != 1 || !set.IsSet(cpus[i]) {
			t.Errorf("loop %d of CPUs %v ran on CPU %d with affinity of %d CPUs (CPU %d in it: %v), want CPU %d alone",
				i, cpus, ran, set.Count(), cpus[i], set.IsSet(cpus[i]), cpus[i])
		}
	}
}

// The decision of how many loops run and which CPU each is pinned to, for
// CPU lists this host does not have: one loop per listed CPU, loop i on
// cpus[i], never two on one; no pinning without a list.
func TestLoopCPUs(t *testing.T) {
	for _, c := range []struct {
		cpus        []int
		connections int
		host        int
		want        []int // the CPU of each loop
		loops       int
	}{
		{[]int{0, 1, 2, 3}, 100, 16, []int{0, 1, 2, 3}, 4},
		{[]int{2, 5, 7}, 100, 16, []int{2, 5, 7}, 3},
		{[]int{12, 13, 14, 15}, 100, 16, []int{12, 13, 14, 15}, 4},
		{[]int{1}, 100, 16, []int{1}, 1},
		{[]int{2, 5, 7}, 2, 16, []int{2, 5}, 2}, // no more loops than connections
		{nil, 100, 16, nil, 15},                 // unpinned: one loop per CPU but one
		{[]int{}, 100, 2, nil, 1},
		{nil, 100, 1, nil, 1},
	} {
		loops := defaultLoops(c.cpus, c.connections, c.host)
		if loops != c.loops {
			t.Errorf("CPUs %v, %d connections, %d host CPUs: %d loops, want %d", c.cpus, c.connections, c.host, loops, c.loops)
		}
		got := loopCPUs(c.cpus, loops)
		if !slices.Equal(got, c.want) {
			t.Errorf("CPUs %v, %d loops: pinned to %v, want %v", c.cpus, loops, got, c.want)
		}
		seen := map[int]bool{}
		for i, cpu := range got {
			if seen[cpu] || !slices.Contains(c.cpus, cpu) {
				t.Errorf("CPUs %v: loop %d on CPU %d, given twice or not listed", c.cpus, i, cpu)
			}
			seen[cpu] = true
		}
	}
	// Options agree: LoopCPUs is what New pins.
	if got := LoopCPUs(Options{CPUs: []int{2, 5, 7}, Connections: 8}); !slices.Equal(got, []int{2, 5, 7}) {
		t.Errorf("LoopCPUs of CPUs [2 5 7]: %v", got)
	}
	if got := LoopCPUs(Options{CPUs: []int{2, 5, 7}, Connections: 8, Shards: 2}); !slices.Equal(got, []int{2, 5}) {
		t.Errorf("LoopCPUs of CPUs [2 5 7], 2 shards: %v", got)
	}
	if got := LoopCPUs(Options{Connections: 8, Shards: 2}); got != nil {
		t.Errorf("LoopCPUs without CPUs: %v, want none pinned", got)
	}
}

// The sending window ends with the last loop's last send, not with the
// answers drained after it; the process's CPU over it is part of the whole
// pass's.
func TestSendWindow(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(300 * time.Millisecond)
		w.Write([]byte("x"))
	}))
	defer srv.Close()
	g := newGen(t, Options{URL: srv.URL, Connections: 40, Shards: 2})
	r := run(t, g, Pass{Rate: 100, Duration: 200 * time.Millisecond})
	if r.OK != 20 {
		t.Fatalf("ok %d of %d, want 20", r.OK, r.Requests)
	}
	if r.SendWindow <= 0 || r.SendWindow >= r.Elapsed {
		t.Errorf("send window %v, elapsed %v: want the window to end before the last answer", r.SendWindow, r.Elapsed)
	}
	if r.SendCPUSeconds <= 0 || r.SendCPUSeconds > r.CPUSeconds {
		t.Errorf("CPU while sending %.6fs, over the pass %.6fs: want a part of it", r.SendCPUSeconds, r.CPUSeconds)
	}
	if s := r.Summary(); s.SendWindowS <= 0 || s.SendCPUSeconds != round(r.SendCPUSeconds, 4) {
		t.Errorf("summary: send_window_s %v, send_cpu_seconds %v", s.SendWindowS, s.SendCPUSeconds)
	}
}
