package workloads

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/engines/builtin"
	"github.com/hlsbench/hlsbench/origin"
	"github.com/hlsbench/hlsbench/results"
	"github.com/hlsbench/hlsbench/workloads/loadgen"
)

// audienceConfig is a small audience: 1 s segments, one measured pass of
// 1 s of joining and 3 s of watching, one other store size.
func audienceConfig() Config {
	c := testConfig()
	channelsSetting.In(&c, 2)
	titlesSetting.In(&c, 5)
	ladderSetting.In(&c, []int64{400_000, 800_000})
	targetDurationSetting.In(&c, time.Second)
	rampSetting.In(&c, time.Second)
	watchSetting.In(&c, 3*time.Second)
	audiencePassesSetting.In(&c, 1)
	storeSizesSetting.In(&c, []int64{1 << 20})
	return c
}

func audienceFigures(t *testing.T, r *results.Result) []*AudienceEvidence {
	return passEvidence(t, r, "audience", func(e *results.Evidence) *AudienceEvidence { return results.Part[AudienceEvidence](e, audiencePart) })
}

func TestLiveAudienceBuiltin(t *testing.T) {
	if testing.Short() {
		t.Skip("five passes of an audience")
	}
	cfg := audienceConfig()
	audiencePassesSetting.In(&cfg, 2) // the curve takes the first alone
	run := execute(t, RunSpec{Engines: []string{"builtin"}, Workloads: mustSpecs(t, LiveAudience), Config: cfg})
	id := func(test string) string { return LiveAudience + "/" + test }
	for _, test := range []string{"hit-ratio", "byte-offload", "origin-per-segment", "p99-ttfb-playlist", "p99-ttfb-segment",
		"stall-risk", "live-edge-staleness", "bytes-per-object", "miss-ratio-512mib", "miss-ratio-1mib"} {
		r := find(t, run, "builtin", id(test))
		want := 2
		if strings.HasPrefix(test, "miss-ratio-") {
			// Every size of the curve by the same protocol: one warm-up
			// on a fresh engine, one measured pass (issue 23, item 8).
			want = 1
		}
		if r.MeasuredPasses != want && r.NotApplicable == "" {
			t.Errorf("%s: %d measured passes, want %d", test, r.MeasuredPasses, want)
		}
		if r.Value == nil && r.NoValue == "" {
			t.Errorf("%s: no value and no reason", test)
		}
	}
	hit := find(t, run, "builtin", id("hit-ratio"))
	ev := audienceFigures(t, hit)[0]
	t.Logf("%+v", *ev)
	if ev.Viewers != 60 || ev.Live+ev.VOD != 60 || ev.Playlists == 0 || ev.Segments == 0 {
		t.Fatalf("viewers %d (%d live, %d VOD), %d playlists, %d segments", ev.Viewers, ev.Live, ev.VOD, ev.Playlists, ev.Segments)
	}
	// Counted at the origin: most requests were hits, and the origin sent
	// far fewer bytes than the viewers got.
	if v := val(hit.Value); v < 30 || v >= 100 {
		t.Errorf("hit ratio %v%% (%s)", v, hit.NoValue)
	}
	if v := val(find(t, run, "builtin", id("byte-offload")).Value); v < 30 || v >= 100 {
		t.Errorf("byte offload %v%%", v)
	}
	// The built-in cache coalesces: one origin fetch per new live segment.
	ps := find(t, run, "builtin", id("origin-per-segment"))
	if ps.Value == nil || *ps.Value != 1 {
		t.Errorf("origin requests per segment %v (%s): want exactly 1", val(ps.Value), ps.NoValue)
	}
	if ev.EdgeSegments == 0 || ival(ev.EdgeMostFetches) != 1 {
		t.Errorf("%d edge segments, most fetches of one %d", ev.EdgeSegments, ival(ev.EdgeMostFetches))
	}
	// A playlist cached 1 s is at most about a second and a segment behind.
	st := find(t, run, "builtin", id("live-edge-staleness"))
	if ev.StalenessP99S == nil || *ev.StalenessP99S > 2.5 || ev.LivePlaylists == 0 || ev.Unproven != 0 {
		t.Errorf("staleness p99 %v s over %d live playlists (%d unproven); test %v (%s)", ev.StalenessP99S, ev.LivePlaylists, ev.Unproven, val(st.Value), st.NoValue)
	}
	// The smaller store misses more.
	big, small := find(t, run, "builtin", id("miss-ratio-512mib")), find(t, run, "builtin", id("miss-ratio-1mib"))
	if big.Value == nil || small.Value == nil || *small.Value <= *big.Value {
		t.Errorf("miss ratio %v%% at 512 MiB, %v%% at 1 MiB: want more misses in the smaller store", val(big.Value), val(small.Value))
	}
	// At the policy's store the curve's point is the first measured
	// pass's miss ratio, the complement of that pass's hit ratio.
	if v := val(big.Value) + val(ev.HitRatio); v < 99.99 || v > 100.01 {
		t.Errorf("miss ratio at the policy's store %v%% + the first pass's hit ratio %v%% = %v", val(big.Value), val(ev.HitRatio), v)
	}
	// In-process the engine's memory is the generator's: not applicable.
	if bpo := find(t, run, "builtin", id("bytes-per-object")); bpo.NotApplicable == "" || bpo.Value != nil {
		t.Errorf("bytes per object in-process: %v (%q)", val(bpo.Value), bpo.NotApplicable)
	}
	w := run.Workloads[0].Conditions
	a, _ := results.OwnCondition[*AudienceConditions](w, audienceCondition)
	if a == nil || a.Viewers != 60 || len(a.StoreSizes) != 2 || w.Passes != 2 || w.Warmups != 1 {
		t.Errorf("conditions %+v audience %+v", w, a)
	}
}

