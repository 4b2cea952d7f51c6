package workloads

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/origin"
	"github.com/hlsbench/hlsbench/results"
	"github.com/hlsbench/hlsbench/results/stats"
	"github.com/hlsbench/hlsbench/workloads/loadgen"
)

// RepeatedBans is the purge stampede's stream under steady load while one
// object after another is invalidated, one a second: whether the ban list,
// its lurker or the engine's CPU cost the other objects' latency as the
// bans pile up.
const RepeatedBans = "repeated-bans"

// BanEvery is how often repeated-bans invalidates an object.
const BanEvery = time.Second

// banWarmups is repeated-bans' unmeasured passes: one, its passes are
// long.
const banWarmups = 1

// banListCounter is the Varnish counter of the bans on its list.
const banListCounter = "MAIN.bans"

type repeatedBans struct{}

// repeated-bans' settings: measured passes (after one warm-up) of
// purge-before of load, then an object invalidated every BanEvery for
// ban-for.
var (
	banPassesSetting = intSetting("ban-passes", 5, "repeated-bans: measured passes after its warm-up").
				Quick(2).Accept(atLeast(1, "1 or more")).Record("repeated_bans.passes")
	banForSetting = durationSetting("ban-for", 20*time.Second, "repeated-bans: how long an object is invalidated every second in each pass, after purge-before of load").
			Quick(5 * time.Second).Nightly(10 * time.Second).Accept(atLeast(4*BanEvery, "at least "+(4*BanEvery).String()+" of repeated bans")).Record("repeated_bans.for")
)

// The keys of bans's own conditions in the results.
const (
	banEveryCondition = "ban_every" // how often an object is invalidated, from purge_before on, for purge_after
)

// conditionFacts are the stream's objects and its bans.
func (repeatedBans) conditionFacts(c results.Conditions) (load, rest []results.Fact) {
	return nil, purgeFacts(c)
}

func (repeatedBans) measuresCache() {}

// configure gives the policy the run's purge mode, which the engines render.
func (repeatedBans) configure(s Spec, cfg Config) Spec {
	if mode := purgeModeSetting.Of(cfg); mode != "" && s.Policy.Purge != "" {
		s.Policy.Purge = mode
	}
	return s
}

func (repeatedBans) Settings() []Setting { return []Setting{banPassesSetting, banForSetting} }

func (repeatedBans) recordMore(Config) map[string]any {
	return map[string]any{"repeated_bans.every": BanEvery.String()}
}

func (repeatedBans) Spec() Spec {
	s := purgeStampede{}.Spec()
	s.Name, s.Title = RepeatedBans, "Repeated bans"
	s.Description = "500 rps over the purge stampede's stream (Zipf popularity, warm cache) while one object is invalidated every second, the least popular first (a ban where the engine has one); the latency of the objects left alone, first quarter against last, the ban list and the engine's CPU"
	return s
}

// banDriftAxis is what a drift counts.
const banDriftAxis = "Last quarter of the bans ÷ first (1 x: no cost over time)"

func (repeatedBans) Tests() []latencyDef {
	return []latencyDef{
		{id: "ttfb-drift", title: "p99 TTFB drift under bans", unit: "x", lower: true, axis: banDriftAxis,
			agg: "TTFB p99 of the pass's last quarter ÷ its first quarter (whose start has no ban yet), over requests for objects not invalidated in the pass, a timeout counted at the timeout; a pass with any failed request in either quarter, or whose generator's lateness moved either quarter's p99 past its tolerance, is invalid, and so is a saturated pass (it carried under 97 % of its offered rate, or its waits for a free connection moved its p50 or p99 past the generator's tolerance or grew through the pass: its TTFB counts queueing); the median of the valid measured passes"},
		{id: "p99-ttfb-bans", title: "p99 TTFB, last quarter of bans", q: 99,
			agg: "p99 TTFB of the requests sent in each pass's last quarter for objects not invalidated in it, a timeout counted at the timeout; a pass with any failed request in that quarter, or whose generator's lateness moved that quarter's p99 past its tolerance, is invalid; the valid measured passes merged (HDR histogram), per-pass values each pass's own"},
		{id: "engine-cpu-drift", title: "Engine CPU drift under bans", unit: "x", lower: true, axis: banDriftAxis,
			agg: "the engine's CPU time per second in the pass's last quarter ÷ its first quarter; the median of the valid measured passes"},
		{id: "ban-list", title: "Ban list at the end", unit: "bans", lower: true,
			agg: "the engine's ban list (Varnish's MAIN.bans) read after the last call of a pass (null for the pass when that call or that read failed, never an earlier call's list); the median of the valid measured passes"},
		{id: "purge-duration", title: "Ban duration", unit: "ms", lower: true,
			agg: "from each invalidation call to its return (a ban accepted, or the object's purge answered); the median of every call of the valid measured passes"},
		{id: "stale-after-purge", title: "Stale answers after a ban", unit: "per 1000 answers", lower: true,
			agg: "1000 × stale answers ÷ answers whose staleness could be proven, both summed over the valid measured passes: good answers for an invalidated object to requests sent after its call returned that carry the origin's X-Origin-Generated stamp, stale when the origin made that copy before the call was sent; per-pass values are each pass's own per 1000, the result's stale field is the raw count"},
	}
}

