package loadgen

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/hlsbench/hlsbench/results"
)

// Result is what one pass measured. Latencies are in nanoseconds.
type Result struct {
	Start    time.Time
	Mode     string // "rate", "closed" or "burst"
	Arrival  Arrival
	Target   float64 // requests per second; 0 for closed loop and bursts
	Duration time.Duration
	// Elapsed is the time the pass really ran: from t0 to the end of
	// sending (the planned duration, the last send of a counted pass, or
	// the interrupt) or to the last outcome, whichever is later.
	Elapsed     time.Duration
	Connections int
	Shards      int

	// Requests counts requests with an outcome: answered, failed, timed
	// out or dropped. Requests = OK + Errors.
	Requests     int64
	OK           int64
	Errors       int64
	ErrorsByKind map[string]int64
	// ErrorSamples are a few distinct error messages, the most frequent
	// first, with how many requests failed with each.
	ErrorSamples []ErrorSample
	StatusCodes  map[int]int64
	Cache        CacheCounts
	// SocketsOpened counts sockets opened since the previous pass ended:
	// the pool's first connections in the first pass, then reconnects.
	SocketsOpened int64
	Queued        int64 // requests that found every connection busy and waited
	// Dropped counts requests never sent: due when every connection was
	// busy and the waiting queue was full (see QueuePerConnection). They are
	// in Requests and Errors, as kind "dropped".
	Dropped int64
	// Unsolicited counts answers that arrived on idle connections (a
	// server's 408 before it closes an idle keep-alive connection, say).
	// They answer no request and are not in Requests.
	Unsolicited int64
	BodyBytes   int64
	AchievedRPS float64 // complete answers per second of Elapsed
	// Answered counts complete answers (good or failing validation), and
	// CarriedRPS is the rate they arrived at while they came: those between
	// the arrival of the (k+1)-th and the (Answered−k)-th, k = 1 % of them
	// (0 under 100), over the time between the two. AchievedRPS counts
	// from t0 to the last outcome, so a server that keeps up is charged
	// with the last answer's latency (a 100 ms answer in a 2 s pass:
	// 95.2 % of the rate); the arrivals are free of that drain, and the
	// trim keeps one late answer at either end from doing the same. It is
	// AchievedRPS when fewer than two answers arrived apart.
	Answered   int64
	CarriedRPS float64
	CPUSeconds float64 // the generator process, user+system
	// SendCPUSeconds is the generator process's CPU over its sending
	// window, SendWindow that window: from t0 to when the last event loop
	// stopped sending (rate, closed loop, plan) or got its last answer (a
	// burst). Connections opened before t0 and answers drained after the
	// last send are outside it; SendSpinSeconds is the polling inside it.
	SendCPUSeconds  float64
	SendSpinSeconds float64
	SendWindow      time.Duration
	// ShardCPU is each event-loop thread's CPU as a share of its sending
	// window: from t0 to its last dispatch (to its last answer for a burst),
	// without the time it spent polling for a due slot.
	ShardCPU []float64
	// SpinSeconds is the CPU the event loops spent polling for due slots
	// instead of sleeping past them (only when pinned: see Options.CPUs);
	// it is in CPUSeconds, and it is not load the generator could not
	// carry. SpinMargin is how early the loops woke before a slot, the
	// largest of them: twice the timer's measured lateness plus 10 µs.
	SpinSeconds float64
	SpinMargin  time.Duration
	// TLS is what the connections negotiated; nil for plain http.
	TLS *TLSInfo
	// Parts are the generators that carried a pass split over several
	// hosts (set by who split it: agent.Shared), one each.
	Parts []results.GeneratorHost

	// Valid and InvalidReasons are Verdict over every published quantile.
	Valid          bool     `json:"-"`
	InvalidReasons []string `json:"-"`
	PoolLimited    bool
	Interrupted    bool
	Warnings       []string
	// LagEffects say, for each published quantile of TTFB and total, how
	// far the generator's own lateness moved it (empty without a
	// successful request).
	LagEffects []LagEffect `json:"-"`

	// TTFB and Total count from the intended send time (corrected); the
	// Uncorrected ones from the moment the request was written; the
	// FromDispatch ones from the dispatch instant, when the event loop
	// released the slot (before any wait for a busy pool), so they differ
	// from the corrected ones only by the generator's own lateness.
	// ScheduleLag is dispatched − intended, ConnectionWait is written −
	// dispatched. Timeouts are recorded at the timeout value.
	TTFB, TTFBUncorrected, Total, TotalUncorrected *hdr.Histogram `json:"-"`
	TTFBFromDispatch, TotalFromDispatch            *hdr.Histogram `json:"-"`
	ScheduleLag, ConnectionWait                    *hdr.Histogram `json:"-"`
	// QueuedAt holds when each request that found every connection busy
	// was dispatched, in microseconds after t0 (see WaitsByQuarter).
	QueuedAt *hdr.Histogram `json:"-"`

	// checks are the reasons the pass is invalid other than lateness;
	// instrument those of them that are the instrument's, not the
	// server's (a saturated event loop, a generator host's clock).
	checks, instrument []string
	// worst is the event loop with the highest schedule lag p99.
	worst loopInfo
	// stampDelay and rxDelay: see metrics; arrive holds the answers'
	// arrivals (µs after t0), for CarriedRPS of merged shares.
	stampDelay, rxDelay, arrive *hdr.Histogram
}

