// Package results is the on-disk record of a benchmark run: versioned,
// self-describing JSON that carries the whole configuration, the machine, the
// tool and engine versions, every pass and the HDR histograms, written
// atomically so a reader never sees half a file.
package results

import (
	"bufio"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"golang.org/x/sys/unix"

	"github.com/hlsbench/hlsbench/results/stats"
)

// SchemaVersion is bumped whenever a field changes meaning or disappears.
//
// 2: a value with nothing measured behind it is null with a reason
// (no_value), never 0; every result counts its requests and failed
// requests; the failed answers of the workload that fails the origin are
// grace_errors (errors was theirs in 1); a run says how it ended (status, error).
//
// 3: pass evidence is typed (evidence, replacing extra); the run describes
// its workloads and their conditions; passes say when they started; a
// result's "passes" is the count of its measured passes (what `run --json`
// always said) and its passes are "pass_records".
const SchemaVersion = 3

// How a run ended. A file without finished_at is read as StatusKilled: the
// process died before it could say (or is still running).
const (
	StatusRunning     = "running"
	StatusComplete    = "complete"
	StatusInterrupted = "interrupted"
	StatusFailed      = "failed"
	StatusKilled      = "killed"
	// StatusUnknown is a schema 1 file's: it did not record how it ended.
	StatusUnknown = "unknown"
)

// Run is one invocation of `hlsbench run`.
type Run struct {
	SchemaVersion int       `json:"schema_version"`
	ID            string    `json:"id"`
	StartedAt     time.Time `json:"started_at"`
	FinishedAt    time.Time `json:"finished_at,omitzero"`
	// Status is how the run ended (StatusComplete, StatusInterrupted,
	// StatusFailed with Error), StatusRunning while it runs.
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
	// Interrupted runs keep every pass that finished.
	Interrupted bool           `json:"interrupted"`
	Tool        Tool           `json:"tool"`
	Host        Host           `json:"host"`
	Config      map[string]any `json:"config"`
	Engines     []Engine       `json:"engines"`
	Results     []Result       `json:"results"`
	Warnings    []string       `json:"warnings,omitempty"`
	// Interference says whether processes other than the run's own were
	// busy on the measured CPUs during its measured passes.
	Interference *Interference `json:"interference,omitempty"`
	// Workloads describe each workload of the run as it ran: what it is
	// and its conditions. Results name theirs in Workload.
	Workloads []Workload `json:"workloads,omitempty"`
	// Placement names the hosts of a run whose roles ran on other hosts
	// (hlsbench run --place); absent when everything ran on Host.
	Placement []PlacedHost `json:"placement,omitempty"`
	// Decision is hlsbench run --decide's: two rows of the run compared
	// per test as hlsbench compare does, after the planned passes and
	// each round of more; absent without --decide.
	Decision *Decision `json:"decision,omitempty"`
}

// Decision is a comparison of two rows of one run that the run repeated
// passes for until it decided, or until its bound.
type Decision struct {
	Base string `json:"base"`
	New  string `json:"new"`
	// PlannedPasses are the measured passes of each row the run planned
	// (--passes); MaxPasses the bound on them, the planned included.
	PlannedPasses int `json:"planned_passes"`
	MaxPasses     int `json:"max_passes"`
	// Tests are the tests compared, as they were judged last.
	Tests []DecidedTest `json:"tests"`
	// Error says why nothing could be compared, when nothing could.
	Error string `json:"error,omitempty"`
}

// DecidedTest is one test of a Decision.
type DecidedTest struct {
	ID       string `json:"id"` // WORKLOAD/TEST
	Topology string `json:"topology,omitempty"`
	// Verdict is compare's: regression, improvement, no significant
	// change, inconclusive, not comparable, or why the test was not
	// compared ("invalid in base").
	Verdict string `json:"verdict"`
	// Decided says the verdict is a decision; Passes is how many measured
	// passes of each row it was judged on.
	Decided bool   `json:"decided"`
	Passes  int    `json:"passes"`
	Reason  string `json:"reason,omitempty"`
}

// PlacedHost is one host of a placed run and what ran there.
type PlacedHost struct {
	Role     string `json:"role"` // "generator", "engine", "origin"
	Endpoint string `json:"endpoint"`
	Addr     string `json:"addr"`
}

// Workload is one workload as it ran.
type Workload struct {
	Name        string     `json:"name"`
	Title       string     `json:"title"`
	Description string     `json:"description"`
	Conditions  Conditions `json:"conditions"`
}

