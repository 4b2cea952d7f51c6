package workloads

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/origin"
	"github.com/hlsbench/hlsbench/results"
	"github.com/hlsbench/hlsbench/workloads/loadgen"
)

// OriginFlap is steady load while the origin fails in cycles: grace,
// proven from the origin's stamps.
const OriginFlap = "origin-flap"

type originFlap struct{}

// origin-flap's settings: each cycle is one pass, healthy then failing.
var (
	cyclesSetting = intSetting("cycles", 5, "origin-flap: cycles of a healthy then a failing origin (each one pass, after a healthy warm-up)").
			Quick(3).Nightly(5).Accept(atLeast(1, "1 or more")).Record("origin_flap.cycles")
	healthyPhaseSetting = durationSetting("healthy-phase", 5*time.Second, "origin-flap: how long the origin is healthy in each cycle").
				Quick(3 * time.Second).Nightly(4 * time.Second).Accept(atLeast(100*time.Millisecond, "at least 100ms")).Record("origin_flap.healthy_phase")
	failPhaseSetting = durationSetting("fail-phase", 10*time.Second, "origin-flap: how long the origin then fails").
				Quick(6 * time.Second).Nightly(8 * time.Second).Accept(atLeast(100*time.Millisecond, "at least 100ms")).Record("origin_flap.fail_phase")
	failModeSetting = newParam("fail-mode", origin.Fail5xx, "origin-flap failure: 5xx, refuse or drop", "string",
		func(s string) (origin.Mode, error) {
			m, err := origin.ParseMode(s)
			if err != nil || m == origin.Healthy {
				return 0, errors.New("want 5xx, refuse or drop")
			}
			return m, nil
		}, origin.Mode.String).Store(func(m origin.Mode) any { return m.String() })
)

// The keys of originflap's own conditions in the results.
const (
	cyclesCondition       = "cycles"        // the cycles of a healthy then a failing origin
	healthyPhaseCondition = "healthy_phase" // how long the origin is healthy in a cycle
	failPhaseCondition    = "fail_phase"    // how long it then fails
	failModeCondition     = "fail_mode"     // how it fails
)

// conditionFacts is how the origin failed.
func (originFlap) conditionFacts(c results.Conditions) (load, rest []results.Fact) {
	n, _ := results.OwnCondition[int](c, cyclesCondition)
	if n <= 0 {
		return nil, nil
	}
	healthy, _ := results.OwnCondition[results.Duration](c, healthyPhaseCondition)
	failing, _ := results.OwnCondition[results.Duration](c, failPhaseCondition)
	mode, _ := results.OwnCondition[string](c, failModeCondition)
	return nil, []results.Fact{{Label: "Origin failure",
		Value: fmt.Sprintf("%d cycles: %s healthy, then %s failing (%s)", n, healthy, failing, mode)}}
}

func (originFlap) measuresCache() {}
func (originFlap) spreads()       {}

func (originFlap) Settings() []Setting {
	return []Setting{cyclesSetting, healthyPhaseSetting, failPhaseSetting, failModeSetting}
}

func (originFlap) Spec() Spec {
	p := engines.DefaultPolicy()
	// The TTL expires inside every failure phase; the probe notices the
	// failure within it; grace outlasts the phase plus the TTL.
	p.ManifestTTL = 2 * time.Second
	p.Grace = 60 * time.Second
	p.HealthyGrace = 2 * time.Second
	p.ProbeInterval, p.ProbeTimeout = 500*time.Millisecond, 500*time.Millisecond
	p.ProbeWindow, p.ProbeThreshold = 3, 2
	p.FirstByteTimeout, p.BetweenBytesTimeout, p.ConnectTimeout = time.Second, time.Second, 500*time.Millisecond
	return Spec{Name: OriginFlap, Title: "Origin-flap grace", Rate: 200, Connections: 10, Policy: p,
		Description: "200 rps on the media playlist while the origin fails; answers proven fresh or stale from the origin's stamps"}
}

