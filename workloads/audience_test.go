package workloads

import (
	"net/http"
	"testing"
	"time"

	"github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/engines/builtin"
	"github.com/hlsbench/hlsbench/origin"
	"github.com/hlsbench/hlsbench/results"
)

// audienceConfig is a small audience: 1 s segments, one measured pass of
// 1 s of joining and 3 s of watching, one other store size.
func audienceConfig() Config {
	c := testConfig()
	c.Channels, c.Titles = 2, 5
	c.Ladder, c.TargetDuration = []int64{400_000, 800_000}, time.Second
	c.Ramp, c.Watch, c.AudiencePasses = time.Second, 3*time.Second, 1
	c.StoreSizes = []int64{1 << 20}
	return c
}

func audienceFigures(t *testing.T, r *results.Result) []*results.AudienceEvidence {
	return passEvidence(t, r, "audience", func(e *results.Evidence) *results.AudienceEvidence { return e.Audience })
}

func TestLiveAudienceBuiltin(t *testing.T) {
	if testing.Short() {
		t.Skip("four passes of an audience")
	}
	run := execute(t, RunSpec{Engines: []string{"builtin"}, Workloads: mustSpecs(t, LiveAudience), Config: audienceConfig()})
	id := func(test string) string { return LiveAudience + "/" + test }
	for _, test := range []string{"hit-ratio", "byte-offload", "origin-per-segment", "p99-ttfb-playlist", "p99-ttfb-segment",
		"stall-risk", "live-edge-staleness", "bytes-per-object", "miss-ratio-512mib", "miss-ratio-1mib"} {
		r := find(t, run, "builtin", id(test))
		if r.MeasuredPasses != 1 && r.NotApplicable == "" {
			t.Errorf("%s: %d measured passes, want 1", test, r.MeasuredPasses)
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
	if v := val(big.Value) + val(hit.Value); v < 99.99 || v > 100.01 {
		t.Errorf("miss ratio at the policy's store %v%% + hit ratio %v%% = %v", val(big.Value), val(hit.Value), v)
	}
	// In-process the engine's memory is the generator's: not applicable.
	if bpo := find(t, run, "builtin", id("bytes-per-object")); bpo.NotApplicable == "" || bpo.Value != nil {
		t.Errorf("bytes per object in-process: %v (%q)", val(bpo.Value), bpo.NotApplicable)
	}
	w := run.Workloads[0].Conditions
	if w.Audience == nil || w.Audience.Viewers != 60 || len(w.Audience.StoreSizes) != 2 || w.Passes != 1 || w.Warmups != 1 {
		t.Errorf("conditions %+v audience %+v", w, w.Audience)
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
	cfg.VODShare, cfg.StoreSizes = -1, nil
	cfg.Watch = 5 * time.Second
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
	cfg.Viewers, cfg.Channels, cfg.Ladder, cfg.VODShare, cfg.SwitchShare = 300, 1, []int64{800_000}, -1, -1
	cfg.StoreSizes = []int64{}
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