// Conditions are what a workload's figures depend on. Two results are
// comparable only when these agree (Comparable); addresses, ports, pass
// counts and the host are not conditions.
type Conditions struct {
	// RateRPS is the open-loop rate (0 for bursts).
	RateRPS     float64 `json:"rate_rps,omitempty"`
	Connections int     `json:"connections,omitempty"`
	// ObjectBytes is the size of the object requested; RangeBytes the
	// length of a Range request's part, when the workload sends one.
	ObjectBytes  int64    `json:"object_bytes,omitempty"`
	RangeBytes   int64    `json:"range_bytes,omitempty"`
	PassDuration Duration `json:"pass_duration,omitempty"`
	Timeout      Duration `json:"timeout,omitempty"`
	// EngineCost says how the engine's CPU per 1000 answers counts
	// hlsbench's own control requests, in a workload that makes them
	// (purges, bans).
	EngineCost string `json:"engine_cost,omitempty"`
	// Policy is a digest of the cache policy every engine was given (TTLs,
	// grace, probe, timeouts): runs under another policy do not compare.
	Policy string `json:"policy,omitempty"`
	// Isolation says how the other cells of a run were kept from the
	// CPUs while one was measured: frozen (stopped process groups, paused
	// containers), none (the in-process runtime), or alone. Not compared:
	// a cell measured alone and one measured beside frozen cells should
	// agree, and that is what it is there to show.
	Isolation string `json:"isolation,omitempty"`
	// Warmups and Passes are the protocol; they may differ between runs
	// that are compared.
	Warmups int `json:"warmups"`
	Passes  int `json:"passes"`

	// Own are a workload's own conditions, by the keys its file declares
	// ("burst", "cycles", "audience"), beside the common ones in the JSON
	// object: set in this process as the workload's types, read from a
	// file as their JSON (OwnCondition decodes one).
	Own map[string]any `json:"-"`
}

// Fact is a line of a page's conditions: "Burst: 200 clients released at
// once".
type Fact struct {
	Label, Value string
}

// SetOwn sets one of a workload's own conditions.
func (c *Conditions) SetOwn(key string, v any) {
	if c.Own == nil {
		c.Own = map[string]any{}
	}
	c.Own[key] = v
}

// OwnCondition is a workload's own condition under key, as a T, and
// whether c has one that reads as a T.
func OwnCondition[T any](c Conditions, key string) (T, bool) {
	var t T
	switch v := c.Own[key].(type) {
	case nil:
		return t, false
	case T:
		return v, true
	case json.RawMessage:
		return t, json.Unmarshal(v, &t) == nil
	default:
		// Another type of the same JSON (a file's number read as an int).
		b, err := json.Marshal(v)
		return t, err == nil && json.Unmarshal(b, &t) == nil
	}
}

// conditionsCommon is Conditions without its methods, for its JSON.
type conditionsCommon Conditions

// MarshalJSON writes the common conditions, then the workload's own.
func (c Conditions) MarshalJSON() ([]byte, error) {
	return withParts(conditionsCommon(c), c.Own, conditionKeys())
}

// UnmarshalJSON reads the common conditions and keeps every other key as
// the workload's own.
func (c *Conditions) UnmarshalJSON(b []byte) error {
	var common conditionsCommon
	own, err := readParts(b, &common, conditionKeys())
	*c = Conditions(common)
	c.Own = own
	return err
}

var conditionKeys = sync.OnceValue(func() map[string]bool { return jsonKeys(reflect.TypeFor[conditionsCommon]()) })

// canonical is v's JSON as encoding/json writes a value decoded from it:
// a file's indented object and a value of this process compare equal.
func canonical(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	var back any
	if json.Unmarshal(b, &back) != nil {
		return string(b)
	}
	if s, ok := back.(string); ok {
		return s
	}
	b, _ = json.Marshal(back)
	return string(b)
}

// Comparable says whether two workloads ran under the same conditions,
// and if not, which differ (the protocol's pass counts may).
func (c Conditions) Comparable(o Conditions) (bool, []string) {
	var diff []string
	check := func(name string, a, b any) {
		if a != b {
			diff = append(diff, fmt.Sprintf("%s %v vs %v", name, a, b))
		}
	}
	check("rate_rps", c.RateRPS, o.RateRPS)
	check("connections", c.Connections, o.Connections)
	check("object_bytes", c.ObjectBytes, o.ObjectBytes)
	check("range_bytes", c.RangeBytes, o.RangeBytes)
	check("pass_duration", c.PassDuration, o.PassDuration)
	check("timeout", c.Timeout, o.Timeout)
	for _, k := range slices.Sorted(maps.Keys(maps.Collect(func(yield func(string, bool) bool) {
		for k := range c.Own {
			yield(k, true)
		}
		for k := range o.Own {
			yield(k, true)
		}
	}))) {
		a, b := "", ""
		if v, ok := c.Own[k]; ok {
			a = canonical(v)
		}
		if v, ok := o.Own[k]; ok {
			b = canonical(v)
		}
		check(k, a, b)
	}
	if c.Policy != "" && o.Policy != "" {
		check("policy", c.Policy, o.Policy)
	}
	return len(diff) == 0, diff
}

// Duration is a time.Duration written as a string ("5s") in JSON.
type Duration time.Duration

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration: want a string like \"5s\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration: %w", err)
	}
	*d = Duration(v)
	return nil
}

func (d Duration) String() string { return time.Duration(d).String() }

// WorkloadOf finds a workload's description in the run.
func (r *Run) WorkloadOf(name string) (Workload, bool) {
	for _, w := range r.Workloads {
		if w.Name == name {
			return w, true
		}
	}
	return Workload{}, false
}

