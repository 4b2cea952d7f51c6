package loadgen

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Result is what one pass measured. Latencies are in nanoseconds.
type Result struct {
	Start    time.Time
	Mode     string // "rate", "closed" or "burst"
	Arrival  Arrival
	Target   float64 // requests per second; 0 for closed loop and bursts
	Duration time.Duration
	// Elapsed runs from t0 to the last answer (at least Duration).
	Elapsed     time.Duration
	Connections int
	Shards      int

	Requests     int64 // requests with an outcome: answered, failed or timed out
	OK           int64
	Errors       int64
	ErrorsByKind map[string]int64
	StatusCodes  map[int]int64
	Cache        CacheCounts
	// SocketsOpened counts sockets opened since the previous pass ended:
	// the pool's first connections in the first pass, then reconnects.
	SocketsOpened int64
	Queued        int64 // requests that found every connection busy
	BodyBytes     int64
	AchievedRPS   float64
	CPUSeconds    float64 // the generator process, user+system
	// ShardCPU is each event-loop thread's CPU as a share of the pass's wall time.
	ShardCPU []float64

	Valid          bool
	InvalidReasons []string
	PoolLimited    bool
	Interrupted    bool
	Warnings       []string

	// TTFB and Total count from the intended send time (corrected); the
	// Uncorrected ones from the moment the request was written. ScheduleLag
	// is dispatched − intended, ConnectionWait is written − dispatched.
	TTFB, TTFBUncorrected, Total, TotalUncorrected *hdr.Histogram
	ScheduleLag, ConnectionWait                    *hdr.Histogram
}

// Record is one request's outcome, for Options.OnRecord.
type Record struct {
	Intended time.Time // the schedule's send time
	// TTFB and Total count from Intended; zero when there was no answer
	// (Total is the timeout for a timeout).
	TTFB, Total time.Duration
	Status      int
	Err         string // "" or the error kind
	Cache       CacheClaim
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
	r := &Result{Start: start, Arrival: p.Arrival, Target: p.Rate, Duration: p.Duration,
		Connections: g.opts.Connections, Shards: len(g.shards), CPUSeconds: cpu.Seconds()}
	switch sp.mode {
	case modeRate:
		r.Mode = "rate"
	case modeClosed:
		r.Mode, r.Target = "closed", 0
	case modeBurst:
		r.Mode, r.Target, r.Duration = "burst", 0, 0
	}
	for _, s := range rs {
		m.merge(s.m)
		r.Interrupted = r.Interrupted || s.stopped
		share := 0.0
		if s.wall > 0 {
			share = float64(s.cpu) / float64(s.wall)
		}
		r.ShardCPU = append(r.ShardCPU, share)
		if s.wall >= 100*time.Millisecond && share > CPULimit {
			r.InvalidReasons = append(r.InvalidReasons, fmt.Sprintf(
				"generator CPU saturated: event loop %d used %.0f%% of a core; the figures measure the generator, not the server",
				len(r.ShardCPU)-1, 100*share))
		}
	}
	r.TTFB, r.TTFBUncorrected, r.Total, r.TotalUncorrected = m.ttfb, m.ttfbUnc, m.total, m.totalUnc
	r.ScheduleLag, r.ConnectionWait = m.lag, m.wait
	r.Requests, r.OK, r.Queued, r.SocketsOpened, r.BodyBytes = m.requests, m.ok, m.queued, m.sockets, m.bodyBytes
	r.ErrorsByKind = map[string]int64{}
	for k := errKind(1); k < numErrKinds; k++ {
		if n := m.errs[k]; n > 0 {
			r.ErrorsByKind[k.String()] = n
			r.Errors += n
		}
	}
	r.StatusCodes = map[int]int64{}
	for code, n := range m.status {
		if n > 0 {
			r.StatusCodes[code] = n
		}
	}
	r.Cache = CacheCounts{Hit: m.cache[CacheHit], Miss: m.cache[CacheMiss], Stale: m.cache[CacheStale], Unknown: m.cache[CacheUnknown]}

	elapsed := time.Duration(m.lastDone - sp.t0)
	if elapsed < r.Duration {
		elapsed = r.Duration
	}
	r.Elapsed = elapsed
	if elapsed > 0 {
		r.AchievedRPS = float64(m.answered) / elapsed.Seconds()
	}

	if sp.mode == modeRate {
		if lag := time.Duration(r.ScheduleLag.ValueAtQuantile(99)); lag > LagLimit {
			r.InvalidReasons = append(r.InvalidReasons, fmt.Sprintf(
				"schedule lag p99 %s is over %s: the generator fell behind its own schedule", fmtDur(lag), LagLimit))
		}
	}
	if r.Interrupted {
		r.InvalidReasons = append(r.InvalidReasons, "interrupted before the pass ended")
	}
	r.Valid = len(r.InvalidReasons) == 0
	r.PoolLimited = m.dispatched > 0 && float64(m.queued) > PoolLimitedShare*float64(m.dispatched)

	if r.PoolLimited {
		r.Warnings = append(r.Warnings, fmt.Sprintf(
			"pool limited: %d of %d requests found all %d connections busy and waited (connection wait p99 %s, max %s); the server was slow, not the generator",
			m.queued, m.dispatched, r.Connections, fmtDur(time.Duration(r.ConnectionWait.ValueAtQuantile(99))), fmtDur(time.Duration(r.ConnectionWait.Max()))))
	}
	if r.Errors > 0 {
		r.Warnings = append(r.Warnings, fmt.Sprintf("%d of %d requests failed: %s", r.Errors, r.Requests, kindsString(r.ErrorsByKind)))
	}
	if r.Target > 0 && r.AchievedRPS < 0.99*r.Target {
		var causes []string
		if !r.Valid {
			causes = append(causes, "the generator (see invalid reasons)")
		}
		if r.PoolLimited {
			causes = append(causes, "all connections busy: the server answered slower than the rate")
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

func kindsString(m map[string]int64) string {
	var parts []string
	for _, k := range ErrorKinds() {
		if n := m[k]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, n))
		}
	}
	return strings.Join(parts, ", ")
}

