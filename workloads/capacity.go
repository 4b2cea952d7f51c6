package workloads

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/engines/cpuload"
	"github.com/hlsbench/hlsbench/origin"
	"github.com/hlsbench/hlsbench/results"
	"github.com/hlsbench/hlsbench/results/stats"
	"github.com/hlsbench/hlsbench/workloads/loadgen"
)

// Capacity is the highest rate an engine serves within a service level.
const Capacity = "capacity"

// capacity's tests, which --slo names.
const (
	CapHitPath      = "hit-path"
	CapSegmentFull  = "segment-full"
	CapSegmentRange = "segment-range"
)

// The search: a rate passes when it carries CapCarried of itself; the ramp
// doubles from the start rate until a probe fails, then bisection halves
// the bracket until (hi−lo)/lo ≤ CapTolerance.
const (
	CapCarried    = 0.99
	CapTolerance  = 0.05
	capRamp       = 2.0
	capMinConns   = 16
	capMaxConns   = 512
	capConnsText  = "4 × rate × the SLO's duration (four times the requests Little's law keeps in flight when every answer takes the SLO's time), at least 16 and at most 512"
	capProbeLimit = 20 * time.Second // per-probe request timeout at most: see probeTimeout
	// capRetries is how many times a probe that decided nothing of the
	// engine (see spoiled) is run again at its rate: a host stall or a
	// burst of other processes spoils one probe, a generator out of
	// capacity or a host busy throughout every one. When the last is
	// spoiled too, the generator's bounds the search from above and the
	// host's makes the search invalid.
	capRetries = 2
	// capConfirm is how many decisive failures the lowest failed rate
	// needs before the search ends under it: one failure during the ramp
	// that nothing flagged (a stall too short for the sampler, a burst of
	// another process between two samples) would otherwise cap the whole
	// search, so the upper bracket is probed once more, and a pass there
	// moves the search on above it.
	capConfirm = 2
	// capMinRequests is how many requests a measured probe sends at least,
	// within 3 × its duration: see probeDuration.
	capMinRequests = 500
)

// SLO is a service level: the Quantile of TTFB (50, 90, 99, 99.9) within
// Max.
type SLO struct {
	Quantile float64
	Max      time.Duration
}

func (s SLO) String() string { return quantileName(s.Quantile) + ":" + s.Max.String() }

func quantileName(q float64) string {
	if q == 99.9 {
		return "p999"
	}
	return "p" + strconv.FormatFloat(q, 'f', -1, 64)
}

// DefaultSLO are the service levels a video edge would accept: a
// playlist hit within 10 ms at p99 (a player reloads it every target
// duration, seconds, and anything near 10 ms is an edge queueing, not
// serving from memory); a 64 KiB Range's first byte within 25 ms; a
// 4 MiB segment's within 100 ms (a player buffers segments of 2–6 s, so
// 100 ms to first byte costs it nothing, and more means a backlog).
var DefaultSLO = map[string]SLO{
	CapHitPath:      {Quantile: 99, Max: 10 * time.Millisecond},
	CapSegmentFull:  {Quantile: 99, Max: 100 * time.Millisecond},
	CapSegmentRange: {Quantile: 99, Max: 25 * time.Millisecond},
}

// formatSLO writes service levels as ParseSLO reads them, in the tests'
// order.
func formatSLO(m map[string]SLO) string {
	var parts []string
	for _, d := range capDefs {
		if l, ok := m[d.id]; ok {
			parts = append(parts, d.id+"="+l.String())
		}
	}
	return strings.Join(parts, ",")
}

var sloQuantiles = map[string]float64{"p50": 50, "p90": 90, "p99": 99, "p999": 99.9}

// ParseSLO reads "test=pQ:duration" items, comma separated (e.g.
// "hit-path=p99:10ms,segment-range=p99:25ms"), over DefaultSLO: tests not
// named keep their default. A mistake is a *FieldError for "slo".
func ParseSLO(s string) (map[string]SLO, error) {
	out := maps.Clone(DefaultSLO)
	want := "want TEST=QUANTILE:DURATION items, comma separated, e.g. hit-path=p99:10ms; TEST is hit-path, segment-full or segment-range, QUANTILE p50, p90, p99 or p999, DURATION above 0 with its unit (10ms, 1.5s)"
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		test, rest, ok := strings.Cut(item, "=")
		if !ok {
			return nil, fieldErr("slo", "%q: %s", item, want)
		}
		test = strings.TrimSpace(test)
		if _, known := DefaultSLO[test]; !known {
			return nil, fieldErr("slo", "%q: unknown test %q: %s", item, test, want)
		}
		qs, ds, ok := strings.Cut(rest, ":")
		q, known := sloQuantiles[strings.ToLower(strings.TrimSpace(qs))]
		if !ok || !known {
			return nil, fieldErr("slo", "%q: quantile %q: %s", item, qs, want)
		}
		d, err := time.ParseDuration(strings.TrimSpace(ds))
		if err != nil || d <= 0 {
			return nil, fieldErr("slo", "%q: duration %q: %s", item, ds, want)
		}
		out[test] = SLO{Quantile: q, Max: d}
	}
	return out, nil
}

// capDef is one capacity test: what it requests and where its search
// starts and stops. The starts are below what any engine serves on a
// laptop, so a first probe that fails says the engine (or the host) is in
// trouble; the maxima are far above what a 2-core host carries.
type capDef struct {
	id, title string
	segment   bool // the 4 MiB segment, not the playlist
	rangeGET  bool
	start     float64
	max       float64
}