func (w repeatedBans) Conditions(s Spec, cfg Config) results.Conditions {
	c := purgeStampede{}.Conditions(s, cfg)
	c.SetOwn(purgeAfterCondition, results.Duration(banForSetting.Of(cfg)))
	c.SetOwn(banEveryCondition, results.Duration(BanEvery))
	c.Warmups, c.Passes = banWarmups, banPassesSetting.Of(cfg) // its own protocol, as Open runs it
	return c
}

func (repeatedBans) Estimate(cfg Config) time.Duration {
	return startEstimate + time.Duration(banWarmups+banPassesSetting.Of(cfg))*(purgeBeforeSetting.Of(cfg)+banForSetting.Of(cfg)+time.Second)
}

// banSession is repeated-bans on one target; it shares the purge
// stampede's stream, generator and record log.
type banSession struct {
	*purgeSession
	next int // the next call's object, counted from the least popular

	drift, cpuDrift, list, dur, stale *results.Result
	late                              *latencyTest
	staleSum                          *sumTest
	q                                 quarterHists // the last pass's

	drifts, cpuDrifts, lists, durations []float64
}

// quarterHists are a pass's first and last quarters' requests: TTFB from
// the intended send time and from the dispatch (ttfb - lag), whose
// difference is the generator's own lateness in the window each figure
// publishes, and the sends, for the host's share of it.
type quarterHists struct {
	first, last *lateClass
}

func (w repeatedBans) Open(ctx context.Context, s Spec, cfg Config, tgt *Target, rc *Recorder) (Session, error) {
	cfg.Warmups, cfg.Passes = banWarmups, banPassesSetting.Of(cfg)
	ps, err := openStream(ctx, s, cfg, tgt, rc)
	if err != nil {
		return nil, err
	}
	bs := &banSession{purgeSession: ps}
	bs.newTests(rc, &s, tgt)
	// Which engines keep a ban list is known from their counters.
	if why := bs.noBanList(ctx); why != "" {
		bs.list.NotApplicable, bs.list.NoValue = why, "not applicable: "+why
	}
	if !hasEngineCPU(tgt) {
		why := tgt.Engine.Name + "'s processes were not started by hlsbench: their CPU is not read"
		if tgt.InProcess {
			why = "the engine runs inside hlsbench's own process (runtime " + tgt.Engine.Runtime + "): its CPU is not apart from the generator's"
		}
		bs.cpuDrift.NotApplicable, bs.cpuDrift.NoValue = why, "not applicable: "+why
	}
	return bs, nil
}

// newTests records repeated-bans' tests for tgt.
func (bs *banSession) newTests(rc *Recorder, s *Spec, tgt *Target) {
	res := map[string]*results.Result{}
	for _, d := range (repeatedBans{}).Tests() {
		if d.q > 0 {
			bs.late = rc.latency(s, tgt, d.id, d.title, d.q)
			bs.late.r.Aggregation = d.agg + saturatedAgg
			continue
		}
		res[d.id] = rc.newTest(s, tgt, d)
	}
	bs.drift, bs.cpuDrift, bs.list = res["ttfb-drift"], res["engine-cpu-drift"], res["ban-list"]
	bs.dur, bs.stale = res["purge-duration"], res["stale-after-purge"]
	bs.staleSum = &sumTest{r: bs.stale, value: perThousand}
}