// Latency is a latency distribution's summary in milliseconds.
type Latency struct {
	P50  float64 `json:"p50_ms"`
	P90  float64 `json:"p90_ms"`
	P95  float64 `json:"p95_ms"`
	P99  float64 `json:"p99_ms"`
	P999 float64 `json:"p999_ms"`
	Max  float64 `json:"max_ms"`
}

// Spread is a shorter summary, for the generator's own delays.
type Spread struct {
	P50 float64 `json:"p50_ms"`
	P99 float64 `json:"p99_ms"`
	Max float64 `json:"max_ms"`
}

// Summary is a Result as JSON: the keys other tools rely on.
type Summary struct {
	Mode             string           `json:"mode"`
	Arrival          string           `json:"arrival,omitempty"`
	Requests         int64            `json:"requests"`
	OK               int64            `json:"ok"`
	Errors           int64            `json:"errors"`
	ErrorsByKind     map[string]int64 `json:"errors_by_kind"`
	StatusCodes      map[string]int64 `json:"status_codes"`
	TargetRPS        float64          `json:"target_rps"`
	AchievedRPS      float64          `json:"achieved_rps"`
	DurationS        float64          `json:"duration_s"`
	ElapsedS         float64          `json:"elapsed_s"`
	Connections      int              `json:"connections"`
	Shards           int              `json:"shards"`
	SocketsOpened    int64            `json:"sockets_opened"`
	Queued           int64            `json:"queued"`
	BodyBytes        int64            `json:"body_bytes"`
	Valid            bool             `json:"valid"`
	InvalidReasons   []string         `json:"invalid_reasons"`
	PoolLimited      bool             `json:"pool_limited"`
	Interrupted      bool             `json:"interrupted"`
	Warnings         []string         `json:"warnings"`
	CPUSeconds       float64          `json:"cpu_seconds"`
	ShardCPU         []float64        `json:"shard_cpu_share"`
	TTFB             Latency          `json:"ttfb"`
	TTFBUncorrected  Latency          `json:"ttfb_uncorrected"`
	Total            Latency          `json:"total"`
	TotalUncorrected Latency          `json:"total_uncorrected"`
	ScheduleLag      Spread           `json:"schedule_lag"`
	ConnectionWait   Spread           `json:"connection_wait"`
	Cache            CacheCounts      `json:"cache"`
}

func ms(ns int64) float64 { return float64(ns) / 1e6 }

// LatencyOf summarises a histogram of nanoseconds.
func LatencyOf(h *hdr.Histogram) Latency {
	if h.TotalCount() == 0 {
		return Latency{}
	}
	return Latency{P50: ms(h.ValueAtQuantile(50)), P90: ms(h.ValueAtQuantile(90)), P95: ms(h.ValueAtQuantile(95)),
		P99: ms(h.ValueAtQuantile(99)), P999: ms(h.ValueAtQuantile(99.9)), Max: ms(h.Max())}
}

func spreadOf(h *hdr.Histogram) Spread {
	if h.TotalCount() == 0 {
		return Spread{}
	}
	return Spread{P50: ms(h.ValueAtQuantile(50)), P99: ms(h.ValueAtQuantile(99)), Max: ms(h.Max())}
}