// Interference is other processes' CPU time on the measured CPUs, from
// /proc/stat, over the measured passes.
type Interference struct {
	CPUs string `json:"cpus"`
	// Passes were sampled; BusyPasses of them had other processes take
	// more than Threshold of the CPUs' capacity (steal included).
	Passes        int      `json:"passes"`
	BusyPasses    int      `json:"busy_passes"`
	Threshold     float64  `json:"threshold"`
	MaxOtherShare float64  `json:"max_other_share"`
	Busiest       []string `json:"busiest,omitempty"`
	// UnseenPasses are the busy passes in which most of the other share
	// was in no process this host lists (CPUShare.Unseen): a neighbour in
	// another PID namespace, whose time /proc/stat counts and /proc does
	// not name.
	UnseenPasses int `json:"unseen_passes,omitempty"`
}

// Tool identifies the hlsbench build.
type Tool struct {
	Name      string `json:"name"`
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	GoVersion string `json:"go_version"`
}

// Host describes the machine.
type Host struct {
	CPUModel string `json:"cpu_model"`
	Cores    int    `json:"cores"`
	Kernel   string `json:"kernel"`
	OS       string `json:"os"`
	Arch     string `json:"arch"`
	Hostname string `json:"hostname"`
	MemBytes uint64 `json:"mem_bytes"`
}

// Engine is one engine as it ran.
type Engine struct {
	// Name is the engine as the run selected it: varnish, or varnish@9.0.2
	// for one build of several, or a variant's label (prod for
	// prod=varnish), with Kind then naming the engine.
	Name    string `json:"name"`
	Kind    string `json:"kind,omitempty"`
	Version string `json:"version"`
	// Binary is the binary a variant was given (another hlsbench's
	// built-in cache, another build of an engine); "" when found as usual.
	Binary string `json:"binary,omitempty"`
	// Config is a configuration of the user's own, run as given instead of
	// the one hlsbench renders.
	Config *ConfigFile `json:"config,omitempty"`
	// Commit and SourceSHA256 identify an engine built from source (the
	// git commit, the digest of its source tarball or tree).
	Commit       string `json:"commit,omitempty"`
	SourceSHA256 string `json:"source_sha256,omitempty"`
	Runtime      string `json:"runtime"`
	// Terminator is the TLS terminator in front of the engine in topology
	// proxyv2 (hitch, haproxy), its version and, with Docker, its image.
	Terminator        string `json:"terminator,omitempty"`
	TerminatorVersion string `json:"terminator_version,omitempty"`
	TerminatorImage   string `json:"terminator_image,omitempty"`
	Topology          string `json:"topology"`
	// Pinning says which CPUs each party was confined to ("" when unpinned).
	Pinning map[string]string `json:"pinning,omitempty"`
	// Image is the container image the engine ran from ("ref@id"), with
	// the Docker runtime.
	Image string `json:"image,omitempty"`
	// MemoryLimitBytes is the container's memory limit (0: none).
	MemoryLimitBytes int64 `json:"memory_limit_bytes,omitempty"`
	// Differences are what no configuration makes equal between this
	// engine and the others (how it coalesces, serves stale, counts): a
	// reader of its figures needs them.
	Differences []string `json:"differences,omitempty"`
	// WorkDir is where the engine's work directory was (Varnish's
	// shared-memory log, the configuration, the logs): WorkDirRAM, or a
	// directory on disk and why not in RAM; "" in runs before it was said
	// and for engines with none.
	WorkDir string `json:"work_dir,omitempty"`
}

// WorkDirRAM is Engine.WorkDir of a work directory on a tmpfs.
const WorkDirRAM = "tmpfs"

// EngineName is the engine itself, whatever the selection called it:
// varnish for varnish, varnish@9.0.2 and prod=varnish.
func (e Engine) EngineName() string {
	if e.Kind != "" {
		return e.Kind
	}
	name, _, _ := strings.Cut(e.Name, "@")
	return name
}

// ConfigFile is a configuration file of the user's own: where it was read,
// its SHA-256 and its content, and what hlsbench cannot guarantee of it
// (the workloads' policy assumes a TTL, grace, a purge method: a
// configuration of one's own is run as given, never rewritten).
type ConfigFile struct {
	Path    string   `json:"path"`
	SHA256  string   `json:"sha256"`
	Content string   `json:"content"`
	Caveats []string `json:"caveats,omitempty"`
}

// resultCommon is Result without its methods, for its JSON.
type resultCommon Result

// MarshalJSON writes the common fields, then the test's own figures.
func (r Result) MarshalJSON() ([]byte, error) {
	figures := make(map[string]any, len(r.Figures))
	for k, v := range r.Figures {
		figures[k] = v
	}
	return withParts(resultCommon(r), figures, resultKeys())
}

// UnmarshalJSON reads the common fields, and keeps every other key that
// holds a number as one of the test's own figures.
func (r *Result) UnmarshalJSON(b []byte) error {
	var c resultCommon
	own, err := readParts(b, &c, resultKeys())
	*r = Result(c)
	r.Figures = nil
	for k, v := range own {
		var f float64
		if raw, ok := v.(json.RawMessage); ok && json.Unmarshal(raw, &f) == nil {
			r.SetFigure(k, f)
		}
	}
	return err
}

