package origin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fast is a Config with no delay and no pacing, and a segment size that is
// no multiple of the pattern block or of a TS packet.
var fast = Config{FirstByteDelay: NoDelay, TransferRate: Unlimited, SegmentSize: 1_000_003, Seed: 42}

func newOrigin(t testing.TB, cfg Config) (*Origin, *httptest.Server) {
	t.Helper()
	o, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(o)
	t.Cleanup(srv.Close)
	return o, srv
}

type answer struct {
	status int
	header http.Header
	body   []byte
}

func fetch(t testing.TB, srv *httptest.Server, method, path string, hdr ...string) answer {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return answer{resp.StatusCode, resp.Header, body}
}

func segment(cfg Config, n int64) []byte {
	b := make([]byte, cfg.SegmentSize)
	SegmentBytes(cfg.Seed, n, 0, b)
	return b
}

func TestNewDefaults(t *testing.T) {
	o, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	want := Config{ManifestSize: 2048, SegmentSize: 4 << 20, SegmentDuration: 4 * time.Second,
		FirstByteDelay: 50 * time.Millisecond, TransferRate: 25 << 20,
		CacheControl: CacheControl{"public, max-age=60", "public, max-age=2", "public, max-age=3600"},
		Live: Live{Channels: 4, Titles: 50, Ladder: []int64{150_000, 300_000, 600_000, 1_200_000},
			TargetDuration: 2 * time.Second, Window: 6, TitleSegments: 30},
		LL: LL{Channels: 2, PartTarget: 500 * time.Millisecond, PartsPerSegment: 4, Bitrate: 1_200_000,
			Window: 6, PlaylistCacheControl: "public, max-age=1"}}
	if got := o.Config(); !reflect.DeepEqual(got, want) {
		t.Fatalf("defaults\n got %+v\nwant %+v", got, want)
	}
	o, _ = New(Config{FirstByteDelay: -5, TransferRate: -9})
	if c := o.Config(); c.FirstByteDelay != NoDelay || c.TransferRate != Unlimited {
		t.Fatalf("negative delay and rate: %+v", c)
	}
}

func TestNewRejects(t *testing.T) {
	for _, c := range []struct {
		cfg   Config
		field string
	}{
		{Config{ManifestSize: -1}, "ManifestSize"},
		{Config{ManifestSize: 50}, "ManifestSize"},
		{Config{ManifestSize: MaxManifestSize + 1}, "ManifestSize"},
		{Config{SegmentSize: -1}, "SegmentSize"},
		{Config{SegmentDuration: -time.Second}, "SegmentDuration"},
		{Config{SegmentDuration: time.Microsecond}, "SegmentDuration"},
		{Config{CacheControl: CacheControl{Segment: "max-age=1\r\nX-Evil: 1"}}, "CacheControl.Segment"},
	} {
		_, err := New(c.cfg)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != c.field || !strings.Contains(err.Error(), c.field) {
			t.Errorf("New(%+v) = %v, want an error naming %s", c.cfg, err, c.field)
		}
	}
}

