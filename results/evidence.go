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
	Claims   *CacheClaims      `json:"cache_claims,omitempty"`
	Burst    *BurstEvidence    `json:"burst,omitempty"`
	Flap     *FlapEvidence     `json:"flap,omitempty"`
	Purge    *PurgeEvidence    `json:"purge,omitempty"`
	Bans     *BanEvidence      `json:"bans,omitempty"`
	Audience *AudienceEvidence `json:"audience,omitempty"`
	Capacity *CapacityEvidence `json:"capacity,omitempty"`
	OtherCPU *OtherCPU         `json:"other_cpu,omitempty"`
	Cost     *Cost             `json:"cost,omitempty"`
	Stalls   *Stalls           `json:"stalls,omitempty"`
}

// Stalls is what the stall sampler saw during a pass: a thread pinned to
// each measured CPU (SCHED_FIFO when allowed, so no normal task of ours or
// anyone's could delay it) woke every PeriodMs, and every wake-up later
// than ThresholdMs is a stall, time that CPU gave to nothing we ran (steal,
// interrupts, a real-time task).
type Stalls struct {
	CPUs        string  `json:"cpus"`
	Policy      string  `json:"policy"` // "fifo", or "other" when real-time was refused
	PeriodMs    float64 `json:"period_ms"`
	ThresholdMs float64 `json:"threshold_ms"`
	Count       int     `json:"count"`
	LongestMs   float64 `json:"longest_ms"`
	TotalMs     float64 `json:"total_ms"`
	// Worst are the longest stalls, merged across CPUs when they overlap,
	// longest first, at most a few.
	Worst []StallAt `json:"worst,omitempty"`
	// CPUSeconds is the sampler's own CPU time in the pass.
	CPUSeconds float64 `json:"cpu_seconds"`
	// LateSends counts sends the generator dispatched later than
	// LateSendMs after their intended time; HostLate those of them whose
	// intended time fell in a stall of the engine's CPUs, or within the
	// stall's own length before it.
	LateSends  int64   `json:"late_sends,omitempty"`
	HostLate   int64   `json:"host_late,omitempty"`
	LateSendMs float64 `json:"late_send_ms,omitempty"`
	// GeneratorCPULate counts the other late sends that fell in a stall of
	// another watched CPU (the generator's). WaitArrivals is the answers
	// that arrived, on average, while one of the other late sends waited,
	// WaitExpected what the pass's mean rate would bring in that time:
	// many more says the event loop was busy reading a burst of answers.
	GeneratorCPULate int64   `json:"generator_cpu_late,omitempty"`
	WaitArrivals     float64 `json:"wait_arrivals,omitempty"`
	WaitExpected     float64 `json:"wait_expected,omitempty"`
	// Excused are the lateness reasons the host's stalls account for: the
	// pass was not rejected for them.
	Excused []string `json:"excused,omitempty"`
}

// StallAt is one stall: the CPUs it held (those overlapping in time are
// one), when it began from the pass's start, and how long it lasted.
type StallAt struct {
	CPUs string  `json:"cpus"`
	AtS  float64 `json:"at_s"`
	Ms   float64 `json:"ms"`
}

