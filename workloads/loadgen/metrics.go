package loadgen

import (
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Histograms hold nanoseconds from 1 ns to MaxLatency at 3 significant
// digits. hdrhistogram-go rounds the lowest discernible value down to a power
// of two and uses it as the unit: starting at 1 µs gave a 512 ns unit (10 µs
// read back as 10.239 µs), too coarse for hit-path latencies of tens of
// microseconds. From 1 ns every value keeps 3 significant digits (10 µs reads
// back within 8 ns) for about 40% more memory (about 220 KB a histogram).
const (
	histLowest = 1
	histDigits = 3
)

// NewHistogram returns an empty histogram with the generator's settings, so
// histograms made elsewhere merge with the generator's without loss.
func NewHistogram() *hdr.Histogram {
	return hdr.New(histLowest, int64(MaxLatency), histDigits)
}

// Clamp records ns in a histogram of NewHistogram, clamped into its range
// (negative as 0, past MaxLatency as MaxLatency): nothing measured is
// dropped.
func Clamp(h *hdr.Histogram, ns int64) { record(h, ns) }

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
	// ttfbDisp and totalDisp count from the dispatch instant, when the loop
	// released the slot: the figures without the generator's own lateness.
	ttfbDisp, totalDisp *hdr.Histogram
	lag, wait           *hdr.Histogram
	// stampDelay is, for answers whose first byte was read after other
	// sockets of the same epoll batch, how much later than the stamp a
	// stamp taken at the read would have been; rxDelay how much later a
	// stamp at the batch's wake would have been than the kernel's.
	stampDelay, rxDelay *hdr.Histogram
	// arrive holds when each complete answer arrived, in microseconds
	// after t0 (see CarriedRPS).
	arrive *hdr.Histogram
	// queuedAt holds when each request that found every connection busy
	// was dispatched, in microseconds after t0: whether the waits came in
	// one blip or grew through the pass (see WaitsByQuarter).
	queuedAt *hdr.Histogram

	requests    int64 // requests with an outcome
	ok          int64
	answered    int64 // complete answers (good or failing validation)
	errs        [numErrKinds]int64
	status      [600]int64
	cache       [4]int64
	queued      int64 // requests that found every connection busy and waited
	dropped     int64 // requests that found the waiting queue full
	unsolicited int64 // answers that arrived on idle connections
	sockets     int64 // sockets opened (first opens and reconnects)
	bodyBytes   int64
	dispatched  int64
	lastDone    int64 // nanotime of the last outcome
	tls         tlsCounts

	samples  [maxSamples]sample
	nsamples int
}

func newMetrics() *metrics {
	return &metrics{
		ttfb: NewHistogram(), ttfbUnc: NewHistogram(), total: NewHistogram(), totalUnc: NewHistogram(),
		ttfbDisp: NewHistogram(), totalDisp: NewHistogram(), lag: NewHistogram(), wait: NewHistogram(),
		stampDelay: NewHistogram(), rxDelay: NewHistogram(), arrive: newArrivals(), queuedAt: newArrivals(),
	}
}

// maxArrival bounds the arrival histogram: a pass longer than a day
// records its later answers at a day.
const maxArrival = 24 * time.Hour

func newArrivals() *hdr.Histogram {
	return hdr.New(1, maxArrival.Microseconds(), histDigits)
}

// recordArrival notes a complete answer at now (nanotime), t0 the pass's.
func (m *metrics) recordArrival(t0, now int64) {
	us := max((now-t0)/1e3, 1)
	_ = m.arrive.RecordValue(min(us, maxArrival.Microseconds()))
}

// recordQueued notes a request that found every connection busy at now
// (nanotime), t0 the pass's.
func (m *metrics) recordQueued(t0, now int64) {
	m.queued++
	us := max((now-t0)/1e3, 1)
	_ = m.queuedAt.RecordValue(min(us, maxArrival.Microseconds()))
}

func (m *metrics) hists() []*hdr.Histogram {
	return []*hdr.Histogram{m.ttfb, m.ttfbUnc, m.total, m.totalUnc, m.ttfbDisp, m.totalDisp, m.lag, m.wait, m.stampDelay, m.rxDelay, m.arrive, m.queuedAt}
}

func (m *metrics) reset() {
	for _, h := range m.hists() {
		h.Reset()
	}
	*m = metrics{ttfb: m.ttfb, ttfbUnc: m.ttfbUnc, total: m.total, totalUnc: m.totalUnc,
		ttfbDisp: m.ttfbDisp, totalDisp: m.totalDisp, lag: m.lag, wait: m.wait, stampDelay: m.stampDelay, rxDelay: m.rxDelay,
		arrive: m.arrive, queuedAt: m.queuedAt}
}

// merge adds o's counts and histograms (not its error samples) to m.
func (m *metrics) merge(o *metrics) {
	for i, h := range m.hists() {
		h.Merge(o.hists()[i])
	}
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
	m.dropped += o.dropped
	m.unsolicited += o.unsolicited
	m.sockets += o.sockets
	m.bodyBytes += o.bodyBytes
	m.dispatched += o.dispatched
	m.lastDone = max(m.lastDone, o.lastDone)
	m.tls.merge(&o.tls)
}