// noBanList says why the target has no ban list to read, or "".
func (bs *banSession) noBanList(ctx context.Context) string {
	switch {
	case bs.mode == engines.PurgeObject:
		return "each call is a request that removes one object at once (" + bs.method + "): no ban list"
	case bs.tgt.Engine.EngineName() == "builtin":
		return "the built-in cache removes the matching objects when it bans: it keeps no ban list"
	case bs.tgt.Counters == nil:
		return "the engine's counters cannot be read"
	}
	m, err := bs.tgt.Counters(ctx)
	if err != nil {
		return "" // a reading may fail now and work later: each pass says
	}
	if _, ok := m[banListCounter]; !ok {
		return "the engine's counters have no " + banListCounter
	}
	return ""
}

func hasEngineCPU(tgt *Target) bool {
	for i := range tgt.Groups {
		if tgt.Groups[i].Name == costEngine {
			return true
		}
	}
	return false
}

// banCall is one invalidation of a pass, and the check that followed
// it: a GET of the object once the call returned, whose origin stamp
// proves whether the answer was made after the call was sent.
type banCall struct {
	obj            int
	sent, returned int64 // unix ns
	list           *int64
	listErr        error // reading the ban list after the call failed
	err            error
	checked        bool  // the check got a good answer
	stamp          int64 // its origin stamp, 0 without one
}

func (bs *banSession) Step(ctx context.Context, i int) error {
	cfg, tgt := bs.cfg, bs.tgt
	total := purgeBeforeSetting.Of(cfg) + banForSetting.Of(cfg)
	bs.rc.Progress.step(passLabel(i, cfg.Warmups, cfg.Passes, "")+fmt.Sprintf(" (a ban every %v from %v)", BanEvery, purgeBeforeSetting.Of(cfg)), total)
	warmErr := bs.warm(ctx)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	bs.log.reset()
	before := take(ctx, tgt)
	started := time.Now()
	var cpu cpuSeries
	stopCPU := cpu.sample(tgt)

	// The calls, one every BanEvery from PurgeBefore while the load runs:
	// a call that takes longer delays the next, never piles up.
	cctx, ccancel := context.WithTimeout(ctx, total+cfg.Timeout)
	defer ccancel()
	calls := make(chan []banCall, 1)
	go func() { calls <- bs.calls(cctx, started, total) }()
	w := startWatch(tgt, nil)
	r, runErr := bs.g.Run(ctx, loadgen.Pass{Paths: bs.paths, Zipf: PurgeZipf, Rate: bs.rate, Duration: total, Seed: uint64(i + 1)})
	w.stop()
	ccancel()
	made := <-calls
	stopCPU()
	p, _, err := bs.endPass(ctx, i, r, runErr, started, before, w, warmErr)
	if err != nil {
		return err
	}
	p.ev.Generator = generatorFigures(r, 99)
	be := bs.banEvidence(made, &cpu, started, total) // the calls' schedule: the load starts with it
	p.ev.SetPart(bansPart, be)
	switch {
	case be.Calls == 0:
		p.reasons = append(p.reasons, "no invalidation was made in the pass")
	case be.Failed > 0:
		p.reasons = append(p.reasons, fmt.Sprintf("%d of %d invalidations failed (%s)", be.Failed, be.Calls, strings.Join(be.FailSamples, "; ")))
	}
	bs.record(p, be, made)
	return bs.rc.Save()
}

