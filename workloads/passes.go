package workloads

import (
	"context"
	"crypto/tls"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/engines/cost"
	"github.com/hlsbench/hlsbench/engines/cpuload"
	"github.com/hlsbench/hlsbench/origin"
	"github.com/hlsbench/hlsbench/results"
	"github.com/hlsbench/hlsbench/workloads/loadgen"
)

// OriginControl is what a workload needs of the origin, wherever it runs.
type OriginControl interface {
	SetMode(ctx context.Context, m origin.Mode) error
	Stats(ctx context.Context) (origin.Stats, error)
}

// Target is the engine under test, as a workload sees it.
type Target struct {
	URL    string // the proxy's base URL
	Origin OriginControl
	Seed   uint64 // the origin's content seed
	// OriginConfig is what the origin was started with, so that every
	// object it serves is known (origin.KnownObject); nil when it is not.
	OriginConfig *origin.Config
	Engine       results.Engine
	// InProcess: the origin, and the built-in cache, run inside this
	// process (runtime inproc): the generator leaves its garbage
	// collector alone during passes (loadgen.Options.KeepGC).
	InProcess bool
	// Counters reads the engine's own counters; nil when it has none.
	Counters func(ctx context.Context) (map[string]float64, error)
	// Nonce makes this run's objects cold (and distinct per engine).
	Nonce string
	// TLS is the client's configuration for an https URL (topology tls):
	// it trusts the run's authority alone, whose certificate CAPEM is,
	// for generators on other hosts.
	TLS   *tls.Config
	CAPEM string
	// UpstreamKey names the engine counter of its requests to the origin
	// (health probes excluded), compared with the origin's own count.
	UpstreamKey string
	// PurgeMode is how the engine invalidates under a purging policy
	// (engines.PurgeBan, engines.PurgeObject; "" for an external proxy,
	// which gets a request per object), and Ban bans a URL prefix on it.
	PurgeMode string
	Ban       func(ctx context.Context, prefix string) error
	// CPUs are the measured CPUs (generator, engine, origin; empty: all),
	// and Ours names our processes on them, to tell how much CPU time other
	// processes took during each pass. Nil Ours measures nothing.
	CPUs []int
	Ours func() cpuload.Ours
	// GeneratorCPUs are the generator's among CPUs: a pass during which
	// one of them never rested measured the generator (see observe).
	// ServerCPUs are the engine's, its terminator's and the origin's
	// (empty: unpinned), which a saturated pass's reason measures their
	// CPU time against.
	GeneratorCPUs []int
	ServerCPUs    []int
	// Groups are the process groups whose CPU time and peak memory each
	// pass records: the engine's and the origin's, when they are local
	// processes.
	Groups []cost.Group
	// CacheBytes, when set, is what the engine's cache files take (NGINX
	// caches in files, outside its processes' memory).
	CacheBytes func() (int64, error)
	// Agents, when set, are the generator hosts of a placed run (Placed):
	// a workload that can (spreads) runs its passes on them, the others
	// are not applicable. ClockTolerance bounds their clocks.
	Agents         []AgentHost
	ClockTolerance time.Duration
	// Probes tell what each host of a placed run did during each pass.
	Probes []HostProbe
}

// The names of Target.Groups.
const (
	costEngine     = "engine"
	costOrigin     = "origin"
	costTerminator = "terminator" // topology proxyv2's, beside the engine
)

// Recorder collects the results of a run and saves the file after every
// pass, so an interrupted run keeps what finished.
type Recorder struct {
	Run *results.Run
	Dir string
	// Progress, when set, is told of every pass as it starts.
	Progress *Progress
	list     []*results.Result
	path     string
}

// Save writes the run file atomically; it is called after every pass.
func (rc *Recorder) Save() error {
	rc.Run.Results = rc.Run.Results[:0]
	for _, r := range rc.list {
		rc.Run.Results = append(rc.Run.Results, *r)
	}
	if rc.Dir == "" {
		return nil
	}
	p, err := rc.Run.Save(rc.Dir)
	rc.path = p
	return err
}

// Path is the saved file, once saved.
func (rc *Recorder) Path() string { return rc.path }

// Results are the results so far.
func (rc *Recorder) Results() []*results.Result { return rc.list }

