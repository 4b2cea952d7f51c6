package origin

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// clock is a settable Origin.now.
type clock struct{ ns atomic.Int64 }

func (c *clock) now() time.Time      { return time.Unix(0, c.ns.Load()) }
func (c *clock) set(t time.Time)     { c.ns.Store(t.UnixNano()) }
func (c *clock) add(d time.Duration) { c.ns.Add(int64(d)) }

// newLiveOrigin is an origin on a clock the test moves, starting half-way
// through live segment 1000 (so the window is full, and a step of less than
// half a segment keeps the edge).
func newLiveOrigin(t *testing.T, cfg Config) (*Origin, *httptest.Server, *clock) {
	t.Helper()
	o, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	clk := &clock{}
	td := o.cfg.Live.TargetDuration
	clk.set(LivePublished(1000, td).Add(td / 2))
	o.now = clk.now // before any request: no race
	srv := httptest.NewServer(o)
	t.Cleanup(srv.Close)
	return o, srv, clk
}

func crcHex(b []byte) string { return fmt.Sprintf("%08x", crc32.Checksum(b, castagnoli)) }

func TestLiveMaster(t *testing.T) {
	_, srv, _ := newLiveOrigin(t, fast)
	for _, c := range []struct {
		path  string
		media func(r int) string
	}{
		{LiveMasterPath(0), func(r int) string { return LiveMediaPath(0, r) }},
		{LiveMasterPath(DefaultChannels - 1), func(r int) string { return LiveMediaPath(DefaultChannels-1, r) }},
		{VODMasterPath(0), func(r int) string { return VODMediaPath(0, r) }},
		{VODMasterPath(DefaultTitles - 1), func(r int) string { return VODMediaPath(DefaultTitles-1, r) }},
	} {
		a := fetch(t, srv, "GET", c.path)
		if a.status != 200 || a.header.Get("Cache-Control") != DefaultMasterCacheControl ||
			a.header.Get("Content-Type") != "application/vnd.apple.mpegurl" || a.header.Get(ChecksumHeader) != crcHex(a.body) {
			t.Fatalf("%s: %d, headers %v", c.path, a.status, a.header)
		}
		p, err := parsePlaylist(a.body)
		if err != nil {
			t.Fatalf("%s: %v\n%s", c.path, err, a.body)
		}
		if len(p.streams) != len(DefaultLadder) || len(p.uris) != 0 {
			t.Fatalf("%s: %d variants, want %d:\n%s", c.path, len(p.streams), len(DefaultLadder), a.body)
		}
		base, _ := url.Parse(c.path)
		for r, bps := range DefaultLadder {
			if !strings.HasPrefix(p.streamInfs[r], "BANDWIDTH="+strconv.FormatInt(bps, 10)+",RESOLUTION=") {
				t.Errorf("%s variant %d: %q, want BANDWIDTH=%d", c.path, r, p.streamInfs[r], bps)
			}
			ref, _ := url.Parse(p.streams[r])
			if got := base.ResolveReference(ref).Path; got != c.media(r) {
				t.Errorf("%s variant %d points at %s, want %s", c.path, r, got, c.media(r))
			}
		}
	}
}

