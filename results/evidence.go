package results

import (
	"encoding/json"
	"time"
)

// Evidence is what a pass's figures rest on besides the generator's
// latencies: what the origin and the engine counted, what the proxy
// claimed, what each workload proves its figures with, and what else used
// the machine. Each part is present when the workload gathers it.
type Evidence struct {
	Origin    *OriginCounts     `json:"origin,omitempty"`
	Generator *GeneratorFigures `json:"generator,omitempty"`
	// Claims are the proxy's own X-Cache/Age claims, for comparison with
	// the evidence (never used as evidence).
	Claims   *CacheClaims   `json:"cache_claims,omitempty"`
	Burst    *BurstEvidence `json:"burst,omitempty"`
	Flap     *FlapEvidence  `json:"flap,omitempty"`
	OtherCPU *OtherCPU      `json:"other_cpu,omitempty"`
	Cost     *Cost          `json:"cost,omitempty"`
}

// OriginCounts are the origin's counts over the pass, and the engine's own
// counters beside them.
type OriginCounts struct {
	// Fetches are object requests the origin answered; Failed those it
	// failed on purpose (origin-flap). Health probes are not counted.
	Fetches int64 `json:"fetches"`
	Failed  int64 `json:"failed"`
	// EngineCounters are the changes of the engine's own counters
	// (varnishstat, NGINX's log, the built-in cache's), by name.
	EngineCounters map[string]float64 `json:"engine_counters,omitempty"`
	// EngineUpstream is the engine's count of its requests to the origin,
	// and OriginMinusEngine the origin's count (Fetches + Failed) minus it:
	// 0 when they agree, ±1 for a request in flight at a snapshot.
	EngineUpstream    *int64 `json:"engine_upstream,omitempty"`
	OriginMinusEngine *int64 `json:"origin_minus_engine,omitempty"`
	// Errors are counters that could not be read.
	Errors []string `json:"errors,omitempty"`
}

// GeneratorFigures are the generator's other figures of the pass, in ms
// (null when nothing was measured).
type GeneratorFigures struct {
	TTFBUncorrectedP50Ms *float64 `json:"ttfb_uncorrected_p50_ms"`
	TotalP50Ms           *float64 `json:"total_p50_ms"`
	TotalP99Ms           *float64 `json:"total_p99_ms"`
	ScheduleLagP99Ms     *float64 `json:"schedule_lag_p99_ms"`
	// LagEffect is what the generator's own lateness did to the published
	// quantiles: the figure from the intended time and from the dispatch.
	LagEffect  []LagEffect `json:"lag_effect,omitempty"`
	CPUSeconds float64     `json:"cpu_seconds"`
	// TLS is what the generator's connections negotiated; absent for plain
	// http and in files written before it was recorded.
	TLS *GeneratorTLS `json:"tls,omitempty"`
}

// GeneratorTLS is the TLS of a pass's connections: Version ("TLS 1.3"),
// Cipher and Curve (the key exchange group, "X25519"; empty for an RSA key
// exchange) are the first handshake's of the pass, or the last one's before
// it when the pass opened no connection. Handshakes counts those completed
// since the generator's previous pass ended: the pool's first ones go to its
// first pass (for most workloads the unrecorded requests that warm the
// object), then reconnects. Resumed counts those that resumed a session;
// Mixed says the connections did not all negotiate the same.
type GeneratorTLS struct {
	Version    string `json:"version"`
	Cipher     string `json:"cipher"`
	Curve      string `json:"curve"`
	Handshakes int64  `json:"handshakes"`
	Resumed    int64  `json:"resumed"`
	Mixed      bool   `json:"mixed,omitempty"`
}

// LagEffect is one quantile of one figure, counted from the intended time
// (published) and from the dispatch instant.
type LagEffect struct {
	Figure         string  `json:"figure"` // "ttfb" or "total"
	Quantile       float64 `json:"quantile"`
	CorrectedMs    float64 `json:"corrected_ms"`
	FromDispatchMs float64 `json:"from_dispatch_ms"`
	Exceeded       bool    `json:"exceeded"`
}

// CacheClaims count the proxy's claims (X-Cache, Age).
type CacheClaims struct {
	Hit     int64 `json:"hit"`
	Miss    int64 `json:"miss"`
	Stale   int64 `json:"stale"`
	Unknown int64 `json:"unknown"`
}

// BurstEvidence is a miss-storm burst's object and the origin's fetches of
// it: coalescing is Clients ÷ ObjectFetches.
type BurstEvidence struct {
	Object        string `json:"object"`
	ObjectFetches int64  `json:"object_fetches"`
	Clients       int    `json:"clients"`
}

