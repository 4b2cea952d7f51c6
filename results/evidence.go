package results

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
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
	Claims   *CacheClaims `json:"cache_claims,omitempty"`
	OtherCPU *OtherCPU    `json:"other_cpu,omitempty"`
	Cost     *Cost        `json:"cost,omitempty"`
	Stalls   *Stalls      `json:"stalls,omitempty"`
	// Hosts are what the pass cost each host of a placed run (hlsbench
	// run --place), read on the host itself, and its clock.
	Hosts []HostPass `json:"hosts,omitempty"`

	// Parts are what each workload proves its figures with, by the key
	// its file declares ("burst", "flap"), beside the common parts in the
	// JSON object. A part set in this process is the workload's own type;
	// one read from a file is its JSON until Part decodes it.
	Parts map[string]any `json:"-"`
}

// SetPart sets a workload's part of the evidence.
func (e *Evidence) SetPart(key string, v any) {
	if e.Parts == nil {
		e.Parts = map[string]any{}
	}
	e.Parts[key] = v
}

// Part is a workload's part of e under key, as a *T: nil when e has none,
// or when what it has is not a T.
func Part[T any](e *Evidence, key string) *T {
	if e == nil {
		return nil
	}
	switch v := e.Parts[key].(type) {
	case *T:
		return v
	case json.RawMessage:
		t := new(T)
		if json.Unmarshal(v, t) != nil {
			return nil
		}
		return t
	}
	return nil
}

// evidenceCommon is Evidence without its methods, for its JSON.
type evidenceCommon Evidence

// MarshalJSON writes the common parts, then each workload's under its key.
func (e Evidence) MarshalJSON() ([]byte, error) {
	return withParts(evidenceCommon(e), e.Parts, evidenceKeys())
}

// UnmarshalJSON reads the common parts, and keeps every other key as a
// workload's part.
func (e *Evidence) UnmarshalJSON(b []byte) error {
	var c evidenceCommon
	parts, err := readParts(b, &c, evidenceKeys())
	*e = Evidence(c)
	e.Parts = parts
	return err
}

var evidenceKeys = sync.OnceValue(func() map[string]bool { return jsonKeys(reflect.TypeFor[evidenceCommon]()) })