func TestVODMedia(t *testing.T) {
	o, srv, _ := newLiveOrigin(t, fast)
	a := fetch(t, srv, "GET", VODMediaPath(3, 2))
	if a.status != 200 || a.header.Get("Cache-Control") != DefaultManifestCacheControl || a.header.Get(ChecksumHeader) != crcHex(a.body) {
		t.Fatalf("%d, headers %v", a.status, a.header)
	}
	p, err := parsePlaylist(a.body)
	if err != nil {
		t.Fatalf("%v\n%s", err, a.body)
	}
	if !p.endlist || p.playlistType != "VOD" || p.sequence != 0 || p.target != 2 || len(p.uris) != DefaultTitleSegments {
		t.Fatalf("playlist %+v", p)
	}
	for k, u := range p.uris {
		if u != strconv.Itoa(k)+".ts" || p.durations[k] != 2 {
			t.Fatalf("entry %d: %q, %gs", k, u, p.durations[k])
		}
	}
	if _, ok := o.object("/vod/3/2/" + p.uris[len(p.uris)-1]); !ok {
		t.Error("the last listed VOD segment is not there")
	}
	for _, c := range []struct {
		td time.Duration
		n  int
	}{{time.Second, 1}, {2 * time.Second, 10}, {1500 * time.Millisecond, 11}, {time.Minute, 1234}} {
		if got, want := vodMediaSize(c.td, c.n), len(vodPlaylist(c.td, c.n)); got != want {
			t.Errorf("vodMediaSize(%v, %d) = %d, want %d", c.td, c.n, got, want)
		}
	}
}

func TestLiveMedia(t *testing.T) {
	o, srv, clk := newLiveOrigin(t, fast)
	td := DefaultTargetDuration
	get := func(hdr ...string) (answer, playlist, int64) {
		t.Helper()
		a := fetch(t, srv, "GET", LiveMediaPath(2, 3), hdr...)
		if a.status == http.StatusNotModified {
			return a, playlist{}, 0
		}
		p, err := parsePlaylist(a.body)
		if a.status != 200 || err != nil {
			t.Fatalf("%d, %v\n%s", a.status, err, a.body)
		}
		gen, err := strconv.ParseInt(a.header.Get(GeneratedHeader), 10, 64)
		if err != nil {
			t.Fatalf("%s %q", GeneratedHeader, a.header.Get(GeneratedHeader))
		}
		edge := LiveEdge(time.Unix(0, gen), td)
		last := strconv.FormatInt(edge, 10) + ".ts"
		if p.sequence != int(edge)-DefaultWindow+1 || len(p.uris) != DefaultWindow || p.uris[len(p.uris)-1] != last || p.endlist {
			t.Fatalf("stamp %d (edge %d): sequence %d, %d segments, last %s\n%s", gen, edge, p.sequence, len(p.uris), p.uris[len(p.uris)-1], a.body)
		}
		for i, u := range p.uris {
			n := int64(p.sequence + i)
			if u != strconv.FormatInt(n, 10)+".ts" || p.durations[i] != td.Seconds() || !p.dates[i].Equal(time.Unix(0, n*int64(td))) {
				t.Fatalf("entry %d: %s, %gs, %v", i, u, p.durations[i], p.dates[i])
			}
		}
		h := a.header
		if h.Get(LiveEdgeHeader) != strconv.FormatInt(edge, 10) || h.Get(ChecksumHeader) != crcHex(a.body) ||
			h.Get("Cache-Control") != DefaultManifestCacheControl || h.Get("ETag") == "" ||
			h.Get("Last-Modified") != LivePublished(edge, td).UTC().Format(http.TimeFormat) {
			t.Fatalf("edge %d, headers %v", edge, h)
		}
		return a, p, edge
	}
	a1, _, e1 := get()
	if e1 != 1000 {
		t.Fatalf("edge %d, want 1000", e1)
	}
	// Unchanged, it is not modified; the 304 still says where the edge is.
	clk.add(td / 4)
	if a := fetch(t, srv, "GET", LiveMediaPath(0, 0), "If-None-Match", a1.header.Get("ETag")); a.status != 304 || a.header.Get(LiveEdgeHeader) != "1000" {
		t.Fatalf("same window, If-None-Match: %d, edge %s", a.status, a.header.Get(LiveEdgeHeader))
	}
	// The moment segment 1001 is published, it is listed.
	clk.set(LivePublished(1001, td))
	a2, _, e2 := get("If-None-Match", a1.header.Get("ETag"))
	if e2 != 1001 || a2.header.Get("ETag") == a1.header.Get("ETag") {
		t.Fatalf("after the edge moved: edge %d, ETag %s (was %s)", e2, a2.header.Get("ETag"), a1.header.Get("ETag"))
	}
	clk.add(-1)
	if _, _, e := get(); e != 1000 {
		t.Fatalf("a nanosecond before segment 1001 is published: edge %d", e)
	}
	if s := o.Stats(); s.Fetches != 4 {
		t.Fatalf("fetches %d, want 4 (the 304 included)", s.Fetches)
	}

	// On the real clock, the stamp and the window agree too.
	_, srv2 := newOrigin(t, fast)
	a := fetch(t, srv2, "GET", LiveMediaPath(0, 0))
	gen, _ := strconv.ParseInt(a.header.Get(GeneratedHeader), 10, 64)
	p, err := parsePlaylist(a.body)
	edge := LiveEdge(time.Unix(0, gen), td)
	if err != nil || p.uris[len(p.uris)-1] != strconv.FormatInt(edge, 10)+".ts" || a.header.Get(LiveEdgeHeader) != strconv.FormatInt(edge, 10) {
		t.Fatalf("real clock: stamp %d, edge header %s, %v\n%s", gen, a.header.Get(LiveEdgeHeader), err, a.body)
	}
}