// calls invalidates one object every BanEvery from PurgeBefore after
// start until total, the least popular first, and reads the ban list
// after each.
func (bs *banSession) calls(ctx context.Context, start time.Time, total time.Duration) []banCall {
	var out []banCall
	segs := len(bs.paths) - 2
	for k := 0; ; k++ {
		at := start.Add(purgeBeforeSetting.Of(bs.cfg) + time.Duration(k)*BanEvery)
		if at.Sub(start) >= total {
			return out
		}
		if d := time.Until(at); d > 0 {
			select {
			case <-ctx.Done():
				return out
			case <-time.After(d):
			}
		}
		if ctx.Err() != nil || time.Since(start) >= total {
			return out
		}
		obj := len(bs.paths) - 1 - bs.next%segs
		bs.next++
		c := banCall{obj: obj, sent: time.Now().UnixNano()}
		path := bs.paths[obj]
		if bs.mode == engines.PurgeBan {
			c.err = bs.ban(ctx, path)
		} else {
			status, err := bs.fetch(ctx, bs.method, path)
			switch {
			case err != nil:
				c.err = err
			case status == http.StatusNotFound:
				// Not cached: nothing to remove, the same as a purge.
			case status < 200 || status > 299:
				c.err = fmt.Errorf("%s answered %d", bs.method, status)
			}
		}
		c.returned = time.Now().UnixNano()
		if c.err == nil {
			status, stamp, err := bs.fetchStamp(ctx, http.MethodGet, path)
			c.checked, c.stamp = err == nil && status == http.StatusOK, stamp
		}
		if c.err == nil && bs.list.NotApplicable == "" && bs.tgt.Counters != nil {
			m, err := bs.tgt.Counters(ctx)
			v, ok := m[banListCounter]
			switch {
			case err != nil:
				c.listErr = fmt.Errorf("reading the engine's counters: %w", err)
			case !ok:
				c.listErr = fmt.Errorf("the engine's counters have no %s", banListCounter)
			default:
				c.list = ptr(int64(v))
			}
		}
		out = append(out, c)
	}
}

// banEvidence reads a pass's records against its calls; the load was
// scheduled from start for total.
func (bs *banSession) banEvidence(made []banCall, cpu *cpuSeries, start time.Time, total time.Duration) *BanEvidence {
	be := &BanEvidence{Mode: bs.mode, Every: results.Duration(BanEvery), Calls: len(made), Windows: []BanWindow{}}
	if bs.mode != engines.PurgeBan {
		be.Method = bs.method
	}
	// Each object is invalidated once a pass at most (fewer calls than
	// segments): its call by object.
	callOf := map[int]*banCall{}
	var durs []float64
	seen := map[string]int{}
	for i := range made {
		c := &made[i]
		callOf[c.obj] = c
		durs = append(durs, float64(c.returned-c.sent)/1e6)
		if c.err != nil {
			be.Failed++
			seen[strings.ReplaceAll(c.err.Error(), bs.paths[c.obj], "OBJECT")]++
		}
		if c.checked {
			countAnswer(c.stamp, c.sent, &be.AnsweredAfter, &be.Unproven, &be.StaleAfterPurge)
		}
	}
	be.FailSamples = failSamples(seen)
	be.BanList, _ = banListAtEnd(made)
	if len(durs) > 0 {
		be.DurationP50Ms = ptr(round3(stats.Median(durs)))
		m := 0.0
		for _, d := range durs {
			m = max(m, d)
		}
		be.DurationMaxMs = ptr(round3(m))
	}

	t0 := start.UnixNano()
	quarter := int64(total / 4)
	q := quarterHists{first: newLateClass(), last: newLateClass()}
	nwin := int((total + BanEvery - 1) / BanEvery)
	wins := make([]*hdr.Histogram, nwin)
	for k := range wins {
		wins[k] = loadgen.NewHistogram()
		be.Windows = append(be.Windows, BanWindow{AtMs: float64(time.Duration(k)*BanEvery) / 1e6})
	}
	for _, shard := range bs.log.shards {
		for i := range shard {
			rec := &shard[i]
			if c := callOf[rec.obj]; c != nil && rec.intended >= c.sent {
				// An invalidated object: a miss on any engine, not the ban
				// list's cost; its answers prove the call worked.
				if rec.intended >= c.returned && rec.good() {
					countAnswer(rec.stamp, c.sent, &be.AnsweredAfter, &be.Unproven, &be.StaleAfterPurge)
				}
				continue
			}
			at := rec.intended - t0
			if at < 0 || at >= int64(total) {
				continue
			}
			w := &be.Windows[min(int(at/int64(BanEvery)), nwin-1)]
			w.Requests++
			var ph *PhaseTTFB
			var qc *lateClass
			switch {
			case at < quarter:
				ph, qc = &be.First, q.first
			case at >= int64(total)-quarter:
				ph, qc = &be.Last, q.last
			}
			if ph != nil {
				ph.Requests++
			}
			// A failure stays in the figures, as in the purge's refill: a
			// timeout at the timeout (as loadgen records it), another
			// failure with no latency; either makes the pass's latency tests
			// invalid (record). Left out, an engine whose slow answers time
			// out would score better than one that gave them.
			v, d := max(rec.ttfb, 0), max(rec.ttfb-rec.lag, 0)
			if !rec.good() {
				w.Errors++
				kind := rec.kind
				if kind == "" {
					kind = "status"
				}
				if ph != nil {
					ph.Errors++
					if ph.ErrorsByKind == nil {
						ph.ErrorsByKind = map[string]int64{}
					}
					ph.ErrorsByKind[kind]++
				}
				if kind != "timeout" {
					continue
				}
				v, d = int64(bs.cfg.Timeout), max(int64(bs.cfg.Timeout)-rec.lag, 0)
			}
			_ = wins[min(int(at/int64(BanEvery)), nwin-1)].RecordValue(v)
			if ph != nil {
				qc.add(rec.intended, v, d)
			}
		}
	}
	for k := range be.Windows {
		w := &be.Windows[k]
		w.P99Ms = msq(wins[k], 99)
		from := start.Add(time.Duration(k) * BanEvery)
		w.EngineCPU = cpu.cores(from, from.Add(BanEvery))
		for i := range made {
			if made[i].sent < from.UnixNano()+int64(BanEvery) {
				w.Calls = i + 1
				if made[i].list != nil && made[i].sent >= from.UnixNano() {
					w.BanList = made[i].list
				}
			}
		}
	}
	be.First.P50Ms, be.First.P99Ms = msq(q.first.corr, 50), msq(q.first.corr, 99)
	be.Last.P50Ms, be.Last.P99Ms = msq(q.last.corr, 50), msq(q.last.corr, 99)
	be.EngineCPUFirst = cpu.cores(start, start.Add(time.Duration(quarter)))
	be.EngineCPULast = cpu.cores(start.Add(total-time.Duration(quarter)), start.Add(total))
	bs.q = q
	return be
}