// CPUShare is how one measured CPU's time was spent in a pass, in percent
// of it: stolen by the hypervisor, in hard and soft interrupts (ksoftirqd
// included), in our processes, in other processes.
type CPUShare struct {
	CPU   int     `json:"cpu"`
	Steal float64 `json:"steal"`
	IRQ   float64 `json:"irq"`
	Ours  float64 `json:"ours"`
	Other float64 `json:"other"`
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

// PurgeEvidence is a purge-stampede pass: the invalidation, what the
// origin fetched after it, what the viewers got, and how latency behaved
// before, during and after the refill.
type PurgeEvidence struct {
	// Mode is how the stream was invalidated: "ban" (one call for a URL
	// prefix: Prefix) or "purge" (one request per object, Method).
	Mode    string `json:"mode"`
	Method  string `json:"method,omitempty"`
	Prefix  string `json:"prefix,omitempty"`
	Objects int    `json:"objects"`
	// Start is when the purge call was made; Returned when it returned (a
	// ban accepted, or every per-object request answered).
	Start      time.Time `json:"start"`
	Returned   time.Time `json:"returned"`
	DurationMs float64   `json:"duration_ms"`
	// Purged, NotCached and Failed count per-object answers: 200, 404 (the
	// engine did not hold it) and anything else (FailSamples say what).
	Purged      int64    `json:"purged,omitempty"`
	NotCached   int64    `json:"not_cached,omitempty"`
	Failed      int64    `json:"failed,omitempty"`
	FailSamples []string `json:"fail_samples,omitempty"`
	// FetchesBefore counts the origin's fetches of the stream's objects
	// from the pass's start to the purge (0 when the cache held them all);
	// FetchesAfter from the purge's start to the pass's end, the most of
	// one object in MaxObjectFetches (null when the origin's counters could
	// not be read); DistinctAfter the objects with a good answer to a
	// request sent after their invalidation returned. Amplification is
	// FetchesAfter ÷ DistinctAfter; fewer fetches than objects prove the
	// purge left copies behind.
	FetchesBefore    *int64 `json:"fetches_before"`
	FetchesAfter     *int64 `json:"fetches_after"`
	DistinctAfter    int64  `json:"distinct_after"`
	MaxObjectFetches *int64 `json:"max_object_fetches"`
	// AnsweredAfter counts good answers to requests sent after their
	// object's invalidation returned; StaleAfterPurge those of them whose
	// copy the origin made before it was sent (its X-Origin-Generated
	// stamp); Unproven those without a stamp.
	AnsweredAfter   int64 `json:"answered_after"`
	StaleAfterPurge int64 `json:"stale_after_purge"`
	Unproven        int64 `json:"unproven,omitempty"`
	// ReferenceP99Ms is the TTFB p99 before the purge. RecoveredMs is how
	// long after the purge's start the TTFB p99 of the next second of
	// requests came back within 10 % of it, counting the requests for
	// objects already asked for since the purge (a first request after a
	// purge goes to the origin on any engine: FirstAfter counts them), at
	// 100 ms steps; null when it did not in the pass. RecoveryJudgedMs is
	// how far it was looked for: every step before it has a whole second
	// of the pass after it (null when none has), so a pass that did not
	// recover took at least that long.
	ReferenceP99Ms   *float64 `json:"reference_p99_ms"`
	RecoveredMs      *float64 `json:"recovered_ms"`
	RecoveryJudgedMs *float64 `json:"recovery_judged_ms"`
	FirstAfter       int64    `json:"first_after"`
	// Before, Refill and After are the requests sent before the purge, in
	// the refill window (RefillWindowMs from the purge's start, the same on
	// every engine), and after it. A refill request that timed out counts
	// in the refill's TTFB at the timeout (RefillTimeouts); other failures
	// have none.
	Before         PhaseTTFB `json:"before"`
	Refill         PhaseTTFB `json:"refill"`
	After          PhaseTTFB `json:"after"`
	RefillWindowMs float64   `json:"refill_window_ms"`
	RefillTimeouts int64     `json:"refill_timeouts,omitempty"`
	// Windows are the 100 ms windows from the purge's start on (in the
	// recovery test's passes only).
	Windows []PurgeWindow `json:"windows,omitempty"`
	// EngineCPUBefore and EngineCPURefill are the engine's CPU, in cores,
	// before the purge and during the refill (null where the engine runs
	// in hlsbench's own process or the refill was shorter than a sample).
	EngineCPUBefore *float64 `json:"engine_cpu_before"`
	EngineCPURefill *float64 `json:"engine_cpu_refill"`
}

// PhaseTTFB is the TTFB of the requests sent in one phase of a pass.
// ErrorsByKind are its failed requests by kind, where the workload counts
// them (repeated-bans' quarters, which count a timeout at the timeout).
type PhaseTTFB struct {
	Requests     int64            `json:"requests"`
	Errors       int64            `json:"errors"`
	ErrorsByKind map[string]int64 `json:"errors_by_kind,omitempty"`
	P50Ms        *float64         `json:"p50_ms"`
	P99Ms        *float64         `json:"p99_ms"`
}

// PurgeWindow is one window after a purge: its start (ms after the
// purge's), requests sent in it, the first requests for an object since
// the purge among them, failed ones, origin copies made before the purge
// among its answers (from the stamps), and the TTFB p99 of its requests
// (NextP99Ms: of the requests of the second from its start that were not
// the first for their object, which recovery is judged on; null where the
// pass ends sooner).
type PurgeWindow struct {
	AtMs      float64  `json:"at_ms"`
	Requests  int64    `json:"requests"`
	First     int64    `json:"first"`
	Errors    int64    `json:"errors"`
	Stale     int64    `json:"stale,omitempty"`
	P99Ms     *float64 `json:"p99_ms"`
	NextP99Ms *float64 `json:"next_p99_ms"`
}

// BanEvidence is a repeated-bans pass: an invalidation of one object
// every Every from the first, the coldest objects first, and what the
// requests for the objects it left alone saw as the calls piled up.
type BanEvidence struct {
	// Mode is "ban" (one ban of an object's URL per call) or "purge" (one
	// request per call, Method).
	Mode   string   `json:"mode"`
	Method string   `json:"method,omitempty"`
	Every  Duration `json:"every"`
	// Calls counts the invalidations made, Failed those that failed
	// (FailSamples say how); DurationP50Ms and DurationMaxMs are how long
	// they took to return.
	Calls         int      `json:"calls"`
	Failed        int      `json:"failed,omitempty"`
	FailSamples   []string `json:"fail_samples,omitempty"`
	DurationP50Ms *float64 `json:"duration_p50_ms"`
	DurationMaxMs *float64 `json:"duration_max_ms"`
	// First and Last are the requests sent in the pass's first and last
	// quarter for objects not invalidated in the pass (the first quarter
	// starts before any call); the drift is Last's p99 ÷ First's. A
	// timeout counts in their TTFB at the timeout, another failure has
	// none; either makes the latency tests of the pass invalid.
	First PhaseTTFB `json:"first_quarter"`
	Last  PhaseTTFB `json:"last_quarter"`
	// EngineCPUFirst and EngineCPULast are the engine's CPU, in cores, in
	// those quarters (null where it runs in hlsbench's own process).
	EngineCPUFirst *float64 `json:"engine_cpu_first"`
	EngineCPULast  *float64 `json:"engine_cpu_last"`
	// BanList is the engine's ban list (Varnish's MAIN.bans) read after
	// the last call; null for an engine that keeps none, or when the last
	// call or the read after it failed (never an earlier call's list).
	BanList *int64 `json:"ban_list"`
	// AnsweredAfter and StaleAfterPurge are as in PurgeEvidence, for the
	// invalidated objects: good answers to requests sent after their call
	// returned, and those whose copy the origin made before it was sent.
	AnsweredAfter   int64 `json:"answered_after"`
	StaleAfterPurge int64 `json:"stale_after_purge"`
	Unproven        int64 `json:"unproven,omitempty"`
	// Windows are the pass's seconds.
	Windows []BanWindow `json:"windows"`
}

// BanWindow is one second of a repeated-bans pass: its start (ms from the
// pass's), the requests sent in it for objects not invalidated in the
// pass, failed ones, their TTFB p99 (a timeout at the timeout, another
// failure left out), the calls made so far, the ban list
// read after the window's call, and the engine's CPU in cores.
type BanWindow struct {
	AtMs      float64  `json:"at_ms"`
	Requests  int64    `json:"requests"`
	Errors    int64    `json:"errors"`
	P99Ms     *float64 `json:"p99_ms"`
	Calls     int      `json:"calls"`
	BanList   *int64   `json:"ban_list,omitempty"`
	EngineCPU *float64 `json:"engine_cpu"`
}

// AudienceEvidence is what a live-audience pass's viewers did and got,
// and what the origin served them.
type AudienceEvidence struct {
	// StoreBytes is the engine's store in the pass (the policy's, or a
	// miss-ratio curve's size).
	StoreBytes int64 `json:"store_bytes"`
	// Viewers joined, live and on VOD, and how many switched rendition
	// at least once.
	Viewers  int   `json:"viewers"`
	Live     int   `json:"live"`
	VOD      int   `json:"vod"`
	Switches int64 `json:"switches"`
	// Unplanned counts segments playlists listed that viewers skipped: more
	// than 5 minutes older than the pass, past what its plan covers.
	Unplanned int64 `json:"unplanned,omitempty"`
	Requests  int64 `json:"requests"`
	Answered  int64 `json:"answered"`
	Playlists int64 `json:"playlists"`
	Segments  int64 `json:"segments"`
	// Failed counts the requests without a good answer (no answer, a
	// status other than 200, a short or wrong body): FailedPlaylists and
	// FailedSegments of them by class, FailedLivePlaylists the live media
	// playlists among the playlists. Each is a miss served from nowhere.
	Failed              int64 `json:"failed"`
	FailedPlaylists     int64 `json:"failed_playlists"`
	FailedSegments      int64 `json:"failed_segments"`
	FailedLivePlaylists int64 `json:"failed_live_playlists"`
	// OriginFetches and OriginBytes are the origin's object answers and
	// their body bytes over the pass; BodyBytes what the viewers received,
	// error pages included, GoodBodyBytes the good answers' bodies alone,
	// and UndeliveredBytes the sizes of the segments whose requests failed.
	OriginFetches    *int64 `json:"origin_fetches"`
	OriginBytes      *int64 `json:"origin_bytes"`
	BodyBytes        int64  `json:"body_bytes"`
	GoodBodyBytes    int64  `json:"good_body_bytes"`
	UndeliveredBytes int64  `json:"undelivered_bytes"`
	// HitRatio and ByteOffload are percentages: 1 − (origin fetches +
	// failed requests) ÷ requests, and 1 − (origin bytes + undelivered
	// bytes) ÷ (good body bytes + undelivered bytes).
	HitRatio    *float64 `json:"hit_ratio_pct"`
	ByteOffload *float64 `json:"byte_offload_pct"`
	// EdgeSegments are the live segments published during the pass that a
	// viewer asked for, EdgeFetches the origin's fetches of them,
	// EdgeMostFetches the most of one, and EdgeFailed the failed requests
	// of them: origin requests per new segment is (EdgeFetches +
	// EdgeFailed) ÷ EdgeSegments.
	EdgeSegments    int64  `json:"edge_segments"`
	EdgeFetches     *int64 `json:"edge_fetches"`
	EdgeMostFetches *int64 `json:"edge_most_fetches"`
	EdgeFailed      int64  `json:"edge_failed"`
	// Playlist and segment TTFB, and segment download time, from the
	// player's intended send time.
	PlaylistP50Ms *float64 `json:"playlist_ttfb_p50_ms"`
	PlaylistP99Ms *float64 `json:"playlist_ttfb_p99_ms"`
	SegmentP50Ms  *float64 `json:"segment_ttfb_p50_ms"`
	SegmentP99Ms  *float64 `json:"segment_ttfb_p99_ms"`
	DownloadP50Ms *float64 `json:"segment_download_p50_ms"`
	DownloadP99Ms *float64 `json:"segment_download_p99_ms"`
	// Stalls are segment downloads slower than the segment's duration, or
	// failed, of Segments.
	Stalls int64 `json:"stalls"`
	// LivePlaylists are the good live media playlist answers (the failed
	// ones are FailedLivePlaylists); Unproven
	// those without the origin's edge stamp; StalenessP50S and P99S how far
	// behind the origin's live edge they were when they arrived, and
	// StaleMaxS the most.
	LivePlaylists int64    `json:"live_playlists"`
	Unproven      int64    `json:"unproven,omitempty"`
	StalenessP50S *float64 `json:"staleness_p50_s"`
	StalenessP99S *float64 `json:"staleness_p99_s"`
	StalenessMaxS *float64 `json:"staleness_max_s"`
	// Memory is the engine's memory (its processes' proportional set
	// sizes, so pages they share count once) and its cache files, Objects
	// the distinct objects the origin served it since it started, and
	// PayloadBytes their bodies: bytes per object is Memory − MemoryAtStart
	// over Objects.
	MemoryAtStart *int64 `json:"memory_at_start_bytes,omitempty"`
	Memory        *int64 `json:"memory_bytes,omitempty"`
	Objects       int64  `json:"objects"`
	PayloadBytes  int64  `json:"payload_bytes"`
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
	Healthy PhaseCounts `json:"healthy"`
	Failing PhaseCounts `json:"failing"`
	Window  PhaseCounts `json:"expired_window"`
	// FailStart is when the origin started failing, by its own report;
	// ModeChangeAnswered is when its control API answered the change, up
	// to 2 s later in refuse and drop modes (absent if it never did).
	FailStart          time.Time  `json:"fail_start"`
	ModeChangeAnswered *time.Time `json:"mode_change_answered,omitempty"`
	TTLExpiredAt       time.Time  `json:"ttl_expired_at"`
	FailMode           string     `json:"fail_mode"`
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
	// GeneratorBusyShare is, pinned apart, the generator process's CPU over
	// its sending window (t0 to the last send) as a share of its cores;
	// unpinned, the least busy CPU's share of the pass: at
	// loadgen.CPULimit or more the pass's latency tests are invalid.
	GeneratorBusyShare float64 `json:"generator_busy_share,omitempty"`
	// PerCPU splits each measured CPU's time (percent of it).
	PerCPU []CPUShare `json:"per_cpu,omitempty"`
}

// Cost is what the engine and the origin used during a pass.
type Cost struct {
	EngineCPUSeconds   *float64 `json:"engine_cpu_seconds"`
	EnginePeakRSSBytes *int64   `json:"engine_peak_rss_bytes"`
	OriginCPUSeconds   *float64 `json:"origin_cpu_seconds"`
	OriginPeakRSSBytes *int64   `json:"origin_peak_rss_bytes"`
	// EngineCPUMsPer1000 is the engine's CPU milliseconds per 1000
	// answers it gave in the pass: the efficiency figure that survives a
	// noisy host. Its denominator is Answers + ControlRequests; null when
	// that is 0.
	EngineCPUMsPer1000 *float64 `json:"engine_cpu_ms_per_1000"`
	// Answers are the generator's requests the engine answered with a
	// status, errors (a 503, a body that failed its check) included: they
	// cost it CPU too. Requests with no answer (refused, timed out before
	// a status) are not in it.
	Answers int64 `json:"answers"`
	// ControlRequests are hlsbench's own requests to the engine while the
	// meter ran (purge-stampede's PURGE requests and ban call,
	// repeated-bans' invalidations and the GET that checks each), answered:
	// their CPU cannot be told apart from the generator's answers', so
	// they are counted apart here and added to the denominator.
	ControlRequests int64 `json:"control_requests"`
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

// CapacityEvidence is one capacity search: every probe in the order it
// ran, and what the search concluded from them.
type CapacityEvidence struct {
	// SLO is the service level the probes were held to ("p99:10ms").
	SLO string `json:"slo"`
	// CapacityRPS is the highest offered rate that passed (null when none
	// did: NoValue says what failed at the lowest probe); MiBPerSecond
	// the body it carried at that rate.
	CapacityRPS  *float64 `json:"capacity_rps"`
	MiBPerSecond *float64 `json:"mib_per_s,omitempty"`
	NoValue      string   `json:"no_value,omitempty"`
	// LowerBound, when set, says the capacity is at least CapacityRPS and
	// why the search could not tell more ("the generator ran out at 24000
	// rps"); Stopped is the whole reason.
	LowerBound string `json:"lower_bound,omitempty"`
	Stopped    string `json:"stopped"`
	// LowestFailRPS is the lowest rate the engine failed (null when it
	// failed none): the capacity lies between CapacityRPS and it.
	LowestFailRPS *float64        `json:"lowest_fail_rps"`
	Probes        []CapacityProbe `json:"probes"`
}

// CapacityProbe is one probe of a capacity search: a pass at one offered
// rate, after a warm-up at that rate.
type CapacityProbe struct {
	OfferedRPS  float64 `json:"offered_rps"`
	CarriedRPS  float64 `json:"carried_rps"`
	Connections int     `json:"connections"`
	// QuantileMs is the SLO's quantile of TTFB (null without a success).
	QuantileMs   *float64         `json:"quantile_ms"`
	Requests     int64            `json:"requests"`
	Errors       int64            `json:"errors"`
	ErrorsByKind map[string]int64 `json:"errors_by_kind,omitempty"`
	PoolLimited  bool             `json:"pool_limited"`
	MiBPerSecond float64          `json:"mib_per_s"`
	// OtherCPUShare is the share of the measured CPUs other processes
	// took during the probe (null when not measured, and for an external
	// proxy, whose own CPU is among them): a failure beside a large one
	// may be the host's.
	OtherCPUShare *float64 `json:"other_cpu_share,omitempty"`
	// Host, when set, says what of the host may have failed the probe:
	// the hypervisor's steal past 5 % of a measured CPU, or every measured
	// CPU stalled at once for 10 ms or more (with when). A failure beside
	// it is probed once more and the repeat decides.
	Host string `json:"host,omitempty"`
	// Generator is "valid", or why the generator itself failed the probe
	// (its own lateness, its CPU): then the probe says nothing of the
	// engine.
	Generator string `json:"generator"`
	// Verdict is CapacityPass, CapacityFail (the engine's) or
	// CapacityGenerator; Reason says what failed, in a sentence.
	Verdict string `json:"verdict"`
	Reason  string `json:"reason,omitempty"`
}

// The verdicts of a capacity probe.
const (
	CapacityPass      = "pass"
	CapacityFail      = "fail"
	CapacityGenerator = "generator"
)