// A proxy that keeps live playlists 30 s while segments come every second
// hands viewers a live edge many seconds old: the origin's stamps show it.
func TestLiveAudienceLongPlaylistCacheIsCaught(t *testing.T) {
	if testing.Short() {
		t.Skip("two passes of an audience")
	}
	p := specOf(LiveAudience).Policy
	p.ManifestTTL = 30 * time.Second
	cfg := audienceConfig()
	vodShareSetting.In(&cfg, 0)
	storeSizesSetting.In(&cfg, nil)
	watchSetting.In(&cfg, 5*time.Second)
	run := external(t, LiveAudience, cfg, externalCache(t, p, true, func(c *builtin.Cache) http.Handler { return c }))
	st := find(t, run, "external", LiveAudience+"/live-edge-staleness")
	ev := audienceFigures(t, st)[0]
	t.Logf("staleness p50 %v p99 %v max %v s over %d playlists", val(ev.StalenessP50S), val(ev.StalenessP99S), val(ev.StalenessMaxS), ev.LivePlaylists)
	if val(ev.StalenessP99S) < 4 {
		t.Errorf("staleness p99 %v s: want the 30 s playlist cache to show several seconds", val(ev.StalenessP99S))
	}
	// The curve's other sizes are not applicable: an external store is
	// its operator's.
	if r := find(t, run, "external", LiveAudience+"/miss-ratio-128mib"); r.NotApplicable == "" {
		t.Errorf("miss ratio at 128 MiB on an external proxy: %v, want not applicable", val(r.Value))
	}
}