// withParts is common's JSON object with each of parts under its key,
// sorted: a workload's own fields beside the ones every workload has.
func withParts(common any, parts map[string]any, commonKeys map[string]bool) ([]byte, error) {
	b, err := json.Marshal(common)
	if err != nil || len(parts) == 0 {
		return b, err
	}
	var buf bytes.Buffer
	buf.Write(b[:len(b)-1])
	first := len(b) == 2
	for _, k := range slices.Sorted(maps.Keys(parts)) {
		if commonKeys[k] {
			return nil, fmt.Errorf("part %q: the name of a common field", k)
		}
		v, err := json.Marshal(parts[k])
		if err != nil {
			return nil, fmt.Errorf("part %q: %w", k, err)
		}
		if !first {
			buf.WriteByte(',')
		}
		first = false
		kb, _ := json.Marshal(k)
		buf.Write(kb)
		buf.WriteByte(':')
		buf.Write(v)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// readParts reads b's common fields into common and returns its other
// keys, each as its JSON.
func readParts(b []byte, common any, commonKeys map[string]bool) (map[string]any, error) {
	if err := json.Unmarshal(b, common); err != nil {
		return nil, err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return nil, err
	}
	var parts map[string]any
	for k, v := range all {
		if !commonKeys[k] {
			if parts == nil {
				parts = map[string]any{}
			}
			parts[k] = v
		}
	}
	return parts, nil
}

// jsonKeys are the JSON names of t's fields.
func jsonKeys(t reflect.Type) map[string]bool {
	keys := map[string]bool{}
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			keys[name] = true
		}
	}
	return keys
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
	// CellCount and CellMs are the stalls, of Count and TotalMs, that
	// ended with a thread of the cell (engine, origin, terminator)
	// runnable on their CPU: the CPU was the cell's, kept from the
	// sampler (a long system call, its own packets' softirqs), not the
	// host's interference; CellMs leaves out the stretches the whole
	// machine stopped (cpuload's Stall.Together), which are the host's.
	CellCount int     `json:"cell_count,omitempty"`
	CellMs    float64 `json:"cell_ms,omitempty"`
	// BusyCount and BusyMs are the other stalls' time their CPU was not
	// idle (cpuload's Stall.Busy): this machine's own work the sampler
	// could not preempt, such as a task of the cell that held the CPU
	// through a long write and then slept in it, or the kernel moving the
	// cell's bytes. BusyCount counts the stalls it was most of. The host's
	// part is the rest, TotalMs less CellMs and BusyMs: time the CPU sat
	// idle past the sampler's deadline. HostWorst are the longest stalls
	// the host took most of.
	BusyCount int       `json:"busy_count,omitempty"`
	BusyMs    float64   `json:"busy_ms,omitempty"`
	HostWorst []StallAt `json:"host_worst,omitempty"`
	// Unchecked counts stalls whose cell was not looked at (the sampler
	// had looked just before): they count as the host's.
	Unchecked int `json:"unchecked,omitempty"`
	// Unread counts stalls whose busy part was not read but estimated,
	// split as the read stalls of their CPU in the pass were.
	Unread int `json:"unread,omitempty"`
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
	// Busiest are the other processes that took the most of Other on this
	// CPU, at most three, most first: command name and percent of the CPU
	// ("cc1 6.1 %"), a process allowed on several CPUs counted evenly over
	// them (the kernel keeps no per-CPU time of a task).
	Busiest []string `json:"busiest,omitempty"`
	// Unseen is the percent of the CPU, within Other, that no process this
	// host lists took: another PID namespace's processes (a container or a
	// sandbox beside this one), or processes that ended during the pass.
	Unseen float64 `json:"unseen,omitempty"`
	// NetIRQ is the percent of the CPU, within IRQ, in network softirqs
	// (NET_RX, NET_TX; softirq time split by /proc/softirqs' counts): on
	// loopback, the cost of moving the cell's own bytes, part of the cost
	// of serving.
	NetIRQ float64 `json:"net_irq,omitempty"`
}

// OriginCounts are the origin's counts over the pass, and the engine's own
// counters beside them.
type OriginCounts struct {
	// Fetches are object requests the origin answered; Failed those it
	// failed on purpose (a workload that makes it fail). Health probes
	// are not counted.
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
	LagEffect []LagEffect `json:"lag_effect,omitempty"`
	// ConnectionWaits counts the requests that waited for a free
	// connection and what the waits moved of the published quantiles
	// ("18 of 10000 requests waited for a connection, up to 0.400 ms; TTFB
	// p50 unchanged, p99 +0.020 ms"): the evidence of a pass whose few
	// waits did not saturate it (see METHODOLOGY, Saturation).
	ConnectionWaits string  `json:"connection_waits,omitempty"`
	CPUSeconds      float64 `json:"cpu_seconds"`
	// TLS is what the generator's connections negotiated; absent for plain
	// http and in files written before it was recorded.
	TLS *GeneratorTLS `json:"tls,omitempty"`
	// Hosts are the generator hosts of a pass split over several (a run
	// with placed generators): what each carried and how its clock stood.
	Hosts []GeneratorHost `json:"hosts,omitempty"`
}

// GeneratorHost is one generator host's share of a pass split over
// several: the generator's own figure (loadgen's Result.Parts) and the run
// file's, one schema.
type GeneratorHost struct {
	Name       string  `json:"name"`
	Requests   int64   `json:"requests"`
	OK         int64   `json:"ok"`
	CPUSeconds float64 `json:"cpu_seconds"`
	// ClockOffsetMs is how far its clock was ahead of the controller's
	// (negative: behind) before the pass, ClockUncertaintyMs how far the
	// true offset may be from it, StartErrorMs how far from the common
	// instant it may have started.
	ClockOffsetMs      float64  `json:"clock_offset_ms"`
	ClockUncertaintyMs float64  `json:"clock_uncertainty_ms"`
	StartErrorMs       float64  `json:"start_error_ms"`
	Valid              bool     `json:"valid"`
	InvalidReasons     []string `json:"invalid_reasons,omitempty"`
}