// Summary renders the result for JSON output.
func (r *Result) Summary() Summary {
	s := Summary{Mode: r.Mode, Requests: r.Requests, OK: r.OK, Errors: r.Errors, ErrorsByKind: r.ErrorsByKind,
		StatusCodes: map[string]int64{}, TargetRPS: r.Target, AchievedRPS: round(r.AchievedRPS, 2),
		DurationS: r.Duration.Seconds(), ElapsedS: round(r.Elapsed.Seconds(), 4), Connections: r.Connections,
		Shards: r.Shards, SocketsOpened: r.SocketsOpened, Queued: r.Queued, BodyBytes: r.BodyBytes,
		Valid: r.Valid, InvalidReasons: nonNil(r.InvalidReasons), PoolLimited: r.PoolLimited,
		Interrupted: r.Interrupted, Warnings: nonNil(r.Warnings), CPUSeconds: round(r.CPUSeconds, 4),
		ShardCPU: r.ShardCPU, TTFB: LatencyOf(r.TTFB), TTFBUncorrected: LatencyOf(r.TTFBUncorrected),
		Total: LatencyOf(r.Total), TotalUncorrected: LatencyOf(r.TotalUncorrected),
		ScheduleLag: spreadOf(r.ScheduleLag), ConnectionWait: spreadOf(r.ConnectionWait), Cache: r.Cache}
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

// WriteText prints the result as a table for people.
func (r *Result) WriteText(w io.Writer) error {
	s := r.Summary()
	var b strings.Builder
	switch r.Mode {
	case "rate":
		fmt.Fprintf(&b, "Open loop, %s arrivals, %.0f rps target, %s, %d connections\n", s.Arrival, r.Target, r.Duration, r.Connections)
	case "closed":
		fmt.Fprintf(&b, "Closed loop, %d connections, %s\n", r.Connections, r.Duration)
	case "burst":
		fmt.Fprintf(&b, "Burst of %d requests released together\n", r.Requests)
	}
	fmt.Fprintf(&b, "Requests %d (ok %d, errors %d)   achieved %.1f rps   sockets opened %d   generator CPU %.3fs\n",
		r.Requests, r.OK, r.Errors, r.AchievedRPS, r.SocketsOpened, r.CPUSeconds)
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
	}{{"TTFB", s.TTFB}, {"TTFB uncorrected", s.TTFBUncorrected}, {"total", s.Total}, {"total uncorrected", s.TotalUncorrected}} {
		fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t\n", row.name, row.l.P50, row.l.P90, row.l.P95, row.l.P99, row.l.P999, row.l.Max)
	}
	fmt.Fprintf(tw, "schedule lag\t%.3f\t\t\t%.3f\t\t%.3f\t\n", s.ScheduleLag.P50, s.ScheduleLag.P99, s.ScheduleLag.Max)
	fmt.Fprintf(tw, "connection wait\t%.3f\t\t\t%.3f\t\t%.3f\t\n", s.ConnectionWait.P50, s.ConnectionWait.P99, s.ConnectionWait.Max)
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
	for _, w := range r.Warnings {
		fmt.Fprintf(&b, "  warning: %s\n", w)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Merge combines passes (a burst's repetitions, say) into one result: the
// histograms hold every sample, counts add up, and it is valid only if every
// pass was. Reasons and warnings keep the number of the pass they came from.
func Merge(rs []*Result) *Result {
	if len(rs) == 0 {
		return nil
	}
	f := rs[0]
	out := &Result{Start: f.Start, Mode: f.Mode, Arrival: f.Arrival, Target: f.Target, Connections: f.Connections,
		Shards: f.Shards, ErrorsByKind: map[string]int64{}, StatusCodes: map[int]int64{}, Valid: true,
		TTFB: NewHistogram(), TTFBUncorrected: NewHistogram(), Total: NewHistogram(), TotalUncorrected: NewHistogram(),
		ScheduleLag: NewHistogram(), ConnectionWait: NewHistogram()}
	var answered float64
	for i, r := range rs {
		out.Duration += r.Duration
		out.Elapsed += r.Elapsed
		out.Requests += r.Requests
		out.OK += r.OK
		out.Errors += r.Errors
		for k, n := range r.ErrorsByKind {
			out.ErrorsByKind[k] += n
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
		out.BodyBytes += r.BodyBytes
		out.CPUSeconds += r.CPUSeconds
		answered += r.AchievedRPS * r.Elapsed.Seconds()
		out.Valid = out.Valid && r.Valid
		out.PoolLimited = out.PoolLimited || r.PoolLimited
		out.Interrupted = out.Interrupted || r.Interrupted
		for _, s := range r.InvalidReasons {
			out.InvalidReasons = append(out.InvalidReasons, fmt.Sprintf("pass %d: %s", i+1, s))
		}
		for _, s := range r.Warnings {
			out.Warnings = append(out.Warnings, fmt.Sprintf("pass %d: %s", i+1, s))
		}
		for j, v := range r.ShardCPU {
			if j == len(out.ShardCPU) {
				out.ShardCPU = append(out.ShardCPU, v)
			}
			out.ShardCPU[j] = max(out.ShardCPU[j], v)
		}
		out.TTFB.Merge(r.TTFB)
		out.TTFBUncorrected.Merge(r.TTFBUncorrected)
		out.Total.Merge(r.Total)
		out.TotalUncorrected.Merge(r.TotalUncorrected)
		out.ScheduleLag.Merge(r.ScheduleLag)
		out.ConnectionWait.Merge(r.ConnectionWait)
	}
	if out.Elapsed > 0 {
		out.AchievedRPS = answered / out.Elapsed.Seconds()
	}
	return out
}