var capDefs = []capDef{
	{id: CapHitPath, title: "Capacity, hit path (2 KB playlist)", start: 100, max: 400000},
	{id: CapSegmentFull, title: "Capacity, 4 MiB full GET", segment: true, start: 10, max: 4000},
	{id: CapSegmentRange, title: "Capacity, 64 KiB Range GET", segment: true, rangeGET: true, start: 100, max: 100000},
}

type capacity struct{}

// capacity's settings: each test's service level, the tests searched, the
// measured searches (each one step), the most probes of a search, and each
// probe's warm-up and measured pass at its rate.
var (
	sloSetting = newParam("slo", DefaultSLO, "capacity's service level per test, TEST=QUANTILE:DURATION items, comma separated: TEST hit-path, segment-full or segment-range, QUANTILE p50, p90, p99 or p999, DURATION with its unit; tests not named keep their defaults", "string",
		func(s string) (map[string]SLO, error) {
			m, err := ParseSLO(s)
			var fe *FieldError
			if errors.As(err, &fe) {
				return nil, errors.New(fe.Msg)
			}
			return m, err
		}, formatSLO).
		Accept(func(m map[string]SLO) string {
			for test, l := range m {
				if _, ok := DefaultSLO[test]; !ok {
					return fmt.Sprintf("%q: unknown test: want hit-path, segment-full or segment-range", test)
				}
				if _, ok := sloQuantiles[quantileName(l.Quantile)]; !ok || l.Max <= 0 {
					return fmt.Sprintf("%s=%s: want a quantile p50, p90, p99 or p999 and a duration above 0", test, l)
				}
			}
			return ""
		}).
		Store(func(m map[string]SLO) any {
			out := map[string]string{}
			for test, l := range m {
				out[test] = l.String()
			}
			return out
		}).Record("capacity.slo")
	capacityTestsSetting = newParam("capacity-tests", []string(nil), "capacity: the tests searched, a comma list of hit-path, segment-full and segment-range (empty: all three)", "strings",
		func(s string) ([]string, error) {
			var out []string
			for t := range strings.SplitSeq(s, ",") {
				if t = strings.TrimSpace(t); t != "" {
					out = append(out, t)
				}
			}
			return out, nil
		}, func(l []string) string { return strings.Join(l, ",") }).
		Accept(func(l []string) string {
			for _, t := range l {
				if _, ok := DefaultSLO[t]; !ok {
					return fmt.Sprintf("%q: want hit-path, segment-full or segment-range", t)
				}
			}
			return ""
		}).Record("capacity.tests")
	// Five searches, so that two engines' capacities can differ
	// significantly: the page and compare test them with the U test over
	// the searches, which 3 against 3 never passes (p ≥ 0.1) and 5 against
	// 5 can (p down to 0.008). The nightly leaves capacity out.
	capacitySearchesSetting = intSetting("capacity-searches", 5, "capacity: measured searches per test").
				Quick(1).Nightly(3).Accept(atLeast(1, "1 or more")).Record("capacity.searches")
	capacityProbesSetting = intSetting("capacity-probes", 20, "capacity: the most probes of one search").
				Accept(atLeast(2, "2 or more probes per search")).Record("capacity.max_probes")
	probeWarmupSetting = durationSetting("probe-warmup", time.Second, "capacity: each probe's warm-up at its rate").
				Quick(500 * time.Millisecond).Nightly(time.Second).Accept(atLeast(time.Duration(0), "0 or more")).Record("capacity.probe_warmup")
	probeDurationSetting = durationSetting("probe-duration", 3*time.Second, "capacity: each probe's measured pass").
				Quick(time.Second).Nightly(2 * time.Second).Accept(atLeast(200*time.Millisecond, "at least 200ms")).Record("capacity.probe_duration")
)

// The keys of capacity's own conditions in the results.
const (
	capacityCondition = "capacity" // how the search ran (CapacityConditions)
)

// capacity opens the page: how much each engine carries within a service
// level on this host is the page's answer.
func (capacity) pageFirst() {}

// Its tests are rates, ranked on a line of their own.
func (capacity) ranked() {}

func (capacity) Settings() []Setting {
	return []Setting{sloSetting, capacityTestsSetting, capacitySearchesSetting, capacityProbesSetting, probeWarmupSetting, probeDurationSetting}
}

func (capacity) Spec() Spec {
	p := engines.DefaultPolicy()
	// Every request a hit: capacity is the engine's serving, not the
	// origin's.
	p.ManifestTTL, p.SegmentTTL = 24*time.Hour, 24*time.Hour
	return Spec{Name: Capacity, Title: "Capacity within a service level", Policy: p,
		Description: "the highest rate each request is served at, every request successful, ≥ 99 % of the rate carried, no waits for a connection that moved the SLO's quantile and TTFB within it: 2 KB playlist, 4 MiB segment and its 64 KiB Range, warm cache"}
}

func (capacity) Conditions(s Spec, cfg Config) results.Conditions {
	c := protocol(cfg)
	c.Warmups, c.Passes = 0, capacitySearchesSetting.Of(cfg)
	c.ObjectBytes, c.RangeBytes = origin.DefaultSegmentSize, rangeBytes
	c.Timeout = results.Duration(cfg.Timeout)
	cc := &CapacityConditions{SLO: map[string]string{}, StartRPS: map[string]float64{}, MaxRPS: map[string]float64{},
		RampFactor: capRamp, Tolerance: CapTolerance, CarriedShare: CapCarried, MaxProbes: capacityProbesSetting.Of(cfg),
		ProbeWarmup: results.Duration(probeWarmupSetting.Of(cfg)), ProbeDuration: results.Duration(probeDurationSetting.Of(cfg)), Connections: capConnsText}
	if cfg.Connections > 0 {
		cc.Connections = strconv.Itoa(cfg.Connections)
	}
	for _, d := range capDefs {
		cc.SLO[d.id], cc.StartRPS[d.id], cc.MaxRPS[d.id] = cfg.slo(d.id).String(), d.start, d.max
	}
	c.SetOwn(capacityCondition, cc)
	return c
}

