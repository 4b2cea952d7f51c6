package workloads

import (
	"bytes"
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/engines/freeport"
	"github.com/hlsbench/hlsbench/results"
)

func testConfig() Config {
	c := Defaults()
	c.Warmups, c.Passes, c.PassDuration = 1, 2, time.Second
	cyclesSetting.In(&c, 2)
	healthyPhaseSetting.In(&c, 2*time.Second)
	failPhaseSetting.In(&c, 4*time.Second)
	clientsSetting.In(&c, 200)
	purgeBeforeSetting.In(&c, time.Second)
	purgeAfterSetting.In(&c, 2*time.Second)
	banPassesSetting.In(&c, 1)
	banForSetting.In(&c, 4*time.Second)
	viewersSetting.In(&c, 60)
	rampSetting.In(&c, time.Second)
	watchSetting.In(&c, 3*time.Second)
	audiencePassesSetting.In(&c, 1)
	storeSizesSetting.In(&c, []int64{})
	c.Timeout = 10 * time.Second
	// One short search: the capacity workload's own tests set what they need.
	capacitySearchesSetting.In(&c, 1)
	capacityProbesSetting.In(&c, 12)
	probeWarmupSetting.In(&c, 200*time.Millisecond)
	probeDurationSetting.In(&c, 500*time.Millisecond)
	return c
}