func (rc *Recorder) newResult(spec *Spec, tgt *Target, test, title, unit string, lower bool, agg string) *results.Result {
	r := &results.Result{ID: spec.Name + "/" + test, Workload: spec.Name, Test: test, Title: title,
		Engine: tgt.Engine.Name, Runtime: tgt.Engine.Runtime, Topology: tgt.Engine.Topology,
		Unit: unit, LowerIsBetter: lower, Aggregation: agg, InvalidReasons: []string{}, Passes: []results.Pass{},
		ErrorsByKind: map[string]int64{}, NoValue: "no measured pass finished"}
	rc.list = append(rc.list, r)
	return r
}

// latencyTest is a percentile of a latency over every sample of the valid
// measured passes; sat holds the saturated measured passes' samples, for
// the test's SaturatedValue.
type latencyTest struct {
	r    *results.Result
	q    float64
	hist *hdr.Histogram
	sat  *hdr.Histogram
}

// saturatedAgg ends a latency test's aggregation: how a saturated pass
// counts.
const saturatedAgg = "; a saturated pass (it carried under 97 % of its offered rate, or its waits for a free connection moved its p50 or p99 past the generator's tolerance or grew through the pass) is not valid, its TTFB counting queueing: saturated_value is the quantile over the saturated measured passes merged, what a client saw"

// saturatedAtAgg is saturatedAgg for a test judged at its own quantile
// (latencyTest.add): waits that moved another quantile alone leave it valid.
const saturatedAtAgg = "; a saturated pass (it carried under 97 % of its offered rate, its waits for a free connection grew through the pass, or they moved this test's quantile past the generator's tolerance: waits that moved another quantile alone leave it valid) is not valid for it, its TTFB counting queueing: saturated_value is the quantile over the measured passes saturated for it, merged, what a client saw"

// latencyDef is a latency test: its id, its title and its quantile.
type latencyDef struct {
	id, title string
	q         float64
	// A test that is not a latency quantile (q 0): its unit, direction and
	// aggregation.
	unit, agg string
	lower     bool
	// axis says what the unit counts on a page, where the unit alone
	// does not ("x": of what over what).
	axis string
}

// newTest records the test d for tgt: a latency when it has a quantile.
func (rc *Recorder) newTest(spec *Spec, tgt *Target, d latencyDef) *results.Result {
	if d.q > 0 {
		lt := rc.latency(spec, tgt, d.id, d.title, d.q)
		if d.agg != "" {
			lt.r.Aggregation = d.agg
		}
		return lt.r
	}
	return rc.newResult(spec, tgt, d.id, d.title, d.unit, d.lower, d.agg)
}

// latencies are the tests defs, recorded for tgt.
func (rc *Recorder) latencies(spec *Spec, tgt *Target, defs []latencyDef) []*latencyTest {
	out := make([]*latencyTest, len(defs))
	for i, d := range defs {
		out[i] = rc.latency(spec, tgt, d.id, d.title, d.q)
	}
	return out
}

func (rc *Recorder) latency(spec *Spec, tgt *Target, test, title string, q float64) *latencyTest {
	agg := fmt.Sprintf("p%g of every request of the valid measured passes, merged (HDR histogram); per-pass values are each pass's own p%g", q, q)
	return &latencyTest{r: rc.newResult(spec, tgt, test, title, "ms", true, agg), q: q, hist: loadgen.NewHistogram(),
		sat: loadgen.NewHistogram()}
}

// msq is a quantile in milliseconds; nil for an empty histogram.
func msq(h *hdr.Histogram, q float64) *float64 {
	if h == nil || h.TotalCount() == 0 {
		return nil
	}
	return ptr(round3(float64(h.ValueAtQuantile(q)) / 1e6))
}

// newPass is the i-th pass of a protocol that runs its warm-ups first:
// warm-ups are numbered from 1 apart from the measured passes.
func newPass(i, warmups int, r *loadgen.Result, reasons []string) *passInfo {
	p := &passInfo{index: i + 1 - warmups, warmup: i < warmups, lr: r, reasons: reasons}
	if r != nil {
		p.instrumental(r.InstrumentChecks())
	}
	if p.warmup {
		p.index = i + 1
	}
	return p
}