// slo is a test's service level: the run's, or the default.
func (c Config) slo(test string) SLO {
	if s, ok := sloSetting.Of(c)[test]; ok {
		return s
	}
	return DefaultSLO[test]
}

func (capacity) Estimate(cfg Config) time.Duration {
	// A search of about a dozen probes, each a warm-up and a pass.
	return startEstimate + time.Duration(len(capDefs)*capacitySearchesSetting.Of(cfg)*12)*(probeWarmupSetting.Of(cfg)+probeDurationSetting.Of(cfg)+100*time.Millisecond)
}

// capAgg is how a capacity test's value is computed.
const capAgg = "median over the searches (one per measured pass, interleaved with the other engines' searches) of each search's capacity: the highest offered rate whose probe passed — every request successful, ≥ 99 % of the offered rate carried (loadgen's carried rate), no request dropped and no waits for a free connection that moved the SLO's quantile past the lateness tolerance or grew through the probe (a few are counted in the probe), the SLO's TTFB quantile within it, the generator valid (not late, not busy) — found by a ramp ×2 from the start rate, then bisection until (hi−lo)/lo ≤ 5 %; each probe a pass (at least 500 requests, within 3 × its duration) after a warm-up at its rate, a probe that decides nothing run again at its rate until one does, twice at most — one the generator failed or was late for (its lateness moved the quantile past its tolerance), or one the engine failed beside other processes taking over 5 % of the measured CPUs, the hypervisor's steal or a pause of every measured CPU at once (the probe's host); the lowest rate the engine failed probed until it failed twice before the search ends under it (a pass there moves the search on); a rate the host spoiled through every retry makes the search invalid, with no value; a rate the generator failed through its retries bounds the search from above as an engine failure would, and a search so bounded, or stopped by the maximum rate or the probe budget, gives a lower bound (lower_bound); the median takes a bounded search as at least its value: it is exact when the median with every bound at its value and the median with every bound above all values are within the search's 5 %, otherwise the former as a lower bound with which searches were bounded and why; a search with no passing probe has no value; mib_per_s and engine_cpu_ms_per_1000 are the probes' at capacity, median over the searches"

// Tests are capacity's tests, run over every topology.
func (capacity) Tests() []latencyDef {
	var out []latencyDef
	for _, d := range capDefs {
		out = append(out, latencyDef{id: d.id, title: d.title, unit: "rps", agg: capAgg})
	}
	return out
}

func (capacity) Open(ctx context.Context, s Spec, cfg Config, tgt *Target, rc *Recorder) (Session, error) {
	sess := &capSession{spec: &s, cfg: cfg, tgt: tgt, rc: rc,
		playlist: ManifestPath + "?run=" + tgt.Nonce, segment: fmt.Sprintf(SegmentPath, 0) + "?run=" + tgt.Nonce}
	ev := newEvidenceSet(tgt.Seed)
	g, err := newGenerator(ctx, tgt, &cfg, 2, ev, nil)
	if err != nil {
		return nil, err
	}
	defer g.Close()
	if err := warm(ctx, g, rc, sess.playlist, nil); err != nil {
		return nil, err
	}
	ev.segN = 0
	if err := warm(ctx, g, rc, sess.segment, nil); err != nil {
		return nil, err
	}
	if err := warm(ctx, g, rc, sess.segment, rangeHeader()); err != nil {
		return nil, err
	}
	for _, d := range capDefs {
		if len(capacityTestsSetting.Of(cfg)) > 0 && !slices.Contains(capacityTestsSetting.Of(cfg), d.id) {
			continue
		}
		sess.tests = append(sess.tests, &capTest{def: d, slo: cfg.slo(d.id), r: rc.newTest(&s, tgt, latencyDef{id: d.id, title: d.title, unit: "rps", agg: capAgg})})
	}
	return sess, nil
}

func rangeHeader() [][2]string {
	return [][2]string{{"Range", fmt.Sprintf("bytes=0-%d", rangeBytes-1)}}
}

// capSession runs the searches of every capacity test, test after test:
// step k is one whole search.
type capSession struct {
	spec              *Spec
	cfg               Config
	tgt               *Target
	rc                *Recorder
	playlist, segment string
	tests             []*capTest
}

type capTest struct {
	def capDef
	slo SLO
	r   *results.Result
}

func (s *capSession) Steps() int   { return len(s.tests) * capacitySearchesSetting.Of(s.cfg) }
func (s *capSession) Close() error { return nil }

func (s *capSession) Step(ctx context.Context, step int) error {
	t, i := s.tests[step/capacitySearchesSetting.Of(s.cfg)], step%capacitySearchesSetting.Of(s.cfg)
	b := searchBounds{start: t.def.start, max: t.def.max, maxProbes: capacityProbesSetting.Of(s.cfg)}
	var costs []*results.Evidence
	started := time.Now()
	out, err := search(ctx, b, func(ctx context.Context, rate float64) (CapacityProbe, error) {
		pr, ev, err := s.probe(ctx, t, i, rate)
		costs = append(costs, ev)
		return pr, err
	})
	if err != nil {
		return err
	}
	t.add(i, started, out, costs)
	return s.rc.Save()
}