// Near the epoch the window is short, and before segment 0 ends it is empty.
func TestLiveMediaEarly(t *testing.T) {
	o, srv, clk := newLiveOrigin(t, fast)
	td := o.cfg.Live.TargetDuration
	for _, c := range []struct {
		at    time.Time
		edge  int64
		count int
	}{{time.Unix(0, 0), -1, 0}, {LivePublished(0, td), 0, 1}, {LivePublished(2, td), 2, 3}, {LivePublished(5, td), 5, 6}, {LivePublished(6, td), 6, 6}} {
		clk.set(c.at)
		a := fetch(t, srv, "GET", LiveMediaPath(0, 0))
		p, err := parsePlaylist(a.body)
		if err != nil || a.header.Get(LiveEdgeHeader) != strconv.FormatInt(c.edge, 10) || len(p.uris) != c.count ||
			p.sequence != int(max(0, c.edge-DefaultWindow+1)) {
			t.Errorf("at %v: edge %s, %d segments from %d, %v; want edge %d, %d segments", c.at, a.header.Get(LiveEdgeHeader), len(p.uris), p.sequence, err, c.edge, c.count)
		}
	}
}

func TestLiveSegments(t *testing.T) {
	o, srv, clk := newLiveOrigin(t, fast)
	live := o.cfg.Live
	const edge = 1000
	seen := map[string]bool{}
	for r := range live.Ladder {
		for _, c := range []struct {
			path string
			key  int64
			mod  string
		}{
			{LiveSegmentPath(3, r, edge), LiveSegmentKey(3, r, edge), LivePublished(edge, live.TargetDuration).UTC().Format(http.TimeFormat)},
			{LiveSegmentPath(0, r, 0), LiveSegmentKey(0, r, 0), LivePublished(0, live.TargetDuration).UTC().Format(http.TimeFormat)},
			{VODSegmentPath(49, r, 29), VODSegmentKey(49, r, 29), o.lastMod},
		} {
			size := live.SegmentSize(r)
			a := fetch(t, srv, "GET", c.path)
			want := make([]byte, size)
			SegmentBytes(fast.Seed, c.key, 0, want)
			h := a.header
			if a.status != 200 || int64(len(a.body)) != size || h.Get("Content-Length") != strconv.FormatInt(size, 10) || !bytes.Equal(a.body, want) {
				t.Fatalf("%s: %d, %d bytes, want %d of SegmentBytes(key %#x)", c.path, a.status, len(a.body), size, c.key)
			}
			if got, want := h.Get(ChecksumHeader), fmt.Sprintf("%08x", SegmentCRC(fast.Seed, c.key, size)); got != want {
				t.Fatalf("%s: checksum %s, want %s", c.path, got, want)
			}
			if h.Get("Content-Type") != "video/mp2t" || h.Get("Cache-Control") != DefaultSegmentCacheControl || h.Get("Last-Modified") != c.mod {
				t.Errorf("%s: headers %v", c.path, h)
			}
			if seen[h.Get("ETag")] {
				t.Errorf("%s: ETag %s seen before", c.path, h.Get("ETag"))
			}
			seen[h.Get("ETag")] = true
			if r == 1 { // ranges and conditionals work as on /stream/
				rng := fetch(t, srv, "GET", c.path, "Range", "bytes=100-4999", "If-Range", h.Get("ETag"))
				if rng.status != 206 || !bytes.Equal(rng.body, want[100:5000]) || rng.header.Get(ChecksumHeader) != h.Get(ChecksumHeader) ||
					rng.header.Get("Content-Range") != fmt.Sprintf("bytes 100-4999/%d", size) {
					t.Errorf("%s range: %d, %d bytes, Content-Range %s", c.path, rng.status, len(rng.body), rng.header.Get("Content-Range"))
				}
				if nm := fetch(t, srv, "GET", c.path, "If-Modified-Since", c.mod); nm.status != 304 {
					t.Errorf("%s If-Modified-Since its Last-Modified: %d", c.path, nm.status)
				}
			}
		}
	}
	// Not published yet: 404, and no cache may keep that.
	next := LiveSegmentPath(1, 0, edge+1)
	if a := fetch(t, srv, "GET", next); a.status != 404 || a.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("%s before it is published: %d, Cache-Control %q", next, a.status, a.header.Get("Cache-Control"))
	}
	clk.set(LivePublished(edge+1, live.TargetDuration))
	if a := fetch(t, srv, "HEAD", next); a.status != 200 {
		t.Fatalf("%s once published: %d", next, a.status)
	}
}