type loopInfo struct {
	id, cpu int
	lagP99  time.Duration
}

// ErrorSample is one distinct error message and how many requests failed
// with it.
type ErrorSample struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
	Count   int64  `json:"count"`
}

// LagEffect is how far the generator's own lateness moved one published
// figure: Corrected counts from the intended send time, FromDispatch from
// the dispatch instant. Exceeded is Corrected − FromDispatch > Tolerance().
type LagEffect struct {
	Figure       string  // "ttfb" or "total"
	Quantile     float64 // 50, 90, 95, 99, 99.9; 100 is the maximum
	Corrected    time.Duration
	FromDispatch time.Duration
	Exceeded     bool
}

// Tolerance is how far lateness may move the figure:
// max(LagTolerance × Corrected, LagToleranceFloor).
func (e LagEffect) Tolerance() time.Duration {
	return max(time.Duration(LagTolerance*float64(e.Corrected)), LagToleranceFloor)
}

// publishedQuantiles are the quantiles Summary and WriteText publish; 100
// is the maximum.
var publishedQuantiles = []float64{50, 90, 95, 99, 99.9, 100}

// Record is one request's outcome, for Options.OnRecord.
type Record struct {
	Intended time.Time // the schedule's send time
	// Lag is how late the generator dispatched it after Intended (its
	// schedule lag): TTFB - Lag counts from the dispatch instant.
	Lag    time.Duration
	Object int   // the index of its path in Pass.Paths (0 with one path)
	Tag    int64 // a planned request's Planned.Tag
	// TTFB and Total count from Intended; zero when there was no answer
	// (Total is the timeout for a timeout).
	TTFB, Total time.Duration
	Status      int
	Err         string // "" or the error kind
	Cache       CacheClaim
	// BodyBytes are the answer's body bytes read, whatever its outcome (a
	// 503's too): a caller that counts delivered bytes counts good ones.
	BodyBytes int64
}

// CacheCounts are the proxy's claims, from X-Cache and Age.
type CacheCounts struct {
	Hit     int64 `json:"hit"`
	Miss    int64 `json:"miss"`
	Stale   int64 `json:"stale"`
	Unknown int64 `json:"unknown"`
}