func (originFlap) Conditions(s Spec, cfg Config) results.Conditions {
	c := protocol(cfg)
	c.RateRPS, c.Connections = pick(cfg.Rate, s.Rate), pick(cfg.Connections, s.Connections)
	c.ObjectBytes = origin.DefaultManifestSize
	c.SetOwn(cyclesCondition, cyclesSetting.Of(cfg))
	c.SetOwn(healthyPhaseCondition, results.Duration(healthyPhaseSetting.Of(cfg)))
	c.SetOwn(failPhaseCondition, results.Duration(failPhaseSetting.Of(cfg)))
	c.SetOwn(failModeCondition, failModeSetting.Of(cfg).String())
	// A cycle is a pass; there are no warm-up cycles but one healthy phase.
	c.Warmups, c.Passes = 1, cyclesSetting.Of(cfg)
	return c
}

func (originFlap) Estimate(cfg Config) time.Duration {
	return startEstimate + healthyPhaseSetting.Of(cfg) + time.Duration(cyclesSetting.Of(cfg))*(healthyPhaseSetting.Of(cfg)+failPhaseSetting.Of(cfg))
}

type flapSession struct {
	spec *Spec
	cfg  Config
	tgt  *Target
	rc   *Recorder
	g    loader
	log  *flapLog
	path string
	rate float64
	ttfb *latencyTest
	gr   *results.Result

	stale, errs, fresh, unproven int64 // over the valid measured cycles
}

func (originFlap) Open(ctx context.Context, s Spec, cfg Config, tgt *Target, rc *Recorder) (Session, error) {
	log := &flapLog{}
	ev := newEvidenceSet(tgt.Seed)
	g, err := newLoader(ctx, tgt, &cfg, pick(cfg.Connections, s.Connections), ev, log.record)
	if err != nil {
		return nil, err
	}
	log.shards = make([][]flapRec, g.Shards())
	o := &flapSession{spec: &s, cfg: cfg, tgt: tgt, rc: rc, g: g, log: log,
		path: ManifestPath + "?run=" + tgt.Nonce + "-flap", rate: pick(cfg.Rate, s.Rate)}
	if err := warm(ctx, g, rc, o.path, nil); err != nil {
		g.Close()
		return nil, err
	}
	o.tests()
	return o, nil
}

func (originFlap) listTests() []latencyDef {
	return []latencyDef{{id: "p50-ttfb-failing", title: "p50 TTFB while the origin fails", q: 50},
		{id: "grace-ratio", title: "Grace hit ratio", unit: "%"}}
}

// tests records the workload's tests.
func (o *flapSession) tests() {
	o.ttfb = o.rc.latency(o.spec, o.tgt, "p50-ttfb-failing", "p50 TTFB while the origin fails", 50)
	o.ttfb.r.Aggregation = "p50 of every request sent while the origin failed (from the instant the origin reports it started failing), of the valid measured cycles merged: answers at their first byte, timeouts at the timeout; a cycle with any other failure is invalid, and so is one whose failing-phase p50 the generator's own lateness moved (the same requests counted from their dispatch) or during which the generator was busy" + saturatedAgg
	o.gr = o.rc.newResult(o.spec, o.tgt, "grace-ratio", "Grace hit ratio", "%", false,
		"stale ÷ (stale + errors + unproven) over requests sent while the origin failed (from the instant it reports) and the object's TTL had expired; stale and fresh proven from the origin's X-Origin-Generated stamp; the valid measured cycles")
}

// Steps are one healthy warm-up phase, not counted, then the cycles.
func (o *flapSession) Steps() int   { return 1 + cyclesSetting.Of(o.cfg) }
func (o *flapSession) Close() error { return o.g.Close() }