func TestLiveNotFound(t *testing.T) {
	o, srv, _ := newLiveOrigin(t, fast)
	for _, p := range []string{
		"/live/", "/live/0", "/live/0/", "/live//master.m3u8", "/live/00/master.m3u8", "/live/4/master.m3u8",
		"/live/-1/master.m3u8", "/live/+1/master.m3u8", "/live/0/master.m3u8/", "/live/0/index.m3u8",
		"/live/0/4/index.m3u8", "/live/0/01/index.m3u8", "/live/0/0/index.m3u8x", "/live/0/0/master.m3u8",
		"/live/0/0/x.ts", "/live/0/0/01.ts", "/live/0/0/.ts", "/live/0/0/-1.ts", "/live/0/0/1.TS", "/live/0/0/0/0.ts",
		"/live/0/0/1001.ts", "/live/0/0/1099511627776.ts", "/live/0/0/99999999999999999999.ts",
		"/vod/50/master.m3u8", "/vod/0/0/30.ts", "/vod/0/0/1.ts/", "/vod/0/4/0.ts", "/vod/0/0/0.m3u8", "/vod/x/master.m3u8",
		"/livex/0/master.m3u8", "/vod", "/stream/0/master.m3u8",
	} {
		if a := fetch(t, srv, "GET", p); a.status != 404 || a.header.Get("Cache-Control") != "no-store" {
			t.Errorf("%s: %d, Cache-Control %q; want 404 no-store", p, a.status, a.header.Get("Cache-Control"))
		}
	}
	if s := o.Stats(); s.Fetches != 0 || len(s.Objects) != 0 {
		t.Fatalf("404s counted: %+v", s)
	}
}

