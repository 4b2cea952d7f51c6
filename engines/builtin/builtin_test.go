package builtin

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestHitMissStaleAge(t *testing.T) {
	o := newFakeOrigin(t)
	clock := &testClock{}
	c, srv := testCache(t, o.URL(), noProbe(), clock)
	const path = "/stream/media.m3u8"
	url := srv.URL + path

	a := get(t, url)
	a.check(t, 200, "MISS", path, 2048, 0, 2048)
	if a.header.Get("Age") != "0" || a.header.Get("X-Origin-Version") != "1" {
		t.Fatalf("miss: Age %q version %q", a.header.Get("Age"), a.header.Get("X-Origin-Version"))
	}
	for _, h := range []string{"X-Origin-Generated", "X-Hlsbench-Crc32c", "Cache-Control", "Content-Type"} {
		if a.header.Get(h) == "" {
			t.Errorf("origin header %s not passed through", h)
		}
	}
	if a.header.Get("X-Private-Hop") != "" {
		t.Errorf("header named in Connection passed through")
	}

	clock.advance(30 * time.Second)
	a = get(t, url)
	a.check(t, 200, "HIT", path, 2048, 0, 2048)
	if a.header.Get("Age") != "30" || a.header.Get("Content-Length") != "2048" {
		t.Fatalf("hit: Age %q Content-Length %q", a.header.Get("Age"), a.header.Get("Content-Length"))
	}

	// Past max-age=60 but within the 10 s grace: stale at once, one revalidation.
	clock.advance(31 * time.Second)
	a = get(t, url)
	a.check(t, 200, "STALE", path, 2048, 0, 2048)
	if a.header.Get("Age") != "61" || a.header.Get("X-Origin-Version") != "1" {
		t.Fatalf("stale: Age %q version %q", a.header.Get("Age"), a.header.Get("X-Origin-Version"))
	}
	eventually(t, 2*time.Second, "revalidated copy stored", func() bool {
		return get(t, url).header.Get("X-Origin-Version") == "2"
	})
	a = get(t, url)
	a.check(t, 200, "HIT", path, 2048, 0, 2048)
	if o.count(path) != 2 {
		t.Fatalf("origin fetches %d, want 2", o.count(path))
	}

	// Past TTL+grace with a healthy origin: a miss.
	clock.advance(71 * time.Second)
	a = get(t, url)
	a.check(t, 200, "MISS", path, 2048, 0, 2048)
	if a.header.Get("X-Origin-Version") != "3" {
		t.Fatalf("past grace: version %q, want 3", a.header.Get("X-Origin-Version"))
	}

	s := c.Stats()
	if s.Misses != 2 || s.Stale < 1 || s.BackgroundFetches != 1 || s.OriginFetches != 3 || s.Objects != 1 || s.StoredBytes != 2048 {
		t.Fatalf("stats %+v", s)
	}
}