func (g *Generator) result(sp *passSpec, p *Pass, rs []shardResult, start time.Time, cpu time.Duration) *Result {
	m := newMetrics()
	r := &Result{Start: start, Arrival: p.Arrival, Target: p.Rate / float64(sp.share.Of), Duration: p.Duration,
		Connections: g.opts.Connections, Shards: len(g.shards), CPUSeconds: cpu.Seconds(), worst: loopInfo{cpu: -1}}
	switch sp.mode {
	case modeRate:
		r.Mode = "rate"
	case modeClosed:
		r.Mode, r.Target = "closed", 0
	case modeBurst:
		r.Mode, r.Target, r.Duration = "burst", 0, 0
	case modePlan:
		r.Mode, r.Target = "plan", 0
	}
	var samples sampleSet
	last := sp.t0
	for i, s := range rs {
		if lag := time.Duration(s.m.lag.ValueAtQuantile(99)); i == 0 || lag > r.worst.lagP99 {
			r.worst = loopInfo{id: i, cpu: s.cpuID, lagP99: lag}
		}
		m.merge(s.m)
		samples.addShard(s.m)
		last = max(last, s.m.lastDone, s.winEnd)
		r.Interrupted = r.Interrupted || s.stopped
		r.SpinSeconds += s.spunAll.Seconds()
		r.SendSpinSeconds += s.spun.Seconds()
		r.SpinMargin = max(r.SpinMargin, s.margin)
		share := 0.0
		if s.wall > 0 {
			share = float64(max(s.cpu-s.spun, 0)) / float64(s.wall)
		}
		r.ShardCPU = append(r.ShardCPU, share)
		if s.wall >= 100*time.Millisecond && share > CPULimit {
			why := fmt.Sprintf(
				"generator CPU saturated: event loop %d used %.0f%% of a core while sending; the figures measure the generator, not the server: lower the rate, or give the generator more cores",
				i, 100*share)
			r.checks, r.instrument = append(r.checks, why), append(r.instrument, why)
		}
	}
	r.TTFB, r.TTFBUncorrected, r.Total, r.TotalUncorrected = m.ttfb, m.ttfbUnc, m.total, m.totalUnc
	r.TTFBFromDispatch, r.TotalFromDispatch = m.ttfbDisp, m.totalDisp
	r.ScheduleLag, r.ConnectionWait, r.stampDelay, r.rxDelay, r.arrive = m.lag, m.wait, m.stampDelay, m.rxDelay, m.arrive
	r.QueuedAt = m.queuedAt
	r.Requests, r.OK, r.Queued, r.SocketsOpened, r.BodyBytes = m.requests, m.ok, m.queued, m.sockets, m.bodyBytes
	r.Dropped, r.Unsolicited = m.dropped, m.unsolicited
	if g.tlsConfig != nil {
		r.TLS = m.tls.info()
	}
	r.ErrorsByKind = map[string]int64{}
	for k := errKind(1); k < numErrKinds; k++ {
		if n := m.errs[k]; n > 0 {
			r.ErrorsByKind[k.String()] = n
			r.Errors += n
		}
	}
	r.ErrorSamples = samples.top()
	r.StatusCodes = map[int]int64{}
	for code, n := range m.status {
		if n > 0 {
			r.StatusCodes[code] = n
		}
	}
	r.Cache = CacheCounts{Hit: m.cache[CacheHit], Miss: m.cache[CacheMiss], Stale: m.cache[CacheStale], Unknown: m.cache[CacheUnknown]}

	r.Elapsed = time.Duration(last - sp.t0)
	if end := sp.sendEnd.Load(); end > sp.t0 && sp.started.Load() {
		r.SendWindow = time.Duration(end - sp.t0)
		r.SendCPUSeconds = time.Duration(sp.cpuEnd.Load() - sp.cpuStart.Load()).Seconds()
	}
	if r.Elapsed > 0 {
		r.AchievedRPS = float64(m.answered) / r.Elapsed.Seconds()
	}
	r.Answered = m.answered
	r.CarriedRPS = carriedRate(m.arrive, r.AchievedRPS)

	if r.Interrupted {
		r.checks = append(r.checks, "interrupted before the pass ended")
	}
	if r.OK == 0 {
		r.checks = append(r.checks, noSuccess(r))
	}
	if r.Dropped > 0 {
		r.checks = append(r.checks, fmt.Sprintf(
			"%d of %d requests were dropped, never sent: every connection was busy and the waiting queue was full; the server answered slower than the rate: lower the rate or open more connections",
			r.Dropped, r.Requests))
	}
	r.judge()
	r.PoolLimited = m.dispatched > 0 && float64(m.queued+m.dropped) > PoolLimitedShare*float64(m.dispatched)

	if r.PoolLimited {
		dropped := ""
		if m.dropped > 0 {
			dropped = fmt.Sprintf(" (%d waited, %d were dropped)", m.queued, m.dropped)
		}
		r.Warnings = append(r.Warnings, fmt.Sprintf(
			"pool limited: %d of %d requests found none of the %d connections free%s (connection wait p99 %s, max %s); the server was slow or closed them, not the generator",
			m.queued+m.dropped, m.dispatched, r.Connections, dropped, fmtDur(time.Duration(r.ConnectionWait.ValueAtQuantile(99))), fmtDur(time.Duration(r.ConnectionWait.Max()))))
	}
	if r.Errors > 0 {
		r.Warnings = append(r.Warnings, fmt.Sprintf("%d of %d requests failed: %s", r.Errors, r.Requests, kindsString(r.ErrorsByKind)))
	}
	if r.Unsolicited > 0 {
		r.Warnings = append(r.Warnings, fmt.Sprintf(
			"%d unsolicited answers on idle connections (e.g. 408): the server closed them; they were reopened when a request needed them",
			r.Unsolicited))
	}
	if r.Target > 0 && r.AchievedRPS < 0.99*r.Target {
		var causes []string
		if !r.Valid {
			causes = append(causes, "the pass is invalid (see the reasons)")
		}
		if r.PoolLimited && r.OK > 0 {
			causes = append(causes, "no free connection: the server answered slower than the rate, or closed its connections")
		}
		if r.Errors > 0 {
			causes = append(causes, fmt.Sprintf("%d failed requests", r.Errors))
		}
		if len(causes) == 0 {
			causes = append(causes, "answers arriving after the pass's end")
		}
		r.Warnings = append(r.Warnings, fmt.Sprintf("achieved %.1f rps, under 99%% of the %.0f rps target: %s",
			r.AchievedRPS, r.Target, strings.Join(causes, "; ")))
	}
	return r
}

// carriedRate is CarriedRPS from the answers' arrival times (µs after t0),
// or fallback when fewer than two arrived apart.
func carriedRate(arrive *hdr.Histogram, fallback float64) float64 {
	n := arrive.TotalCount()
	if n < 2 {
		return fallback
	}
	k := n / 100
	// The quantile 100·j/n is the j-th arrival (hdr rounds the rank
	// q/100·n + 0.5 down), stamped with its bucket's highest value at
	// both ends alike.
	at := func(j int64) int64 { return arrive.ValueAtQuantile(100 * float64(j) / float64(n)) }
	lo, hi := at(k+1), at(n-k)
	if hi <= lo {
		return fallback
	}
	return float64(n-2*k-1) / (float64(hi-lo) / 1e6)
}

func noSuccess(r *Result) string {
	if r.Requests == 0 {
		return "no successful request: no request was sent"
	}
	return fmt.Sprintf("no successful request: %d of %d failed (%s)", r.Errors, r.Requests, kindsString(r.ErrorsByKind))
}