func TestStatsBytes(t *testing.T) {
	o, srv, _ := newLiveOrigin(t, fast)
	seg := LiveSegmentPath(0, 2, 999)
	size := o.cfg.Live.SegmentSize(2)
	master := fetch(t, srv, "GET", LiveMasterPath(1))
	media := fetch(t, srv, "GET", LiveMediaPath(1, 0))
	etag := fetch(t, srv, "GET", seg).header.Get("ETag")
	fetch(t, srv, "HEAD", seg)
	fetch(t, srv, "GET", seg, "Range", "bytes=0-99")
	fetch(t, srv, "GET", seg, "If-None-Match", etag)
	fetch(t, srv, "GET", ManifestPath)
	s := o.Stats()
	want := int64(len(master.body)+len(media.body)) + size + 100 + DefaultManifestSize
	if s.Bytes != want || s.Fetches != 7 {
		t.Fatalf("bytes %d in %d fetches, want %d in 7", s.Bytes, s.Fetches, want)
	}
	for path, n := range map[string]int64{seg: size + 100, LiveMediaPath(1, 0): int64(len(media.body)), ManifestPath: DefaultManifestSize} {
		if got := s.Objects[path].Bytes; got != n {
			t.Errorf("%s: %d bytes, want %d", path, got, n)
		}
	}
	if r := o.Stats(); r.Bytes != want {
		t.Fatalf("reading the counters changed them: %d", r.Bytes)
	}
	o.ResetStats()
	if s := o.Stats(); s.Bytes != 0 {
		t.Fatalf("after reset: %d bytes", s.Bytes)
	}
	fetch(t, srv, "GET", LiveMasterPath(1))
	if s := o.Stats(); s.Bytes != int64(len(master.body)) || s.Objects[LiveMasterPath(1)].Bytes != int64(len(master.body)) {
		t.Fatalf("after reset and a fetch: %+v", s)
	}
}

func TestLiveConfig(t *testing.T) {
	for _, c := range []struct {
		live  Live
		field string
	}{
		{Live{Channels: -1}, "Live.Channels"},
		{Live{Channels: 1<<16 + 1}, "Live.Channels"},
		{Live{Titles: -3}, "Live.Titles"},
		{Live{Titles: 1<<30 + 1}, "Live.Titles"},
		{Live{Ladder: []int64{100, 100}}, "Live.Ladder"},
		{Live{Ladder: []int64{300, 200}}, "Live.Ladder"},
		{Live{Ladder: []int64{0}}, "Live.Ladder"},
		{Live{Ladder: []int64{-5, 10}}, "Live.Ladder"},
		{Live{Ladder: make([]int64, 17)}, "Live.Ladder"},
		{Live{TargetDuration: 999 * time.Millisecond}, "Live.TargetDuration"},
		{Live{TargetDuration: 1500*time.Millisecond + time.Microsecond}, "Live.TargetDuration"},
		{Live{TargetDuration: -time.Second}, "Live.TargetDuration"},
		{Live{TargetDuration: time.Hour}, "Live.TargetDuration"},
		{Live{Window: -1}, "Live.Window"},
		{Live{Window: 1001}, "Live.Window"},
		{Live{TitleSegments: -1}, "Live.TitleSegments"},
		{Live{TitleSegments: 1<<24 + 1}, "Live.TitleSegments"},
		{Live{TitleSegments: 1 << 24}, "Live.TitleSegments"}, // a playlist of 450 MB
	} {
		_, err := New(Config{Live: c.live})
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != c.field || !strings.Contains(err.Error(), "want") {
			t.Errorf("New(Live %+v) = %v, want an error naming %s and what it wants", c.live, err, c.field)
		}
	}
	ok := Live{Channels: 1 << 16, Titles: 1 << 30, Ladder: []int64{1, 10_000_000_000}, TargetDuration: 1500 * time.Millisecond, Window: 1000, TitleSegments: 500_000}
	o, err := New(Config{Live: ok})
	if err != nil {
		t.Fatalf("New(Live %+v): %v", ok, err)
	}
	// The origin keeps a ladder of its own.
	ok.Ladder[0] = 7
	got := o.Config().Live.Ladder
	got[1] = 8
	if l := o.Config().Live.Ladder; l[0] != 1 || l[1] != 10_000_000_000 {
		t.Fatalf("ladder changed from outside: %v", l)
	}
	d := Live{}.WithDefaults()
	d.Ladder[0] = 1
	if DefaultLadder[0] != 150_000 {
		t.Fatal("WithDefaults shares DefaultLadder")
	}
}