var resultKeys = sync.OnceValue(func() map[string]bool { return jsonKeys(reflect.TypeFor[resultCommon]()) })

// Figure is the test's own figure under key, if it has one.
func (r *Result) Figure(key string) (float64, bool) {
	v, ok := r.Figures[key]
	return v, ok
}

// SetFigure sets the test's own figure under key.
func (r *Result) SetFigure(key string, v float64) {
	if r.Figures == nil {
		r.Figures = map[string]float64{}
	}
	r.Figures[key] = v
}

// Result is one test of one workload on one engine: the headline value and
// everything needed to check it.
type Result struct {
	ID       string `json:"id"` // stable: WORKLOAD/TEST
	Workload string `json:"workload"`
	Test     string `json:"test"`
	Title    string `json:"title"`
	Engine   string `json:"engine"`
	Runtime  string `json:"runtime"`
	Topology string `json:"topology"`
	// Value comes from the valid measured passes only; nil (JSON null)
	// when none has a value, with NoValue saying why.
	Value   *float64 `json:"value"`
	NoValue string   `json:"no_value,omitempty"`
	// NotApplicable says why this engine cannot be measured in this
	// topology at all (no TLS listener of its own): no value, not valid,
	// and no failure either.
	NotApplicable string `json:"not_applicable,omitempty"`
	Unit          string `json:"unit"`
	LowerIsBetter bool   `json:"lower_is_better"`
	// Valid is true when every measured pass was valid (and there was
	// one), but for passes invalid for their saturation alone in a cell
	// that is not saturated (see Saturated), and for passes the
	// instrument or the host spoiled (SpoiledPasses) while the valid ones
	// are at least half of the measured passes (see Recount).
	Valid bool `json:"valid"`
	// InvalidReasons explain a false Valid, with the pass they came from.
	InvalidReasons []string `json:"invalid_reasons"`
	// Aggregation says how Value was computed from the passes.
	Aggregation string `json:"aggregation"`
	// MeasuredPasses ran; ValidPasses of them are behind Value.
	MeasuredPasses int `json:"passes"`
	ValidPasses    int `json:"valid_passes"`
	// OfferedRPS and AchievedRPS are the offered rate and the median
	// carried rate of the measured passes (null for tests of workloads
	// that offer no rate); SaturatedPasses counts the measured passes
	// that were saturated.
	OfferedRPS      *float64 `json:"offered_rps,omitempty"`
	AchievedRPS     *float64 `json:"achieved_rps,omitempty"`
	SaturatedPasses int      `json:"saturated_passes,omitempty"`
	// SpoiledPasses counts the measured passes invalid only for the
	// instrument or the host (Pass.InvalidBy InvalidByInstrument): not
	// the engine's doing, so they neither count against the cell nor
	// stand behind its value.
	SpoiledPasses int `json:"spoiled_passes,omitempty"`
	// SaturatedValue, for a latency test with saturated passes, is its
	// quantile over every saturated measured pass merged: what a client
	// saw while the rate was not carried. Never a TTFB: Value stays the
	// valid passes' alone.
	SaturatedValue *float64 `json:"saturated_value,omitempty"`
	Passes         []Pass   `json:"pass_records"`
	// Spread is nil (JSON null) when no valid measured pass has a value,
	// as Value is: zeros would read as a measurement.
	Spread *Spread `json:"spread"`
	// Requests and Errors add up every measured pass's requests and failed
	// requests (every workload), by kind in ErrorsByKind.
	Requests     int64            `json:"requests"`
	Errors       int64            `json:"errors"`
	ErrorsByKind map[string]int64 `json:"errors_by_kind"`
	// Histogram is the merged HDR histogram behind a latency Value
	// (base64 of the compressed V2 encoding; nanoseconds).
	Histogram string `json:"histogram,omitempty"`

	// Figures are the test's own figures beside its value, under the keys
	// its workload declares (the origin fetches behind a coalescing count,
	// the stale and failed answers behind a grace ratio): top-level keys of
	// the result's JSON, after the common ones. A figure nothing measured
	// is absent, never 0.
	Figures map[string]float64 `json:"-"`

	// EngineCPUMsPer1000 is the median over the valid measured passes of
	// the engine's CPU milliseconds per 1000 answers it gave (Cost's
	// Answers, errors with a status included, plus its ControlRequests:
	// hlsbench's own purges, bans and checks, whose CPU is in the meter),
	// and EnginePeakRSSBytes the largest peak of its processes' resident
	// memory in a measured pass (null where the engine runs in-process).
	EngineCPUMsPer1000 *float64 `json:"engine_cpu_ms_per_1000,omitempty"`
	EnginePeakRSSBytes *int64   `json:"engine_peak_rss_bytes,omitempty"`
	// EngineIRQ and EngineNetIRQ are the medians over the same passes of
	// Cost's: the interrupts on the engine's CPUs, beside its CPU time.
	EngineIRQ    *float64 `json:"engine_irq,omitempty"`
	EngineNetIRQ *float64 `json:"engine_net_irq,omitempty"`

	// LowerBound, when set, says Value is a lower bound and why, in a
	// few words shown after it ("≥ 24000 rps (the generator ran out at
	// 48000 rps)", "at the instrument's limit"): the engine carried at
	// least Value, and the run could not tell how much more. Such a value
	// is never ranked.
	LowerBound string `json:"lower_bound,omitempty"`
	// InstrumentCeiling marks the null engine's capacity: the most the
	// generator and the host carried from a server doing no cache work
	// (see MarkInstrumentLimit).
	InstrumentCeiling bool `json:"instrument_ceiling,omitempty"`
	// MiBPerSecond is the body carried at capacity (capacity tests): the
	// median over the valid searches of each one's at its capacity.
	MiBPerSecond *float64 `json:"mib_per_s,omitempty"`
}

