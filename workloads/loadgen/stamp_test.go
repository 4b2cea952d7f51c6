package loadgen

import (
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"
)

// checkStamps asserts how a pass stamped its answers' first bytes: with
// the kernel's receive time for some of them (SO_TIMESTAMPNS read with
// MSG_PEEK: with none, every first byte fell back to the batch's wake,
// late by the loop's wake-up), and each answer counted at most once in
// each of the two measures of what a later stamp would have cost.
func checkStamps(t *testing.T, r *Result) {
	t.Helper()
	if r.OK == 0 {
		t.Fatalf("no answer of %d requests: %v", r.Requests, r.ErrorsByKind)
	}
	if n := r.rxDelay.TotalCount(); n == 0 || n > r.OK {
		t.Errorf("%d of %d answers stamped with the kernel's receive time, want some and at most all", n, r.OK)
	}
	if n := r.stampDelay.TotalCount(); n > r.OK {
		t.Errorf("%d of %d answers read after others of their batch, want at most all", n, r.OK)
	}
}

// Answers on loopback carry the kernel's receive stamps, and the generator
// uses them.
func TestStampKernel(t *testing.T) {
	body := make([]byte, 64<<10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) }))
	defer srv.Close()
	g := newGen(t, Options{URL: srv.URL, Connections: 4})
	r := run(t, g, Pass{Rate: 100, Duration: 500 * time.Millisecond})
	if r.OK != 50 {
		t.Fatalf("%d of %d answered: %v", r.OK, r.Requests, r.ErrorsByKind)
	}
	checkStamps(t, r)
}

// TestStampDelay measures, under a real load of large bodies, how late a
// first-byte stamp taken at the read would have been: for answers whose
// first byte was read after other sockets of the same epoll batch (each
// read up to 256 KiB and checksummed), the time from the batch's wake to
// that read. The generator stamps the wake instead. It needs a server:
//
//	HLSBENCH_STAMP_URL=http://127.0.0.1:PORT/obj-4m.bin go test -run TestStampDelay -v ./workloads/loadgen/
//
// (bench.sh's nginx serves such a file; pin the test and the server apart).
// The numbers are logged for the reader (shard.go's received quotes
// them); what holds on any machine is checked.
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
	checkStamps(t, r)
}
