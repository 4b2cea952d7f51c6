package builtin

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// discardWriter is the least a ResponseWriter can be: a header map reused
// across requests and a body that goes nowhere, so the benchmark measures
// the cache's hit path and not a recorder's copying.
type discardWriter struct {
	h      http.Header
	status int
	n      int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) WriteHeader(status int)      { w.status = status }
func (w *discardWriter) Write(b []byte) (int, error) { w.n += len(b); return len(b), nil }

func (w *discardWriter) reset() {
	clear(w.h)
	w.status, w.n = 0, 0
}

// warmCache returns a cache holding the object at target.
func warmCache(b *testing.B, target string) *Cache {
	o := newFakeOrigin(b)
	c, err := New(Config{Origin: o.URL(), Policy: noProbe()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	w := &discardWriter{h: http.Header{}}
	c.ServeHTTP(w, httptest.NewRequest(http.MethodGet, target, nil))
	w.reset()
	c.ServeHTTP(w, httptest.NewRequest(http.MethodGet, target, nil))
	if w.status != 200 || w.h.Get("X-Cache") != "HIT" {
		b.Fatalf("warm-up: %d %s", w.status, w.h.Get("X-Cache"))
	}
	return c
}

func benchmarkHit(b *testing.B, target string, header ...string) {
	c := warmCache(b, target)
	r := httptest.NewRequest(http.MethodGet, target, nil)
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	w := &discardWriter{h: make(http.Header, 16)}
	c.ServeHTTP(w, r)
	size := w.n
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		w.reset()
		c.ServeHTTP(w, r)
	}
	b.StopTimer()
	if w.n != size || w.h.Get("X-Cache") != "HIT" {
		b.Fatalf("last answer: %d bytes %s", w.n, w.h.Get("X-Cache"))
	}
}

// BenchmarkHit is the hit-path workload's object: the 2 KiB media playlist.
func BenchmarkHit(b *testing.B) { benchmarkHit(b, "/stream/media.m3u8") }

// BenchmarkHitSegment serves a 4 MiB segment: the body is one slice, never copied.
func BenchmarkHitSegment(b *testing.B) { benchmarkHit(b, "/stream/segment-1.ts?size=4194304") }

// BenchmarkHitRange is the segment workload's range request.
func BenchmarkHitRange(b *testing.B) {
	benchmarkHit(b, "/stream/segment-1.ts?size=4194304", "Range", "bytes=0-65535")
}

// BenchmarkHitParallel is BenchmarkHit from every P at once: the store's
// lock under contention.
func BenchmarkHitParallel(b *testing.B) {
	const target = "/stream/media.m3u8"
	c := warmCache(b, target)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		r := httptest.NewRequest(http.MethodGet, target, nil)
		w := &discardWriter{h: make(http.Header, 16)}
		for pb.Next() {
			w.reset()
			c.ServeHTTP(w, r)
		}
	})
}

// BenchmarkHitLoopback is a whole hit over loopback HTTP/1.1 with the
// standard client and server, for scale: most of its cost and allocations
// are net/http's, not the cache's.
func BenchmarkHitLoopback(b *testing.B) {
	const target = "/stream/media.m3u8"
	c := warmCache(b, target)
	srv := newServer(b, c)
	url := srv.URL + target
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		resp, err := testClient.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}
