package builtin

import (
	"net/http"
	"testing"
	"time"
)

func TestRangeFromCache(t *testing.T) {
	o := newFakeOrigin(t)
	_, srv := testCache(t, o.URL(), noProbe(), nil)
	const path, size = "/r.ts", 64 << 10
	url := srv.URL + path
	get(t, url).check(t, 200, "MISS", path, size, 0, size)
	for _, tc := range []struct {
		rng          string
		status       int
		start, end   int // body [start, end) for 200/206
		contentRange string
	}{
		{"bytes=0-99", 206, 0, 100, "bytes 0-99/65536"},
		{"bytes=100-100", 206, 100, 101, "bytes 100-100/65536"},
		{"bytes=65000-", 206, 65000, size, "bytes 65000-65535/65536"},
		{"bytes=-100", 206, size - 100, size, "bytes 65436-65535/65536"},
		{"bytes=-999999", 206, 0, size, "bytes 0-65535/65536"},
		{"bytes=60000-999999", 206, 60000, size, "bytes 60000-65535/65536"},
		{"bytes=65536-", 416, 0, 0, "bytes */65536"},
		{"bytes=-0", 416, 0, 0, "bytes */65536"},
		{"bytes=0-1,5-6", 200, 0, size, ""},
		{"items=0-1", 200, 0, size, ""},
		{"bytes=5-1", 200, 0, size, ""},
		{"bytes=x-1", 200, 0, size, ""},
	} {
		a := get(t, url, "Range", tc.rng)
		if a.status != tc.status || a.header.Get("Content-Range") != tc.contentRange || a.header.Get("X-Cache") != "HIT" {
			t.Errorf("%s: %d Content-Range %q X-Cache %q, want %d %q HIT", tc.rng, a.status, a.header.Get("Content-Range"), a.header.Get("X-Cache"), tc.status, tc.contentRange)
			continue
		}
		if tc.status != 416 {
			a.check(t, tc.status, "HIT", path, size, tc.start, tc.end)
		}
		if a.header.Get("X-Hlsbench-Crc32c") == "" {
			t.Errorf("%s: origin evidence missing", tc.rng)
		}
	}
	// HEAD with a range: the 206 headers, no body.
	a := do(t, http.MethodHead, url, "Range", "bytes=10-19")
	if a.status != 206 || len(a.body) != 0 || a.header.Get("Content-Length") != "10" {
		t.Fatalf("HEAD range: %d, %d bytes, Content-Length %q", a.status, len(a.body), a.header.Get("Content-Length"))
	}
}

// A range on a miss fetches the whole object, and the range is sent as soon
// as its bytes arrive rather than when the object is complete.
func TestRangeOnMiss(t *testing.T) {
	o := newFakeOrigin(t)
	o.rate.Store(10 << 20) // 4 MiB in 400 ms
	c, srv := testCache(t, o.URL(), noProbe(), nil)
	const path, size = "/rm.ts", 4 << 20
	url := srv.URL + path + "?size=4194304"

	t0 := time.Now()
	want := objectBody(path, size)
	g := doTimed(url, want[:65536], "Range", "bytes=0-65535")
	took := time.Since(t0)
	if g.err != nil || g.status != 206 || g.header.Get("X-Cache") != "MISS" || g.header.Get("Content-Range") != "bytes 0-65535/4194304" {
		t.Fatalf("range miss: err %v %d %s %q", g.err, g.status, g.header.Get("X-Cache"), g.header.Get("Content-Range"))
	}
	if !g.match {
		t.Fatalf("range miss: wrong bytes")
	}
	if !raceEnabled && took > 150*time.Millisecond {
		t.Errorf("the first 64 KiB of a 400 ms transfer took %v", took)
	}
	// A range near the end waits for its bytes.
	g = doTimed(url, want[size-1000:], "Range", "bytes=-1000")
	if g.err != nil || g.status != 206 || !g.match {
		t.Fatalf("tail range: err %v %d, %d bytes", g.err, g.status, g.n)
	}
	eventually(t, 3*time.Second, "whole object stored", func() bool { return c.Stats().Objects == 1 })
	get(t, url).check(t, 200, "HIT", path, size, 0, size)
	if n := o.count(path); n != 1 {
		t.Fatalf("origin fetches %d, want 1 (whole object, once)", n)
	}
	t.Logf("first 64 KiB of a cold 4 MiB object at 10 MiB/s in %v", took.Round(time.Microsecond))
}