func mustSpecs(t *testing.T, names string) []Spec {
	t.Helper()
	s, err := Specs(names)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func find(t *testing.T, run *results.Run, engine, id string) *results.Result {
	t.Helper()
	for i := range run.Results {
		if r := &run.Results[i]; r.Engine == engine && r.ID == id {
			return r
		}
	}
	t.Fatalf("no result %s for %s", id, engine)
	return nil
}

func execute(t *testing.T, spec RunSpec) *results.Run {
	t.Helper()
	if spec.Runtime == "" {
		spec.Runtime = engines.RuntimeInproc
	}
	if spec.OutDir == "" {
		spec.OutDir = t.TempDir()
	}
	var progress bytes.Buffer
	run, rc, err := Execute(context.Background(), spec, &progress)
	t.Log("\n" + progress.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(progress.String(), "\n") {
		if n := len([]rune(line)); n > TableWidth {
			t.Errorf("table line of %d columns: %q", n, line)
		}
	}
	back, err := results.Load(rc.Path())
	if err != nil {
		t.Fatalf("saved run: %v", err)
	}
	if len(back.Results) != len(run.Results) {
		t.Errorf("saved file has %d results, run %d", len(back.Results), len(run.Results))
	}
	return run
}

// The built-in cache must coalesce perfectly and serve stale through every
// failure phase; these are facts of its design, so the test holds it to them.
func TestBuiltinAllWorkloads(t *testing.T) {
	if testing.Short() {
		t.Skip("about a minute")
	}
	cfg := testConfig()
	cfg.Rate = 1000 // the in-process test shares two cores with everything
	run := execute(t, RunSpec{Engines: []string{"builtin"}, Workloads: mustSpecs(t, "all"), Config: cfg})

	for _, id := range []string{"hit-path/p50-ttfb", "hit-path/p99-ttfb", "segment/full-p50-ttfb", "segment/range-p99-ttfb"} {
		r := find(t, run, "builtin", id)
		if r.MeasuredPasses != 2 || (r.Histogram == "") != (r.Value == nil) || (r.Value == nil) != (r.ValidPasses == 0) {
			t.Errorf("%s: %d passes, %d valid, value %v (%s)", id, r.MeasuredPasses, r.ValidPasses, r.Value, r.NoValue)
		}
		if r.Value != nil && *r.Value <= 0 {
			t.Errorf("%s: value %v", id, *r.Value)
		}
		for _, p := range r.Passes {
			if p.Errors != 0 {
				t.Errorf("%s pass %d: %d errors %v", id, p.Index, p.Errors, p.ErrorsByKind)
			}
			if !p.Warmup && p.Evidence.Origin.Fetches != 0 {
				t.Errorf("%s pass %d: the hit path went to the origin %v times", id, p.Index, p.Evidence.Origin.Fetches)
			}
		}
	}
	co := find(t, run, "builtin", "miss-storm/coalescing")
	for _, p := range co.Passes {
		if p.Value == nil || *p.Value != 200 {
			t.Errorf("miss-storm pass %d: coalescing %v, want 200x (%v)", p.Index, val(p.Value), results.Part[BurstEvidence](p.Evidence, burstPart))
		}
	}
	if val(co.Value) != 200 {
		t.Errorf("coalescing %v valid %v %v", val(co.Value), co.Valid, co.InvalidReasons)
	}
	gr := find(t, run, "builtin", "origin-flap/grace-ratio")
	// In-process the generator shares a Go runtime with the cache, so its
	// passes may be invalid for lag; the grace figures stand regardless.
	if figure(gr, figGraceRatio) < 99 || figure(gr, figGraceRatio) != val(gr.Value) {
		t.Errorf("grace ratio %v%% (value %v%%), want ≥ 99%% (%s)", figure(gr, figGraceRatio), val(gr.Value), gr.NoValue)
	}
	for _, p := range gr.Passes {
		w := results.Part[FlapEvidence](p.Evidence, flapPart).Window
		if w.Stale == 0 {
			t.Errorf("cycle %d: no stale answer while the origin failed: %+v", p.Index, w)
		}
	}
}

// proxy builds a test proxy in front of the origin address, which is known
// before the origin starts: the proxy is configured first, like a real one.
func proxy(t *testing.T, originAddr string, h func(rp *httputil.ReverseProxy) http.Handler) string {
	u, _ := url.Parse("http://" + originAddr)
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ErrorLog = log.New(io.Discard, "", 0)
	rp.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) { w.WriteHeader(http.StatusBadGateway) }
	srv := httptest.NewServer(h(rp))
	t.Cleanup(srv.Close)
	return srv.URL
}

// freeAddr is an address for an origin that starts later (freeport.Addr).
func freeAddr(t *testing.T) string {
	a, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func external(t *testing.T, workloads string, cfg Config, proxyFor func(originAddr string) string) *results.Run {
	addr := freeAddr(t)
	return execute(t, RunSpec{Engines: []string{"external"}, Workloads: mustSpecs(t, workloads), Config: cfg,
		ExternalURLs: map[string]string{"external": proxyFor(addr)}, OriginListens: map[string]string{"external": addr}})
}

// A proxy that never caches never coalesces: one origin fetch per client.
func TestExternalNeverCoalesces(t *testing.T) {
	cfg := testConfig()
	clientsSetting.In(&cfg, 50)
	run := external(t, MissStorm, cfg, func(a string) string {
		return proxy(t, a, func(rp *httputil.ReverseProxy) http.Handler { return rp })
	})
	co := find(t, run, "external", "miss-storm/coalescing")
	if v := val(co.Value); v < 0.99 || v > 1.01 {
		t.Errorf("coalescing %vx, want 1x for a proxy that fetches every request", v)
	}
}

// noGraceCache caches for the TTL and answers 503 once the copy expired and
// the origin fails: no grace at all.
type noGraceCache struct {
	rp  *httputil.ReverseProxy
	ttl time.Duration
	mu  sync.Mutex
	obj map[string]*cached
}

type cached struct {
	at   time.Time
	hdr  http.Header
	body []byte
}

func (c *noGraceCache) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	o := c.obj[r.RequestURI]
	c.mu.Unlock()
	if o == nil || time.Since(o.at) >= c.ttl {
		rec := httptest.NewRecorder()
		c.rp.ServeHTTP(rec, r)
		if rec.Code != 200 {
			w.WriteHeader(503)
			return
		}
		o = &cached{at: time.Now(), hdr: rec.Header(), body: rec.Body.Bytes()}
		c.mu.Lock()
		c.obj[r.RequestURI] = o
		c.mu.Unlock()
	}
	for k, v := range o.hdr {
		w.Header()[k] = v
	}
	w.Write(o.body)
}

func TestExternalNoGrace(t *testing.T) {
	cfg := testConfig()
	ttl := specOf(OriginFlap).Policy.ManifestTTL
	run := external(t, OriginFlap, cfg, func(a string) string {
		return proxy(t, a, func(rp *httputil.ReverseProxy) http.Handler {
			return &noGraceCache{rp: rp, ttl: ttl, obj: map[string]*cached{}}
		})
	})
	gr := find(t, run, "external", "origin-flap/grace-ratio")
	if gr.Value == nil || *gr.Value > 1 {
		t.Errorf("grace ratio %v%% (%s), want about 0 for a proxy that answers 503", val(gr.Value), gr.NoValue)
	}
	if figure(gr, figGraceErrors) <= 0 {
		t.Errorf("no errors counted while the origin failed")
	}
	// Its fast 503s are not a latency: the TTFB while failing is invalid.
	tt := find(t, run, "external", "origin-flap/p50-ttfb-failing")
	if tt.Valid || tt.Value != nil {
		t.Errorf("TTFB while failing: value %v valid %v, want no value from passes full of errors", val(tt.Value), tt.Valid)
	}
}

func val(v *float64) float64 {
	if v == nil {
		return -1
	}
	return *v
}

// bodyFilter rewrites segment bodies on their way through the proxy.
type bodyFilter struct {
	io.ReadCloser
	n     int64
	limit int64 // stop here (truncate); -1 for no limit
	flip  int64 // flip the byte at this offset; -1 for none
}

func (b *bodyFilter) Read(p []byte) (int, error) {
	if b.limit >= 0 && b.n >= b.limit {
		return 0, io.ErrUnexpectedEOF
	}
	if b.limit >= 0 && int64(len(p)) > b.limit-b.n {
		p = p[:b.limit-b.n]
	}
	n, err := b.ReadCloser.Read(p)
	if b.flip >= b.n && b.flip < b.n+int64(n) {
		p[b.flip-b.n] ^= 0xff
	}
	b.n += int64(n)
	return n, err
}

func filtering(limit, flip int64) func(rp *httputil.ReverseProxy) http.Handler {
	return func(rp *httputil.ReverseProxy) http.Handler {
		rp.ModifyResponse = func(resp *http.Response) error {
			if strings.HasSuffix(resp.Request.URL.Path, ".ts") {
				resp.Body = &bodyFilter{ReadCloser: resp.Body, limit: limit, flip: flip}
			}
			return nil
		}
		return rp
	}
}

func TestExternalBadBodies(t *testing.T) {
	cfg := testConfig()
	cfg.Passes, cfg.Warmups, cfg.PassDuration = 1, 0, 500*time.Millisecond
	cfg.Rate = 50
	for _, tc := range []struct {
		name        string
		limit, flip int64
		full, rng   string // error kind expected on the full and the range GET
	}{
		{"truncates", 30000, -1, "short_body", "short_body"},
		{"corrupts", -1, 1000, "checksum", "body"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := runExpectingWarmFailure(t, cfg, func(a string) string { return proxy(t, a, filtering(tc.limit, tc.flip)) })
			if run == nil {
				return
			}
			for id, kind := range map[string]string{"segment/full-p50-ttfb": tc.full, "segment/range-p50-ttfb": tc.rng} {
				r := find(t, run, "external", id)
				p := r.Passes[len(r.Passes)-1]
				if p.ErrorsByKind[kind] == 0 || p.ErrorsByKind[kind] != p.Errors || r.Valid {
					t.Errorf("%s: errors %v valid %v, want every request failing as %s and the result invalid", id, p.ErrorsByKind, r.Valid, kind)
				}
				// Nothing succeeded: no number, and the reason says so.
				if r.Value != nil || p.Value != nil || !strings.Contains(r.NoValue, "no successful request") ||
					r.Errors != p.Errors || r.Requests != p.Requests || r.ErrorsByKind[kind] != p.Errors {
					t.Errorf("%s: value %v (pass %v), no_value %q, errors %d of %d: want null with the reason", id,
						val(r.Value), val(p.Value), r.NoValue, r.Errors, r.Requests)
				}
			}
		})
	}
}

