package builtin

import (
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// gracePolicy expires objects fast and detects a failing origin within a
// few probe intervals.
func gracePolicy() Policy {
	p := DefaultPolicy()
	p.SegmentTTL = 300 * time.Millisecond
	p.Grace = 3 * time.Second
	p.ProbeInterval = 100 * time.Millisecond
	p.ProbeTimeout = 100 * time.Millisecond
	p.FetchTimeout = 300 * time.Millisecond
	return p
}

// hammer sends GETs from a few clients for d and checks every answer is the
// stored copy: STALE, version 1, the right bytes. It returns how many.
func hammer(t *testing.T, url, path string, d time.Duration) int {
	t.Helper()
	var mu sync.Mutex
	n := 0
	var wg sync.WaitGroup
	deadline := time.Now().Add(d)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				a := get(t, url)
				a.check(t, 200, "STALE", path, 64<<10, 0, 64<<10)
				if v := a.header.Get("X-Origin-Version"); v != "1" {
					t.Errorf("version %q: the good copy was replaced", v)
					return
				}
				mu.Lock()
				n++
				mu.Unlock()
				time.Sleep(2 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	return n
}

// While the origin fails, an object past its TTL is served stale within
// grace, background fetches are paced, and a 5xx never replaces it.
func TestGrace(t *testing.T) {
	for _, mode := range []string{"503", "refused", "timeout"} {
		t.Run(mode, func(t *testing.T) {
			o := newFakeOrigin(t)
			p := gracePolicy()
			c, srv := testCache(t, o.URL(), p, nil)
			const path = "/g.ts"
			url := srv.URL + path
			get(t, url).check(t, 200, "MISS", path, 64<<10, 0, 64<<10)

			switch mode {
			case "503":
				o.mode.Store(mode503)
			case "refused":
				o.srv.CloseClientConnections()
				o.srv.Listener.Close()
			case "timeout":
				o.mode.Store(modeHang) // health answers; objects never do
			}
			time.Sleep(p.SegmentTTL + 50*time.Millisecond)

			const window = 1200 * time.Millisecond
			n := hammer(t, url, path, window)
			s := c.Stats()
			// One fetch at the first stale answer, then at most one per
			// probe interval (the retry gap), plus slack for timing.
			bound := int64(2 + window/p.ProbeInterval + 2)
			if s.BackgroundFetches < 2 || s.BackgroundFetches > bound {
				t.Fatalf("%d background fetches for %d stale answers in %v, want 2…%d", s.BackgroundFetches, n, window, bound)
			}
			// The origin may not have seen the last fetch yet.
			if got := int64(o.count(path)); mode != "refused" && (got > 1+s.BackgroundFetches || got < s.BackgroundFetches) {
				t.Fatalf("origin saw %d fetches, stats %+v", o.count(path), s)
			}
			if s.Stale != int64(n) || s.OriginErrors < s.BackgroundFetches-1 || s.Objects != 1 {
				t.Fatalf("stats %+v after %d stale answers", s, n)
			}
			t.Logf("%s: %d stale answers, %d background fetches in %v", mode, n, s.BackgroundFetches, window)

			// The origin recovers: the next revalidation replaces the copy.
			switch mode {
			case "503", "timeout":
				o.mode.Store(modeOK)
			case "refused":
				ln, err := net.Listen("tcp", o.srv.Listener.Addr().String())
				if err != nil {
					t.Skipf("cannot listen on the origin's address again: %v", err)
				}
				srv2 := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(o.serve)}}
				srv2.Start()
				defer srv2.Close()
			}
			eventually(t, 3*time.Second, "revalidated after recovery", func() bool {
				a := get(t, url)
				return a.status == 200 && a.header.Get("X-Cache") == "HIT" && a.header.Get("X-Origin-Version") != "1"
			})
		})
	}
}

