package origin

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hlsbench/hlsbench/engines/freeport"
)

func startServer(t *testing.T, cfg Config) (*Origin, *Server, *Client) {
	t.Helper()
	o, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Start(o, dataAddr(t), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return o, s, &Client{BaseURL: "http://" + s.ControlAddr()}
}

// dataAddr is a data address below the ephemeral range: tests that refuse
// and then recover (or squat the address) bind it again, and an ephemeral
// port may meanwhile be any outgoing connection's local port (it was, in CI).
func dataAddr(t *testing.T) string {
	t.Helper()
	a, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// newHTTP is a client of its own, so keep-alive connections of one test
// never leak into another.
func newHTTP(t *testing.T) *http.Client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 5 * time.Second}
}

func getStatus(c *http.Client, url string) (int, error) {
	resp, err := c.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, err
}

// slowBody starts a GET of a segment and returns its body once the first
// bytes arrived.
func slowBody(t *testing.T, hc *http.Client, url string) io.ReadCloser {
	t.Helper()
	resp, err := hc.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(resp.Body, make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	return resp.Body
}

// readRest reads what is left of body and says whether it broke off.
func readRest(t *testing.T, body io.ReadCloser) error {
	t.Helper()
	defer body.Close()
	done := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, body)
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(3 * time.Second):
		t.Fatal("the body kept coming after the connection should have been closed")
		return nil
	}
}

func TestServerRefuse(t *testing.T) {
	slow := Config{FirstByteDelay: NoDelay, TransferRate: 256 << 10} // 4 MiB take 16 s
	o, s, c := startServer(t, slow)
	ctx := testCtx(t)
	hc := newHTTP(t)
	data := "http://" + s.DataAddr()
	if st, err := getStatus(hc, data+HealthPath); st != 200 || err != nil {
		t.Fatalf("health: %d %v", st, err)
	}
	body := slowBody(t, hc, data+SegmentPath(0)+"?q=1")

	if err := c.SetMode(ctx, Refuse); err != nil {
		t.Fatal(err)
	}
	if o.Mode() != Refuse {
		t.Fatalf("mode %v", o.Mode())
	}
	if err := readRest(t, body); err == nil {
		t.Fatal("a body under way was not cut when the origin began refusing")
	}
	_, err := net.DialTimeout("tcp", s.DataAddr(), time.Second)
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial while refusing: %v, want connection refused", err)
	}
	st, err := c.Stats(ctx) // the control API still answers
	if err != nil {
		t.Fatal(err)
	}
	if st.Failed != 1 || st.Objects[SegmentPath(0)+"?q=1"].Failed != 1 || st.Objects[SegmentPath(0)+"?q=1"].Fetches != 1 {
		t.Fatalf("the cut answer is counted failed: %+v", st)
	}
	if err := c.SetMode(ctx, Refuse); err != nil { // again: nothing to do
		t.Fatal(err)
	}

	if err := c.SetMode(ctx, Healthy); err != nil {
		t.Fatal(err)
	}
	if st, err := getStatus(hc, data+HealthPath); st != 200 || err != nil {
		t.Fatalf("health on the same address after recovery: %d %v", st, err)
	}
	if st, err := getStatus(hc, data+ManifestPath); st != 200 || err != nil {
		t.Fatalf("playlist after recovery: %d %v", st, err)
	}
}