// Saturated reports whether r's median measured pass was saturated (of
// an even count, the worse of the two in the middle): such a cell is not
// ranked as a latency. A cell with fewer saturated passes is valid on its
// valid passes and counts the saturated ones in SaturatedPasses: one pass
// of twenty that a blip saturated says nothing of the other nineteen.
func (r *Result) Saturated() bool {
	return r.SaturatedPasses > 0 && r.SaturatedPasses >= (r.MeasuredPasses+1)/2
}

// onlySaturated says the pass is invalid for its saturation alone: in a
// cell that is not saturated it does not make the cell invalid.
func onlySaturated(p Pass) bool {
	if p.Saturated == "" || len(p.InvalidReasons) == 0 {
		return false
	}
	for _, why := range p.InvalidReasons {
		if why != p.Saturated {
			return false
		}
	}
	return true
}

// Whose an invalid pass's reasons are (Pass.InvalidBy).
const (
	// InvalidByInstrument: every reason is the instrument's or the
	// host's — the generator's own lateness or its busy CPUs, a host that
	// spoiled the pass (steal, interrupts, other processes, stalls) —
	// but for its saturation. Such a pass says nothing of the engine.
	InvalidByInstrument = "instrument"
	// InvalidBySaturation: the pass's saturation is its only reason.
	InvalidBySaturation = "saturation"
	// InvalidByEngine: a reason is the engine's (failed requests, wrong
	// or short bodies, misses where hits were due, a crash, no value) or
	// was not classified where it was made.
	InvalidByEngine = "engine"
)

// ByInstrument says the pass is invalid for the instrument or the host
// alone (and perhaps its saturation), as the code that judged it recorded
// in InvalidBy. A pass that recorded no class (files written before
// InvalidBy) is the engine's: nothing says otherwise.
func (p Pass) ByInstrument() bool {
	return !p.Valid && len(p.InvalidReasons) > 0 && p.InvalidBy == InvalidByInstrument
}

// SaturationShare is the share of its offered rate a pass must carry not
// to be saturated.
const SaturationShare = 0.97

// ErrorSample is one distinct failure message and how often it was seen.
type ErrorSample struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
	Count   int64  `json:"count"`
}

// Pass is one measured (or warm-up) pass's figures for a test.
type Pass struct {
	Index          int      `json:"index"`
	Warmup         bool     `json:"warmup"`
	Value          *float64 `json:"value"`
	NoValue        string   `json:"no_value,omitempty"`
	Valid          bool     `json:"valid"`
	InvalidReasons []string `json:"invalid_reasons,omitempty"`
	// InvalidBy says whose an invalid pass's reasons are, recorded where
	// they were judged: InvalidByInstrument, InvalidBySaturation or
	// InvalidByEngine; "" for a valid pass and in files written before it
	// was recorded, read as the engine's.
	InvalidBy    string           `json:"invalid_by,omitempty"`
	Requests     int64            `json:"requests"`
	Errors       int64            `json:"errors"`
	ErrorsByKind map[string]int64 `json:"errors_by_kind,omitempty"`
	ErrorSamples []ErrorSample    `json:"error_samples,omitempty"`
	PoolLimited  bool             `json:"pool_limited,omitempty"`
	AchievedRPS  float64          `json:"achieved_rps,omitempty"`
	// OfferedRPS is the rate the pass's schedule offered (0 for bursts,
	// closed loops and viewer plans, which offer no rate).
	OfferedRPS float64 `json:"offered_rps,omitempty"`
	// Saturated says why the pass was saturated for this test — it
	// carried less than SaturationShare of its offered rate, its requests'
	// waits for a free connection grew through the pass, or they moved the
	// test's quantile (a test of no quantile: a published one) past the
	// lateness tolerance — and what ran out; "" when it was not. A
	// saturated pass's latency figures are saved (what a client saw) but
	// are not valid as TTFB.
	Saturated string `json:"saturated,omitempty"`
	// StartedAt is when the pass began (interleaved suites show it).
	StartedAt time.Time `json:"started_at,omitzero"`
	// Evidence is what the pass's figures rest on, typed.
	Evidence *Evidence `json:"evidence,omitempty"`
	// Spoiled are earlier attempts at this pass that the host spoiled
	// (steal, interrupts, other processes or stalls past their thresholds),
	// each rerun: this pass is the one that counts.
	Spoiled []SpoiledAttempt `json:"spoiled,omitempty"`
	// Extra is schema 1 and 2's untyped evidence, read into Evidence on
	// load and never written again.
	Extra map[string]any `json:"extra,omitempty"`
}