// runExpectingWarmFailure runs the segment workload through a broken proxy:
// warming fails, which is noted, and the passes show the errors.
func runExpectingWarmFailure(t *testing.T, cfg Config, proxyFor func(string) string) *results.Run {
	addr := freeAddr(t)
	spec := RunSpec{Engines: []string{"external"}, Workloads: mustSpecs(t, Segment), Config: cfg,
		ExternalURLs: map[string]string{"external": proxyFor(addr)}, OriginListens: map[string]string{"external": addr}, Runtime: engines.RuntimeInproc, OutDir: t.TempDir()}
	var progress bytes.Buffer
	run, _, err := Execute(context.Background(), spec, &progress)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// failingCache caches for the TTL; once the copy expired and the origin
// fails, onFail answers instead (the i-th such request).
type failingCache struct {
	noGraceCache
	n      atomic.Int64
	onFail func(i int64, w http.ResponseWriter, r *http.Request, stale *cached)
}

func (c *failingCache) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	o := c.obj[r.RequestURI]
	c.mu.Unlock()
	if o == nil || time.Since(o.at) >= c.ttl {
		rec := httptest.NewRecorder()
		c.rp.ServeHTTP(rec, r)
		if rec.Code != 200 {
			if o == nil {
				w.WriteHeader(503)
				return
			}
			c.onFail(c.n.Add(1), w, r, o)
			return
		}
		o = &cached{at: time.Now(), hdr: rec.Header(), body: rec.Body.Bytes()}
		c.mu.Lock()
		c.obj[r.RequestURI] = o
		c.mu.Unlock()
	}
	serve(w, o)
}