// GeneratorTLS is what TLS a pass's connections negotiated: the
// generator's own figure (workloads/loadgen reports it as TLSInfo) and the
// run file's, one schema.
type GeneratorTLS struct {
	// Version ("TLS 1.3"), Cipher ("TLS_AES_128_GCM_SHA256") and Curve,
	// the key exchange group ("X25519", "X25519MLKEM768"; empty for an RSA
	// key exchange), are the first handshake's of the pass. A pass without
	// a handshake ran on connections opened before it: they are then the
	// last handshake's before it.
	Version string `json:"version"`
	Cipher  string `json:"cipher"`
	Curve   string `json:"curve"`
	// Handshakes counts the handshakes completed since the previous pass
	// ended, as the generator counts sockets: the pool's first ones go to
	// its first pass (for most workloads the unrecorded requests that warm
	// the object), then reconnects. Resumed counts those that resumed a
	// session.
	Handshakes int64 `json:"handshakes"`
	Resumed    int64 `json:"resumed"`
	// Mixed is set when the connections did not all negotiate the same
	// version, cipher and group; the ones shown are then only the first.
	Mixed bool `json:"mixed,omitempty"`
}

// String reads "TLS 1.3 TLS_AES_128_GCM_SHA256 X25519, 8 handshakes (7
// resumed)".
func (t *GeneratorTLS) String() string {
	s := t.Version + " " + t.Cipher
	if t.Curve != "" {
		s += " " + t.Curve
	}
	s += fmt.Sprintf(", %d handshakes (%d resumed)", t.Handshakes, t.Resumed)
	if t.Mixed {
		s += "; mixed: the connections did not all negotiate these"
	}
	return s
}

// LagEffect is one quantile of one figure, counted from the intended time
// (published) and from the dispatch instant, in ms: the generator's own
// figure (workloads/loadgen's Summary) and the run file's, one schema.
// Exceeded is Corrected − FromDispatch above ToleranceMs (absent from
// files written before the tolerance was kept).
type LagEffect struct {
	Figure         string  `json:"figure"` // "ttfb" or "total"
	Quantile       float64 `json:"quantile"`
	CorrectedMs    float64 `json:"corrected_ms"`
	FromDispatchMs float64 `json:"from_dispatch_ms"`
	ToleranceMs    float64 `json:"tolerance_ms,omitempty"`
	Exceeded       bool    `json:"exceeded"`
}