// add records search i, which started at started, as a measured pass:
// its value the capacity found (none when the search is invalid or
// nothing passed), its evidence every probe, its cost the probe's at
// capacity (costs[k] is probe k's).
func (t *capTest) add(i int, started time.Time, out *searchOutcome, costs []*results.Evidence) {
	p := &passInfo{index: i + 1, started: started, ev: &results.Evidence{}}
	ce := out.evidence(t.slo)
	var value *float64
	if out.best >= 0 {
		value = ptr(out.probes[out.best].OfferedRPS)
		ce.MiBPerSecond = ptr(out.probes[out.best].MiBPerSecond)
		if ev := costs[out.best]; ev != nil {
			p.ev.Cost, p.ev.OtherCPU, p.ev.Origin = ev.Cost, ev.OtherCPU, ev.Origin
		}
	}
	p.ev.SetPart(capacityPart, ce)
	rp := addPass(t.r, p, value, out.noValue)
	// The pass's requests are those of the probe its value rests on (the
	// lowest when none passed); every probe's are in the evidence.
	at := max(out.best, 0)
	if len(out.probes) > 0 {
		pr := out.probes[at]
		rp.Requests, rp.Errors = pr.Requests, pr.Errors
		if len(pr.ErrorsByKind) > 0 {
			rp.ErrorsByKind = pr.ErrorsByKind
		}
	}
	t.r.Recount()
	t.summarise()
}

// summarise sets the test's value, lower bound and MiB/s from its valid
// searches. A bounded search is only "at least" its value: where it falls
// among the exact ones is unknown, so the median lies between the median
// with every bound taken at its value and the median with every bound
// taken as higher than all (boundedMedian). The value is exact when the
// two are within the search's resolution; otherwise it is the lower one, as a
// lower bound that says which searches were bounded and why. One bounded
// search among exact ones on either side of it moves nothing; a bound
// that could move the median makes the figure "at least".
func (t *capTest) summarise() {
	var vals, mib []float64
	var outs []censoredValue
	var why []string
	for _, p := range t.r.Passes {
		if p.Warmup || !p.Valid || p.Value == nil {
			continue
		}
		vals = append(vals, *p.Value)
		bounded := false
		if c := results.Part[CapacityEvidence](p.Evidence, capacityPart); c != nil {
			if c.MiBPerSecond != nil {
				mib = append(mib, *c.MiBPerSecond)
			}
			if bounded = c.LowerBound != ""; bounded && !slices.Contains(why, c.LowerBound) {
				why = append(why, c.LowerBound)
			}
		}
		outs = append(outs, censoredValue{v: *p.Value, censored: bounded})
	}
	t.r.Value, t.r.MiBPerSecond = nil, nil
	lower := ""
	if len(vals) > 0 {
		m, exact := boundedMedian(outs)
		if !exact {
			lower = strings.Join(why, "; ")
			if k := countCensored(outs); k < len(outs) {
				lower = fmt.Sprintf("%d of %d searches bounded: %s", k, len(outs), lower)
			}
		}
		t.r.Value = ptr(math.Round(m))
		t.r.NoValue = ""
	}
	if len(mib) > 0 {
		t.r.MiBPerSecond = ptr(round3(stats.Median(mib)))
	}
	if t.r.LowerBound != results.AtInstrumentLimit {
		t.r.LowerBound = lower
	}
}

// boundedMedian is the median of o, where a censored value is a lower
// bound: lo is the median with every bound at its value, and the median is
// exact only when taking every bound as higher than every value gives the
// same, within the search's resolution. (purge's censoredMedian takes a censored pass as the highest: right
// for a recovery that did not come within the window, the longest time
// there is, and too generous for a capacity bounded at a low rate.)
func boundedMedian(o []censoredValue) (lo float64, exact bool) {
	at := make([]float64, len(o))
	var known []float64
	for i, x := range o {
		at[i] = x.v
		if !x.censored {
			known = append(known, x.v)
		}
	}
	lo = stats.Median(at)
	// The bounds as +Inf: the median is then the (n/2)-th of the known
	// values when enough of them are, else unbounded.
	n := len(o)
	slices.Sort(known)
	var hi float64
	switch {
	case n == 0:
		return 0, false
	case n%2 == 1 && n/2 < len(known):
		hi = known[n/2]
	case n%2 == 0 && n/2 < len(known):
		hi = (known[n/2-1] + known[n/2]) / 2
	default:
		return lo, false
	}
	// Within the search's own resolution (CapTolerance: bisection stops
	// at (hi-lo)/lo <= 5 %) the two are one figure: no search could have
	// told them apart.
	return lo, hi-lo <= CapTolerance*lo
}

// countCensored is how many of o are censored.
func countCensored(o []censoredValue) int {
	n := 0
	for _, x := range o {
		if x.censored {
			n++
		}
	}
	return n
}

// probeTimeout bounds each request of a probe: an answer 20 times later
// than the SLO allows fails it anyway, and a shorter timeout keeps an
// overloaded probe's drain short.
func probeTimeout(slo SLO, cfg Config) time.Duration {
	return min(max(20*slo.Max, time.Second), cfg.Timeout, capProbeLimit)
}

// probeDuration is a measured probe's length at rate: d, or long enough
// for capMinRequests requests, at most 3 × d. A p99 over 70 requests is
// their maximum, and one late answer among 100 moves the carried rate by
// percents: the low rates of a ramp need more than d to say anything.
func probeDuration(rate float64, d time.Duration) time.Duration {
	need := time.Duration(capMinRequests / rate * float64(time.Second))
	return max(d, min(need, 3*d))
}