// banListAtEnd is the ban list read after the pass's last call, or why
// there is none: an earlier call's list is not the list at the end (the
// bans after it are missing from it).
func banListAtEnd(made []banCall) (*int64, string) {
	if len(made) == 0 {
		return nil, "no invalidation was made in the pass"
	}
	c := &made[len(made)-1]
	where := fmt.Sprintf("call %d of %d", len(made), len(made))
	switch {
	case c.err != nil:
		return nil, fmt.Sprintf("the last call failed (%s: %v): the ban list was not read after it", where, c.err)
	case c.list == nil && c.listErr != nil:
		return nil, fmt.Sprintf("the ban list could not be read after the last call (%s: %v)", where, c.listErr)
	case c.list == nil:
		return nil, fmt.Sprintf("the ban list could not be read after the last call (%s)", where)
	}
	return c.list, ""
}

// quarterFailed is why a quarter's TTFB figures are invalid when any of
// its requests failed: purge-stampede's refill rule, no failure tolerated.
func quarterFailed(which string, ph *PhaseTTFB) []string {
	if ph.Errors == 0 {
		return nil
	}
	return []string{fmt.Sprintf("%d of %d requests in the %s quarter failed (%s): a timeout counts at the timeout, another failure has no TTFB, and no failure is tolerated",
		ph.Errors, ph.Requests, which, kinds(ph.ErrorsByKind))}
}