// CacheClaims count the proxy's claims (X-Cache, Age).
type CacheClaims struct {
	Hit     int64 `json:"hit"`
	Miss    int64 `json:"miss"`
	Stale   int64 `json:"stale"`
	Unknown int64 `json:"unknown"`
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
	// NetIRQCeiling is the percent of a CPU the network softirqs of the
	// bytes the pass moved may take (workloads.NetIRQPerGiB a GiB): up to
	// it, a CPU's NetIRQ is the cell's own cost, not the host's.
	NetIRQCeiling float64 `json:"net_irq_ceiling,omitempty"`
	// MovedBytes are the body bytes the generator read in the pass, the
	// ceiling's measure.
	MovedBytes int64 `json:"moved_bytes,omitempty"`
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
	// meter ran (purges, bans and the GETs that check them), answered:
	// their CPU cannot be told apart from the generator's answers', so
	// they are counted apart here and added to the denominator.
	ControlRequests int64 `json:"control_requests"`
	// The TLS terminator's, in topology proxyv2 (beside the engine's,
	// not in them).
	TerminatorCPUSeconds   *float64 `json:"terminator_cpu_seconds,omitempty"`
	TerminatorPeakRSSBytes *int64   `json:"terminator_peak_rss_bytes,omitempty"`
	TerminatorCPUMsPer1000 *float64 `json:"terminator_cpu_ms_per_1000,omitempty"`
	// EngineIRQ is the percent of the engine's CPUs (shared with its
	// terminator and the origin; every measured CPU when none is pinned)
	// that went to hard and soft interrupts in the pass, and EngineNetIRQ
	// the part of it in network softirqs: on loopback most of it moves
	// the pass's own bytes, a cost of serving that no process is charged
	// with. Null when the CPUs were not measured.
	EngineIRQ    *float64 `json:"engine_irq,omitempty"`
	EngineNetIRQ *float64 `json:"engine_net_irq,omitempty"`
	Errors       []string `json:"errors,omitempty"`
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
	// The parts of the workloads that wrote "extra" (schema 1 and 2)
	// kept its keys.
	for _, part := range []struct {
		key, marker string
		keys        []string
	}{
		{"burst", "object", []string{"object", "object_fetches", "clients"}},
		{"flap", "expired_window", []string{"healthy", "failing", "expired_window", "fail_start", "ttl_expired_at", "fail_mode", "claim_disagreements", "grace_ratio"}},
	} {
		if _, ok := ex[part.marker]; !ok {
			continue
		}
		m := map[string]any{}
		for _, k := range part.keys {
			if v, ok := ex[k]; ok {
				m[k] = v
			}
		}
		if b, err := json.Marshal(m); err == nil {
			e.SetPart(part.key, json.RawMessage(b))
		}
	}
	var oc OtherCPU
	if get("other_cpu", &oc) {
		e.OtherCPU = &oc
	}
	return &e
}

// HostPass is what one host of a placed run did during a pass: the whole
// host's CPU, memory and network, whatever ran there, from its /proc read
// before and after the pass by an agent on it, and its clock before the
// pass. A figure that could not be read is null, with the reason in Error.
type HostPass struct {
	Role string `json:"role"` // "generator", "engine", "origin"
	Name string `json:"name"`
	// ClockOffsetMs is how far its clock was ahead of the controller's
	// before the pass (negative: behind), within ClockUncertaintyMs: the
	// origin host's is what its stamps are read with.
	ClockOffsetMs      *float64 `json:"clock_offset_ms"`
	ClockUncertaintyMs *float64 `json:"clock_uncertainty_ms"`
	CPUs               int      `json:"cpus,omitempty"`
	// CPUSeconds is the busy time of all its CPUs over the pass, and
	// CPUShare that over the time all of them had.
	CPUSeconds *float64 `json:"cpu_seconds"`
	CPUShare   *float64 `json:"cpu_share"`
	// MemUsedBytes is its memory in use (total less available) after the
	// pass, MemTotalBytes all it has.
	MemUsedBytes  *int64 `json:"mem_used_bytes"`
	MemTotalBytes int64  `json:"mem_total_bytes,omitempty"`
	// NetRxBytes and NetTxBytes are what its interfaces (loopback aside)
	// received and sent during the pass.
	NetRxBytes *int64 `json:"net_rx_bytes"`
	NetTxBytes *int64 `json:"net_tx_bytes"`
	// StealShare and IRQShare are the hypervisor's steal and the hard and
	// soft interrupts' share of the host's CPUs over the pass; OtherShare,
	// on a generator host, what processes other than the generator (the
	// agent) took, steal and interrupts aside (null on the engine's and
	// the origin's hosts, whose processes the probe does not tell apart);
	// LeastBusyShare the least busy CPU's busy share: 0.95 or more and
	// no CPU rested. The run judges them as it judges its own host's.
	StealShare     *float64 `json:"steal_share,omitempty"`
	IRQShare       *float64 `json:"irq_share,omitempty"`
	OtherShare     *float64 `json:"other_share,omitempty"`
	LeastBusyShare *float64 `json:"least_busy_share,omitempty"`
	Error          string   `json:"error,omitempty"`
}