func serve(w http.ResponseWriter, o *cached) {
	for k, v := range o.hdr {
		w.Header()[k] = v
	}
	w.Write(o.body)
}

func flapThrough(t *testing.T, cfg Config, onFail func(i int64, w http.ResponseWriter, r *http.Request, stale *cached)) *results.Run {
	ttl := specOf(OriginFlap).Policy.ManifestTTL
	return external(t, OriginFlap, cfg, func(a string) string {
		return proxy(t, a, func(rp *httputil.ReverseProxy) http.Handler {
			return &failingCache{noGraceCache: noGraceCache{rp: rp, ttl: ttl, obj: map[string]*cached{}}, onFail: onFail}
		})
	})
}

// A proxy that holds 60 % of requests past the timeout while the origin
// fails and serves the rest stale at once must not publish the fast 40 % as
// its TTFB while failing.
func TestExternalHoldsWhileFailing(t *testing.T) {
	cfg := testConfig()
	cfg.Timeout = 1500 * time.Millisecond
	cfg.Rate = 50
	run := flapThrough(t, cfg, func(i int64, w http.ResponseWriter, r *http.Request, stale *cached) {
		if i%5 < 3 {
			select { // held until the client gives up (bounded)
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
			return
		}
		serve(w, stale)
	})
	tt := find(t, run, "external", "origin-flap/p50-ttfb-failing")
	if tt.Valid || (tt.Value != nil && *tt.Value < 1000) {
		t.Errorf("TTFB while failing %v ms, valid %v: want the timeouts in the figure and the figure invalid (%v)",
			val(tt.Value), tt.Valid, tt.InvalidReasons)
	}
	found := false
	for _, p := range tt.Passes {
		for _, why := range p.InvalidReasons {
			found = found || strings.Contains(why, "timeout")
		}
	}
	if !found {
		t.Errorf("no pass names the timeouts: %v", tt.InvalidReasons)
	}
}

// A proxy that answers a 200 of its own (no origin stamp) for half the
// failure window and stale for the rest has not proven 100 % grace.
func TestExternalUnprovenAnswers(t *testing.T) {
	cfg := testConfig()
	cfg.Rate = 50
	run := flapThrough(t, cfg, func(i int64, w http.ResponseWriter, r *http.Request, stale *cached) {
		if i%2 == 0 {
			w.Header().Set("Content-Type", "application/vnd.apple.mpegurl")
			w.Write([]byte("#EXTM3U\n"))
			return
		}
		serve(w, stale)
	})
	gr := find(t, run, "external", "origin-flap/grace-ratio")
	if gr.Valid || (gr.Value != nil && *gr.Value > 60) {
		t.Errorf("grace %v%% valid %v: want unproven answers counted against grace and the figure invalid", val(gr.Value), gr.Valid)
	}
	if !strings.Contains(strings.Join(gr.InvalidReasons, " "), "no origin stamp") {
		t.Errorf("reasons %v: want the unproven answers named", gr.InvalidReasons)
	}
}

// Another process busy on the measured CPUs during the passes is recorded
// and warned about.
func TestBusyCPUsAreRecorded(t *testing.T) {
	burn := exec.Command("sh", "-c", "while :; do :; done")
	if err := burn.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { burn.Process.Kill(); burn.Wait() }()
	time.AfterFunc(30*time.Second, func() { burn.Process.Kill() }) // bounded
	cfg := testConfig()
	// Repeats would count the spoiled attempts too: see TestHostSpoiledPassesRepeat.
	cfg.Warmups, cfg.Passes, cfg.Rate, cfg.HostRepeats = 0, 2, 100, 0
	run := execute(t, RunSpec{Engines: []string{"builtin"}, Workloads: mustSpecs(t, HitPath), Config: cfg})
	in := run.Interference
	if in == nil || in.Passes != 2 || in.BusyPasses == 0 || in.MaxOtherShare < 0.2 || !slices.Contains(in.Busiest, "sh") {
		t.Fatalf("interference %+v: want the busy loop seen in the passes", in)
	}
	p := find(t, run, "builtin", "hit-path/p50-ttfb").Passes[0]
	if oc := p.Evidence.OtherCPU; oc == nil || oc.Share < 0.2 {
		t.Errorf("pass evidence other_cpu %+v", oc)
	}
	// Each measured CPU's split, the busy loop's in other on at least one.
	oc := p.Evidence.OtherCPU
	busiest := 0.0
	for _, c := range oc.PerCPU {
		busiest = max(busiest, c.Other)
	}
	if len(oc.PerCPU) != len(strings.Split(oc.CPUs, ",")) || busiest < 20 {
		t.Errorf("per-CPU shares %+v of CPUs %s: want one each, one 20 %% other or more", oc.PerCPU, oc.CPUs)
	}
	if st := p.Evidence.Stalls; st == nil || st.CPUs != oc.CPUs || st.PeriodMs != 1 || (st.Policy != "fifo" && st.Policy != "other") {
		t.Errorf("stall evidence %+v: want the sampler's on CPUs %s", st, oc.CPUs)
	}
}

// A pass the host spoiled is run again, and the attempt is kept: every
// pass here is saturated (one connection, 30 ms answers, 40 rps offered)
// while a busy loop takes a CPU, so every measured pass is spoiled and
// repeated once; warm-ups are not repeated.
func TestHostSpoiledPassesRepeat(t *testing.T) {
	burn := exec.Command("sh", "-c", "while :; do :; done")
	if err := burn.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { burn.Process.Kill(); burn.Wait() }()
	time.AfterFunc(30*time.Second, func() { burn.Process.Kill() }) // bounded
	cfg := testConfig()
	cfg.Warmups, cfg.Passes, cfg.Rate, cfg.Connections, cfg.HostRepeats = 1, 2, 40, 1, 1
	cfg.PassDuration = 500 * time.Millisecond
	run := external(t, HitPath, cfg, func(addr string) string {
		return proxy(t, addr, func(rp *httputil.ReverseProxy) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				time.Sleep(30 * time.Millisecond)
				rp.ServeHTTP(w, r)
			})
		})
	})
	r := find(t, run, "external", "hit-path/p50-ttfb")
	if len(r.Passes) != 3 {
		t.Fatalf("%d passes, want 1 warm-up and 2 measured", len(r.Passes))
	}
	for _, p := range r.Passes {
		switch {
		case p.Warmup && len(p.Spoiled) != 0:
			t.Errorf("warm-up repeated: %+v", p.Spoiled)
		case !p.Warmup && len(p.Spoiled) != 1:
			t.Errorf("pass %d: %d spoiled attempts, want 1 (reasons %q)", p.Index, len(p.Spoiled), p.InvalidReasons)
		case !p.Warmup:
			sp := p.Spoiled[0]
			if !strings.Contains(sp.Host, "other processes") || len(sp.InvalidReasons) == 0 || sp.Evidence == nil || sp.Evidence.OtherCPU == nil {
				t.Errorf("pass %d: spoiled attempt %+v", p.Index, sp)
			}
			if !slices.ContainsFunc(p.InvalidReasons, func(s string) bool { return strings.HasPrefix(s, "the host spoiled the pass: ") }) {
				t.Errorf("pass %d: the counting pass's reasons %q do not name the host", p.Index, p.InvalidReasons)
			}
		}
	}
}