func (o *flapSession) Step(ctx context.Context, i int) error {
	if i == 0 {
		o.rc.Progress.step("warm-up (healthy origin)", healthyPhaseSetting.Of(o.cfg))
		r, err := o.g.Run(ctx, loadgen.Pass{Path: o.path, Rate: o.rate, Duration: healthyPhaseSetting.Of(o.cfg)})
		if err != nil {
			return err
		}
		if r.Interrupted {
			return ctx.Err()
		}
		return nil
	}
	return o.cycle(ctx, i)
}

// flip is the moment the origin started failing, and the object's last
// generation before it.
type flip struct {
	at       time.Time
	answered time.Time // when SetMode returned
	lastGen  int64
	err      error
}

func (o *flapSession) cycle(ctx context.Context, c int) error {
	cfg, tgt := o.cfg, o.tgt
	o.rc.Progress.step(fmt.Sprintf("cycle %d/%d (origin fails after %s)", c, cyclesSetting.Of(cfg), healthyPhaseSetting.Of(cfg)), healthyPhaseSetting.Of(cfg)+failPhaseSetting.Of(cfg))
	o.log.reset()
	before := take(ctx, tgt)
	flipped := make(chan flip, 1)
	timer := time.AfterFunc(healthyPhaseSetting.Of(cfg), func() { flipped <- o.fail(context.WithoutCancel(ctx)) })
	started := time.Now()
	r, runErr := o.g.Run(ctx, loadgen.Pass{Path: o.path, Rate: o.rate, Duration: healthyPhaseSetting.Of(cfg) + failPhaseSetting.Of(cfg)})
	var f flip
	if timer.Stop() {
		f.err = fmt.Errorf("the origin never started failing")
	} else {
		f = <-flipped // the failure started (or is starting): wait for it, then end it
	}
	recoverErr := tgt.Origin.SetMode(context.WithoutCancel(ctx), origin.Healthy)
	if runErr != nil {
		return runErr
	}
	if r.Interrupted {
		return ctx.Err()
	}
	if recoverErr != nil {
		return fmt.Errorf("origin recover: %w", recoverErr)
	}
	_, verdict := r.Verdict()
	p := &passInfo{index: c, lr: r, reasons: verdict, started: started}
	o.rc.observe(ctx, o.spec, tgt, p, before)
	if f.err != nil {
		p.reasons = append(p.reasons, "origin control: "+f.err.Error())
	}
	o.judge(p, f)
	return o.rc.Save()
}

// fail switches the origin to the failure mode and reads when it started
// failing, by its own report, and the object's last generation before it.
// SetMode's return is no measure of the start: in refuse and drop modes it
// waits up to 2 s for the answers the origin cut.
func (o *flapSession) fail(ctx context.Context) flip {
	asked := time.Now()
	err := o.tgt.Origin.SetMode(ctx, failModeSetting.Of(o.cfg))
	returned := time.Now()
	f := flip{at: returned, answered: returned, err: err}
	st, err := o.tgt.Origin.Stats(ctx)
	if err != nil {
		f.err = errors.Join(f.err, err)
		return f
	}
	f.lastGen = st.Objects[o.path].LastGenerated
	// The origin's instant, on this machine's clock (moved by its host's
	// offset when placed, within u), must fall within the call, or it is
	// of another change.
	since, u := time.Unix(0, st.ModeSince), clockUncertainty(o.tgt.Origin)
	switch {
	case st.ModeSince == 0:
		f.err = errors.Join(f.err, fmt.Errorf("the origin did not report when it started failing (an hlsbench origin older than this one?): the failing phase is counted from when it answered the mode change, %v after it was asked",
			returned.Sub(asked).Round(time.Millisecond)))
	case st.Mode != failModeSetting.Of(o.cfg):
		f.err = errors.Join(f.err, fmt.Errorf("the origin reports mode %v since %v after it was asked for %v", st.Mode, since.UTC().Format(time.RFC3339Nano), failModeSetting.Of(o.cfg)))
	case since.Before(asked.Add(-u)) || since.After(returned.Add(u)):
		f.err = errors.Join(f.err, fmt.Errorf("the origin reports it started failing at %v, outside the %v it took to answer the mode change (from %v): the failing phase is counted from when it answered",
			since.UTC().Format(time.RFC3339Nano), returned.Sub(asked).Round(time.Millisecond), asked.UTC().Format(time.RFC3339Nano)))
	default:
		f.at = since
	}
	return f
}