// judge computes the lag effects and the verdict over every published
// quantile.
func (r *Result) judge() {
	r.LagEffects = nil
	if r.OK > 0 {
		for _, f := range []struct {
			name       string
			corr, disp *hdr.Histogram
		}{{"ttfb", r.TTFB, r.TTFBFromDispatch}, {"total", r.Total, r.TotalFromDispatch}} {
			for _, q := range publishedQuantiles {
				e := LagEffect{Figure: f.name, Quantile: q, Corrected: quantile(f.corr, q), FromDispatch: quantile(f.disp, q)}
				e.Exceeded = e.Corrected-e.FromDispatch > e.Tolerance()
				r.LagEffects = append(r.LagEffects, e)
			}
		}
	}
	r.Valid, r.InvalidReasons = r.Verdict(publishedQuantiles...)
}

func quantile(h *hdr.Histogram, q float64) time.Duration {
	if q >= 100 {
		return time.Duration(h.Max())
	}
	return time.Duration(h.ValueAtQuantile(q))
}

// Verdict judges the pass as if only the given quantiles of TTFB and total
// were published (100 is the maximum): it is invalid when the generator's
// lateness moved one of them past its tolerance, or for any reason that is
// not lateness (a saturated event loop, dropped requests, no successful
// request, an interrupt). With no quantile, only the latter count. The
// reasons say what to do.
func (r *Result) Verdict(quantiles ...float64) (valid bool, reasons []string) {
	reasons = append([]string{}, r.checks...)
	reasons = append(reasons, r.Lateness("ttfb", quantiles...)...)
	reasons = append(reasons, r.Lateness("total", quantiles...)...)
	return len(reasons) == 0, reasons
}

// InstrumentChecks are the reasons of Verdict, lateness aside, that are
// the instrument's and not the server's: a saturated event loop, a
// generator host's clock (Invalidate). The server's (no successful
// request, dropped requests) and an interrupt are not among them.
func (r *Result) InstrumentChecks() []string { return r.instrument }

// Lateness is the reason, if any, that the generator's own lateness moved
// the given quantiles of one figure ("ttfb" or "total") past their
// tolerance: for a caller that publishes only that figure.
func (r *Result) Lateness(figure string, quantiles ...float64) []string {
	var moved []string
	for _, e := range r.LagEffects {
		if e.Figure == figure && e.Exceeded && slices.Contains(quantiles, e.Quantile) {
			moved = append(moved, fmt.Sprintf("%s from %.3f ms to %.3f ms (tolerance %.3f ms)",
				quantileName(e.Quantile), ms(int64(e.FromDispatch)), ms(int64(e.Corrected)), ms(int64(e.Tolerance()))))
		}
	}
	if len(moved) == 0 {
		return nil
	}
	name := figure
	if figure == "ttfb" {
		name = "TTFB"
	}
	return []string{fmt.Sprintf("the generator's own lateness moved %s %s: lower the rate or the connections, or run on a quieter machine (%s)",
		name, strings.Join(moved, ", "), r.worst)}
}

// WaitEffect is how far the requests' waits for a free connection moved
// one figure's quantile: With counts from the dispatch instant (the waits
// in), Without from the moment the request was written (the waits out).
// Both leave the generator's own lateness out, which LagEffect judges.
type WaitEffect struct {
	Figure        string  // "ttfb" or "total"
	Quantile      float64 // 50, 90, 95, 99, 99.9; 100 is the maximum
	With, Without time.Duration
}

// Tolerance is how far the waits may move the figure: the generator's
// lateness rule, max(LagTolerance × With, LagToleranceFloor). Writing a
// request takes a few microseconds even when no request waits, which the
// floor covers.
func (e WaitEffect) Tolerance() time.Duration {
	return max(time.Duration(LagTolerance*float64(e.With)), LagToleranceFloor)
}

// Exceeded says the waits moved the quantile past its tolerance.
func (e WaitEffect) Exceeded() bool { return e.With-e.Without > e.Tolerance() }

// WaitEffects says, for each given quantile of TTFB and total, how far
// the waits for a free connection moved it; nil without a successful
// request.
func (r *Result) WaitEffects(quantiles ...float64) []WaitEffect {
	if r.OK == 0 {
		return nil
	}
	var out []WaitEffect
	for _, f := range []struct {
		name          string
		with, without *hdr.Histogram
	}{{"ttfb", r.TTFBFromDispatch, r.TTFBUncorrected}, {"total", r.TotalFromDispatch, r.TotalUncorrected}} {
		if f.with == nil || f.without == nil || f.with.TotalCount() == 0 || f.without.TotalCount() == 0 {
			continue
		}
		for _, q := range quantiles {
			out = append(out, WaitEffect{Figure: f.name, Quantile: q, With: quantile(f.with, q), Without: quantile(f.without, q)})
		}
	}
	return out
}