// SpoiledAttempt is an attempt at a pass that the host spoiled: when it
// ran, what it would have measured, and why it was invalid and rerun.
type SpoiledAttempt struct {
	StartedAt      time.Time `json:"started_at,omitzero"`
	Value          *float64  `json:"value"`
	InvalidReasons []string  `json:"invalid_reasons"`
	Host           string    `json:"host"`
	Evidence       *Evidence `json:"evidence,omitempty"`
}

// Spread summarises the measured passes' values.
type Spread struct {
	N      int     `json:"n"`
	Min    float64 `json:"min"`
	Median float64 `json:"median"`
	Max    float64 `json:"max"`
}

// Recount derives a result's counts from its passes: the reasons of its
// invalid measured passes, how many were measured and valid (a valid pass
// has a value), requests and failed requests by kind, validity and spread.
// A result without a value says why in NoValue.
func (r *Result) Recount() {
	r.InvalidReasons = []string{}
	r.MeasuredPasses, r.ValidPasses, r.Requests, r.Errors = 0, 0, 0, 0
	r.ErrorsByKind = map[string]int64{}
	r.OfferedRPS, r.AchievedRPS, r.SaturatedPasses, r.SpoiledPasses = nil, nil, 0, 0
	var carried []float64
	for _, p := range r.Passes {
		if p.Warmup {
			continue
		}
		r.MeasuredPasses++
		if p.Valid && p.Value != nil {
			r.ValidPasses++
		}
		if p.Saturated != "" {
			r.SaturatedPasses++
		}
		if p.OfferedRPS > 0 {
			r.OfferedRPS = ptr(p.OfferedRPS)
			carried = append(carried, p.AchievedRPS)
		}
		r.Requests += p.Requests
		r.Errors += p.Errors
		for k, n := range p.ErrorsByKind {
			r.ErrorsByKind[k] += n
		}
	}
	if len(carried) > 0 {
		r.AchievedRPS = ptr(stats.Median(carried))
	}
	// A cell whose median pass was not saturated is valid on its valid
	// passes: the few saturated ones are counted (SaturatedPasses), not
	// reasons that it is invalid. So are the passes the instrument or the
	// host spoiled (SpoiledPasses), one late pass of twenty saying nothing
	// of the engine, as long as the valid passes are at least half of the
	// measured ones: fewer, and the value would rest on whichever minority
	// happened to survive. A pass the engine made invalid keeps the cell
	// invalid.
	excused, spoiled, saturated := 0, 0, r.Saturated()
	for _, p := range r.Passes {
		switch {
		case p.Warmup:
		case !saturated && onlySaturated(p):
			excused++
		case p.ByInstrument():
			r.SpoiledPasses++
			if !saturated {
				spoiled++
			}
		}
	}
	r.Valid = r.MeasuredPasses > 0 && r.ValidPasses > 0 && r.ValidPasses+excused+spoiled == r.MeasuredPasses &&
		(spoiled == 0 || 2*r.ValidPasses >= r.MeasuredPasses)
	for _, p := range r.Passes {
		if p.Warmup || !saturated && onlySaturated(p) || r.Valid && p.ByInstrument() {
			continue
		}
		// An invalid cell lists every reason, the spoiled passes' too.
		for _, why := range p.InvalidReasons {
			r.InvalidReasons = append(r.InvalidReasons, fmt.Sprintf("pass %d: %s", p.Index, why))
		}
	}
	r.Spread = SpreadOf(r.Passes)
	r.EngineCPUMsPer1000, r.EnginePeakRSSBytes, r.EngineIRQ, r.EngineNetIRQ = nil, nil, nil, nil
	var perK, irq, netIRQ []float64
	for _, p := range r.Passes {
		if p.Warmup || p.Evidence == nil || p.Evidence.Cost == nil {
			continue
		}
		c := p.Evidence.Cost
		// An invalid pass (failed requests answered cheaply, another
		// process on the CPUs) is no more behind the cost than the value.
		if c.EngineCPUMsPer1000 != nil && p.Valid && p.Value != nil {
			perK = append(perK, *c.EngineCPUMsPer1000)
		}
		if c.EngineIRQ != nil && c.EngineNetIRQ != nil && p.Valid && p.Value != nil {
			irq, netIRQ = append(irq, *c.EngineIRQ), append(netIRQ, *c.EngineNetIRQ)
		}
		if c.EnginePeakRSSBytes != nil && (r.EnginePeakRSSBytes == nil || *c.EnginePeakRSSBytes > *r.EnginePeakRSSBytes) {
			r.EnginePeakRSSBytes = c.EnginePeakRSSBytes
		}
	}
	if len(perK) > 0 {
		m := stats.Median(perK)
		r.EngineCPUMsPer1000 = &m
	}
	if len(irq) > 0 {
		a, b := stats.Median(irq), stats.Median(netIRQ)
		r.EngineIRQ, r.EngineNetIRQ = &a, &b
	}
	if r.Value != nil {
		r.NoValue = ""
		return
	}
	switch {
	case r.MeasuredPasses == 0:
		r.NoValue = "no measured pass finished"
	case r.ValidPasses == 0:
		r.NoValue = fmt.Sprintf("no valid pass of %d: %s", r.MeasuredPasses, r.firstCause())
	case r.NoValue == "":
		r.NoValue = "nothing was measured"
	}
}

