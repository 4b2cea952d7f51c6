package workloads

import (
	"context"
	"fmt"
	"time"

	"github.com/hlsbench/hlsbench/origin"
	"github.com/hlsbench/hlsbench/workloads/loadgen"
)

// Run runs one workload against a target, recording every pass in rc and
// saving after each. A cancelled ctx stops it after the passes that finished.
func Run(ctx context.Context, spec Spec, cfg Config, tgt *Target, rc *Recorder) error {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return err
	}
	switch spec.Name {
	case HitPath:
		return runHitPath(ctx, &spec, &cfg, tgt, rc)
	case Segment:
		return runSegment(ctx, &spec, &cfg, tgt, rc)
	case MissStorm:
		return runMissStorm(ctx, &spec, &cfg, tgt, rc)
	case OriginFlap:
		return runOriginFlap(ctx, &spec, &cfg, tgt, rc)
	}
	return fmt.Errorf("unknown workload %q", spec.Name)
}

func newGenerator(ctx context.Context, tgt *Target, cfg *Config, conns int, ev *evidenceSet, onRecord func(int, *loadgen.Record, loadgen.BodyCheck)) (*loadgen.Generator, error) {
	g, err := loadgen.New(ctx, loadgen.Options{URL: tgt.URL, Connections: conns, Timeout: cfg.Timeout,
		BodyCheck: ev.factory, OnRecord: onRecord, CPUs: cfg.CPUs})
	if err != nil {
		return nil, fmt.Errorf("load generator: %w", err)
	}
	return g, nil
}

// warm fetches an object until the cache holds it. Failed requests do not
// stop the workload (its passes will show them) but are noted in the run.
func warm(ctx context.Context, g *loadgen.Generator, rc *Recorder, path string, header [][2]string) error {
	r, err := g.Run(ctx, loadgen.Pass{Path: path, Header: header, Requests: 3, Duration: time.Minute})
	if err != nil {
		return err
	}
	if r.Interrupted {
		return ctx.Err()
	}
	if r.OK != 3 {
		rc.Run.Warnings = append(rc.Run.Warnings, fmt.Sprintf("warming %s: %d of 3 requests failed (%s)", path, r.Errors, kinds(r.ErrorsByKind)))
	}
	return nil
}

// ratePasses runs warm-ups and measured passes of one request at a rate and
// feeds each pass's TTFB to the latency tests.
func ratePasses(ctx context.Context, g *loadgen.Generator, spec *Spec, tgt *Target, cfg *Config, rc *Recorder,
	what string, pass loadgen.Pass, tests ...*latencyTest) error {
	for i := 0; i < cfg.Warmups+cfg.Passes; i++ {
		rc.Progress.step(what+passLabel(i, cfg.Warmups, cfg.Passes, ""), pass.Duration)
		before := take(ctx, tgt)
		r, err := g.Run(ctx, pass)
		if err != nil {
			return err
		}
		if r.Interrupted {
			return ctx.Err()
		}
		p := newPass(i, cfg.Warmups, r, generatorReasons(r))
		rc.observe(ctx, spec, tgt, p, before)
		p.extra["cache_claims"] = claims(r)
		p.extra["ttfb_uncorrected_p50_ms"] = msq(r.TTFBUncorrected, 50)
		p.extra["total_p50_ms"] = msq(r.Total, 50)
		p.extra["total_p99_ms"] = msq(r.Total, 99)
		p.extra["schedule_lag_p99_ms"] = msq(r.ScheduleLag, 99)
		p.extra["lag_effect"] = lagEvidence(r, 50, 99)
		p.extra["generator_cpu_s"] = round3(r.CPUSeconds)
		for _, t := range tests {
			t.add(p, r.TTFB, lateness(r, t.q)...)
		}
		if err := rc.Save(); err != nil {
			return err
		}
	}
	return nil
}