// observe records what happened around a pass (origin and engine counters,
// other processes' CPU, from before to now) and tells the run what it must
// know of it. It returns the snapshot taken after the pass.
func (rc *Recorder) observe(ctx context.Context, spec *Spec, tgt *Target, p *passInfo, before snapshot) snapshot {
	// The meter stops first: the next one resets the peaks it reads.
	var used []cost.Usage
	if before.meter != nil {
		used = before.meter.Stop()
	}
	after := takeAfter(ctx, tgt)
	p.ev = delta(tgt, before, after, p.samplerOn)
	if oc := p.ev.OtherCPU; oc != nil && p.lr != nil {
		// The network softirqs of the bytes the pass moved are the cell's
		// cost, up to a ceiling: the host is blamed for the rest.
		oc.MovedBytes = p.lr.BodyBytes
		oc.NetIRQCeiling = netIRQCeiling(p.lr.BodyBytes, after.takenAt.Sub(before.takenAt))
	}
	if used != nil {
		p.ev.Cost = costOf(used, p.lr, p.control)
		p.ev.Cost.EngineIRQ, p.ev.Cost.EngineNetIRQ = engineIRQ(p.ev.OtherCPU, engineCPUs(tgt))
	}
	agree(rc, spec, tgt, p)
	noteBusy(rc, p)
	generatorBusy(tgt, p, before, after)
	if p.busy == "" {
		p.busy = placedBusy(p.ev)
	}
	if p.lr != nil {
		window := p.lr.Elapsed
		if len(used) > 0 && used[0].Interval > 0 {
			window = used[0].Interval // the CPU times' own interval
		}
		p.judgeSaturation(tgt, window)
	}
	return after
}