// WaitsByQuarter counts the requests that found every connection busy in
// each quarter of the pass's planned duration, by when they were
// dispatched (those after it in the last): a queue that does not drain
// shows as waits growing from quarter to quarter, a blip of the host as
// waits in one of them. Nil when it is not known: a pass without a
// duration, or passes merged one after another (each counts from its own
// start).
func (r *Result) WaitsByQuarter() []int64 {
	if r.QueuedAt == nil || r.Duration <= 0 {
		return nil
	}
	q := make([]int64, 4)
	quarter := r.Duration.Microseconds() / 4
	if quarter <= 0 {
		return nil
	}
	for _, b := range r.QueuedAt.Distribution() {
		if b.Count > 0 {
			// A bucket's middle: at 3 significant digits an instant is
			// known within 0.1 %, a bucket near a quarter's end may
			// straddle it.
			q[min((b.From+b.To)/2/quarter, 3)] += b.Count
		}
	}
	return q
}

func (l loopInfo) String() string {
	where := ""
	if l.cpu >= 0 {
		where = fmt.Sprintf(" on CPU %d", l.cpu)
	}
	return fmt.Sprintf("event loop %d%s: schedule lag p99 %.3f ms", l.id, where, ms(int64(l.lagP99)))
}

func quantileName(q float64) string {
	if q >= 100 {
		return "max"
	}
	return fmt.Sprintf("p%g", q)
}

// sampleSet gathers error samples by message.
type sampleSet struct {
	order []ErrorSample
}

func (ss *sampleSet) add(kind, msg string, n int64) {
	for i := range ss.order {
		if ss.order[i].Kind == kind && ss.order[i].Message == msg {
			ss.order[i].Count += n
			return
		}
	}
	ss.order = append(ss.order, ErrorSample{Kind: kind, Message: msg, Count: n})
}

func (ss *sampleSet) addShard(m *metrics) {
	for _, s := range m.samples[:m.nsamples] {
		ss.add(s.d.kind.String(), s.d.message(), s.n)
	}
}

// top returns the maxSamples most frequent messages, the first seen first
// among equals.
func (ss *sampleSet) top() []ErrorSample {
	out := slices.Clone(ss.order)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Count > out[j].Count })
	if len(out) > maxSamples {
		out = out[:maxSamples]
	}
	return out
}

func kindsString(m map[string]int64) string {
	var parts []string
	for _, k := range ErrorKinds() {
		if n := m[k]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, n))
		}
	}
	return strings.Join(parts, ", ")
}

// Latency is a latency distribution's summary in milliseconds. A nil value
// (JSON null) means nothing was measured.
type Latency struct {
	P50  *float64 `json:"p50_ms"`
	P90  *float64 `json:"p90_ms"`
	P95  *float64 `json:"p95_ms"`
	P99  *float64 `json:"p99_ms"`
	P999 *float64 `json:"p999_ms"`
	Max  *float64 `json:"max_ms"`
}

// Spread is a shorter summary, for the generator's own delays; nil when
// nothing was measured.
type Spread struct {
	P50 *float64 `json:"p50_ms"`
	P99 *float64 `json:"p99_ms"`
	Max *float64 `json:"max_ms"`
}

// Ms is e in milliseconds (to the microsecond), in the run file's schema.
func (e LagEffect) Ms() results.LagEffect {
	return results.LagEffect{Figure: e.Figure, Quantile: e.Quantile, CorrectedMs: msRound(e.Corrected),
		FromDispatchMs: msRound(e.FromDispatch), ToleranceMs: msRound(e.Tolerance()), Exceeded: e.Exceeded}
}

func msRound(d time.Duration) float64 { return round(ms(int64(d)), 3) }

// Summary is a Result as JSON: the keys other tools rely on.
type Summary struct {
	Mode              string              `json:"mode"`
	Arrival           string              `json:"arrival,omitempty"`
	Requests          int64               `json:"requests"`
	OK                int64               `json:"ok"`
	Errors            int64               `json:"errors"`
	ErrorsByKind      map[string]int64    `json:"errors_by_kind"`
	ErrorSamples      []ErrorSample       `json:"error_samples"`
	Dropped           int64               `json:"dropped"`
	Unsolicited       int64               `json:"unsolicited"`
	StatusCodes       map[string]int64    `json:"status_codes"`
	TargetRPS         float64             `json:"target_rps"`
	AchievedRPS       float64             `json:"achieved_rps"`
	CarriedRPS        float64             `json:"carried_rps"`
	DurationS         float64             `json:"duration_s"`
	ElapsedS          float64             `json:"elapsed_s"`
	Connections       int                 `json:"connections"`
	Shards            int                 `json:"shards"`
	SocketsOpened     int64               `json:"sockets_opened"`
	TLS               *TLSInfo            `json:"tls,omitempty"`
	Queued            int64               `json:"queued"`
	BodyBytes         int64               `json:"body_bytes"`
	Valid             bool                `json:"valid"`
	InvalidReasons    []string            `json:"invalid_reasons"`
	PoolLimited       bool                `json:"pool_limited"`
	Interrupted       bool                `json:"interrupted"`
	Warnings          []string            `json:"warnings"`
	CPUSeconds        float64             `json:"cpu_seconds"`
	SendCPUSeconds    float64             `json:"send_cpu_seconds"`
	SendWindowS       float64             `json:"send_window_s"`
	ShardCPU          []float64           `json:"shard_cpu_share"`
	SpinSeconds       float64             `json:"spin_seconds"`
	SpinMarginMs      float64             `json:"spin_margin_ms"`
	TTFB              Latency             `json:"ttfb"`
	TTFBUncorrected   Latency             `json:"ttfb_uncorrected"`
	TTFBFromDispatch  Latency             `json:"ttfb_from_dispatch"`
	Total             Latency             `json:"total"`
	TotalUncorrected  Latency             `json:"total_uncorrected"`
	TotalFromDispatch Latency             `json:"total_from_dispatch"`
	LagEffect         []results.LagEffect `json:"lag_effect"`
	ScheduleLag       Spread              `json:"schedule_lag"`
	ConnectionWait    Spread              `json:"connection_wait"`
	Cache             CacheCounts         `json:"cache"`
	// Generators are the hosts of a pass split over several.
	Generators []results.GeneratorHost `json:"generators,omitempty"`
}