// A proxy that does not coalesce sends every viewer that asks for a new
// live segment while it is being fetched to the origin.
func TestLiveAudienceWithoutCoalescingIsCaught(t *testing.T) {
	if testing.Short() {
		t.Skip("two passes of an audience")
	}
	p := specOf(LiveAudience).Policy
	cfg := audienceConfig()
	viewersSetting.In(&cfg, 300)
	channelsSetting.In(&cfg, 1)
	ladderSetting.In(&cfg, []int64{800_000})
	vodShareSetting.In(&cfg, 0)
	switchShareSetting.In(&cfg, 0)
	storeSizesSetting.In(&cfg, []int64{})
	run := external(t, LiveAudience, cfg, externalCache(t, p, false, func(c *builtin.Cache) http.Handler { return c }))
	ps := find(t, run, "external", LiveAudience+"/origin-per-segment")
	for _, ev := range audienceFigures(t, ps) {
		t.Logf("%d edge fetches for %d segments, most of one %d", ival(ev.EdgeFetches), ev.EdgeSegments, ival(ev.EdgeMostFetches))
		if ival(ev.EdgeMostFetches) < 3 {
			t.Errorf("most fetches of one segment %d: want several viewers sent to the origin", ival(ev.EdgeMostFetches))
		}
	}
	if v := val(ps.Value); v < 2 {
		t.Errorf("origin requests per segment %v (%s): want ≫ 1 without coalescing", v, ps.NoValue)
	}
}

// The universe indexes every object a viewer may ask for, and each index
// names its own path.
func TestAudienceUniverse(t *testing.T) {
	a := audienceOf(audienceConfig())
	start := time.Unix(1_800_000_000, 0)
	u := newUniverse(&a, start, 10*time.Second)
	seen := map[string]bool{}
	for i, p := range u.paths("?q") {
		if seen[p] {
			t.Fatalf("object %d: %s twice", i, p)
		}
		seen[p] = true
		o := u.object(i)
		var j int
		switch o.kind {
		case evMaster:
			j = u.master(o.live, o.item)
		case evMedia:
			j = u.media(o.live, o.item, o.r)
		default:
			var ok bool
			if j, ok = u.segment(o.live, o.item, o.r, o.seg); !ok {
				t.Fatalf("object %d (%+v) is outside the universe", i, o)
			}
		}
		if j != i {
			t.Fatalf("object %d (%+v) indexes back to %d", i, o, j)
		}
	}
	edge := origin.LiveEdge(start, a.live.TargetDuration)
	for _, n := range []int64{edge - 2, origin.LiveEdge(start.Add(10*time.Second), a.live.TargetDuration)} {
		if _, ok := u.segment(true, 1, 1, n); !ok {
			t.Errorf("live segment %d (edge at the start %d) not in the universe", n, edge)
		}
	}
	if _, ok := u.segment(false, 0, 0, int64(a.live.TitleSegments)); ok {
		t.Error("a VOD segment past the title's end is in the universe")
	}
	// Viewers: as many as asked, joining in order over the ramp.
	seeds := a.cast(7)
	if len(seeds) != a.viewers {
		t.Fatalf("%d viewers, want %d", len(seeds), a.viewers)
	}
	for i, v := range seeds {
		if v.join < 0 || v.join >= int64(a.ramp) || (i > 0 && v.join < seeds[i-1].join) {
			t.Fatalf("viewer %d joins at %v", i, time.Duration(v.join))
		}
	}
	_ = engines.DefaultPolicy
}