// Past grace with a healthy origin (no probe), a request goes to the origin;
// its failure reaches the client, and the good copy stays stored.
func TestPastGrace(t *testing.T) {
	for _, mode := range []string{"503", "refused"} {
		t.Run(mode, func(t *testing.T) {
			o := newFakeOrigin(t)
			p := noProbe()
			p.SegmentTTL = 100 * time.Millisecond
			p.Grace = 200 * time.Millisecond
			c, srv := testCache(t, o.URL(), p, nil)
			url := srv.URL + "/pg.ts"
			get(t, url).check(t, 200, "MISS", "/pg.ts", 64<<10, 0, 64<<10)
			if mode == "503" {
				o.mode.Store(mode503)
			} else {
				o.srv.CloseClientConnections()
				o.srv.Listener.Close()
			}
			time.Sleep(150 * time.Millisecond)
			get(t, url).check(t, 200, "STALE", "/pg.ts", 64<<10, 0, 64<<10)
			time.Sleep(200 * time.Millisecond)
			a := get(t, url)
			if a.status != 503 || a.header.Get("X-Cache") != "MISS" {
				t.Fatalf("past grace: %d %s, want 503 MISS", a.status, a.header.Get("X-Cache"))
			}
			if mode == "503" && string(a.body) != "origin failing\n" {
				t.Fatalf("past grace: body %q, want the origin's", a.body)
			}
			if s := c.Stats(); s.Objects != 1 {
				t.Fatalf("good copy dropped: %+v", s)
			}
		})
	}
}

// Past grace with a sick origin, the stored copy is still served stale.
func TestPastGraceSick(t *testing.T) {
	o := newFakeOrigin(t)
	p := gracePolicy()
	p.SegmentTTL = 100 * time.Millisecond
	p.Grace = 200 * time.Millisecond
	p.ProbeInterval = 50 * time.Millisecond
	c, srv := testCache(t, o.URL(), p, nil)
	url := srv.URL + "/sick.ts"
	get(t, url).check(t, 200, "MISS", "/sick.ts", 64<<10, 0, 64<<10)
	o.mode.Store(mode503)
	eventually(t, 2*time.Second, "probe sees the origin sick", func() bool { return !c.healthy.Load() })
	time.Sleep(350 * time.Millisecond)
	a := get(t, url)
	a.check(t, 200, "STALE", "/sick.ts", 64<<10, 0, 64<<10)
	if a.header.Get("X-Origin-Version") != "1" {
		t.Fatalf("version %q", a.header.Get("X-Origin-Version"))
	}
	// A key never stored still goes to the origin.
	if a := get(t, srv.URL+"/never.ts"); a.status != 503 {
		t.Fatalf("cold key with a sick origin: %d, want the origin's 503", a.status)
	}
	o.mode.Store(modeOK)
	eventually(t, 2*time.Second, "probe sees the origin healthy", func() bool { return c.healthy.Load() })
	eventually(t, 2*time.Second, "fresh copy", func() bool { return get(t, url).header.Get("X-Cache") == "HIT" })
}

// HealthyGrace caps grace while the origin is healthy, as Varnish's
// req.grace does: past TTL+HealthyGrace a request goes to the origin even
// though Grace would still allow the stored copy. Before, the built-in
// cache served a 1 s LL-HLS playlist up to 31 s stale from a healthy
// origin (Grace 30 s; the policy's healthy_grace, 1 s, was dropped), and
// its viewers started that far behind: in `hlsbench suite --quick --engine
// builtin,nginx --workload ll-hls` its p99 part delivery was 6.20 s, and
// 0.593 s with healthy_grace.
func TestHealthyGrace(t *testing.T) {
	o := newFakeOrigin(t)
	p := noProbe() // healthy throughout
	p.SegmentTTL = 100 * time.Millisecond
	p.Grace = 5 * time.Second
	p.HealthyGrace = 200 * time.Millisecond
	c, srv := testCache(t, o.URL(), p, nil)
	url := srv.URL + "/hg.ts"
	get(t, url).check(t, 200, "MISS", "/hg.ts", 64<<10, 0, 64<<10)
	o.mode.Store(mode503) // the revalidations fail: the copy stays as it was
	time.Sleep(150 * time.Millisecond)
	get(t, url).check(t, 200, "STALE", "/hg.ts", 64<<10, 0, 64<<10)
	time.Sleep(250 * time.Millisecond) // past TTL+HealthyGrace, well within Grace
	a := get(t, url)
	if a.status != 503 || a.header.Get("X-Cache") != "MISS" {
		t.Fatalf("past healthy grace: %d %s, want the origin's 503, MISS", a.status, a.header.Get("X-Cache"))
	}
	if s := c.Stats(); s.Objects != 1 {
		t.Fatalf("good copy dropped: %+v", s)
	}
	if c.grace(false) != p.Grace || c.grace(true) != p.HealthyGrace {
		t.Errorf("grace sick %v, healthy %v: want %v and %v", c.grace(false), c.grace(true), p.Grace, p.HealthyGrace)
	}
}