func TestObjects(t *testing.T) {
	o, srv := newOrigin(t, fast)
	cfg := o.Config()
	seg := segment(cfg, 5)
	for _, c := range []struct {
		path, ctype, cc string
		size            int
		body            []byte
	}{
		{MasterPath, "application/vnd.apple.mpegurl", DefaultMasterCacheControl, len(o.master.body), nil},
		{ManifestPath, "application/vnd.apple.mpegurl", DefaultManifestCacheControl, DefaultManifestSize, nil},
		{SegmentPath(5), "video/mp2t", DefaultSegmentCacheControl, int(cfg.SegmentSize), seg},
		{"/stream/segment-5.ts?nonce=x", "video/mp2t", DefaultSegmentCacheControl, int(cfg.SegmentSize), seg},
	} {
		a := fetch(t, srv, "GET", c.path)
		h := a.header
		if a.status != 200 || len(a.body) != c.size || h.Get("Content-Length") != strconv.Itoa(c.size) {
			t.Fatalf("%s: %d, %d bytes, Content-Length %s; want 200, %d", c.path, a.status, len(a.body), h.Get("Content-Length"), c.size)
		}
		if c.body != nil && !bytes.Equal(a.body, c.body) {
			t.Fatalf("%s: body differs from SegmentBytes", c.path)
		}
		if got, want := h.Get(ChecksumHeader), fmt.Sprintf("%08x", crc32.Checksum(a.body, castagnoli)); got != want {
			t.Fatalf("%s: checksum header %s, body's %s", c.path, got, want)
		}
		for k, v := range map[string]string{"Content-Type": c.ctype, "Cache-Control": c.cc, "Accept-Ranges": "bytes", "Last-Modified": o.lastMod} {
			if h.Get(k) != v {
				t.Errorf("%s: %s %q, want %q", c.path, k, h.Get(k), v)
			}
		}
		for _, k := range []string{"ETag", GeneratedHeader, VersionHeader} {
			if h.Get(k) == "" {
				t.Errorf("%s: no %s", c.path, k)
			}
		}
		if _, err := parsePlaylist(a.body); c.body == nil && err != nil {
			t.Errorf("%s: %v", c.path, err)
		}
	}
	// Every segment the playlist lists is there.
	p, _ := parsePlaylist(fetch(t, srv, "GET", ManifestPath).body)
	for _, u := range []string{p.uris[0], p.uris[len(p.uris)-1]} {
		if a := fetch(t, srv, "HEAD", "/stream/"+u); a.status != 200 {
			t.Errorf("listed segment %s: %d", u, a.status)
		}
	}
	// The same seed gives the same object everywhere; another seed does not.
	o2, _ := New(fast)
	o3, _ := New(Config{Seed: 43, SegmentSize: fast.SegmentSize})
	a, _ := o.object(SegmentPath(5))
	b, _ := o2.object(SegmentPath(5))
	c, _ := o3.object(SegmentPath(5))
	d, _ := o.object(SegmentPath(6))
	if a.etag != b.etag || a.crc != b.crc || a.etag == c.etag || a.etag == d.etag {
		t.Fatalf("ETags: seed 42 %s %s, seed 43 %s, segment 6 %s", a.etag, b.etag, c.etag, d.etag)
	}
}

func TestNotFound(t *testing.T) {
	o, srv := newOrigin(t, fast)
	for _, p := range []string{"/", "/stream/", "/stream/segment-.ts", "/stream/segment-01.ts", "/stream/segment--1.ts",
		"/stream/segment-1.ts/x", "/stream/segment-1x.ts", "/stream/segment-99999999999999999999.ts", "/stream/index.m3u", "/healthz"} {
		if a := fetch(t, srv, "GET", p); a.status != 404 {
			t.Errorf("%s: %d, want 404", p, a.status)
		}
	}
	if a := fetch(t, srv, "POST", ManifestPath); a.status != 405 || a.header.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST: %d Allow %q", a.status, a.header.Get("Allow"))
	}
	if s := o.Stats(); s.Fetches != 0 || len(s.Objects) != 0 {
		t.Fatalf("404 and 405 counted: %+v", s)
	}
}