func TestLiveSegmentSize(t *testing.T) {
	for _, c := range []struct {
		live Live
		r    int
		want int64
	}{
		{Live{}, 0, 37_500}, {Live{}, 3, 300_000},
		{Live{Ladder: []int64{1_000_000}, TargetDuration: 1500 * time.Millisecond}, 0, 187_500},
		{Live{Ladder: []int64{1, 2}}, 1, tsPacket},
		{Live{Ladder: []int64{10_000_000_000}, TargetDuration: time.Minute}, 0, 75_000_000_000},
	} {
		if got := c.live.SegmentSize(c.r); got != c.want {
			t.Errorf("%+v.SegmentSize(%d) = %d, want %d", c.live, c.r, got, c.want)
		}
	}
}

func TestLiveEdge(t *testing.T) {
	td := 2 * time.Second
	for _, n := range []int64{-5, -1, 0, 1, 1000, 900_000_000} {
		at := LivePublished(n, td)
		if LiveEdge(at, td) != n || LiveEdge(at.Add(-1), td) != n-1 || LiveEdge(at.Add(td-1), td) != n {
			t.Errorf("segment %d published %v: edges %d, %d, %d", n, at, LiveEdge(at.Add(-1), td), LiveEdge(at, td), LiveEdge(at.Add(td-1), td))
		}
	}
	if e := LiveEdge(time.Unix(3, 0), td); e != 0 {
		t.Errorf("3 s after the epoch: edge %d, want 0", e)
	}
}

func TestSegmentKeys(t *testing.T) {
	keys := map[int64]string{}
	add := func(k int64, what string) {
		if k < 0 {
			t.Errorf("%s: key %d is negative", what, k)
		}
		if prev, ok := keys[k]; ok {
			t.Errorf("%s and %s share key %#x", what, prev, k)
		}
		keys[k] = what
	}
	for _, c := range []int{0, 1, maxChannels - 1} {
		for _, r := range []int{0, 1, maxRenditions - 1} {
			for _, n := range []int64{0, 1, maxLiveSequence - 1} {
				add(LiveSegmentKey(c, r, n), LiveSegmentPath(c, r, n))
			}
		}
	}
	for _, ti := range []int{0, 1, maxTitles - 1} {
		for _, r := range []int{0, 1, maxRenditions - 1} {
			for _, k := range []int{0, 1, maxTitleSegments - 1} {
				add(VODSegmentKey(ti, r, k), VODSegmentPath(ti, r, k))
			}
		}
	}
}

func FuzzLivePath(f *testing.F) {
	for _, s := range []string{
		LiveMasterPath(0), LiveMediaPath(3, 1), LiveSegmentPath(1, 2, 1234567), VODMasterPath(49), VODMediaPath(7, 0), VODSegmentPath(2, 3, 29),
		"/live/00/master.m3u8", "/live/0/0/x.ts", "/vod/0/0/-1.ts", "/live/0/0/1099511627776.ts", "/live/0//index.m3u8", "/vod/1/2/3.ts/",
	} {
		f.Add(s)
	}
	l := Live{}.WithDefaults()
	f.Fuzz(func(t *testing.T, p string) {
		ref, ok := l.parsePath(p)
		if !ok {
			return
		}
		if got := ref.path(); got != p {
			t.Fatalf("%q parsed as %+v, which renders as %q", p, ref, got)
		}
		if ref.id < 0 || ref.r < 0 || ref.r >= len(l.Ladder) || ref.seg < 0 || !slices.Contains([]objectKind{kindMaster, kindManifest, kindSegment}, ref.kind) {
			t.Fatalf("%q parsed out of bounds: %+v", p, ref)
		}
	})
}