// TerminatorCost is the TLS terminator's cost in topology proxyv2, as
// EngineCPUMsPer1000 and EnginePeakRSSBytes are the engine's: the median
// of its CPU-ms per 1000 answers over the valid measured passes, and its
// largest peak resident set over the measured passes; nil where no pass
// measured one.
func (r *Result) TerminatorCost() (cpuMsPer1000 *float64, peakRSSBytes *int64) {
	var perK []float64
	for _, p := range r.Passes {
		if p.Warmup || p.Evidence == nil || p.Evidence.Cost == nil {
			continue
		}
		c := p.Evidence.Cost
		if c.TerminatorCPUMsPer1000 != nil && p.Valid && p.Value != nil {
			perK = append(perK, *c.TerminatorCPUMsPer1000)
		}
		if c.TerminatorPeakRSSBytes != nil && (peakRSSBytes == nil || *c.TerminatorPeakRSSBytes > *peakRSSBytes) {
			peakRSSBytes = c.TerminatorPeakRSSBytes
		}
	}
	if len(perK) > 0 {
		m := stats.Median(perK)
		cpuMsPer1000 = &m
	}
	return cpuMsPer1000, peakRSSBytes
}

// firstCause is the first reason a measured pass was invalid.
func (r *Result) firstCause() string {
	for _, p := range r.Passes {
		if !p.Warmup && len(p.InvalidReasons) > 0 {
			return p.InvalidReasons[0]
		}
	}
	return "no reason recorded"
}

// SpreadOf computes the spread of the valid measured (non-warm-up) passes
// that have a value; nil when there is none.
func SpreadOf(ps []Pass) *Spread {
	var v []float64
	for _, p := range ps {
		if !p.Warmup && p.Valid && p.Value != nil {
			v = append(v, *p.Value)
		}
	}
	if len(v) == 0 {
		return nil
	}
	sort.Float64s(v)
	return &Spread{N: len(v), Min: v[0], Median: stats.Median(v), Max: v[len(v)-1]}
}

// EncodeHistogram is the compressed V2 encoding, base64.
func EncodeHistogram(h *hdr.Histogram) (string, error) {
	b, err := h.Encode(hdr.V2CompressedEncodingCookieBase)
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(b), nil
}

// DecodeHistogram reverses EncodeHistogram.
func DecodeHistogram(s string) (*hdr.Histogram, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, err
	}
	return hdr.Decode(b)
}

// NewRun starts a run record with the tool's and the machine's facts.
// commit may be empty: the build's VCS stamp is used when it has one.
func NewRun(version, commit string, config map[string]any) *Run {
	t := toolInfo(version)
	if commit != "" {
		t.Commit = commit
	}
	return &Run{SchemaVersion: SchemaVersion, ID: newID(), StartedAt: time.Now().UTC(), Status: StatusRunning,
		Tool: t, Host: hostInfo(), Config: config, Results: []Result{}}
}

func newID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return time.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

func toolInfo(version string) Tool {
	t := Tool{Name: "hlsbench", Version: version, Commit: "unknown", GoVersion: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				t.Commit = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					t.Commit += "+dirty"
				}
			}
		}
		if version == "" || version == "dev" {
			if v := bi.Main.Version; v != "" && v != "(devel)" {
				t.Version = v
			}
		}
	}
	return t
}