// conns is how many connections a probe at rate opens.
func (s *capSession) conns(rate float64, slo SLO) int {
	if s.cfg.Connections > 0 {
		return s.cfg.Connections
	}
	return min(max(int(math.Ceil(4*rate*slo.Max.Seconds())), capMinConns), capMaxConns)
}

// probe runs one probe: a generator with enough connections, a warm-up at
// rate, then the measured pass, observed as any pass is (cost, other
// processes, the generator's CPU).
func (s *capSession) probe(ctx context.Context, t *capTest, search int, rate float64) (CapacityProbe, *results.Evidence, error) {
	cfg := s.cfg
	cfg.Timeout = probeTimeout(t.slo, s.cfg)
	ev := newEvidenceSet(s.tgt.Seed)
	pass := loadgen.Pass{Path: s.playlist, Rate: rate, Duration: probeWarmupSetting.Of(cfg)}
	if t.def.segment {
		ev.segN, pass.Path = 0, s.segment
	}
	if t.def.rangeGET {
		pass.Header = rangeHeader()
	}
	conns := s.conns(rate, t.slo)
	s.rc.Progress.step(fmt.Sprintf("%s search %d at %s rps ", t.def.id, search+1, rps(rate)), probeWarmupSetting.Of(cfg)+probeDuration(rate, probeDurationSetting.Of(cfg)))
	g, err := newGenerator(ctx, s.tgt, &cfg, conns, ev, nil)
	if err != nil {
		return CapacityProbe{}, nil, err
	}
	defer g.Close()
	if probeWarmupSetting.Of(cfg) > 0 {
		r, err := g.Run(ctx, pass)
		if err != nil {
			return CapacityProbe{}, nil, err
		}
		if r.Interrupted {
			return CapacityProbe{}, nil, ctx.Err()
		}
	}
	pass.Duration = probeDuration(rate, probeDurationSetting.Of(cfg))
	before := take(ctx, s.tgt)
	started := time.Now()
	w := startWatch(s.tgt, nil)
	r, err := g.Run(ctx, pass)
	w.stop()
	if err != nil {
		return CapacityProbe{}, nil, err
	}
	if r.Interrupted {
		return CapacityProbe{}, nil, ctx.Err()
	}
	p := &passInfo{index: search + 1, lr: r, started: started}
	p.sampledBy(w)
	s.rc.observe(ctx, s.spec, s.tgt, p, before)
	p.ev.Stalls = stallEvidence(w.stalls, started)
	pr := judgeProbe(r, p.busy, t.slo)
	pr.Connections = conns
	if s.tgt.Engine.EngineName() != engines.ExternalName {
		pr.Host = capHost(p.ev, w.stalls, started)
	}
	if pr.Verdict == CapacityFail && pr.Host != "" {
		pr.Reason += "; the host: " + pr.Host
	}
	// An external proxy's own CPU is among the other processes: their
	// share says nothing of the host there.
	if oc := p.ev.OtherCPU; oc != nil && s.tgt.Engine.EngineName() != engines.ExternalName {
		pr.OtherCPUShare = ptr(round3(oc.Share))
		if pr.Verdict == CapacityFail && oc.Share > BusyShare {
			pr.Reason += fmt.Sprintf("; other processes took %.0f %% of the measured CPUs (%s) during the probe, which may be why", 100*oc.Share, oc.CPUs)
		}
	}
	return pr, p.ev, nil
}

// capLate begins the Generator of a probe the generator was late for
// although another criterion decided it: its lateness moved the SLO's
// quantile past loadgen's tolerance, so the probe is not decisive (see
// spoiled).
const capLate = "late, not decisive: "