// judge classes the cycle's records against the flip and adds cycle p to
// the TTFB and grace tests.
func (o *flapSession) judge(p *passInfo, f flip) {
	ttl := o.spec.Policy.ManifestTTL
	expiry := time.Unix(0, f.lastGen).Add(ttl)
	fe := &FlapEvidence{FailStart: f.at.UTC(), TTLExpiredAt: expiry.UTC(), FailMode: failModeSetting.Of(o.cfg).String()}
	if !f.answered.IsZero() {
		fe.ModeChangeAnswered = ptr(f.answered.UTC())
	}
	claimed := &results.CacheClaims{}
	// Every request of the failing phase counts in its latency: an answer
	// at its TTFB, a timeout at the timeout. Other failures have no
	// latency worth publishing and make the figure invalid. failDisp counts
	// the same requests from their dispatch, as loadgen does, so that the
	// generator's lateness is judged on the phase published, not the pass.
	failHist, failDisp := loadgen.NewHistogram(), loadgen.NewHistogram()
	failErrs := map[string]int64{}
	for _, recs := range o.log.shards {
		for i := range recs {
			fr := &recs[i]
			class := classify(fr, ttl)
			if class == "fresh" || class == "stale" {
				countClaim(claimed, fr.claim)
				if (class == "stale") != (fr.claim == loadgen.CacheStale) {
					fe.ClaimDisagreements++
				}
			}
			if fr.intended.Before(f.at) {
				count(&fe.Healthy, class)
				continue
			}
			count(&fe.Failing, class)
			if f.lastGen > 0 && !fr.intended.Before(expiry) {
				count(&fe.Window, class)
			}
			switch {
			case class != "error":
				_ = failHist.RecordValue(max(int64(fr.ttfb), 0))
				_ = failDisp.RecordValue(max(int64(fr.ttfb-fr.lag), 0))
			case fr.err == "timeout":
				_ = failHist.RecordValue(int64(fr.total))
				_ = failDisp.RecordValue(max(int64(fr.total-fr.lag), 0))
				failErrs[fr.err]++
			case fr.err != "":
				failErrs[fr.err]++
			default:
				failErrs[fmt.Sprintf("status %d", fr.status)]++
			}
		}
	}
	p.ev.Claims = claimed
	p.ev.SetPart(flapPart, fe)
	p.ev.Generator = generatorFigures(p.lr, 50)

	// TTFB while failing: a value only with good answers behind it.
	failing, window := fe.Failing, fe.Window
	var tv *float64
	var ttfbWhy []string
	sent := failing.Fresh + failing.Stale + failing.Errors + failing.Unproven
	n := sum(failErrs)
	switch {
	case sent == 0:
		ttfbWhy = append(ttfbWhy, "no request was sent while the origin failed")
	case n == sent:
		ttfbWhy = append(ttfbWhy, fmt.Sprintf("no good answer while the origin failed: %d of %d failed (%s)", n, sent, kinds(failErrs)))
	default:
		tv = msq(failHist, 50)
		if n > 0 {
			ttfbWhy = append(ttfbWhy, fmt.Sprintf("%d of %d requests while the origin failed got no good answer (%s); timeouts count at the timeout, other failures have no latency",
				n, sent, kinds(failErrs)))
		}
	}
	// The generator's lateness and a busy generator move a latency, so
	// they are judged here as for every latency test (latencyTest.add).
	late := p.instrumental(classLateness("failing-phase TTFB", failHist, failDisp, 50))
	late = append(late, p.latencyReasons()...)
	o.ttfb.addValue(p, failHist, tv, "", append(late, ttfbWhy...)...)

	// Grace: only what was proven stale counts for it.
	var graceWhy []string
	if f.lastGen == 0 {
		graceWhy = append(graceWhy, "the origin never generated the object before failing")
	}
	if n := window.Stale + window.Errors + window.Unproven; n > 0 {
		fe.GraceRatio = ptr(round3(100 * float64(window.Stale) / float64(n)))
	} else {
		graceWhy = append(graceWhy, "no request was sent after the TTL expired inside the failure phase: grace was not exercised")
	}
	if window.Unproven > 0 {
		graceWhy = append(graceWhy, fmt.Sprintf("%d answers in the failure window carried no origin stamp (%s): neither fresh nor stale can be proven; counted against grace",
			window.Unproven, origin.GeneratedHeader))
	}
	if rp := addPass(o.gr, p, fe.GraceRatio, "no request in the failure window", graceWhy...); !rp.Warmup && rp.Valid {
		o.stale += window.Stale
		o.errs += window.Errors
		o.fresh += window.Fresh
		o.unproven += window.Unproven
		v := round3(100 * float64(o.stale) / float64(o.stale+o.errs+o.unproven))
		o.gr.Value = ptr(v)
		o.gr.SetFigure(figGraceRatio, v)
		o.gr.SetFigure(figStale, float64(o.stale))
		o.gr.SetFigure(figGraceErrors, float64(o.errs))
		o.gr.SetFigure(figFresh, float64(o.fresh))
		o.gr.Recount()
	}
}