func TestRanges(t *testing.T) {
	o, srv := newOrigin(t, fast)
	size := fast.SegmentSize
	seg := segment(fast, 9)
	crc := fmt.Sprintf("%08x", crc32.Checksum(seg, castagnoli))
	etag := fetch(t, srv, "HEAD", SegmentPath(9)).header.Get("ETag")
	for _, c := range []struct {
		rng, ifRange string
		status       int
		start, end   int64
	}{
		{"bytes=0-0", "", 206, 0, 0},
		{"bytes=0-65535", "", 206, 0, 65535},
		{"bytes=65530-131080", "", 206, 65530, 131080},
		{"bytes=999990-", "", 206, 999990, size - 1},
		{"bytes=-100", "", 206, size - 100, size - 1},
		{"bytes=-2000000", "", 206, 0, size - 1},
		{"bytes=5-2000000", "", 206, 5, size - 1},
		{"bytes=1000003-", "", 416, 0, 0},
		{"bytes=-0", "", 416, 0, 0},
		{"bytes=0-1,5-6", "", 200, 0, size - 1},
		{"bytes=5-2", "", 200, 0, size - 1},
		{"items=0-1", "", 200, 0, size - 1},
		{"bytes=10-20", etag, 206, 10, 20},
		{"bytes=10-20", `"other"`, 200, 0, size - 1},
		{"bytes=10-20", o.lastMod, 206, 10, 20},
		{"bytes=10-20", "Mon, 02 Jan 2006 15:04:05 GMT", 200, 0, size - 1},
	} {
		hdr := []string{"Range", c.rng}
		if c.ifRange != "" {
			hdr = append(hdr, "If-Range", c.ifRange)
		}
		a := fetch(t, srv, "GET", SegmentPath(9), hdr...)
		if a.status != c.status {
			t.Errorf("%s (If-Range %s): %d, want %d", c.rng, c.ifRange, a.status, c.status)
			continue
		}
		cr := a.header.Get("Content-Range")
		switch c.status {
		case 416:
			if cr != "bytes */1000003" || a.header.Get("Cache-Control") != "no-store" {
				t.Errorf("%s: Content-Range %q, Cache-Control %q", c.rng, cr, a.header.Get("Cache-Control"))
			}
			continue
		case 206:
			if want := fmt.Sprintf("bytes %d-%d/%d", c.start, c.end, size); cr != want {
				t.Errorf("%s: Content-Range %q, want %q", c.rng, cr, want)
			}
		}
		if !bytes.Equal(a.body, seg[c.start:c.end+1]) {
			t.Errorf("%s: %d bytes that are not bytes %d-%d of the segment", c.rng, len(a.body), c.start, c.end)
		}
		if a.header.Get(ChecksumHeader) != crc {
			t.Errorf("%s: checksum header %s, want the whole object's %s", c.rng, a.header.Get(ChecksumHeader), crc)
		}
	}
	a := fetch(t, srv, "GET", ManifestPath, "Range", "bytes=0-6")
	if a.status != 206 || string(a.body) != "#EXTM3U" {
		t.Fatalf("playlist range: %d %q", a.status, a.body)
	}
	if s := o.Stats(); s.Fetches != 16 { // 1 HEAD + 14 GETs answered 200/206 + the playlist; not the 416s
		t.Fatalf("fetches %d, want 16", s.Fetches)
	}
}

func TestHead(t *testing.T) {
	_, srv := newOrigin(t, fast)
	g := fetch(t, srv, "GET", SegmentPath(2))
	h := fetch(t, srv, "HEAD", SegmentPath(2))
	if h.status != 200 || len(h.body) != 0 {
		t.Fatalf("HEAD: %d, %d body bytes", h.status, len(h.body))
	}
	for _, k := range []string{"Content-Length", "Content-Type", "ETag", "Last-Modified", "Cache-Control", ChecksumHeader} {
		if g.header.Get(k) != h.header.Get(k) {
			t.Errorf("%s: GET %q, HEAD %q", k, g.header.Get(k), h.header.Get(k))
		}
	}
	if h.header.Get(VersionHeader) != "2" {
		t.Errorf("HEAD is not counted as a copy: version %s", h.header.Get(VersionHeader))
	}
	r := fetch(t, srv, "HEAD", SegmentPath(2), "Range", "bytes=0-9")
	if r.status != 206 || r.header.Get("Content-Length") != "10" {
		t.Errorf("ranged HEAD: %d, Content-Length %s", r.status, r.header.Get("Content-Length"))
	}
}

func TestConditional(t *testing.T) {
	o, srv := newOrigin(t, fast)
	g := fetch(t, srv, "GET", SegmentPath(1))
	etag := g.header.Get("ETag")
	for _, c := range []struct {
		hdr    []string
		status int
	}{
		{[]string{"If-None-Match", etag}, 304},
		{[]string{"If-None-Match", "W/" + etag}, 304},
		{[]string{"If-None-Match", `"x", ` + etag}, 304},
		{[]string{"If-None-Match", "*"}, 304},
		{[]string{"If-None-Match", `"x"`}, 200},
		{[]string{"If-Modified-Since", o.lastMod}, 304},
		{[]string{"If-Modified-Since", "Mon, 02 Jan 2006 15:04:05 GMT"}, 200},
		{[]string{"If-None-Match", `"x"`, "If-Modified-Since", o.lastMod}, 200}, // If-None-Match wins
		{[]string{"If-None-Match", etag, "Range", "bytes=0-1"}, 304},
	} {
		a := fetch(t, srv, "GET", SegmentPath(1), c.hdr...)
		if a.status != c.status {
			t.Errorf("%q: %d, want %d", c.hdr, a.status, c.status)
			continue
		}
		if c.status == 304 {
			if len(a.body) != 0 || a.header.Get("ETag") != etag || a.header.Get(GeneratedHeader) == "" ||
				a.header.Get(VersionHeader) == "" || a.header.Get("Cache-Control") != DefaultSegmentCacheControl {
				t.Errorf("%q: 304 headers %v", c.hdr, a.header)
			}
		}
	}
	if s := o.Stats(); s.Fetches != 10 || s.Objects[SegmentPath(1)].Version != 10 {
		t.Fatalf("304s are generated copies: %+v", s)
	}
}