// judgeProbe is a probe's verdict. The generator is judged first: when it
// was late or busy the pass says nothing of the engine, whatever else it
// shows. Then the engine's criteria, each with what was measured.
func judgeProbe(r *loadgen.Result, busy string, slo SLO) CapacityProbe {
	pr := CapacityProbe{OfferedRPS: r.Target, CarriedRPS: math.Round(r.CarriedRPS*10) / 10, Requests: r.Requests,
		Errors: r.Errors, QuantileMs: msq(r.TTFB, slo.Quantile), Generator: "valid"}
	// Waits for a free connection fail a probe when they matter, by the
	// rule every rate pass is judged by (judgeWaits, on the SLO's
	// quantile): one blip that kept a few requests from a connection and
	// moved nothing is in the probe's figures, not a failure.
	waits := judgeWaits(r, slo.Quantile)
	pr.PoolLimited, pr.Waits = waits.Saturated, waits.Waits
	if len(r.ErrorsByKind) > 0 {
		pr.ErrorsByKind = r.ErrorsByKind
	}
	if r.Answered > 0 && r.CarriedRPS > 0 {
		pr.MiBPerSecond = round3(float64(r.BodyBytes) / float64(r.Answered) * r.CarriedRPS / (1 << 20))
	}
	var gen []string
	for _, why := range r.InvalidReasons {
		if strings.HasPrefix(why, "generator CPU saturated") {
			gen = append(gen, why)
		}
	}
	if busy != "" {
		gen = append(gen, busy)
	}
	late := lateness(r, slo.Quantile)
	fail := func(format string, args ...any) CapacityProbe {
		pr.Verdict, pr.Reason = CapacityFail, fmt.Sprintf(format, args...)
		return pr
	}
	toGenerator := func(why []string) CapacityProbe {
		pr.Generator = strings.Join(why, "; ")
		pr.Verdict, pr.Reason = CapacityGenerator, "the generator failed the probe: "+pr.Generator
		return pr
	}
	switch {
	case len(gen) > 0:
		// Answers waited for a busy generator to read them: nothing of
		// the pass is the engine's.
		return toGenerator(append(gen, late...))
	case r.OK == 0:
		return fail("%s at %s rps offered", noSuccess(r), rps(r.Target))
	case r.Errors > 0:
		return fail("%d of %d requests failed (%s) at %s rps offered", r.Errors, r.Requests, kinds(r.ErrorsByKind), rps(r.Target))
	case pr.PoolLimited:
		return fail("requests waited for a free connection at %s rps offered: %d of %d found all %d busy (%d dropped): %s",
			rps(r.Target), r.Queued+r.Dropped, r.Requests, r.Connections, r.Dropped, strings.Join(waits.Reasons, "; "))
	case r.CarriedRPS < CapCarried*r.Target:
		return fail("carried %.1f of %s rps offered, under %.0f %%", r.CarriedRPS, rps(r.Target), 100*CapCarried)
	case pr.QuantileMs == nil:
		return fail("no TTFB was measured at %s rps offered", rps(r.Target))
	}
	// The generator's lateness only ever adds to TTFB counted from the
	// intended send: within the SLO with it, the engine met the SLO; over
	// it from the dispatch instant, without it, the engine missed it.
	// Only in between, and only when loadgen flagged the lateness (it
	// moved the quantile past its tolerance), is the verdict the
	// generator's: lateness within its tolerance is part of the figure,
	// as in every pass, and a quantile over the SLO with it is the
	// engine's.
	fromDispatch := time.Duration(r.TTFBFromDispatch.ValueAtQuantile(slo.Quantile))
	if len(late) > 0 {
		pr.Generator = capLate + strings.Join(late, "; ")
	}
	switch corrected := time.Duration(*pr.QuantileMs * 1e6); {
	case corrected <= slo.Max:
	case fromDispatch > slo.Max || len(late) == 0:
		return fail("TTFB %s %.3f ms over the SLO's %v at %s rps offered", quantileName(slo.Quantile), *pr.QuantileMs, slo.Max, rps(r.Target))
	default:
		return toGenerator(late)
	}
	pr.Verdict = CapacityPass
	return pr
}

// searchBounds bound a search: its start and maximum rate and its number
// of probes.
type searchBounds struct {
	start, max float64
	maxProbes  int
}

// searchOutcome is what a search found: its probes in order, the index of
// the one at capacity (-1: none passed, or the search is invalid), and why
// it stopped. invalid, when set, says why the search has no figure at all
// (the host spoiled a probe through every retry).
type searchOutcome struct {
	probes     []CapacityProbe
	best       int
	lowestFail *float64
	lowerBound string // short, shown after the value
	stopped    string
	noValue    string
	invalid    string
}

func (o *searchOutcome) evidence(slo SLO) *CapacityEvidence {
	ce := &CapacityEvidence{SLO: slo.String(), LowerBound: o.lowerBound, Stopped: o.stopped, NoValue: o.noValue,
		LowestFailRPS: o.lowestFail, Probes: o.probes}
	if o.best >= 0 {
		ce.CapacityRPS = ptr(o.probes[o.best].OfferedRPS)
	}
	return ce
}

// What spoiled a probe: nothing (it decides), the host or the generator.
const (
	spoilNone = iota
	spoilHost
	spoilGenerator
)

// spoiled says what, if anything, kept a probe from deciding anything of
// the engine. A pass decides: the host and the generator only ever take
// from the engine, never give. A failure beside the host's interference —
// the hypervisor's steal or a pause of every CPU (pr.Host), or other
// processes over BusyShare of the measured CPUs — is the host's as much as
// the engine's; a probe the generator failed, or an engine failure it was
// late for (its lateness moved the SLO's quantile past its tolerance), the
// generator's. The host is named first: a generator late beside a busy
// host is the host's.
func spoiled(pr CapacityProbe) int {
	switch {
	case pr.Verdict == CapacityPass:
		return spoilNone
	case pr.Host != "" || pr.OtherCPUShare != nil && *pr.OtherCPUShare > BusyShare:
		return spoilHost
	case pr.Verdict == CapacityGenerator || strings.HasPrefix(pr.Generator, capLate):
		return spoilGenerator
	}
	return spoilNone
}