func runHitPath(ctx context.Context, spec *Spec, cfg *Config, tgt *Target, rc *Recorder) error {
	ev := newEvidenceSet(tgt.Seed)
	g, err := newGenerator(ctx, tgt, cfg, pick(cfg.Connections, spec.Connections), ev, nil)
	if err != nil {
		return err
	}
	defer g.Close()
	path := ManifestPath + "?run=" + tgt.Nonce
	if err := warm(ctx, g, rc, path, nil); err != nil {
		return err
	}
	p50 := rc.latency(spec, tgt, "p50-ttfb", "p50 TTFB", 50)
	p99 := rc.latency(spec, tgt, "p99-ttfb", "p99 TTFB", 99)
	return ratePasses(ctx, g, spec, tgt, cfg, rc, "", loadgen.Pass{Path: path, Rate: pick(cfg.Rate, spec.Rate), Duration: cfg.PassDuration}, p50, p99)
}

func runSegment(ctx context.Context, spec *Spec, cfg *Config, tgt *Target, rc *Recorder) error {
	ev := newEvidenceSet(tgt.Seed)
	g, err := newGenerator(ctx, tgt, cfg, pick(cfg.Connections, spec.Connections), ev, nil)
	if err != nil {
		return err
	}
	defer g.Close()
	ev.segN = 0
	path := fmt.Sprintf(SegmentPath, 0) + "?run=" + tgt.Nonce
	if err := warm(ctx, g, rc, path, nil); err != nil {
		return err
	}
	rate := pick(cfg.Rate, spec.Rate)
	full50 := rc.latency(spec, tgt, "full-p50-ttfb", "p50 TTFB, 4 MiB full GET", 50)
	full99 := rc.latency(spec, tgt, "full-p99-ttfb", "p99 TTFB, 4 MiB full GET", 99)
	if err := ratePasses(ctx, g, spec, tgt, cfg, rc, "full GET ", loadgen.Pass{Path: path, Rate: rate, Duration: cfg.PassDuration}, full50, full99); err != nil {
		return err
	}
	rng := [][2]string{{"Range", "bytes=0-65535"}}
	range50 := rc.latency(spec, tgt, "range-p50-ttfb", "p50 TTFB, 64 KiB Range GET", 50)
	range99 := rc.latency(spec, tgt, "range-p99-ttfb", "p99 TTFB, 64 KiB Range GET", 99)
	return ratePasses(ctx, g, spec, tgt, cfg, rc, "Range GET ", loadgen.Pass{Path: path, Header: rng, Rate: rate, Duration: cfg.PassDuration}, range50, range99)
}

func runMissStorm(ctx context.Context, spec *Spec, cfg *Config, tgt *Target, rc *Recorder) error {
	clients := cfg.Clients
	ev := newEvidenceSet(tgt.Seed)
	g, err := newGenerator(ctx, tgt, cfg, clients, ev, nil)
	if err != nil {
		return err
	}
	defer g.Close()
	p50 := rc.latency(spec, tgt, "p50-ttfb", "p50 TTFB", 50)
	p99 := rc.latency(spec, tgt, "p99-ttfb", "p99 TTFB", 99)
	co := rc.newResult(spec, tgt, "coalescing", "Coalescing efficiency", "x", false,
		"clients ÷ origin fetches of the burst's object, counted at the origin, over the valid measured bursts")
	var clientsTotal, fetchesTotal int64
	for i := 0; i < cfg.Warmups+cfg.Passes; i++ {
		rc.Progress.step(passLabel(i, cfg.Warmups, cfg.Passes, "burst"), burstEstimate)
		n := int64(1_000_000 + i) // a segment no earlier burst asked for
		ev.segN = n
		path := fmt.Sprintf(SegmentPath, n) + "?run=" + tgt.Nonce
		before := take(ctx, tgt)
		r, err := g.Run(ctx, loadgen.Pass{Burst: clients, Path: path})
		if err != nil {
			return err
		}
		if r.Interrupted {
			return ctx.Err()
		}
		p := newPass(i, cfg.Warmups, r, generatorReasons(r))
		fetches := rc.observe(ctx, spec, tgt, p, before).origin.Objects[path].Fetches
		if before.origin.Objects[path].Fetches != 0 {
			p.reasons = append(p.reasons, "the object was fetched before the burst: not cold")
		}
		if fetches == 0 {
			p.reasons = append(p.reasons, "no origin fetch for the burst's object: it was not cold, coalescing cannot be measured")
		}
		p.extra["object"] = path
		p.extra["object_fetches"] = fetches
		p.extra["clients"] = clients
		p.extra["cache_claims"] = claims(r)
		p.extra["total_p50_ms"] = msq(r.Total, 50)
		p.extra["lag_effect"] = lagEvidence(r, 50, 99)
		p50.add(p, r.TTFB, lateness(r, 50)...)
		p99.add(p, r.TTFB, lateness(r, 99)...)
		var x *float64
		why := ""
		if fetches > 0 {
			x = ptr(round3(float64(clients) / float64(fetches)))
		} else {
			why = "no origin fetch for the burst's object"
		}
		if rp := addPass(co, p, x, why); !rp.Warmup && rp.Valid {
			clientsTotal += int64(clients)
			fetchesTotal += fetches
			co.OriginFetches = ptr(fetchesTotal)
			v := round3(float64(clientsTotal) / float64(fetchesTotal))
			co.Value, co.CoalescingX = ptr(v), ptr(v)
			co.Recount()
		}
		if err := rc.Save(); err != nil {
			return err
		}
	}
	return nil
}