func TestVersionsAndStats(t *testing.T) {
	o, srv := newOrigin(t, fast)
	version := func(path string) int64 {
		t.Helper()
		a := fetch(t, srv, "GET", path)
		v, err := strconv.ParseInt(a.header.Get(VersionHeader), 10, 64)
		if err != nil || a.status != 200 {
			t.Fatalf("%s: %d, version %q", path, a.status, a.header.Get(VersionHeader))
		}
		return v
	}
	before := time.Now().UnixNano()
	for i, c := range []struct {
		path string
		want int64
	}{
		{ManifestPath + "?n=a", 1}, {ManifestPath + "?n=a", 2}, {ManifestPath + "?n=b", 1}, {ManifestPath, 1}, {ManifestPath + "?n=a", 3},
	} {
		if v := version(c.path); v != c.want {
			t.Fatalf("request %d %s: version %d, want %d", i, c.path, v, c.want)
		}
	}
	for range 3 {
		fetch(t, srv, "GET", HealthPath)
	}
	s := o.Stats()
	if s.Fetches != 5 || s.Failed != 0 || s.Health != (HealthStats{OK: 3}) || len(s.Objects) != 3 {
		t.Fatalf("stats %+v", s)
	}
	a := s.Objects[ManifestPath+"?n=a"]
	if a.Fetches != 3 || a.Version != 3 || a.LastGenerated < before || a.LastGenerated > time.Now().UnixNano() {
		t.Fatalf("?n=a: %+v", a)
	}
	o.ResetStats()
	if s := o.Stats(); s.Fetches != 0 || len(s.Objects) != 0 || s.Health != (HealthStats{}) {
		t.Fatalf("after reset: %+v", s)
	}
	if v := version(ManifestPath + "?n=a"); v != 4 {
		t.Fatalf("version after reset %d, want 4: versions outlive resets", v)
	}
	if s := o.Stats(); s.Objects[ManifestPath+"?n=a"] != (ObjectStats{Fetches: 1, Bytes: DefaultManifestSize, Version: 4, LastGenerated: s.Objects[ManifestPath+"?n=a"].LastGenerated}) {
		t.Fatalf("after reset and a fetch: %+v", s.Objects)
	}
}

func TestFail5xx(t *testing.T) {
	o, srv := newOrigin(t, fast)
	o.SetMode(Fail5xx)
	for _, p := range []string{ManifestPath, SegmentPath(3) + "?x=1", HealthPath} {
		a := fetch(t, srv, "GET", p)
		if a.status != 503 || a.header.Get("Cache-Control") != "no-store" {
			t.Fatalf("%s in 5xx mode: %d, Cache-Control %q", p, a.status, a.header.Get("Cache-Control"))
		}
	}
	s := o.Stats()
	if s.Fetches != 0 || s.Failed != 2 || s.Objects[SegmentPath(3)+"?x=1"].Failed != 1 || s.Health != (HealthStats{Failed: 1}) {
		t.Fatalf("stats %+v", s)
	}
	o.SetMode(Healthy)
	if a := fetch(t, srv, "GET", HealthPath); a.status != 200 || string(a.body) != "ok" {
		t.Fatalf("health after recovery: %d %q", a.status, a.body)
	}
	if a := fetch(t, srv, "GET", SegmentPath(3)+"?x=1"); a.status != 200 || a.header.Get(VersionHeader) != "1" {
		t.Fatalf("after recovery: %d, version %s", a.status, a.header.Get(VersionHeader))
	}
}