// audienceUnit is a live-audience session on an external proxy (a server
// that is never asked anything here), for figures built from synthetic
// records.
func audienceUnit(t *testing.T) *audienceSession {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(srv.Close)
	rc := &Recorder{Run: results.NewRun("t", "", nil)}
	s := specOf(LiveAudience)
	cfg := audienceConfig().withDefaults()
	sess, err := liveAudience{}.Open(t.Context(), s, cfg, &Target{URL: srv.URL, Engine: results.Engine{Name: "external"}, Nonce: "n"}, rc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	return sess.(*audienceSession)
}

// synthPass is a pass of synthetic records: 90 VOD segment requests, 30 of
// them missing at the origin; 10 live media playlists with the origin's
// stamp; 4 requests of a live segment published during the pass, fetched
// once. failing makes the engine answer 503 to 30 of the VOD segment
// requests without fetching them (20 of them misses), to 2 of the new
// segment's, to 5 more live playlist requests, and to 3 requests of a
// second new live segment it never fetched: a fast failure.
func synthPass(t *testing.T, as *audienceSession, failing bool) *passFigures {
	t.Helper()
	td := as.a.live.TargetDuration
	start := time.Unix(1_800_000_000, 0)
	u := newUniverse(&as.a, start, 10*time.Second)
	size := as.a.live.SegmentSize(0)
	p := &viewerPlan{u: u}
	lr := &loadgen.Result{Start: start, ErrorsByKind: map[string]int64{}}
	at := start.UnixNano()
	add := func(obj int, status int, body, edge int64) {
		rec := audRec{intended: at, ttfb: int64(time.Millisecond), total: int64(2 * time.Millisecond), obj: int32(obj), status: int16(status), body: body, edge: edge}
		if status != 200 {
			rec.err = true
			lr.Errors++
			lr.ErrorsByKind["status"]++
		} else {
			lr.OK++
		}
		lr.Requests++
		lr.BodyBytes += body
		p.log = append(p.log, rec)
		at += int64(10 * time.Millisecond)
	}
	seg := func(k int) int { i, _ := u.segment(false, 0, 0, int64(k)); return i }
	fetches, bytes := int64(30), 30*size
	for k := range 90 {
		switch {
		case failing && k%3 == 2:
			add(seg(k%10), 503, 19, -1) // "Service Unavailable"
		default:
			add(seg(k%10), 200, size, -1)
		}
	}
	if failing {
		fetches, bytes = 10, 10*size // the 20 misses it failed cost the origin nothing
	}
	edge := origin.LiveEdge(start, td)
	for range 10 {
		add(u.media(true, 0, 0), 200, 300, edge)
	}
	if failing {
		for range 5 {
			add(u.media(true, 0, 0), 503, 19, -1)
		}
	}
	newSeg, _ := u.segment(true, 0, 0, edge+2)
	for k := range 4 {
		status := 200
		if failing && k%2 == 1 {
			status = 503
		}
		add(newSeg, status, size, -1)
	}
	objects := map[string]origin.ObjectStats{u.path(newSeg, as.q): {Fetches: 1, Bytes: size}}
	if failing {
		other, _ := u.segment(true, 0, 0, edge+3)
		for range 3 {
			add(other, 503, 19, -1)
		}
	}
	as.plans = []*viewerPlan{p}
	var before, after snapshot
	before.origin.Objects = map[string]origin.ObjectStats{}
	after.origin = origin.Stats{Fetches: fetches + 1, Bytes: bytes + size, Objects: objects}
	f := as.figures(u, nil, lr, before, after)
	pi := &passInfo{index: 1, lr: lr, started: start, ev: &results.Evidence{Parts: map[string]any{audiencePart: f.ev}}}
	as.record(pi, lr, f)
	as.recordCurve(0, pi, f)
	return f
}

// An engine that answers 503 fast, without fetching, must not score a
// better hit ratio, byte offload or origin-per-segment than one that
// answers every request (issue 23, item 6): a failed answer is a miss
// served from nowhere, its body no delivered byte, and any failure makes
// those figures invalid, with the counts. A failed live playlist is a
// failure of the staleness test too (item 7).
func TestAudienceFailuresAreMisses(t *testing.T) {
	clean, failing := audienceUnit(t), audienceUnit(t)
	c, f := synthPass(t, clean, false), synthPass(t, failing, true)
	t.Logf("clean %+v", *c.ev)
	t.Logf("failing %+v", *f.ev)
	if f.ev.Failed != 40 || f.ev.FailedSegments != 35 || f.ev.FailedPlaylists != 5 || f.ev.FailedLivePlaylists != 5 || c.ev.Failed != 0 {
		t.Errorf("failed %d (%d segments, %d playlists, %d live): want 40 (35, 5, 5); clean %d",
			f.ev.Failed, f.ev.FailedSegments, f.ev.FailedPlaylists, f.ev.FailedLivePlaylists, c.ev.Failed)
	}
	if val(f.ev.HitRatio) > val(c.ev.HitRatio) || val(f.ev.ByteOffload) > val(c.ev.ByteOffload) {
		t.Errorf("failing hit ratio %v%%, offload %v%%: want no better than the clean engine's %v%%, %v%%",
			val(f.ev.HitRatio), val(f.ev.ByteOffload), val(c.ev.HitRatio), val(c.ev.ByteOffload))
	}
	// 5xx bodies are not delivered bytes.
	if f.ev.GoodBodyBytes != 62*clean.a.live.SegmentSize(0)+10*300 {
		t.Errorf("good body bytes %d: want the 200 answers' only", f.ev.GoodBodyBytes)
	}
	perSeg := func(ev *AudienceEvidence) float64 {
		return float64(ival(ev.EdgeFetches)+ev.EdgeFailed) / float64(ev.EdgeSegments)
	}
	if ev := f.ev; ev.EdgeSegments != 2 || ev.EdgeFailed != 5 || perSeg(ev) < perSeg(c.ev) {
		t.Errorf("%d edge segments, %d fetches, %d failed: want 2 segments and origin per segment no better than the clean %v",
			ev.EdgeSegments, ival(ev.EdgeFetches), ev.EdgeFailed, perSeg(c.ev))
	}
	for _, r := range []*results.Result{clean.hit.r, clean.offload.r, clean.perSeg.r, clean.stale, clean.curve[0].r} {
		if !r.Valid || r.Value == nil {
			t.Errorf("clean %s: valid %v value %v (%v)", r.Test, r.Valid, val(r.Value), r.InvalidReasons)
		}
	}
	if v := val(clean.perSeg.r.Value); v != 1 {
		t.Errorf("clean origin per segment %v, want 1", v)
	}
	for _, tc := range []struct {
		r    *results.Result
		want string
	}{{failing.hit.r, "40 of 112 requests failed"}, {failing.offload.r, "40 of 112 requests failed"},
		{failing.perSeg.r, "40 of 112 requests failed"}, {failing.curve[0].r, "40 of 112 requests failed"},
		{failing.stale, "5 of 15 live playlist requests failed"}} {
		r := tc.r
		if r.Valid || r.Value != nil || len(r.InvalidReasons) == 0 || !strings.Contains(strings.Join(r.InvalidReasons, "; "), tc.want) {
			t.Errorf("failing %s: valid %v value %v reasons %q: want invalid with %q", r.Test, r.Valid, val(r.Value), r.InvalidReasons, tc.want)
		}
	}
	// The miss ratio is the hit ratio's complement: failures are misses.
	if m := f.ev; m.HitRatio == nil || val(missRatio(m))+val(m.HitRatio) < 99.99 || val(missRatio(m))+val(m.HitRatio) > 100.01 {
		t.Errorf("miss ratio %v%% + hit ratio %v%%: want 100", val(missRatio(m)), val(m.HitRatio))
	}
}

// failEveryThird answers 503 to every third segment request, without
// asking the cache behind it: an engine that fails fast.
type failEveryThird struct {
	h http.Handler
	n atomic.Int64
}

func (f *failEveryThird) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.URL.Path, ".ts") && f.n.Add(1)%3 == 0 {
		http.Error(w, "Service Unavailable", http.StatusServiceUnavailable)
		return
	}
	f.h.ServeHTTP(w, r)
}