// generatorBusy makes a generator pass's latency tests invalid when the
// generator had no rest during it: pinned apart, its process used
// CPULimit or more of its cores over its sending window (its event loops,
// its garbage collector, its TLS decryption), the window the event loops'
// own check judges: from t0 to the last send, CPU and time over the same
// interval. Connections opened before t0 and answers drained after the
// last send are outside both. Unpinned, no CPU of the machine rested.
// Answers then waited for the generator to read them, and the latencies
// are the generator's, not the engine's. Counts (coalescing at the
// origin, the grace ratio) do not depend on it and stay valid.
func generatorBusy(tgt *Target, p *passInfo, a, b snapshot) {
	if p.lr == nil || a.cpu == nil || b.cpu == nil {
		return
	}
	d := cpuload.Between(*a.cpu, *b.cpu)
	if d.Err != nil || len(d.BusyShare) == 0 {
		return
	}
	if len(tgt.GeneratorCPUs) == 0 {
		// Not pinned apart: the generator shares every CPU, and was held
		// back only if none of them rested.
		least := 1.0
		for _, s := range d.BusyShare {
			least = min(least, s)
		}
		if p.ev.OtherCPU != nil {
			p.ev.OtherCPU.GeneratorBusyShare = round3(least)
		}
		if least >= loadgen.CPULimit {
			p.busy = fmt.Sprintf(
				"every CPU was at least %.0f%% busy during the pass, and the generator shares them: answers may have waited for the generator to read them, so the figures may be the generator's, not the engine's: lower the rate or quiet the machine",
				100*least)
		}
		return
	}
	// Pinned apart, this process is the generator alone (the origin and
	// the engines are processes of their own): its CPU time while sending
	// against the cores it may use.
	if p.lr.SendWindow <= 0 {
		return
	}
	// Polling for a due slot (loadgen's SpinSeconds) is rest it chose; the
	// stall sampler's threads, when they ran in this process (not in one
	// of their own), are not the generator's.
	sampler := 0.0
	if p.samplerWall > 0 && !p.samplerApart {
		sampler = p.samplerCPU * min(1, p.lr.SendWindow.Seconds()/p.samplerWall.Seconds())
	}
	share := max(p.lr.SendCPUSeconds-p.lr.SendSpinSeconds-sampler, 0) / (p.lr.SendWindow.Seconds() * float64(len(tgt.GeneratorCPUs)))
	if p.ev.OtherCPU != nil {
		p.ev.OtherCPU.GeneratorBusyShare = round3(share)
	}
	if share >= loadgen.CPULimit {
		p.busy = fmt.Sprintf(
			"the generator used %.0f%% of its %s while sending: answers waited for it to read them (decrypting TLS, say), so the figures are the generator's, not the engine's: lower the rate, or give the generator more cores",
			100*share, plural(len(tgt.GeneratorCPUs), "core"))
	}
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// passInfo is what every test of one pass shares.
type passInfo struct {
	index  int
	warmup bool
	lr     *loadgen.Result // nil for passes with no generator figures
	// reasons make the pass invalid for every test of it; busy, for its
	// latency tests alone (a count at the origin does not depend on how
	// fast the generator read the answers).
	reasons []string
	busy    string
	// saturated, for a rate pass whose shortfall matters (JudgeShortfall:
	// it did not carry its rate, or its waits for a connection moved a
	// published quantile or grew), says so and what ran out: its
	// latency tests are invalid (they count queueing), its counts at the
	// origin are not.
	saturated string
	// saturatedAt is saturated for the tests of one published quantile
	// (saturatedFor): waits that moved the p99 alone leave the p50 valid.
	saturatedAt map[float64]string
	// hostWaitsAt are, by quantile, the host's reasons that replaced a
	// saturation by waits the host's stalls queued (excuseHostWaits).
	hostWaitsAt map[float64]string
	// instrument are the reasons the instrument or the host caused (the
	// generator's own lateness, a host that spoiled the pass), as the
	// code that judged them said (instrumental): busy is one too. Every
	// other reason is the engine's (invalidBy).
	instrument []string
	started    time.Time
	ev         *results.Evidence // never nil once observed
	// samplerCPU is the stall sampler's CPU time over samplerWall, which
	// hlsbench's CPU time includes unless the sampler ran apart;
	// samplerOn is it by CPU, credited as ours (its threads end before the
	// count after the pass).
	samplerCPU   float64
	samplerWall  time.Duration
	samplerApart bool
	samplerOn    map[int]float64
	// control counts hlsbench's own requests to the engine while the
	// meter ran (purges, bans, checks): see costOf.
	control int64
}

// instrumental records why as reasons the instrument or the host caused,
// not the engine, and returns it: the pass's class (invalidBy) comes from
// where its reasons were judged, not from their words.
func (p *passInfo) instrumental(why []string) []string {
	p.instrument = append(p.instrument, why...)
	return why
}

// invalidBy is whose the pass's reasons are (results.Pass.InvalidBy): the
// engine's when one is neither its saturation nor the instrument's.
func (p *passInfo) invalidBy(reasons []string) string {
	if len(reasons) == 0 {
		return ""
	}
	by := results.InvalidBySaturation
	for _, why := range reasons {
		switch {
		case why != "" && (why == p.saturated || slices.Contains(slices.Collect(maps.Values(p.saturatedAt)), why)):
		case why != "" && (why == p.busy || slices.Contains(p.instrument, why)):
			by = results.InvalidByInstrument
		default:
			return results.InvalidByEngine
		}
	}
	return by
}

// latencyValue is a pass's latency quantile, or why it has none: a pass in
// which no request succeeded measured nothing.
func (p *passInfo) latencyValue(h *hdr.Histogram, q float64) (*float64, string) {
	if p.lr != nil && p.lr.OK == 0 {
		return nil, noSuccess(p.lr)
	}
	if v := msq(h, q); v != nil {
		return v, ""
	}
	return nil, "no request was measured"
}

func noSuccess(r *loadgen.Result) string {
	if r.Requests == 0 {
		return "no request was sent"
	}
	return fmt.Sprintf("no successful request: %d of %d failed (%s)", r.Errors, r.Requests, kinds(r.ErrorsByKind))
}

// latencyReasons are the reasons a pass is invalid for its latency tests
// alone: a busy generator, a saturated pass.
func (p *passInfo) latencyReasons() []string { return nonEmpty(p.busy, p.saturated) }

// latencyReasonsAt are latencyReasons for a test of quantile q, whose
// pass is saturated by what moved q (saturatedFor).
func (p *passInfo) latencyReasonsAt(q float64) []string { return nonEmpty(p.busy, p.saturatedFor(q)) }

// judgeSaturation judges the rate pass's shortfall over window, for the
// pass (saturated) and for each published quantile (saturatedAt).
func (p *passInfo) judgeSaturation(tgt *Target, window time.Duration) {
	p.saturated, p.saturatedAt = saturation(tgt, p.lr, p.ev, window), nil
	if p.saturated == "" {
		return
	}
	p.saturatedAt = map[float64]string{}
	for _, q := range shortfallQuantiles {
		p.saturatedAt[q] = saturation(tgt, p.lr, p.ev, window, q)
	}
}

// saturatedFor is the pass's saturation for a test of quantile q: waits
// for a connection saturate it only when they moved q (a host's blip that
// moved the p99 leaves the p50 a TTFB); a shortfall of the rate, dropped
// requests or a growing queue saturate every test.
func (p *passInfo) saturatedFor(q float64) string {
	if s, ok := p.saturatedAt[q]; ok {
		return s
	}
	return p.saturated
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

func (t *latencyTest) add(p *passInfo, h *hdr.Histogram, more ...string) {
	more = append(more, p.latencyReasonsAt(t.q)...)
	v, why := p.latencyValue(h, t.q)
	t.addValue(p, h, v, why, more...)
}

// addValue adds a pass whose value (from h) was decided by the caller;
// the caller gives p.latencyReasons() in more (add does). A saturated
// measured pass with a value is also merged into the test's
// SaturatedValue: what a client saw, never its TTFB.
func (t *latencyTest) addValue(p *passInfo, h *hdr.Histogram, v *float64, why string, more ...string) {
	rp := addPass(t.r, p, v, why, more...)
	// The caller's reasons say which saturation holds for this test: the
	// pass's, or its quantile's alone (latencyReasonsAt).
	switch sat := p.saturatedFor(t.q); {
	case slices.Contains(more, p.saturated):
	case sat != "" && slices.Contains(more, sat):
		rp.Saturated = sat
	case p.saturated != "":
		rp.Saturated = ""
	}
	if !rp.Warmup && rp.Valid {
		t.hist.Merge(h)
		t.r.Value = msq(t.hist, t.q)
		if enc, err := results.EncodeHistogram(t.hist); err == nil {
			t.r.Histogram = enc
		}
	}
	if !rp.Warmup && rp.Saturated != "" && v != nil && h != nil {
		t.sat.Merge(h)
		t.r.SaturatedValue = msq(t.sat, t.q)
	}
	t.r.Recount()
}

// addPass appends a pass to a test and recounts the test. more are reasons
// that make the pass invalid for this test only. A pass without a value is
// invalid: noValue is its reason when it has no other. The caller updates
// the test's value from the pass if it is valid, then calls Recount.
func addPass(r *results.Result, p *passInfo, value *float64, noValue string, more ...string) *results.Pass {
	reasons := append(append([]string{}, p.reasons...), more...)
	if value == nil {
		if noValue == "" {
			noValue = "nothing was measured"
		}
		if len(reasons) == 0 {
			reasons = []string{noValue}
		}
	}
	if value != nil {
		noValue = ""
	}
	rp := results.Pass{Index: p.index, Warmup: p.warmup, Value: value, NoValue: noValue, Valid: len(reasons) == 0,
		InvalidReasons: reasons, InvalidBy: p.invalidBy(reasons), StartedAt: p.started.UTC(), Evidence: p.ev, Saturated: p.saturated}
	if p.lr != nil {
		rp.Requests, rp.Errors, rp.PoolLimited = p.lr.Requests, p.lr.Errors, p.lr.PoolLimited
		rp.AchievedRPS = math.Round(p.lr.AchievedRPS*10) / 10
		if offered, carried, ok := rateOf(p.lr); ok {
			// A rate pass's achieved rate is what it carried (rateOf),
			// the figure its saturation is judged on.
			rp.OfferedRPS, rp.AchievedRPS = offered, math.Round(carried*10)/10
		}
		if len(p.lr.ErrorsByKind) > 0 {
			rp.ErrorsByKind = p.lr.ErrorsByKind
		}
		for _, e := range p.lr.ErrorSamples {
			rp.ErrorSamples = append(rp.ErrorSamples, results.ErrorSample{Kind: e.Kind, Message: e.Message, Count: e.Count})
		}
	}
	r.Passes = append(r.Passes, rp)
	r.Recount()
	return &r.Passes[len(r.Passes)-1]
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// figOriginFetches is a test's figure of the origin fetches behind its
// value, over its valid passes (miss-storm's coalescing, the tests of
// sumTests that count them).
const figOriginFetches = "origin_fetches"

// sumTest is a test whose value is made of two sums over its valid
// measured passes (origin fetches and objects, stalls and downloads): each
// pass's own value is the caller's, the test's is value(num, den) of the
// sums, rounded.
type sumTest struct {
	r        *results.Result
	value    func(num, den int64) float64
	fetches  bool // num counts origin fetches: the result says how many
	num, den int64
}

// add appends a pass (v nil: none, why says why) whose sums are num and
// den, and takes them into the test's value if the pass is valid.
func (t *sumTest) add(p *passInfo, v *float64, why string, num, den int64, more ...string) {
	rp := addPass(t.r, p, v, why, more...)
	if rp.Warmup || !rp.Valid {
		return
	}
	t.num += num
	t.den += den
	t.r.Value = ptr(round3(t.value(t.num, t.den)))
	if t.fetches {
		t.r.SetFigure(figOriginFetches, float64(t.num))
	}
	t.r.Recount()
}

// ratio and friends are sumTest values.
func ratio(num, den int64) float64       { return float64(num) / float64(den) }
func percent(num, den int64) float64     { return 100 * ratio(num, den) }
func perThousand(num, den int64) float64 { return 1000 * ratio(num, den) }
func complement(num, den int64) float64  { return 100 * (1 - ratio(num, den)) }

// deref is *p, or 0 for nil.
func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// generatorReasons turns a generator result into reasons a pass is invalid
// for every test of it: the generator's checks that are not about its
// lateness (a saturated loop, dropped requests, no success, an interrupt)
// and failed requests (a figure over the survivors would hide them).
func generatorReasons(r *loadgen.Result) []string {
	_, reasons := r.Verdict()
	reasons = append([]string{}, reasons...)
	if r.Errors > 0 && r.OK > 0 {
		reasons = append(reasons, fmt.Sprintf("%d of %d requests failed (%s)", r.Errors, r.Requests, kinds(r.ErrorsByKind)))
	}
	return reasons
}

// lateness is the reason a TTFB test's pass is invalid when the generator's
// own lateness moved the quantile it publishes. It is judged per figure:
// lateness does not move an origin's fetch count or what was proven stale.
func lateness(r *loadgen.Result, quantiles ...float64) []string {
	return r.Lateness("ttfb", quantiles...)
}

// classLateness is why the generator's own lateness moved the quantile q of
// one class of requests past its tolerance (as loadgen judges a whole
// pass; purge, bans, origin-flap and live-audience judge the window they
// publish): corrected counts from the intended send time, disp from the
// dispatch instant. A window is often small (a second of a purge's refill
// holds about 250 requests, whose p99 is the third largest), so the
// quantile of its dispatch times is itself uncertain by a few ranks: the
// lateness moved the figure only when the corrected quantile lies past both
// the tolerance and the highest value the quantile could take at 95 %
// confidence from the dispatch times alone (quantileUpper). One or two late
// sends among 250 reorder the largest values and move no p99 a window of
// that size can resolve; in a whole pass of thousands the bound is a few
// ranks from the quantile and the tolerance decides, as before.
func classLateness(name string, corr, disp *hdr.Histogram, q float64) []string {
	if corr.TotalCount() == 0 {
		return nil
	}
	e := loadgen.LagEffect{Corrected: time.Duration(corr.ValueAtQuantile(q)), FromDispatch: time.Duration(disp.ValueAtQuantile(q))}
	if e.Corrected-e.FromDispatch <= e.Tolerance() {
		return nil
	}
	upper := quantileUpper(disp, q)
	if e.Corrected <= upper {
		return nil
	}
	return []string{fmt.Sprintf("the generator's own lateness moved the %s p%g from %.3f ms to %.3f ms, past its tolerance (%.3f ms) and past %.3f ms, the highest p%g its %d requests allow at 95 %% confidence from the dispatch: less load (a lower rate, fewer viewers) or a quieter machine",
		name, q, float64(e.FromDispatch)/1e6, float64(e.Corrected)/1e6, float64(e.Tolerance())/1e6, float64(upper)/1e6, q, disp.TotalCount())}
}

// quantileUpper is the upper end of the distribution-free two-sided 95 %
// confidence interval of the quantile q (percent) of h's values: the value
// of the smallest rank r such that the true quantile lies at or below the
// r-th smallest value with probability at least 97.5 % (the count of values
// above the true quantile is binomial, n and 1-q/100). A sample too small
// to bound it (P(none above) > 2.5 %: fewer than about 370 values for p99)
// is bounded by its largest value.
func quantileUpper(h *hdr.Histogram, q float64) time.Duration {
	n := h.TotalCount()
	if n == 0 {
		return 0
	}
	above := aboveAllowed(n, 1-q/100)
	return time.Duration(h.ValueAtQuantile(100 * float64(n-above) / float64(n)))
}

// aboveAllowed is the largest j such that P(A ≤ j) ≤ 2.5 %, A binomial of
// n trials with probability p: the count of values that may lie above the
// r = n-j-th smallest while it still bounds the quantile from above (0 when
// no j does: the largest value bounds it).
func aboveAllowed(n int64, p float64) int64 {
	if p <= 0 || p >= 1 {
		return 0
	}
	lgN, _ := math.Lgamma(float64(n) + 1)
	lp, lq := math.Log(p), math.Log1p(-p)
	cum := 0.0
	for k := int64(0); k < n; k++ {
		lgK, _ := math.Lgamma(float64(k) + 1)
		lgR, _ := math.Lgamma(float64(n-k) + 1)
		cum += math.Exp(lgN - lgK - lgR + float64(k)*lp + float64(n-k)*lq)
		if cum > 0.025 {
			return max(k-1, 0)
		}
	}
	return 0
}

func kinds(m map[string]int64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	s := ""
	for i, k := range keys {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s %d", k, m[k])
	}
	return s
}

// snapshot reads the origin's and the engine's counters, and the measured
// CPUs' busy time, around a pass.
type snapshot struct {
	origin  origin.Stats
	engine  map[string]float64
	cpu     *cpuload.Sample
	hosts   []hostSample // a placed run's, by Target.Probes
	meter   *cost.Meter  // started with the snapshot
	errs    []string
	takenAt time.Time
}

// take is the snapshot before a pass: it starts the cost meter (which
// resets the peaks); takeAfter is the one after, which does not.
func take(ctx context.Context, tgt *Target) snapshot {
	s := takeAt(ctx, tgt, true)
	if len(tgt.Groups) > 0 {
		s.meter = cost.Start(tgt.Groups)
	}
	return s
}

func takeAfter(ctx context.Context, tgt *Target) snapshot { return takeAt(ctx, tgt, false) }

// takeAt is a snapshot, before a pass with the placed hosts' clocks.
func takeAt(ctx context.Context, tgt *Target, before bool) snapshot {
	s := snapshot{takenAt: time.Now()}
	if tgt.Ours != nil {
		cs := cpuload.Take(tgt.CPUs, tgt.Ours())
		s.cpu = &cs
	}
	var err error
	if s.origin, err = tgt.Origin.Stats(ctx); err != nil {
		s.errs = append(s.errs, "origin stats: "+err.Error())
	}
	if tgt.Counters != nil {
		if s.engine, err = tgt.Counters(ctx); err != nil {
			s.errs = append(s.errs, "engine counters: "+err.Error())
		}
	}
	if len(tgt.Probes) > 0 {
		s.hosts = sampleHosts(ctx, tgt.Probes, before)
	}
	return s
}

// delta is what happened between two snapshots: origin requests (health
// excluded) and the engine's counters, whether the engine's count of its
// origin requests agrees with the origin's, and other processes' CPU.
func delta(tgt *Target, a, b snapshot, credit map[int]float64) *results.Evidence {
	o := &results.OriginCounts{Fetches: b.origin.Fetches - a.origin.Fetches, Failed: b.origin.Failed - a.origin.Failed,
		Errors: append(append([]string{}, a.errs...), b.errs...)}
	ev := &results.Evidence{Origin: o, Hosts: hostPasses(tgt.Probes, a.hosts, b.hosts)}
	if b.engine != nil && a.engine != nil {
		o.EngineCounters = map[string]float64{}
		for k, v := range b.engine {
			if x := v - a.engine[k]; x != 0 {
				o.EngineCounters[k] = x
			}
		}
		if tgt.UpstreamKey != "" {
			up := int64(o.EngineCounters[tgt.UpstreamKey])
			// The origin counts answered and failed object requests.
			o.EngineUpstream, o.OriginMinusEngine = ptr(up), ptr(o.Fetches+o.Failed-up)
		}
	}
	if a.cpu != nil && b.cpu != nil {
		d := cpuload.BetweenWith(*a.cpu, *b.cpu, credit)
		if d.Err != nil {
			o.Errors = append(o.Errors, "other processes' CPU: "+d.Err.Error())
		} else {
			oc := &results.OtherCPU{CPUs: engines.CPUList(d.CPUs), Share: round3(d.OtherShare), Seconds: round3(d.OtherSeconds),
				StealSeconds: round3(d.StealSeconds), PerCPU: cpuShares(d.PerCPU)}
			for _, p := range d.Busiest {
				if p.Seconds >= minBusiest {
					oc.Busiest = append(oc.Busiest, fmt.Sprintf("%s (pid %d) %.2fs", p.Name, p.PID, p.Seconds))
				}
			}
			ev.OtherCPU = oc
		}
	}
	return ev
}

// costOf is what the engine and the origin used in a pass, and their CPU
// per 1000 answers: every answer the engine gave the generator (errors
// with a status included) and control, hlsbench's own requests to it while
// the meter ran, whose CPU is in the meter's reading and cannot be taken
// out. Null when there was no answer.
func costOf(us []cost.Usage, r *loadgen.Result, control int64) *results.Cost {
	c := &results.Cost{ControlRequests: control}
	if r != nil {
		for _, n := range r.StatusCodes {
			c.Answers += n
		}
	}
	perK := func(cpu float64) *float64 {
		if n := c.Answers + c.ControlRequests; n > 0 {
			return ptr(round3(cpu * 1e3 / (float64(n) / 1e3)))
		}
		return nil
	}
	for _, u := range us {
		if u.Err != nil {
			c.Errors = append(c.Errors, fmt.Sprintf("%s: %v", u.Name, u.Err))
			continue
		}
		cpu, peak := ptr(round3(u.CPUSeconds)), ptr(u.PeakRSSBytes)
		switch u.Name {
		case costEngine:
			c.EngineCPUSeconds, c.EnginePeakRSSBytes = cpu, peak
			c.EngineCPUMsPer1000 = perK(u.CPUSeconds)
		case costOrigin:
			c.OriginCPUSeconds, c.OriginPeakRSSBytes = cpu, peak
		case costTerminator:
			c.TerminatorCPUSeconds, c.TerminatorPeakRSSBytes = cpu, peak
			c.TerminatorCPUMsPer1000 = perK(u.CPUSeconds)
		}
		if u.Exited > 0 {
			c.Errors = append(c.Errors, fmt.Sprintf("%s: %d of its processes ended during the pass; part of their CPU time may be missing", u.Name, u.Exited))
		}
		if u.PeakSinceStart {
			c.Errors = append(c.Errors, u.Name+": peak RSS since the process started (the reset was refused)")
		}
	}
	return c
}

// engineIRQ is the mean interrupt and network-softirq percent of the
// engine's CPUs in the pass, nil when none of them was measured.
func engineIRQ(oc *results.OtherCPU, cpus []int) (irq, netIRQ *float64) {
	if oc == nil {
		return nil, nil
	}
	var sum, net float64
	n := 0
	for _, c := range oc.PerCPU {
		if slices.Contains(cpus, c.CPU) {
			sum, net, n = sum+c.IRQ, net+c.NetIRQ, n+1
		}
	}
	if n == 0 {
		return nil, nil
	}
	return ptr(round1(sum / float64(n))), ptr(round1(net / float64(n)))
}

// minBusiest is the CPU time a process must have taken in a pass to be
// named: below it, names are noise (kernel threads, a tick's rounding).
const minBusiest = 0.05

// BusyShare is the share of the measured CPUs other processes may take in a
// pass before the run warns that its figures may include them.
const BusyShare = 0.05

// noteBusy records in the run how busy the measured CPUs were with other
// processes (each pass's own figures are in its evidence).
func noteBusy(rc *Recorder, p *passInfo) {
	oc := p.ev.OtherCPU
	if oc == nil || p.warmup {
		return
	}
	in := rc.Run.Interference
	if in == nil {
		in = &results.Interference{CPUs: oc.CPUs, Threshold: BusyShare}
		rc.Run.Interference = in
	}
	in.Passes++
	in.MaxOtherShare = max(in.MaxOtherShare, oc.Share)
	if oc.Share <= BusyShare {
		return
	}
	in.BusyPasses++
	var other, unseen float64
	for _, c := range oc.PerCPU {
		other, unseen = other+c.Other, unseen+c.Unseen
	}
	if unseen > 0 && unseen >= 0.5*other {
		in.UnseenPasses++
	}
	for _, b := range oc.Busiest {
		name, _, _ := strings.Cut(b, " (pid")
		if !slices.Contains(in.Busiest, name) && len(in.Busiest) < 8 {
			in.Busiest = append(in.Busiest, name)
		}
	}
}

// agree notes in the run when the engine's count of origin requests and the
// origin's own differ by more than one in a pass.
func agree(rc *Recorder, spec *Spec, tgt *Target, p *passInfo) {
	o := p.ev.Origin
	if d := o.OriginMinusEngine; d != nil && (*d > 1 || *d < -1) {
		rc.Run.Warnings = append(rc.Run.Warnings, fmt.Sprintf(
			"%s on %s, pass %d: the origin counted %d requests, the engine %d (%s)", spec.Name, tgt.Engine.Name, p.index,
			o.Fetches+o.Failed, *o.EngineUpstream, tgt.UpstreamKey))
	}
}