func ms(ns int64) float64 { return float64(ns) / 1e6 }

func msp(ns int64) *float64 {
	v := ms(ns)
	return &v
}

// LatencyOf summarises a histogram of nanoseconds; every value is nil when
// the histogram is empty.
func LatencyOf(h *hdr.Histogram) Latency {
	if h.TotalCount() == 0 {
		return Latency{}
	}
	return Latency{P50: msp(h.ValueAtQuantile(50)), P90: msp(h.ValueAtQuantile(90)), P95: msp(h.ValueAtQuantile(95)),
		P99: msp(h.ValueAtQuantile(99)), P999: msp(h.ValueAtQuantile(99.9)), Max: msp(h.Max())}
}

func spreadOf(h *hdr.Histogram) Spread {
	if h.TotalCount() == 0 {
		return Spread{}
	}
	return Spread{P50: msp(h.ValueAtQuantile(50)), P99: msp(h.ValueAtQuantile(99)), Max: msp(h.Max())}
}

// Summary renders the result for JSON output. Without a successful request
// every latency value is null: a timeout recorded at the timeout value is
// not a latency anyone measured.
func (r *Result) Summary() Summary {
	s := Summary{Mode: r.Mode, Requests: r.Requests, OK: r.OK, Errors: r.Errors, ErrorsByKind: r.ErrorsByKind,
		ErrorSamples: r.ErrorSamples, Dropped: r.Dropped, Unsolicited: r.Unsolicited,
		StatusCodes: map[string]int64{}, TargetRPS: r.Target, AchievedRPS: round(r.AchievedRPS, 2), CarriedRPS: round(r.CarriedRPS, 2),
		DurationS: r.Duration.Seconds(), ElapsedS: round(r.Elapsed.Seconds(), 4), Connections: r.Connections,
		Shards: r.Shards, SocketsOpened: r.SocketsOpened, TLS: r.TLS, Queued: r.Queued, BodyBytes: r.BodyBytes,
		Valid: r.Valid, InvalidReasons: nonNil(r.InvalidReasons), PoolLimited: r.PoolLimited,
		Interrupted: r.Interrupted, Warnings: nonNil(r.Warnings), CPUSeconds: round(r.CPUSeconds, 4),
		SendCPUSeconds: round(r.SendCPUSeconds, 4), SendWindowS: round(r.SendWindow.Seconds(), 4),
		ShardCPU: slices.Clone(r.ShardCPU), SpinSeconds: round(r.SpinSeconds, 4), SpinMarginMs: round(ms(int64(r.SpinMargin)), 3),
		LagEffect:   []results.LagEffect{},
		ScheduleLag: spreadOf(r.ScheduleLag), ConnectionWait: spreadOf(r.ConnectionWait), Cache: r.Cache,
		Generators: r.Parts}
	if s.ErrorSamples == nil {
		s.ErrorSamples = []ErrorSample{}
	}
	if r.OK > 0 {
		s.TTFB, s.TTFBUncorrected, s.TTFBFromDispatch = LatencyOf(r.TTFB), LatencyOf(r.TTFBUncorrected), LatencyOf(r.TTFBFromDispatch)
		s.Total, s.TotalUncorrected, s.TotalFromDispatch = LatencyOf(r.Total), LatencyOf(r.TotalUncorrected), LatencyOf(r.TotalFromDispatch)
	}
	for _, e := range r.LagEffects {
		s.LagEffect = append(s.LagEffect, e.Ms())
	}
	if r.Mode == "rate" {
		s.Arrival = r.Arrival.String()
	}
	for code, n := range r.StatusCodes {
		s.StatusCodes[fmt.Sprint(code)] = n
	}
	for i, v := range s.ShardCPU {
		s.ShardCPU[i] = round(v, 3)
	}
	return s
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func round(v float64, digits int) float64 {
	p := 1.0
	for range digits {
		p *= 10
	}
	return float64(int64(v*p+0.5)) / p
}

func fmtDur(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%.1fµs", float64(d)/1e3)
	case d < time.Second:
		return fmt.Sprintf("%.3fms", float64(d)/1e6)
	}
	return fmt.Sprintf("%.3fs", d.Seconds())
}