// A bare Origin in Drop or Refuse mode aborts the answer.
func TestAbortWithoutServer(t *testing.T) {
	o, srv := newOrigin(t, fast)
	for _, m := range []Mode{Drop, Refuse} {
		o.SetMode(m)
		resp, err := srv.Client().Get(srv.URL + ManifestPath)
		if err == nil {
			resp.Body.Close()
			t.Fatalf("%v: got %s, want a broken connection", m, resp.Status)
		}
	}
	if s := o.Stats(); s.Failed != 2 || s.Fetches != 0 {
		t.Fatalf("stats %+v", s)
	}
}

func TestFirstByteDelayAndRate(t *testing.T) {
	_, srv := newOrigin(t, Config{}) // the defaults: 50 ms, then 4 MiB at 25 MiB/s
	t0 := time.Now()
	resp, err := srv.Client().Get(srv.URL + SegmentPath(0))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	headers := time.Since(t0)
	n, err := io.Copy(io.Discard, resp.Body)
	total := time.Since(t0)
	if err != nil || n != DefaultSegmentSize {
		t.Fatalf("body: %d bytes, %v", n, err)
	}
	t.Logf("headers after %v, last byte after %v (want 50ms and 50+160ms)", headers, total)
	// Sleeps never end early, so the lower bounds are exact; the upper
	// ones leave room for a loaded machine.
	if headers < DefaultFirstByteDelay || headers > 3*time.Second {
		t.Errorf("headers after %v, want about 50ms", headers)
	}
	// 4 MiB at 25 MiB/s is 160 ms.
	if total < 210*time.Millisecond || total > 3*time.Second {
		t.Errorf("last byte after %v, want about 210ms", total)
	}
}

// The body leaves as it is paced, not once complete.
func TestBodyIsStreamed(t *testing.T) {
	_, srv := newOrigin(t, Config{FirstByteDelay: NoDelay, TransferRate: 1 << 20, SegmentSize: 8 << 20}) // 8 s in all
	resp, err := srv.Client().Get(srv.URL + SegmentPath(0))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	t0 := time.Now()
	if _, err := io.ReadFull(resp.Body, make([]byte, 4096)); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d > 2*time.Second {
		t.Fatalf("first body bytes %v after the headers of an 8 s transfer", d)
	}
}

func TestDelayHonoursCancel(t *testing.T) {
	o, err := New(Config{FirstByteDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req := httptest.NewRequestWithContext(ctx, "GET", ManifestPath, nil)
	w := httptest.NewRecorder()
	done := make(chan struct{})
	go func() {
		o.ServeHTTP(w, req)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("ServeHTTP still waits out its first-byte delay after the request was cancelled")
	}
	if s := o.Stats(); s.Fetches != 0 {
		t.Fatalf("a cancelled request counted: %+v", s)
	}
}

func TestParseMode(t *testing.T) {
	for _, m := range []Mode{Healthy, Fail5xx, Refuse, Drop} {
		if got, err := ParseMode(m.String()); got != m || err != nil {
			t.Errorf("ParseMode(%q) = %v, %v", m, got, err)
		}
	}
	o, _ := New(fast)
	o.SetMode(Mode(9))
	if o.Mode() != Healthy {
		t.Errorf("SetMode(9) changed the mode to %v", o.Mode())
	}
	if _, err := ParseMode("down"); err == nil || !strings.Contains(err.Error(), "healthy, 5xx, refuse, drop") {
		t.Errorf("ParseMode(down): %v", err)
	}
}

// discard is a ResponseWriter that only counts, for the benchmark.
type discard struct {
	h http.Header
	n int64
}

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) WriteHeader(int)             {}
func (d *discard) Write(p []byte) (int, error) { d.n += int64(len(p)); return len(p), nil }

func BenchmarkServeSegment(b *testing.B) {
	o, err := New(Config{FirstByteDelay: NoDelay, TransferRate: Unlimited})
	if err != nil {
		b.Fatal(err)
	}
	req := httptest.NewRequest("GET", SegmentPath(1), nil)
	b.SetBytes(DefaultSegmentSize)
	for b.Loop() {
		o.ServeHTTP(&discard{h: http.Header{}}, req)
	}
}