func TestTTL(t *testing.T) {
	hdr := func(cc ...string) http.Header { return http.Header{"Cache-Control": cc} }
	follow := Policy{}
	for _, tc := range []struct {
		name string
		p    Policy
		path string
		h    http.Header
		want time.Duration
	}{
		{"max-age", follow, "/a.ts", hdr("public, max-age=30"), 30 * time.Second},
		{"s-maxage wins", follow, "/a.ts", hdr("max-age=30, s-maxage=5"), 5 * time.Second},
		{"s-maxage wins in another value", follow, "/a.ts", hdr("max-age=30", "S-MAXAGE=\"7\""), 7 * time.Second},
		{"no-store", follow, "/a.ts", hdr("no-store, max-age=30"), 0},
		{"private", follow, "/a.ts", hdr("private, max-age=30"), 0},
		{"max-age=0", follow, "/a.ts", hdr("max-age=0"), 0},
		{"malformed age", follow, "/a.ts", hdr("max-age=3x"), 0},
		{"no max-age, no default", follow, "/a.ts", nil, 0},
		{"no max-age: default", Policy{DefaultTTL: 9 * time.Second}, "/a.ts", nil, 9 * time.Second},
		{"manifest override", Policy{ManifestTTL: time.Second}, "/a.m3u8", hdr("max-age=30"), time.Second},
		{"manifest override beats no-store", Policy{ManifestTTL: time.Second}, "/a.m3u8", hdr("no-store"), time.Second},
		{"segment override", Policy{SegmentTTL: 2 * time.Second}, "/a.ts", hdr("max-age=30"), 2 * time.Second},
		{"segment policy does not touch manifests", Policy{SegmentTTL: 2 * time.Second}, "/a.m3u8", hdr("max-age=30"), 30 * time.Second},
		{"default override for other paths", Policy{DefaultTTL: 4 * time.Second}, "/a.mp4", hdr("max-age=30"), 4 * time.Second},
		{"huge max-age", follow, "/a.ts", hdr("max-age=99999999999999999999"), maxAgeSeconds * time.Second},
	} {
		if got := tc.p.ttl(tc.path, tc.h); got != tc.want {
			t.Errorf("%s: ttl %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestTTLEndToEnd(t *testing.T) {
	o := newFakeOrigin(t)
	clock := &testClock{}
	p := noProbe()
	p.SegmentTTL = 5 * time.Second // overrides the origin's max-age=60
	p.Grace = 0
	_, srv := testCache(t, o.URL(), p, clock)

	get(t, srv.URL+"/s.ts").check(t, 200, "MISS", "/s.ts", 64<<10, 0, 64<<10)
	get(t, srv.URL+"/m.m3u8").check(t, 200, "MISS", "/m.m3u8", 2048, 0, 2048)
	clock.advance(6 * time.Second)
	get(t, srv.URL+"/s.ts").check(t, 200, "MISS", "/s.ts", 64<<10, 0, 64<<10) // policy TTL, no grace
	get(t, srv.URL+"/m.m3u8").check(t, 200, "HIT", "/m.m3u8", 2048, 0, 2048)  // origin TTL

	o.cacheControl.Store("no-store")
	get(t, srv.URL+"/n.m3u8").check(t, 200, "MISS", "/n.m3u8", 2048, 0, 2048)
	get(t, srv.URL+"/n.m3u8").check(t, 200, "MISS", "/n.m3u8", 2048, 0, 2048)
	if n := o.count("/n.m3u8"); n != 2 {
		t.Fatalf("no-store object fetched %d times, want 2", n)
	}
}

func TestHead(t *testing.T) {
	o := newFakeOrigin(t)
	c, srv := testCache(t, o.URL(), noProbe(), nil)
	for _, want := range []string{"MISS", "HIT"} {
		a := do(t, http.MethodHead, srv.URL+"/h.ts")
		if a.status != 200 || a.header.Get("X-Cache") != want || len(a.body) != 0 || a.header.Get("Content-Length") != "65536" {
			t.Fatalf("HEAD: %d %s body %d Content-Length %q, want 200 %s", a.status, a.header.Get("X-Cache"), len(a.body), a.header.Get("Content-Length"), want)
		}
		if want == "MISS" {
			// The HEAD started a whole-object fetch; wait for it to be stored.
			eventually(t, 2*time.Second, "object stored", func() bool { return c.Stats().Objects == 1 })
		}
	}
	get(t, srv.URL+"/h.ts").check(t, 200, "HIT", "/h.ts", 64<<10, 0, 64<<10)
	if n := o.count("/h.ts"); n != 1 {
		t.Fatalf("origin fetches %d, want 1", n)
	}
}

func TestPurge(t *testing.T) {
	o := newFakeOrigin(t)
	c, srv := testCache(t, o.URL(), noProbe(), nil)
	url := srv.URL + "/p.ts?x=1"
	get(t, url).check(t, 200, "MISS", "/p.ts", 64<<10, 0, 64<<10)
	get(t, url).check(t, 200, "HIT", "/p.ts", 64<<10, 0, 64<<10)
	if a := do(t, "PURGE", srv.URL+"/p.ts"); a.status != 404 {
		t.Fatalf("PURGE of another key: %d, want 404", a.status)
	}
	if a := do(t, "PURGE", url); a.status != 200 {
		t.Fatalf("PURGE: %d, want 200", a.status)
	}
	if a := do(t, "PURGE", url); a.status != 404 {
		t.Fatalf("second PURGE: %d, want 404", a.status)
	}
	get(t, url).check(t, 200, "MISS", "/p.ts", 64<<10, 0, 64<<10)
	if s := c.Stats(); s.Purges != 1 || s.Objects != 1 || o.count("/p.ts") != 2 {
		t.Fatalf("stats %+v, origin fetches %d", s, o.count("/p.ts"))
	}
}

// BAN /prefix removes every stored object under it and only those.
func TestBan(t *testing.T) {
	o := newFakeOrigin(t)
	c, srv := testCache(t, o.URL(), noProbe(), nil)
	keys := []string{"/s/a.ts", "/s/b.ts?x=1", "/s/c.m3u8", "/t/a.ts"}
	for _, k := range keys {
		get(t, srv.URL+k)
	}
	a := do(t, "BAN", srv.URL+"/s/")
	if a.status != 200 || a.header.Get(BannedHeader) != "3" {
		t.Fatalf("BAN /s/: %d %s %q, want 200 and 3 removed", a.status, BannedHeader, a.header.Get(BannedHeader))
	}
	for _, k := range keys {
		want := "MISS"
		if k == "/t/a.ts" {
			want = "HIT"
		}
		if got := get(t, srv.URL+k).header.Get("X-Cache"); got != want {
			t.Errorf("%s after BAN /s/: X-Cache %s, want %s", k, got, want)
		}
	}
	if a := do(t, "BAN", srv.URL+"/none/"); a.status != 200 || a.header.Get(BannedHeader) != "0" {
		t.Fatalf("BAN of nothing: %d %q", a.status, a.header.Get(BannedHeader))
	}
	if s := c.Stats(); s.Bans != 2 || s.Banned != 3 || s.Objects != 4 {
		t.Fatalf("stats %+v: want 2 bans, 3 banned, 4 objects stored again", s)
	}
}

func TestLRUEviction(t *testing.T) {
	o := newFakeOrigin(t)
	p := noProbe()
	p.MaxBytes = 3 * 64 << 10
	c, srv := testCache(t, o.URL(), p, nil)
	for _, k := range []string{"/a.ts", "/b.ts", "/c.ts"} {
		get(t, srv.URL+k).check(t, 200, "MISS", k, 64<<10, 0, 64<<10)
	}
	get(t, srv.URL+"/a.ts").check(t, 200, "HIT", "/a.ts", 64<<10, 0, 64<<10) // a is now the most recent
	get(t, srv.URL+"/d.ts").check(t, 200, "MISS", "/d.ts", 64<<10, 0, 64<<10)
	s := c.Stats()
	if s.Evictions != 1 || s.Objects != 3 || s.StoredBytes != 3*64<<10 {
		t.Fatalf("stats %+v", s)
	}
	get(t, srv.URL+"/a.ts").check(t, 200, "HIT", "/a.ts", 64<<10, 0, 64<<10)
	get(t, srv.URL+"/c.ts").check(t, 200, "HIT", "/c.ts", 64<<10, 0, 64<<10)
	get(t, srv.URL+"/b.ts").check(t, 200, "MISS", "/b.ts", 64<<10, 0, 64<<10) // evicted

	// An object larger than the store is served but not stored.
	big := srv.URL + "/big.ts?size=300000"
	get(t, big).check(t, 200, "MISS", "/big.ts", 300000, 0, 300000)
	get(t, big).check(t, 200, "MISS", "/big.ts", 300000, 0, 300000)
	if s := c.Stats(); s.StoredBytes > p.MaxBytes {
		t.Fatalf("stored %d bytes over MaxBytes %d", s.StoredBytes, p.MaxBytes)
	}
}

func TestStatsEndpoint(t *testing.T) {
	o := newFakeOrigin(t)
	_, srv := testCache(t, o.URL(), noProbe(), nil)
	get(t, srv.URL+"/s.ts")
	get(t, srv.URL+"/s.ts")
	a := get(t, srv.URL+StatsPath)
	if a.status != 200 || a.header.Get("Content-Type") != "application/json" {
		t.Fatalf("stats: %d %s", a.status, a.header.Get("Content-Type"))
	}
	var m map[string]int64
	if err := json.Unmarshal(a.body, &m); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]int64{
		"hits": 1, "misses": 1, "origin_fetches": 1, "objects": 1, "stored_bytes": 64 << 10,
		"bytes_from_origin": 64 << 10, "bytes_served": 128 << 10, "stale": 0, "coalesced": 0,
		"origin_errors": 0, "background_fetches": 0, "evictions": 0, "purges": 0, "passes": 0,
		"bans": 0, "banned": 0,
	} {
		if got, ok := m[k]; !ok || got != want {
			t.Errorf("stats %s = %d (present %v), want %d", k, got, ok, want)
		}
	}
	if n := o.count(StatsPath); n != 0 {
		t.Fatalf("stats path sent to origin %d times", n)
	}
}

func TestPass(t *testing.T) {
	o := newFakeOrigin(t)
	c, srv := testCache(t, o.URL(), noProbe(), nil)
	for range 2 {
		resp, err := testClient.Post(srv.URL+"/x.ts", "text/plain", strings.NewReader("hi"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("X-Cache") != "MISS" || resp.Header.Get("Age") != "0" {
			t.Fatalf("POST: %d X-Cache %q Age %q", resp.StatusCode, resp.Header.Get("X-Cache"), resp.Header.Get("Age"))
		}
	}
	if s := c.Stats(); s.Passes != 2 || s.Objects != 0 || o.count("/x.ts") != 2 {
		t.Fatalf("stats %+v, origin %d", s, o.count("/x.ts"))
	}
}

func TestNotFoundNotCached(t *testing.T) {
	o := newFakeOrigin(t)
	o.mode.Store(modeNotFind)
	c, srv := testCache(t, o.URL(), noProbe(), nil)
	for range 2 {
		if a := get(t, srv.URL+"/missing.ts"); a.status != 404 || a.header.Get("X-Cache") != "MISS" {
			t.Fatalf("got %d %s, want 404 MISS", a.status, a.header.Get("X-Cache"))
		}
	}
	if s := c.Stats(); s.Objects != 0 || o.count("/missing.ts") != 2 || s.OriginErrors != 0 {
		t.Fatalf("stats %+v, origin %d", s, o.count("/missing.ts"))
	}
}

func TestNoContentLength(t *testing.T) {
	o := newFakeOrigin(t)
	_, srv := testCache(t, o.URL(), noProbe(), nil)
	url := srv.URL + "/c.ts?chunked=1&size=200000"
	get(t, url).check(t, 200, "MISS", "/c.ts", 200000, 0, 200000)
	a := get(t, url)
	a.check(t, 200, "HIT", "/c.ts", 200000, 0, 200000)
	if a.header.Get("Content-Length") != "200000" {
		t.Fatalf("hit Content-Length %q", a.header.Get("Content-Length"))
	}
	// A range on a miss without Content-Length waits for the whole object.
	get(t, srv.URL+"/d.ts?chunked=1&size=200000", "Range", "bytes=100-199").check(t, 206, "MISS", "/d.ts", 200000, 100, 200)
}

func TestNew(t *testing.T) {
	ok := DefaultPolicy()
	for _, tc := range []struct {
		origin string
		edit   func(*Policy)
		want   string // in the error; "" for success
	}{
		{"http://127.0.0.1:8081", nil, ""},
		{"https://origin.example", nil, ""},
		{"http://127.0.0.1:8081/", nil, ""},
		{"", nil, "Origin"},
		{"127.0.0.1:8081", nil, "Origin"},
		{"ftp://127.0.0.1", nil, "Origin"},
		{"http://", nil, "Origin"},
		{"http://127.0.0.1/prefix", nil, "Origin"},
		{"http://u:p@127.0.0.1", nil, "Origin"},
		{"http://127.0.0.1?q", nil, "Origin"},
		{"http://127.0.0.1", func(p *Policy) { p.Grace = -1 }, "Policy.Grace"},
		{"http://127.0.0.1", func(p *Policy) { p.ManifestTTL = -time.Second }, "Policy.ManifestTTL"},
		{"http://127.0.0.1", func(p *Policy) { p.SegmentTTL = -time.Second }, "Policy.SegmentTTL"},
		{"http://127.0.0.1", func(p *Policy) { p.DefaultTTL = -time.Second }, "Policy.DefaultTTL"},
		{"http://127.0.0.1", func(p *Policy) { p.ProbeInterval = -time.Second }, "Policy.ProbeInterval"},
		{"http://127.0.0.1", func(p *Policy) { p.ProbeTimeout = -time.Second }, "Policy.ProbeTimeout"},
		{"http://127.0.0.1", func(p *Policy) { p.FetchTimeout = -time.Second }, "Policy.FetchTimeout"},
		{"http://127.0.0.1", func(p *Policy) { p.MaxBytes = -1 }, "Policy.MaxBytes"},
		{"http://127.0.0.1", func(p *Policy) { p.ProbePath = "health" }, "Policy.ProbePath"},
		{"http://127.0.0.1", func(p *Policy) { *p = Policy{} }, ""}, // zeros take defaults
	} {
		p := ok
		p.ProbePath = "" // no probe traffic from this test
		if tc.edit != nil {
			tc.edit(&p)
		}
		c, err := New(Config{Origin: tc.origin, Policy: p})
		if c != nil {
			c.Close()
		}
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q %+v: %v", tc.origin, p, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q %+v: error %v, want one naming %s", tc.origin, p, err, tc.want)
		}
	}
	c, err := New(Config{Origin: "http://127.0.0.1:1", Policy: Policy{}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.p.MaxBytes != DefaultMaxBytes || c.p.FetchTimeout != DefaultFetchTimeout {
		t.Fatalf("zero policy: MaxBytes %d FetchTimeout %v, want defaults", c.p.MaxBytes, c.p.FetchTimeout)
	}
}
