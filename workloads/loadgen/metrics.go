package loadgen

import (
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Histograms hold nanoseconds from 1 µs to MaxLatency at 3 significant digits.
const (
	histLowest = int64(time.Microsecond)
	histDigits = 3
)

func newHist() *hdr.Histogram {
	return hdr.New(histLowest, int64(MaxLatency), histDigits)
}

// record clamps into the histogram's range: nothing measured is dropped.
func record(h *hdr.Histogram, ns int64) {
	if ns < 0 {
		ns = 0
	}
	if ns > int64(MaxLatency) {
		ns = int64(MaxLatency)
	}
	_ = h.RecordValue(ns)
}

// metrics is one shard's share of a pass. Each shard owns its set; the
// generator merges them once, after the pass.
type metrics struct {
	ttfb, ttfbUnc, total, totalUnc *hdr.Histogram
	lag, wait                      *hdr.Histogram

	requests   int64 // requests with an outcome
	ok         int64
	answered   int64 // complete answers (good or failing validation)
	errs       [numErrKinds]int64
	status     [600]int64
	cache      [4]int64
	queued     int64 // requests that found every connection busy
	sockets    int64 // sockets opened (first opens and reconnects)
	bodyBytes  int64
	dispatched int64
	lastDone   int64 // nanotime of the last answer
	lagOverMs  int64
}

func newMetrics() *metrics {
	return &metrics{
		ttfb: newHist(), ttfbUnc: newHist(), total: newHist(), totalUnc: newHist(),
		lag: newHist(), wait: newHist(),
	}
}

func (m *metrics) reset() {
	for _, h := range []*hdr.Histogram{m.ttfb, m.ttfbUnc, m.total, m.totalUnc, m.lag, m.wait} {
		h.Reset()
	}
	*m = metrics{ttfb: m.ttfb, ttfbUnc: m.ttfbUnc, total: m.total, totalUnc: m.totalUnc, lag: m.lag, wait: m.wait}
}

func (m *metrics) merge(o *metrics) {
	m.ttfb.Merge(o.ttfb)
	m.ttfbUnc.Merge(o.ttfbUnc)
	m.total.Merge(o.total)
	m.totalUnc.Merge(o.totalUnc)
	m.lag.Merge(o.lag)
	m.wait.Merge(o.wait)
	m.requests += o.requests
	m.ok += o.ok
	m.answered += o.answered
	for i := range m.errs {
		m.errs[i] += o.errs[i]
	}
	for i := range m.status {
		m.status[i] += o.status[i]
	}
	for i := range m.cache {
		m.cache[i] += o.cache[i]
	}
	m.queued += o.queued
	m.sockets += o.sockets
	m.bodyBytes += o.bodyBytes
	m.dispatched += o.dispatched
	m.lastDone = max(m.lastDone, o.lastDone)
	m.lagOverMs += o.lagOverMs
}