// search finds the highest rate probe passes: a ramp ×2 from b.start
// (capped at b.max) until a probe fails, then bisection until the bracket
// is within CapTolerance of lo. A probe that decides nothing of the engine
// (spoiled) is run again at its rate, capRetries times at most, wherever
// it falls in the search. A rate the generator still failed is the
// instrument's limit, never the engine's: it bounds the search from above
// and bisection goes on below it, so the capacity found is at least the
// highest rate that passed, as close under the generator's limit as the
// tolerance allows. A rate the host still spoiled makes the search
// invalid: it can say nothing of where the engine's capacity lies. Before
// the search ends under the engine's lowest failed rate, that rate is
// probed until it failed capConfirm times; a pass there moves the search
// on (the ramp resumes above it, or bisection under the next failure).
// Reaching b.max or b.maxProbes stops it too.
func search(ctx context.Context, b searchBounds, probe func(context.Context, float64) (CapacityProbe, error)) (*searchOutcome, error) {
	o := &searchOutcome{best: -1}
	// The highest rate passed and the lowest the generator failed through
	// its retries (0: none yet), and the engine's decisive failures at
	// each rate.
	lo, gen := 0.0, 0.0
	fails := map[float64]int{}
	hi := func() float64 {
		h := 0.0
		for r := range fails {
			if r > lo && (h == 0 || r < h) {
				h = r
			}
		}
		return h
	}
	defer func() {
		if h := hi(); h > 0 && o.invalid == "" {
			o.lowestFail = ptr(h)
		}
	}()
	// run probes rate until a probe decides, or capRetries more were
	// spoiled; budget says the probes ran out first.
	run := func(rate float64) (pr CapacityProbe, spoil int, budget bool, err error) {
		for tries := 0; ; tries++ {
			if len(o.probes) >= b.maxProbes {
				return pr, spoil, true, nil
			}
			if pr, err = probe(ctx, rate); err != nil {
				return pr, spoil, false, err
			}
			pr.OfferedRPS = rate
			o.probes = append(o.probes, pr)
			if spoil = spoiled(pr); spoil == spoilNone || tries == capRetries {
				return pr, spoil, false, nil
			}
		}
	}
	for {
		h := hi()
		u, byGen := h, gen > 0 && (h == 0 || gen <= h)
		if byGen {
			u = gen
		}
		var rate float64
		switch {
		case u == 0 && lo >= b.max:
			o.stopped = fmt.Sprintf("the search's maximum rate, %s rps, passed", rps(b.max))
			o.lowerBound = "the search's maximum rate"
			return o, nil
		case u == 0 && lo == 0:
			rate = b.start
		case u == 0:
			rate = min(lo*capRamp, b.max)
		case lo > 0 && (u-lo)/lo > CapTolerance && bisect(lo, u) > lo && bisect(lo, u) < u:
			rate = bisect(lo, u)
		case !byGen && fails[u] < capConfirm:
			// The upper bracket, once more before the search ends.
			rate = u
		default:
			o.finish(lo, u, byGen)
			return o, nil
		}
		if len(o.probes) >= b.maxProbes {
			o.stopProbes(lo, hi(), gen, b)
			return o, nil
		}
		pr, spoil, budget, err := run(rate)
		switch {
		case err != nil:
			return nil, err
		case budget:
			o.stopProbes(lo, hi(), gen, b)
			return o, nil
		case spoil == spoilHost:
			o.spoiledByHost(lo, rate, pr)
			return o, nil
		case spoil == spoilGenerator:
			if gen == 0 || rate < gen {
				gen = rate
			}
		case pr.Verdict == CapacityPass:
			lo, o.best = rate, len(o.probes)-1
		default:
			fails[rate]++
		}
	}
}

// finish ends a search whose bracket is closed: under u, the generator's
// limit when byGen, else the engine's lowest failed rate (confirmed).
func (o *searchOutcome) finish(lo, u float64, byGen bool) {
	switch {
	case byGen:
		o.stopGenerator(lo, u)
	case lo == 0:
		o.noValue = fmt.Sprintf("no probe passed: the lowest, at %s rps offered, failed %d times: %s", rps(u), capConfirm, o.last(u, CapacityFail).Reason)
		o.stopped = o.noValue
	default:
		o.stopped = fmt.Sprintf("bisection: %s rps passed and %s rps failed (%d times), within %.0f %%", rps(lo), rps(u), capConfirm, 100*CapTolerance)
	}
}

// spoiledByHost makes the search invalid: the host spoiled every probe at
// rate, pr the last.
func (o *searchOutcome) spoiledByHost(lo, rate float64, pr CapacityProbe) {
	why := pr.Host
	if pr.OtherCPUShare != nil && *pr.OtherCPUShare > BusyShare {
		why = strings.TrimPrefix(why+fmt.Sprintf("; other processes took %.0f %% of the measured CPUs", 100**pr.OtherCPUShare), "; ")
	}
	o.invalid = fmt.Sprintf("the host spoiled the probe at %s rps %d times (%s): the search cannot say where the engine's capacity lies", rps(rate), capRetries+1, why)
	if lo > 0 {
		o.invalid += fmt.Sprintf(" (%s rps passed)", rps(lo))
	}
	o.best, o.noValue, o.stopped = -1, o.invalid, o.invalid
}

// last is the last probe at rate with verdict v.
func (o *searchOutcome) last(rate float64, v string) CapacityProbe {
	for i := len(o.probes) - 1; i >= 0; i-- {
		if pr := o.probes[i]; pr.OfferedRPS == rate && pr.Verdict == v {
			return pr
		}
	}
	return CapacityProbe{}
}

// bisect is the middle of lo and hi, in whole requests per second above
// 20 rps.
func bisect(lo, hi float64) float64 {
	mid := (lo + hi) / 2
	if mid > 20 {
		return math.Round(mid)
	}
	return math.Round(mid*10) / 10
}

func (o *searchOutcome) stopGenerator(lo, at float64) {
	why := o.last(at, CapacityGenerator).Generator
	if why == "" {
		// An engine failure the generator was late for.
		why = strings.TrimPrefix(o.last(at, CapacityFail).Generator, capLate)
	}
	if lo == 0 {
		o.noValue = fmt.Sprintf("no probe passed: the generator ran out at the lowest, %s rps offered, before the engine was measured: %s", rps(at), why)
		o.stopped = o.noValue
		return
	}
	o.lowerBound = fmt.Sprintf("the generator ran out at %s rps", rps(at))
	o.stopped = fmt.Sprintf("the generator ran out at %s rps offered (%s): the engine carried %s rps within the SLO and may carry more", rps(at), why, rps(lo))
}