func (bs *banSession) record(p *passInfo, be *BanEvidence, made []banCall) {
	// The latency figures are judged on the quarters they publish: their
	// failures, and the generator's lateness there (not over the pass).
	busy := p.latencyReasons()
	// The host's stalls excuse the lateness they account for (a quarter
	// may be missing: a pass recorded without its records).
	lastWhy := append(quarterFailed("last", &be.Last), p.instrumental(bs.q.last.judge("last quarter's TTFB", 99, bs.watch, p.ev))...)
	driftWhy := append(append(quarterFailed("first", &be.First), p.instrumental(bs.q.first.judge("first quarter's TTFB", 99, bs.watch, p.ev))...), lastWhy...)
	driftWhy, lastWhy = append(driftWhy, busy...), append(lastWhy, busy...)

	// The drift of the p99, last quarter against first.
	var drift *float64
	why := ""
	switch {
	case be.First.P99Ms == nil:
		why = "no good answer in the pass's first quarter"
	case be.Last.P99Ms == nil:
		why = "no good answer in the pass's last quarter"
	case *be.First.P99Ms == 0:
		why = "the first quarter's p99 is below the histogram's resolution"
	default:
		drift = ptr(round3(*be.Last.P99Ms / *be.First.P99Ms))
	}
	if rp := addPass(bs.drift, p, drift, why, driftWhy...); !rp.Warmup && rp.Valid {
		bs.drifts = append(bs.drifts, *drift)
		bs.drift.Value = ptr(round3(stats.Median(bs.drifts)))
		bs.drift.Recount()
	}

	// The last quarter's p99 itself.
	var last *hdr.Histogram
	if bs.q.last != nil {
		last = bs.q.last.corr
	}
	v, why := p.latencyValue(last, 99)
	bs.late.addValue(p, last, v, why, lastWhy...)

	// The engine's CPU, last quarter against first: time the engine spent,
	// not latency, so the generator's lateness does not matter.
	if bs.cpuDrift.NotApplicable == "" {
		var cd *float64
		why := ""
		switch {
		case be.EngineCPUFirst == nil || be.EngineCPULast == nil:
			why = "the engine's CPU could not be read in both quarters"
		case *be.EngineCPUFirst <= 0:
			why = "the engine used no CPU time the kernel counted in the first quarter"
		default:
			cd = ptr(round3(*be.EngineCPULast / *be.EngineCPUFirst))
		}
		if rp := addPass(bs.cpuDrift, p, cd, why); !rp.Warmup && rp.Valid {
			bs.cpuDrifts = append(bs.cpuDrifts, *cd)
			bs.cpuDrift.Value = ptr(round3(stats.Median(bs.cpuDrifts)))
			bs.cpuDrift.Recount()
		}
	}

	if bs.list.NotApplicable == "" {
		var l *float64
		list, why := banListAtEnd(made)
		if list != nil {
			l = ptr(float64(*list))
		}
		if rp := addPass(bs.list, p, l, why); !rp.Warmup && rp.Valid {
			bs.lists = append(bs.lists, *l)
			bs.list.Value = ptr(round3(stats.Median(bs.lists)))
			bs.list.Recount()
		}
	}

	// Every call's duration, from this process (a ban's includes starting
	// varnishadm).
	var d *float64
	if be.DurationP50Ms != nil {
		d = be.DurationP50Ms
	}
	if rp := addPass(bs.dur, p, d, "no invalidation was made in the pass"); !rp.Warmup && rp.Valid {
		for _, c := range made {
			bs.durations = append(bs.durations, float64(c.returned-c.sent)/1e6)
		}
		bs.dur.Value = ptr(round3(stats.Median(bs.durations)))
		bs.dur.Recount()
	}

	// Stale answers per 1000 whose staleness the origin's stamps prove:
	// a sum would grow with the valid passes, and a cell with fewer of them
	// would read as better.
	var st *float64
	stWhy := ""
	var stMore []string
	proven := be.AnsweredAfter - be.Unproven
	switch {
	case be.AnsweredAfter == 0:
		stWhy = "no good answer for an invalidated object to a request sent after its call returned"
	case be.AnsweredAfter == be.Unproven:
		stWhy = fmt.Sprintf("none of the %d answers after a call carried the origin's stamp (%s): staleness cannot be proven", be.AnsweredAfter, origin.GeneratedHeader)
	default:
		st = ptr(round3(perThousand(be.StaleAfterPurge, proven)))
		if be.Unproven > 0 {
			stMore = append(stMore, fmt.Sprintf("%d of %d answers after a call carried no origin stamp (%s)", be.Unproven, be.AnsweredAfter, origin.GeneratedHeader))
		}
	}
	bs.staleSum.add(p, st, stWhy, be.StaleAfterPurge, proven, stMore...)
	if bs.stale.Value != nil {
		bs.stale.SetFigure(figStale, float64(bs.staleSum.num))
	}
}

// bansPart is the key of BanEvidence in a pass's evidence.
const bansPart = "bans"

// BanEvidence is a repeated-bans pass: an invalidation of one object
// every Every from the first, the coldest objects first, and what the
// requests for the objects it left alone saw as the calls piled up.
type BanEvidence struct {
	// Mode is "ban" (one ban of an object's URL per call) or "purge" (one
	// request per call, Method).
	Mode   string           `json:"mode"`
	Method string           `json:"method,omitempty"`
	Every  results.Duration `json:"every"`
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