// A proxy that answers 503 to every third segment request gets a hit
// ratio, byte offload and origin requests per segment that are invalid or
// no better than the same proxy's without failures, and its failures are
// counted in the results file and the table (issue 23, item 6).
func TestLiveAudienceFailingProxyIsCaught(t *testing.T) {
	if testing.Short() {
		t.Skip("two runs of an audience")
	}
	p := specOf(LiveAudience).Policy
	cfg := audienceConfig()
	storeSizesSetting.In(&cfg, []int64{})
	runOn := func(h func(c *builtin.Cache) http.Handler) *results.Run {
		dir := t.TempDir()
		addr := freeAddr(t)
		execute(t, RunSpec{Engines: []string{"external"}, Workloads: mustSpecs(t, LiveAudience), Config: cfg,
			ExternalURLs: map[string]string{"external": externalCache(t, p, true, h)(addr)}, OriginListens: map[string]string{"external": addr}, OutDir: dir})
		files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
		if len(files) != 1 {
			t.Fatalf("results files %v: want one", files)
		}
		run, err := results.Load(files[0])
		if err != nil {
			t.Fatal(err)
		}
		return run
	}
	clean := runOn(func(c *builtin.Cache) http.Handler { return c })
	failing := runOn(func(c *builtin.Cache) http.Handler { return &failEveryThird{h: c} })
	id := func(test string) string { return LiveAudience + "/" + test }

	cev := audienceFigures(t, find(t, clean, "external", id("hit-ratio")))[0]
	fev := audienceFigures(t, find(t, failing, "external", id("hit-ratio")))[0]
	t.Logf("clean: %d of %d failed, hit %v%% offload %v%%; failing: %d of %d failed (%d segments), hit %v%% offload %v%%",
		cev.Failed, cev.Requests, val(cev.HitRatio), val(cev.ByteOffload), fev.Failed, fev.Requests, fev.FailedSegments, val(fev.HitRatio), val(fev.ByteOffload))
	if cev.Failed != 0 {
		t.Fatalf("the clean proxy failed %d of %d requests", cev.Failed, cev.Requests)
	}
	if fev.FailedSegments < fev.Segments/4 || fev.Failed < fev.FailedSegments {
		t.Fatalf("%d of %d segment requests failed (%d in all): want about a third", fev.FailedSegments, fev.Segments, fev.Failed)
	}
	perSeg := func(ev *AudienceEvidence) float64 {
		return float64(ival(ev.EdgeFetches)+ev.EdgeFailed) / float64(ev.EdgeSegments)
	}
	// The pass's own figures: no better with failures.
	if val(fev.HitRatio) > val(cev.HitRatio) || val(fev.ByteOffload) > val(cev.ByteOffload) || perSeg(fev) < perSeg(cev) {
		t.Errorf("failing pass: hit %v%%, offload %v%%, origin per segment %v; clean %v%%, %v%%, %v: want no better",
			val(fev.HitRatio), val(fev.ByteOffload), perSeg(fev), val(cev.HitRatio), val(cev.ByteOffload), perSeg(cev))
	}
	// The tests: invalid, or no better.
	for _, test := range []string{"hit-ratio", "byte-offload", "origin-per-segment"} {
		c, f := find(t, clean, "external", id(test)), find(t, failing, "external", id(test))
		if c.Value == nil || !c.Valid {
			t.Errorf("clean %s: %v valid %v (%v)", test, val(c.Value), c.Valid, c.InvalidReasons)
		}
		better := f.Value != nil && c.Value != nil && (*f.Value < *c.Value) == f.LowerIsBetter && *f.Value != *c.Value
		if f.Valid || better {
			t.Errorf("failing %s: %v valid %v, clean %v: want invalid or no better", test, val(f.Value), f.Valid, val(c.Value))
		}
		want := fmt.Sprintf("%d of %d requests failed", fev.Failed, fev.Requests)
		if !strings.Contains(strings.Join(f.InvalidReasons, "\n"), want) {
			t.Errorf("failing %s reasons %q: want %q", test, f.InvalidReasons, want)
		}
	}
	// The table shows the count.
	var b strings.Builder
	var rs []*results.Result
	for i := range failing.Results {
		rs = append(rs, &failing.Results[i])
	}
	WriteTable(&b, specOf(LiveAudience), rs)
	t.Log("\n" + b.String())
	if want := fmt.Sprintf("failed requests, external (hit-ratio's passes): %d of %d", fev.Failed, fev.Requests); !strings.Contains(b.String(), want) {
		t.Errorf("table: want %q", want)
	}
}