func (o *searchOutcome) stopProbes(lo, hi, gen float64, b searchBounds) {
	o.stopped = fmt.Sprintf("the search's %d probes ran out", b.maxProbes)
	switch {
	case lo == 0:
		pr := o.probes[0]
		o.noValue = fmt.Sprintf("no probe passed: the lowest, at %s rps offered, failed: %s", rps(pr.OfferedRPS), pr.Reason)
	case gen > 0 && (hi == 0 || gen < hi):
		o.lowerBound = fmt.Sprintf("%d probes ran out below %s rps, where the generator ran out", b.maxProbes, rps(gen))
	case hi > 0:
		o.lowerBound = fmt.Sprintf("%d probes ran out below %s rps", b.maxProbes, rps(hi))
	default:
		o.lowerBound = fmt.Sprintf("%d probes ran out", b.maxProbes)
	}
}

// capPause is how long every measured CPU must have stalled at once for a
// capacity probe's failure to be put down to the host. A probe at capacity
// makes its own interrupts (20–80 % of a CPU in softirq for loopback traffic
// here) and its own stalls of one CPU (the kernel's network work, which the
// real-time sampler cannot preempt: hundreds of 1–8 ms stalls in a second of
// 4 MiB answers), so neither is the host's there, as they may be in a
// latency pass at a fixed rate; a pause of every CPU at once (seen here:
// 31–76 ms, the machine's, not a process's) and the hypervisor's steal are.
const capPause = 10 * time.Millisecond

// capHost says what of the host may have failed a capacity probe that
// started at started: steal past HostStealShare on a measured CPU, or every
// sampled CPU stalled at once for capPause or more; "" when neither.
func capHost(ev *results.Evidence, st cpuload.Stalls, started time.Time) string {
	var parts []string
	if ev != nil && ev.OtherCPU != nil {
		for _, c := range ev.OtherCPU.PerCPU {
			if c.Steal >= 100*HostStealShare {
				parts = append(parts, fmt.Sprintf("CPU %d: steal %.0f %%", c.CPU, c.Steal))
			}
		}
	}
	if d, at := machinePause(st.Stalls, st.CPUs); d >= capPause {
		parts = append(parts, fmt.Sprintf("every measured CPU (%s) stalled at once for %.1f ms at %.2f s",
			engines.CPUList(st.CPUs), float64(d)/1e6, at.Sub(started).Seconds()))
	}
	return strings.Join(parts, "; ")
}

// machinePause is the longest time every one of cpus was stalled at once,
// and when it began (one CPU's stalls never overlap: its sampler finds them
// one after another).
func machinePause(stalls []cpuload.Stall, cpus []int) (time.Duration, time.Time) {
	type edge struct {
		at    time.Time
		delta int
	}
	var edges []edge
	for _, s := range stalls {
		if slices.Contains(cpus, s.CPU) {
			edges = append(edges, edge{s.At, 1}, edge{s.End(), -1})
		}
	}
	// At one instant, an end comes before a start: stalls that only touch
	// are not at once.
	slices.SortFunc(edges, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.delta - b.delta
	})
	var longest time.Duration
	var at, from time.Time
	n := 0
	for _, e := range edges {
		n += e.delta
		switch {
		case e.delta > 0 && n == len(cpus):
			from = e.at
		case e.delta < 0 && n == len(cpus)-1:
			if d := e.at.Sub(from); d > longest {
				longest, at = d, from
			}
		}
	}
	return longest, at
}

// capacityPart is the key of CapacityEvidence in a pass's evidence.
const capacityPart = "capacity"

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
	// PoolLimited: the waits for a free connection mattered (judgeWaits)
	// and failed the probe.
	PoolLimited bool `json:"pool_limited"`
	// Waits is how many requests waited for a free connection and what
	// the waits moved, when some did ("" when none).
	Waits        string  `json:"waits,omitempty"`
	MiBPerSecond float64 `json:"mib_per_s"`
	// OtherCPUShare is the share of the measured CPUs other processes
	// took during the probe (null when not measured, and for an external
	// proxy, whose own CPU is among them): a failure beside a large one
	// may be the host's.
	OtherCPUShare *float64 `json:"other_cpu_share,omitempty"`
	// Host, when set, says what of the host may have failed the probe:
	// the hypervisor's steal past 5 % of a measured CPU, or every measured
	// CPU stalled at once for 10 ms or more (with when). A failure beside
	// it decides nothing: it is probed again (see spoiled).
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

// CapacityConditions are the capacity workload's search: each test's
// service level ("p99:10ms") and start and maximum rates, the ramp's
// factor, the bisection's tolerance, the probes' bounds and length, and
// how many connections a probe opens.
type CapacityConditions struct {
	SLO           map[string]string  `json:"slo"`
	StartRPS      map[string]float64 `json:"start_rps"`
	MaxRPS        map[string]float64 `json:"max_rps"`
	RampFactor    float64            `json:"ramp_factor"`
	Tolerance     float64            `json:"tolerance"`
	CarriedShare  float64            `json:"carried_share"`
	MaxProbes     int                `json:"max_probes"`
	ProbeWarmup   results.Duration   `json:"probe_warmup"`
	ProbeDuration results.Duration   `json:"probe_duration"`
	Connections   string             `json:"connections"`
}

// String is the search in one line, "" for none: what Comparable
// compares.
func (c *CapacityConditions) String() string {
	if c == nil {
		return ""
	}
	return fmt.Sprintf("slo %v, start %v, max %v, ×%g, tolerance %g, carried %g, %d probes of %v after %v, connections %s",
		c.SLO, c.StartRPS, c.MaxRPS, c.RampFactor, c.Tolerance, c.CarriedShare, c.MaxProbes,
		time.Duration(c.ProbeDuration), time.Duration(c.ProbeWarmup), c.Connections)
}