// flapRec is one request of an origin-flap cycle with its evidence.
type flapRec struct {
	intended time.Time
	ttfb     time.Duration
	total    time.Duration
	lag      time.Duration // the generator's schedule lag
	status   int
	err      string
	claim    loadgen.CacheClaim
	stamp    int64
}

// flapLog collects records per event loop, without locks.
type flapLog struct{ shards [][]flapRec }

func (l *flapLog) record(shard int, rec *loadgen.Record, check loadgen.BodyCheck) {
	fr := flapRec{intended: rec.Intended, ttfb: rec.TTFB, total: rec.Total, lag: rec.Lag, status: rec.Status, err: rec.Err, claim: rec.Cache}
	if e, ok := check.(*evidence); ok && rec.Status != 0 {
		fr.stamp = e.stamp
	}
	l.shards[shard] = append(l.shards[shard], fr)
}

func (l *flapLog) reset() {
	for i := range l.shards {
		l.shards[i] = l.shards[i][:0]
	}
}

func count(pc *PhaseCounts, class string) {
	switch class {
	case "fresh":
		pc.Fresh++
	case "stale":
		pc.Stale++
	case "error":
		pc.Errors++
	default:
		pc.Unproven++
	}
}

func countClaim(c *results.CacheClaims, claim loadgen.CacheClaim) {
	switch claim {
	case loadgen.CacheHit:
		c.Hit++
	case loadgen.CacheMiss:
		c.Miss++
	case loadgen.CacheStale:
		c.Stale++
	default:
		c.Unknown++
	}
}

// classify proves an answer fresh or stale from the origin's stamp: a copy
// younger than the TTL when it was answered is fresh, an older one stale.
func classify(fr *flapRec, ttl time.Duration) string {
	if fr.err != "" || fr.status < 200 || fr.status > 299 {
		return "error"
	}
	if fr.stamp == 0 {
		return "unproven"
	}
	answered := fr.intended.Add(fr.ttfb)
	if answered.Sub(time.Unix(0, fr.stamp)) < ttl {
		return "fresh"
	}
	return "stale"
}

func sum(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// flapPart is the key of FlapEvidence in a pass's evidence.
const flapPart = "flap"

// The grace test's own figures in its result, over the valid passes' failure
// windows: the grace ratio (its value), and the stale answers, failed answers
// and fresh answers behind it. A stale answer counted by purge's and bans'
// tests is their figStale too.
const (
	figGraceRatio  = "grace_ratio"
	figStale       = "stale"
	figGraceErrors = "grace_errors"
	figFresh       = "fresh"
)

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