func hostInfo() Host {
	h := Host{Cores: runtime.NumCPU(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	h.Hostname, _ = os.Hostname()
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		h.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				h.CPUModel = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) == nil {
		h.MemBytes = uint64(si.Totalram) * uint64(si.Unit)
	}
	return h
}

// Path is where the run is saved under dir.
func (r *Run) Path(dir string) string {
	return filepath.Join(dir, "run-"+r.ID+".json")
}

// Save writes the run to dir atomically: a temporary file in the same
// directory, synced, then renamed over the final name.
func (r *Run) Save(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("results directory: %w", err)
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", err
	}
	final := r.Path(dir)
	tmp, err := os.CreateTemp(dir, ".run-*.tmp")
	if err != nil {
		return "", fmt.Errorf("results directory: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	return final, os.Rename(tmp.Name(), final)
}

// Load reads a run file, refusing schema versions it does not know.
func Load(path string) (*Run, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var probe struct {
		SchemaVersion int `json:"schema_version"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return nil, fmt.Errorf("%s: not a run file: %w", path, err)
	}
	if probe.SchemaVersion == 0 {
		return nil, fmt.Errorf("%s: no schema_version: not a run file", path)
	}
	if probe.SchemaVersion > SchemaVersion {
		return nil, fmt.Errorf("%s: schema_version %d is newer than this hlsbench reads (%d)", path, probe.SchemaVersion, SchemaVersion)
	}
	var r Run
	if probe.SchemaVersion < 3 {
		err = readRun2(b, &r)
	} else {
		err = json.Unmarshal(b, &r)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: not a run file: %w", path, err)
	}
	if r.SchemaVersion == 1 {
		if err := upgrade1(b, &r); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	if probe.SchemaVersion < 3 {
		upgrade2(&r)
	}
	for i := range r.Results {
		// Files written before spread was null wrote {"n":0,...} for no
		// valued pass: that was never a measurement.
		if s := r.Results[i].Spread; s != nil && s.N == 0 {
			r.Results[i].Spread = nil
		}
	}
	if r.FinishedAt.IsZero() {
		// The process never said how it ended: killed (or still running).
		r.Status = StatusKilled
	}
	return &r, nil
}

// upgrade1 reads what schema 1 meant: "errors" on a result was the failed
// answers of the workload that made the origin fail (grace_errors now); a run had no status (and a failed run looked finished); a
// 0 could stand for nothing measured; a value merged invalid passes too.
func upgrade1(b []byte, r *Run) error {
	var old struct {
		Results []struct {
			Errors *int64 `json:"errors"`
		} `json:"results"`
	}
	if err := json.Unmarshal(b, &old); err != nil {
		return fmt.Errorf("not a run file: %w", err)
	}
	for i := range r.Results {
		res := &r.Results[i]
		if i < len(old.Results) && old.Results[i].Errors != nil {
			res.SetFigure("grace_errors", float64(*old.Results[i].Errors))
		}
		for j := range res.Passes {
			p := &res.Passes[j]
			if why := nothingMeasured1(p); why != "" {
				p.Value, p.NoValue, p.Valid = nil, why, false
				p.InvalidReasons = append(p.InvalidReasons, why)
			}
		}
		res.Recount()
		if res.Value != nil && res.ValidPasses < res.MeasuredPasses {
			res.Value, res.NoValue = nil, fmt.Sprintf(
				"schema 1 merged %d invalid of %d measured passes into this value; it cannot be recomputed from the file",
				res.MeasuredPasses-res.ValidPasses, res.MeasuredPasses)
		}
	}
	r.Status = StatusUnknown
	if r.Interrupted {
		r.Status = StatusInterrupted
	}
	r.SchemaVersion = SchemaVersion
	return nil
}

// readRun2 reads schema 1 and 2, whose pass records were "passes".
func readRun2(b []byte, r *Run) error {
	var old struct {
		Run
		Results []map[string]json.RawMessage `json:"results"`
	}
	if err := json.Unmarshal(b, &old); err != nil {
		return err
	}
	*r = old.Run
	r.Results = make([]Result, len(old.Results))
	for i, m := range old.Results {
		// "passes" held the pass records, "measured_passes" their count
		// (Recount's now): neither is a figure of the test's.
		var passes []Pass
		if raw, ok := m["passes"]; ok {
			if err := json.Unmarshal(raw, &passes); err != nil {
				return fmt.Errorf("results[%d].passes: %w", i, err)
			}
		}
		delete(m, "passes")
		delete(m, "measured_passes")
		rb, err := json.Marshal(m)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(rb, &r.Results[i]); err != nil {
			return err
		}
		r.Results[i].Passes = passes
		r.Results[i].Recount()
	}
	return nil
}

// upgrade2 types schema 1 and 2's untyped pass evidence.
func upgrade2(r *Run) {
	for i := range r.Results {
		for j := range r.Results[i].Passes {
			p := &r.Results[i].Passes[j]
			if p.Evidence == nil {
				p.Evidence = evidenceFromExtra(p.Extra)
			}
			p.Extra = nil
		}
	}
	r.SchemaVersion = SchemaVersion
}

// nothingMeasured1 says why a schema 1 pass's 0 was no measurement: no
// successful request; for a burst's count of clients per origin fetch (its
// extra names the burst's object), no origin fetch of the object; for a
// share of the answers in the failure window (its extra has the window),
// no request in the window.
func nothingMeasured1(p *Pass) string {
	if p.Value == nil || *p.Value != 0 {
		return ""
	}
	_, burst := p.Extra["object_fetches"]
	w, window := p.Extra["expired_window"].(map[string]any)
	switch {
	case p.Requests == 0 || p.Requests == p.Errors:
		return "no successful request (read from schema 1)"
	case burst:
		return "no origin fetch for the burst's object (read from schema 1)"
	case window:
		if n, _ := w["stale"].(float64); n > 0 {
			return ""
		}
		if n, _ := w["errors"].(float64); n > 0 {
			return ""
		}
		return "no request in the failure window (read from schema 1)"
	}
	return ""
}

// F returns a pointer to v, for the optional figures.
func F(v float64) *float64 { return &v }

func ptr[T any](v T) *T { return &v }

// DefaultDir is where runs go without --out: $XDG_DATA_HOME/hlsbench/runs,
// else ~/.local/share/hlsbench/runs.
func DefaultDir() string {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "hlsbench", "runs")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "share", "hlsbench", "runs")
	}
	return filepath.Join(os.TempDir(), "hlsbench", "runs")
}