// cell prints a millisecond value, or a dash where nothing was measured.
func cell(v *float64) string {
	if v == nil {
		return "—"
	}
	return fmt.Sprintf("%.3f", *v)
}

// WriteText prints the result as a table for people.
func (r *Result) WriteText(w io.Writer) error {
	s := r.Summary()
	var b strings.Builder
	ran := ""
	if r.Interrupted {
		ran = fmt.Sprintf(", interrupted after %s", r.Elapsed.Round(time.Millisecond))
	}
	switch r.Mode {
	case "rate":
		fmt.Fprintf(&b, "Open loop, %s arrivals, %.0f rps target, %s, %d connections%s\n", s.Arrival, r.Target, r.Duration, r.Connections, ran)
	case "closed":
		fmt.Fprintf(&b, "Closed loop, %d connections, %s%s\n", r.Connections, r.Duration, ran)
	case "burst":
		fmt.Fprintf(&b, "Burst of %d requests released together%s\n", r.Requests, ran)
	}
	spin := ""
	if r.SpinSeconds > 0 {
		spin = fmt.Sprintf(" (%.3fs polling for due slots, woken %s early)", r.SpinSeconds, fmtDur(r.SpinMargin))
	}
	fmt.Fprintf(&b, "Requests %d (ok %d, errors %d)   achieved %.1f rps (carried %.1f)   sockets opened %d   generator CPU %.3fs%s\n",
		r.Requests, r.OK, r.Errors, r.AchievedRPS, r.CarriedRPS, r.SocketsOpened, r.CPUSeconds, spin)
	if r.TLS != nil {
		fmt.Fprintf(&b, "tls: %s\n", r.TLS)
	}
	if len(r.StatusCodes) > 0 {
		codes := make([]int, 0, len(r.StatusCodes))
		for c := range r.StatusCodes {
			codes = append(codes, c)
		}
		sort.Ints(codes)
		b.WriteString("Status")
		for _, c := range codes {
			fmt.Fprintf(&b, "  %d: %d", c, r.StatusCodes[c])
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "Cache claims (X-Cache/Age)  hit %d  miss %d  stale %d  unknown %d\n\n", s.Cache.Hit, s.Cache.Miss, s.Cache.Stale, s.Cache.Unknown)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "latency (ms)\tp50\tp90\tp95\tp99\tp99.9\tmax\t")
	for _, row := range []struct {
		name string
		l    Latency
	}{{"TTFB", s.TTFB}, {"TTFB uncorrected", s.TTFBUncorrected}, {"TTFB from dispatch", s.TTFBFromDispatch},
		{"total", s.Total}, {"total uncorrected", s.TotalUncorrected}, {"total from dispatch", s.TotalFromDispatch}} {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", row.name, cell(row.l.P50), cell(row.l.P90), cell(row.l.P95), cell(row.l.P99), cell(row.l.P999), cell(row.l.Max))
	}
	fmt.Fprintf(tw, "schedule lag\t%s\t\t\t%s\t\t%s\t\n", cell(s.ScheduleLag.P50), cell(s.ScheduleLag.P99), cell(s.ScheduleLag.Max))
	fmt.Fprintf(tw, "connection wait\t%s\t\t\t%s\t\t%s\t\n", cell(s.ConnectionWait.P50), cell(s.ConnectionWait.P99), cell(s.ConnectionWait.Max))
	tw.Flush()
	b.WriteString("\n")
	if r.Valid {
		b.WriteString("Valid: yes\n")
	} else {
		b.WriteString("Valid: NO\n")
		for _, why := range r.InvalidReasons {
			fmt.Fprintf(&b, "  invalid: %s\n", why)
		}
	}
	for _, e := range r.ErrorSamples {
		fmt.Fprintf(&b, "  error (%s): %d × %s\n", e.Kind, e.Count, e.Message)
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(&b, "  warning: %s\n", w)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Merge combines passes (a burst's repetitions, say) into one result: the
// histograms hold every sample and counts add up. Reasons other than
// lateness, and warnings, keep the number of the pass they came from (when
// there are several); the lateness verdict is taken on the merged
// histograms, the figures that are published.
func Merge(rs []*Result) *Result { return merge(rs, false) }

// MergeShares combines the results of the generators that carried one pass
// together (each with its Pass.Share): their histograms merge exactly, as
// their slots make up the one schedule, and counts add up. The pass ran
// as long as its longest part, at the sum of their rates, on all their
// connections and event loops; it is valid only if every part's checks
// pass, and the lateness verdict is taken on the merged histograms. Reasons
// and warnings keep the number of the generator they came from.
func MergeShares(rs []*Result) *Result { return merge(rs, true) }

// merge is Merge, or MergeShares when shares is set: parts side by side
// instead of one after another.
func merge(rs []*Result, shares bool) *Result {
	if len(rs) == 0 {
		return nil
	}
	f := rs[0]
	out := &Result{Start: f.Start, Mode: f.Mode, Arrival: f.Arrival, Target: f.Target, Connections: f.Connections,
		Shards: f.Shards, ErrorsByKind: map[string]int64{}, StatusCodes: map[int]int64{}, worst: f.worst}
	m := newMetrics()
	out.TTFB, out.TTFBUncorrected, out.Total, out.TotalUncorrected = m.ttfb, m.ttfbUnc, m.total, m.totalUnc
	out.TTFBFromDispatch, out.TotalFromDispatch, out.ScheduleLag, out.ConnectionWait = m.ttfbDisp, m.totalDisp, m.lag, m.wait
	out.stampDelay, out.rxDelay, out.arrive, out.QueuedAt = m.stampDelay, m.rxDelay, m.arrive, m.queuedAt
	part := "pass"
	if shares {
		part = "generator"
		out.Target, out.Connections, out.Shards = 0, 0, 0
	}
	prefix := func(i int, s string) string {
		if len(rs) == 1 {
			return s
		}
		return fmt.Sprintf("%s %d: %s", part, i+1, s)
	}
	var samples sampleSet
	var answered, span float64 // span: the passes' answers over their own carried rates
	arrivals := true
	for i, r := range rs {
		if shares {
			if r.Start.Before(out.Start) {
				out.Start = r.Start
			}
			out.Duration = max(out.Duration, r.Duration)
			out.Elapsed = max(out.Elapsed, r.Elapsed)
			out.SendWindow = max(out.SendWindow, r.SendWindow)
			out.Target += r.Target
			out.Connections += r.Connections
			out.Shards += r.Shards
			out.ShardCPU = append(out.ShardCPU, r.ShardCPU...)
		} else {
			out.Duration += r.Duration
			out.Elapsed += r.Elapsed
			out.SendWindow += r.SendWindow
			for j, v := range r.ShardCPU {
				if j == len(out.ShardCPU) {
					out.ShardCPU = append(out.ShardCPU, v)
				}
				out.ShardCPU[j] = max(out.ShardCPU[j], v)
			}
		}
		out.Requests += r.Requests
		out.OK += r.OK
		out.Errors += r.Errors
		for k, n := range r.ErrorsByKind {
			out.ErrorsByKind[k] += n
		}
		for _, e := range r.ErrorSamples {
			samples.add(e.Kind, e.Message, e.Count)
		}
		for k, n := range r.StatusCodes {
			out.StatusCodes[k] += n
		}
		out.Cache.Hit += r.Cache.Hit
		out.Cache.Miss += r.Cache.Miss
		out.Cache.Stale += r.Cache.Stale
		out.Cache.Unknown += r.Cache.Unknown
		out.SocketsOpened += r.SocketsOpened
		out.Queued += r.Queued
		out.Dropped += r.Dropped
		out.Unsolicited += r.Unsolicited
		out.BodyBytes += r.BodyBytes
		out.CPUSeconds += r.CPUSeconds
		out.SpinSeconds += r.SpinSeconds
		out.SendCPUSeconds += r.SendCPUSeconds
		out.SendSpinSeconds += r.SendSpinSeconds
		out.SpinMargin = max(out.SpinMargin, r.SpinMargin)
		answered += r.AchievedRPS * r.Elapsed.Seconds()
		out.Answered += r.Answered
		if r.CarriedRPS > 0 {
			span += float64(r.Answered) / r.CarriedRPS
		}
		out.PoolLimited = out.PoolLimited || r.PoolLimited
		out.Interrupted = out.Interrupted || r.Interrupted
		if r.worst.lagP99 > out.worst.lagP99 {
			out.worst = r.worst
		}
		for _, s := range r.checks {
			out.checks = append(out.checks, prefix(i, s))
		}
		for _, s := range r.instrument {
			out.instrument = append(out.instrument, prefix(i, s))
		}
		for _, s := range r.Warnings {
			out.Warnings = append(out.Warnings, prefix(i, s))
		}
		for j, h := range []*hdr.Histogram{r.TTFB, r.TTFBUncorrected, r.Total, r.TotalUncorrected, r.TTFBFromDispatch, r.TotalFromDispatch,
			r.ScheduleLag, r.ConnectionWait, r.stampDelay, r.rxDelay, r.arrive, r.QueuedAt} {
			if h != nil {
				m.hists()[j].Merge(h)
			}
		}
		arrivals = arrivals && r.arrive != nil
	}
	if !shares {
		// Each pass counts its waits from its own t0: stacked, they
		// would tell nothing of how a queue grew.
		out.QueuedAt = nil
	}
	out.ErrorSamples = samples.top()
	out.TLS = mergeTLS(rs)
	if out.Elapsed > 0 {
		out.AchievedRPS = answered / out.Elapsed.Seconds()
	}
	switch {
	case shares && arrivals:
		// The parts' answers arrived side by side, counted from their
		// common start: the merged arrivals are the pass's.
		out.CarriedRPS = carriedRate(out.arrive, out.AchievedRPS)
	case span > 0 && !shares:
		// Each pass's answers over the time they took to arrive, summed.
		out.CarriedRPS = float64(out.Answered) / span
	default:
		out.CarriedRPS = out.AchievedRPS
	}
	out.judge()
	return out
}