// FlapEvidence is an origin-flap cycle: every answer classed fresh, stale,
// error or unproven from the origin's stamp, per phase; the window is the
// failing phase after the object's TTL expired.
type FlapEvidence struct {
	Healthy      PhaseCounts `json:"healthy"`
	Failing      PhaseCounts `json:"failing"`
	Window       PhaseCounts `json:"expired_window"`
	FailStart    time.Time   `json:"fail_start"`
	TTLExpiredAt time.Time   `json:"ttl_expired_at"`
	FailMode     string      `json:"fail_mode"`
	// ClaimDisagreements count answers whose X-Cache claim contradicts the
	// origin's stamp (a stale answer called HIT, say).
	ClaimDisagreements int64    `json:"claim_disagreements"`
	GraceRatio         *float64 `json:"grace_ratio"`
}

// PhaseCounts class a phase's answers.
type PhaseCounts struct {
	Fresh    int64 `json:"fresh"`
	Stale    int64 `json:"stale"`
	Errors   int64 `json:"errors"`
	Unproven int64 `json:"unproven"` // answered without the origin's stamp
}

// OtherCPU is what processes other than ours took of the measured CPUs
// during a pass: Share of their capacity (0.5 on two CPUs is one core),
// Seconds in core-seconds, steal included.
type OtherCPU struct {
	CPUs         string   `json:"cpus"`
	Share        float64  `json:"share"`
	Seconds      float64  `json:"seconds"`
	StealSeconds float64  `json:"steal_seconds"`
	Busiest      []string `json:"busiest,omitempty"`
	// GeneratorBusyShare is the busiest generator core's share of the pass
	// it was not idle: at loadgen.CPULimit or more the pass is invalid.
	GeneratorBusyShare float64 `json:"generator_busy_share,omitempty"`
}

// Cost is what the engine and the origin used during a pass.
type Cost struct {
	EngineCPUSeconds   *float64 `json:"engine_cpu_seconds"`
	EnginePeakRSSBytes *int64   `json:"engine_peak_rss_bytes"`
	OriginCPUSeconds   *float64 `json:"origin_cpu_seconds"`
	OriginPeakRSSBytes *int64   `json:"origin_peak_rss_bytes"`
	// EngineCPUMsPer1000 is the engine's CPU milliseconds per 1000
	// requests answered: the efficiency figure that survives a noisy host.
	EngineCPUMsPer1000 *float64 `json:"engine_cpu_ms_per_1000"`
	// The TLS terminator's, in topology proxyv2 (beside the engine's,
	// not in them).
	TerminatorCPUSeconds   *float64 `json:"terminator_cpu_seconds,omitempty"`
	TerminatorPeakRSSBytes *int64   `json:"terminator_peak_rss_bytes,omitempty"`
	TerminatorCPUMsPer1000 *float64 `json:"terminator_cpu_ms_per_1000,omitempty"`
	Errors                 []string `json:"errors,omitempty"`
}

// evidenceFromExtra reads the untyped "extra" of schema 1 and 2 passes.
func evidenceFromExtra(ex map[string]any) *Evidence {
	if len(ex) == 0 {
		return nil
	}
	var e Evidence
	get := func(key string, into any) bool {
		v, ok := ex[key]
		if !ok {
			return false
		}
		b, err := json.Marshal(v)
		return err == nil && json.Unmarshal(b, into) == nil
	}
	if _, ok := ex["origin_fetches"]; ok {
		o := &OriginCounts{}
		get("origin_fetches", &o.Fetches)
		get("origin_failed", &o.Failed)
		get("engine_counters", &o.EngineCounters)
		var up, diff int64
		if get("engine_upstream_requests", &up) {
			o.EngineUpstream = &up
		}
		if get("origin_minus_engine", &diff) {
			o.OriginMinusEngine = &diff
		}
		get("counter_errors", &o.Errors)
		e.Origin = o
	}
	if _, ok := ex["total_p50_ms"]; ok {
		g := &GeneratorFigures{}
		get("ttfb_uncorrected_p50_ms", &g.TTFBUncorrectedP50Ms)
		get("total_p50_ms", &g.TotalP50Ms)
		get("total_p99_ms", &g.TotalP99Ms)
		get("schedule_lag_p99_ms", &g.ScheduleLagP99Ms)
		get("lag_effect", &g.LagEffect)
		get("generator_cpu_s", &g.CPUSeconds)
		e.Generator = g
	}
	var claims CacheClaims
	if get("cache_claims", &claims) {
		e.Claims = &claims
	}
	if _, ok := ex["object"]; ok {
		b := &BurstEvidence{}
		get("object", &b.Object)
		get("object_fetches", &b.ObjectFetches)
		get("clients", &b.Clients)
		e.Burst = b
	}
	if _, ok := ex["expired_window"]; ok {
		f := &FlapEvidence{}
		get("healthy", &f.Healthy)
		get("failing", &f.Failing)
		get("expired_window", &f.Window)
		get("fail_start", &f.FailStart)
		get("ttl_expired_at", &f.TTLExpiredAt)
		get("fail_mode", &f.FailMode)
		get("claim_disagreements", &f.ClaimDisagreements)
		get("grace_ratio", &f.GraceRatio)
		e.Flap = f
	}
	var oc OtherCPU
	if get("other_cpu", &oc) {
		e.OtherCPU = &oc
	}
	return &e
}