// flapRec is one request of an origin-flap cycle with its evidence.
type flapRec struct {
	intended time.Time
	ttfb     time.Duration
	total    time.Duration
	status   int
	err      string
	claim    loadgen.CacheClaim
	stamp    int64
}

// flapLog collects records per event loop, without locks.
type flapLog struct{ shards [][]flapRec }

func (l *flapLog) record(shard int, rec *loadgen.Record, check loadgen.BodyCheck) {
	fr := flapRec{intended: rec.Intended, ttfb: rec.TTFB, total: rec.Total, status: rec.Status, err: rec.Err, claim: rec.Cache}
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

// phaseCounts classes answers from the origin's evidence.
type phaseCounts struct {
	Fresh    int64 `json:"fresh"`
	Stale    int64 `json:"stale"`
	Errors   int64 `json:"errors"`
	Unproven int64 `json:"unproven"` // answered without the origin's stamp
}

func (pc *phaseCounts) count(class string) {
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

func runOriginFlap(ctx context.Context, spec *Spec, cfg *Config, tgt *Target, rc *Recorder) error {
	ttl := spec.Policy.ManifestTTL
	log := &flapLog{}
	ev := newEvidenceSet(tgt.Seed)
	g, err := newGenerator(ctx, tgt, cfg, pick(cfg.Connections, spec.Connections), ev, log.record)
	if err != nil {
		return err
	}
	defer g.Close()
	log.shards = make([][]flapRec, g.Shards())
	path := ManifestPath + "?run=" + tgt.Nonce + "-flap"
	rate := pick(cfg.Rate, spec.Rate)
	if err := warm(ctx, g, rc, path, nil); err != nil {
		return err
	}

	ttfb := rc.latency(spec, tgt, "p50-ttfb-failing", "p50 TTFB while the origin fails", 50)
	ttfb.r.Aggregation = "p50 of every request sent while the origin failed, of the valid measured cycles merged: answers at their first byte, timeouts at the timeout; a cycle with any other failure is invalid"
	gr := rc.newResult(spec, tgt, "grace-ratio", "Grace hit ratio", "%", false,
		"stale ÷ (stale + errors + unproven) over requests sent while the origin failed and the object's TTL had expired; stale and fresh proven from the origin's X-Origin-Generated stamp; the valid measured cycles")
	var stale, errs, fresh, unproven int64

	// One warm-up: a healthy phase, not counted.
	rc.Progress.step("warm-up (healthy origin)", cfg.HealthyPhase)
	if r, err := g.Run(ctx, loadgen.Pass{Path: path, Rate: rate, Duration: cfg.HealthyPhase}); err != nil {
		return err
	} else if r.Interrupted {
		return ctx.Err()
	}

	for c := 1; c <= cfg.Cycles; c++ {
		rc.Progress.step(fmt.Sprintf("cycle %d/%d (origin fails after %s)", c, cfg.Cycles, cfg.HealthyPhase), cfg.HealthyPhase+cfg.FailPhase)
		log.reset()
		before := take(ctx, tgt)
		type flip struct {
			at      time.Time
			lastGen int64
			err     error
		}
		flipped := make(chan flip, 1)
		timer := time.AfterFunc(cfg.HealthyPhase, func() {
			err := tgt.Origin.SetMode(context.WithoutCancel(ctx), cfg.FailMode)
			f := flip{at: time.Now(), err: err}
			if st, err := tgt.Origin.Stats(context.WithoutCancel(ctx)); err == nil {
				f.lastGen = st.Objects[path].LastGenerated
			} else if f.err == nil {
				f.err = err
			}
			flipped <- f
		})
		r, runErr := g.Run(ctx, loadgen.Pass{Path: path, Rate: rate, Duration: cfg.HealthyPhase + cfg.FailPhase})
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
		p := &passInfo{index: c, lr: r, reasons: verdict}
		rc.observe(ctx, spec, tgt, p, before)
		if f.err != nil {
			p.reasons = append(p.reasons, "origin control: "+f.err.Error())
		}
		expiry := time.Unix(0, f.lastGen).Add(ttl)
		var healthy, failing, window phaseCounts
		claimed := map[string]int64{}
		var disagree int64
		// Every request of the failing phase counts in its latency: an
		// answer at its TTFB, a timeout at the timeout. Other failures have
		// no latency worth publishing and make the figure invalid.
		failHist := loadgen.NewHistogram()
		failErrs := map[string]int64{}
		for _, recs := range log.shards {
			for i := range recs {
				fr := &recs[i]
				class := classify(fr, ttl)
				if class == "fresh" || class == "stale" {
					claimed[fr.claim.String()]++
					if (class == "stale") != (fr.claim == loadgen.CacheStale) {
						disagree++
					}
				}
				if fr.intended.Before(f.at) {
					healthy.count(class)
					continue
				}
				failing.count(class)
				if f.lastGen > 0 && !fr.intended.Before(expiry) {
					window.count(class)
				}
				switch {
				case class != "error":
					_ = failHist.RecordValue(max(int64(fr.ttfb), 0))
				case fr.err == "timeout":
					_ = failHist.RecordValue(int64(fr.total))
					failErrs[fr.err]++
				case fr.err != "":
					failErrs[fr.err]++
				default:
					failErrs[fmt.Sprintf("status %d", fr.status)]++
				}
			}
		}
		p.extra["healthy"] = healthy
		p.extra["failing"] = failing
		p.extra["expired_window"] = window
		p.extra["fail_start"] = f.at.UTC().Format(time.RFC3339Nano)
		p.extra["ttl_expired_at"] = expiry.UTC().Format(time.RFC3339Nano)
		p.extra["fail_mode"] = cfg.FailMode.String()
		p.extra["cache_claims"] = claimed
		p.extra["claim_disagreements"] = disagree

		// TTFB while failing: a value only with good answers behind it.
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
		ttfb.addValue(p, failHist, tv, "", append(lateness(r, 50), ttfbWhy...)...)

		// Grace: only what was proven stale counts for it.
		var ratio *float64
		var graceWhy []string
		if f.lastGen == 0 {
			graceWhy = append(graceWhy, "the origin never generated the object before failing")
		}
		if n := window.Stale + window.Errors + window.Unproven; n > 0 {
			ratio = ptr(round3(100 * float64(window.Stale) / float64(n)))
		} else {
			graceWhy = append(graceWhy, "no request was sent after the TTL expired inside the failure phase: grace was not exercised")
		}
		if window.Unproven > 0 {
			graceWhy = append(graceWhy, fmt.Sprintf("%d answers in the failure window carried no origin stamp (%s): neither fresh nor stale can be proven; counted against grace",
				window.Unproven, origin.GeneratedHeader))
		}
		p.extra["grace_ratio"] = ratio
		if rp := addPass(gr, p, ratio, "no request in the failure window", graceWhy...); !rp.Warmup && rp.Valid {
			stale += window.Stale
			errs += window.Errors
			fresh += window.Fresh
			unproven += window.Unproven
			v := round3(100 * float64(stale) / float64(stale+errs+unproven))
			gr.Value, gr.GraceRatio = ptr(v), ptr(v)
			gr.Stale, gr.GraceErrors, gr.Fresh = ptr(stale), ptr(errs), ptr(fresh)
			gr.Recount()
		}
		if err := rc.Save(); err != nil {
			return err
		}
	}
	return nil
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

func ptr[T any](v T) *T { return &v }
