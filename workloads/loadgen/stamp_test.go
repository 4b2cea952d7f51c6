package loadgen

import (
	"os"
	"testing"
	"time"
)

// TestStampDelay measures, under a real load of large bodies, how late a
// first-byte stamp taken at the read would have been: for answers whose
// first byte was read after other sockets of the same epoll batch (each
// read up to 256 KiB and checksummed), the time from the batch's wake to
// that read. The generator stamps the wake instead. It needs a server:
//
//	HLSBENCH_STAMP_URL=http://127.0.0.1:PORT/obj-4m.bin go test -run TestStampDelay -v ./workloads/loadgen/
//
// (bench.sh's nginx serves such a file; pin the test and the server apart).
func TestStampDelay(t *testing.T) {
	url := os.Getenv("HLSBENCH_STAMP_URL")
	if url == "" {
		t.Skip("set HLSBENCH_STAMP_URL to a large object (a 4 MiB segment) to measure")
	}
	g := newGen(t, Options{URL: url, Connections: 20, Shards: 1})
	r := run(t, g, Pass{Rate: 500, Duration: 5 * time.Second})
	h := r.stampDelay
	us := func(ns int64) float64 { return float64(ns) / 1e3 }
	t.Logf("ok %d of %d, %.0f MB/s of body; TTFB p50 %.3f ms p99 %.3f ms; valid %v %q",
		r.OK, r.Requests, float64(r.BodyBytes)/r.Elapsed.Seconds()/1e6, msOf(r.TTFB.ValueAtQuantile(50)), msOf(r.TTFB.ValueAtQuantile(99)), r.Valid, r.InvalidReasons)
	t.Logf("first bytes read after other reads of their batch: %d of %d answers; a stamp at the read would have been late by p50 %.1f µs, p99 %.1f µs, max %.1f µs",
		h.TotalCount(), r.OK, us(h.ValueAtQuantile(50)), us(h.ValueAtQuantile(99)), us(h.Max()))
	h = r.rxDelay
	t.Logf("kernel receive stamps: %d of %d answers; a stamp at the batch's wake would have been late by p50 %.1f µs, p90 %.1f µs, p99 %.1f µs, max %.1f µs",
		h.TotalCount(), r.OK, us(h.ValueAtQuantile(50)), us(h.ValueAtQuantile(90)), us(h.ValueAtQuantile(99)), us(h.Max()))
	t.Logf("generator CPU %.3f s", r.CPUSeconds)
}