func TestServerDrop(t *testing.T) {
	slow := Config{FirstByteDelay: NoDelay, TransferRate: 256 << 10}
	o, s, c := startServer(t, slow)
	ctx := testCtx(t)
	hc := newHTTP(t)
	data := "http://" + s.DataAddr()
	body := slowBody(t, hc, data+SegmentPath(1))

	if err := c.SetMode(ctx, Drop); err != nil {
		t.Fatal(err)
	}
	if err := readRest(t, body); err == nil {
		t.Fatal("a body under way was not cut when the origin began dropping")
	}
	// The connection is accepted, then closed before any answer.
	conn, err := net.DialTimeout("tcp", s.DataAddr(), time.Second)
	if err != nil {
		t.Fatalf("dial while dropping: %v, want accepted", err)
	}
	_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
	_, _ = conn.Write([]byte("GET " + HealthPath + " HTTP/1.1\r\nHost: x\r\n\r\n"))
	n, err := conn.Read(make([]byte, 100))
	conn.Close()
	var ne net.Error
	if n != 0 || err == nil || (errors.As(err, &ne) && ne.Timeout()) {
		t.Fatalf("read while dropping: %d bytes, %v; want the connection closed", n, err)
	}
	if _, err := getStatus(hc, data+ManifestPath); err == nil {
		t.Fatal("GET while dropping succeeded")
	}
	if st := o.Stats(); st.Failed != 1 || st.Fetches != 1 {
		t.Fatalf("stats %+v", st)
	}

	if err := c.SetMode(ctx, Healthy); err != nil {
		t.Fatal(err)
	}
	if st, err := getStatus(hc, data+ManifestPath); st != 200 || err != nil {
		t.Fatalf("after recovery: %d %v", st, err)
	}
	// Refuse then Drop: Drop listens again.
	for _, m := range []Mode{Refuse, Drop, Healthy} {
		if err := c.SetMode(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if st, err := getStatus(hc, data+ManifestPath); st != 200 || err != nil {
		t.Fatalf("after refuse, drop, healthy: %d %v", st, err)
	}
}

func TestServerFail5xx(t *testing.T) {
	_, s, c := startServer(t, fast)
	ctx := testCtx(t)
	hc := newHTTP(t)
	if err := c.SetMode(ctx, Fail5xx); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{HealthPath, SegmentPath(0)} {
		if st, err := getStatus(hc, "http://"+s.DataAddr()+p); st != 503 || err != nil {
			t.Fatalf("%s in 5xx mode: %d %v", p, st, err)
		}
	}
	st, err := c.Stats(ctx)
	if err != nil || st.Failed != 1 || st.Health.Failed != 1 {
		t.Fatalf("stats %+v, %v", st, err)
	}
}

func TestClient(t *testing.T) {
	o, s, c := startServer(t, fast)
	ctx := testCtx(t)
	if err := c.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	hc := newHTTP(t)
	for range 2 {
		getStatus(hc, "http://"+s.DataAddr()+SegmentPath(4)+"?nonce=abc")
	}
	getStatus(hc, "http://"+s.DataAddr()+HealthPath)
	st, err := c.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Fetches != 2 || st.Health.OK != 1 || st.Objects[SegmentPath(4)+"?nonce=abc"].Version != 2 {
		t.Fatalf("stats %+v", st)
	}
	if err := c.ResetStats(ctx); err != nil {
		t.Fatal(err)
	}
	if st, err := c.Stats(ctx); err != nil || st.Fetches != 0 || st.Objects == nil || len(st.Objects) != 0 {
		t.Fatalf("after reset: %+v, %v", st, err)
	}
	if err := c.SetMode(ctx, Fail5xx); err != nil || o.Mode() != Fail5xx {
		t.Fatalf("SetMode: %v, mode %v", err, o.Mode())
	}
	if err := c.SetMode(ctx, Mode(9)); err == nil || !strings.Contains(err.Error(), "400") {
		t.Fatalf("SetMode(9): %v, want a 400", err)
	}

	// Nothing listens: Ready gives up when ctx ends.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	dead := Client{BaseURL: "http://" + addr}
	if err := dead.Ready(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Ready on a closed port: %v", err)
	}
}

func TestControlAPI(t *testing.T) {
	_, s, _ := startServer(t, fast)
	hc := newHTTP(t)
	base := "http://" + s.ControlAddr()
	call := func(method, path string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, nil)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, c := range []struct {
		method, path string
		status       int
		body         string
	}{
		{"GET", "/healthz", 200, "ok"},
		{"GET", "/mode", 200, `{"mode":"healthy"}`},
		{"POST", "/mode?set=5xx", 200, `{"mode":"5xx"}`},
		{"GET", "/mode", 200, `{"mode":"5xx"}`},
		{"POST", "/mode?set=down", 400, "healthy, 5xx, refuse, drop"},
		{"POST", "/mode", 400, "healthy, 5xx, refuse, drop"},
		{"POST", "/mode?set=healthy", 200, `{"mode":"healthy"}`},
		{"GET", "/stats", 200, `"objects":{}`},
		{"POST", "/stats/reset", 200, `"fetches":0`},
		{"GET", "/stats/reset", 405, ""},
		{"GET", "/nope", 404, ""},
	} {
		st, body := call(c.method, c.path)
		if st != c.status || !strings.Contains(body, c.body) {
			t.Errorf("%s %s: %d %q, want %d with %q", c.method, c.path, st, body, c.status, c.body)
		}
	}
	_, body := call("GET", "/stats")
	var m map[string]any
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"objects", "fetches", "failed", "health"} {
		if _, ok := m[k]; !ok {
			t.Errorf("stats JSON has no %q: %s", k, body)
		}
	}
}

func TestServerClose(t *testing.T) {
	o, err := New(fast)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Start(o, "127.0.0.1:0", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o.SetMode(Refuse)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	o.SetMode(Healthy) // a closed Server no longer listens
	if _, err := net.DialTimeout("tcp", s.DataAddr(), time.Second); err == nil {
		t.Fatal("data listener is back after Close")
	}
	if _, err := net.DialTimeout("tcp", s.ControlAddr(), time.Second); err == nil {
		t.Fatal("control listener still up after Close")
	}
	// A busy address fails Start, and nothing stays open.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	defer ln.Close()
	if _, err := Start(o, "127.0.0.1:0", ln.Addr().String()); err == nil || !strings.Contains(err.Error(), "control") {
		t.Fatalf("Start on a busy control address: %v", err)
	}
}

// If the data address is taken while the origin refuses, recovering reports
// it and the Server keeps trying until the address is free.
func TestServerRelistenRetries(t *testing.T) {
	_, s, c := startServer(t, fast)
	ctx := testCtx(t)
	if err := c.SetMode(ctx, Refuse); err != nil {
		t.Fatal(err)
	}
	squat, err := net.Listen("tcp", s.DataAddr())
	if err != nil {
		t.Fatalf("take the data address: %v", err)
	}
	err = c.SetMode(ctx, Healthy)
	if err == nil || !strings.Contains(err.Error(), "500") || !strings.Contains(err.Error(), "retrying") {
		t.Fatalf("SetMode(healthy) with the address taken: %v", err)
	}
	squat.Close()
	hc := newHTTP(t)
	for i := 0; ; i++ {
		st, err := getStatus(hc, "http://"+s.DataAddr()+HealthPath)
		if st == 200 && err == nil {
			break
		}
		if i == 100 {
			t.Fatalf("data listener not back 2 s after the address was freed: %d %v", st, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The origin reports the instant its mode changed, taken at the change:
// not when SetMode returns, which in refuse and drop modes waits for the
// answers it cut (up to cutWait), nor when the counters are read.
func TestModeChangeInstant(t *testing.T) {
	o, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	clk := &clock{}
	clk.set(time.Unix(1_700_000_000, 0))
	o.now = clk.now // before the Server starts: no race
	s, err := Start(o, dataAddr(t), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	c := &Client{BaseURL: "http://" + s.ControlAddr()}
	ctx := testCtx(t)
	// A watcher that takes cutWait after every change, as the Server's
	// may while connections close.
	unwatch, err := o.watch(func(Mode) error { clk.add(cutWait); return nil })
	if err != nil {
		t.Fatal(err)
	}
	defer unwatch()

	check := func(what string, want Mode, since time.Time) {
		t.Helper()
		for _, read := range []struct {
			name string
			get  func() (Stats, error)
		}{{"in-process", func() (Stats, error) { return o.Stats(), nil }}, {"control API", func() (Stats, error) { return c.Stats(ctx) }}} {
			st, err := read.get()
			if err != nil {
				t.Fatal(err)
			}
			if st.Mode != want || st.ModeSince != since.UnixNano() {
				t.Errorf("%s, %s: mode %v since %v, want %v since %v (the change's instant; SetMode returned at %v)",
					what, read.name, st.Mode, time.Unix(0, st.ModeSince).UTC(), want, since.UTC(), clk.now().UTC())
			}
		}
	}
	failed := time.Unix(1_700_000_100, 0)
	clk.set(failed)
	if err := c.SetMode(ctx, Refuse); err != nil {
		t.Fatal(err)
	}
	check("refuse", Refuse, failed)
	if err := c.SetMode(ctx, Refuse); err != nil { // no change: it has refused since then
		t.Fatal(err)
	}
	if err := c.ResetStats(ctx); err != nil { // not a counter
		t.Fatal(err)
	}
	check("refuse again, counters reset", Refuse, failed)
	healed := time.Unix(1_700_000_200, 0)
	clk.set(healed)
	o.SetMode(Healthy)
	check("healthy", Healthy, healed)
}
