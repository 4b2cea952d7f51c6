package workloads

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/hlsbench/hlsbench/origin"
	"github.com/hlsbench/hlsbench/results"
	"github.com/hlsbench/hlsbench/workloads/loadgen"
)

// series is one request at a rate, passed warm-ups first, whose TTFB feeds
// latency tests.
type series struct {
	label string // "full GET " or ""
	pass  loadgen.Pass
	tests []*latencyTest
}

// rateSession runs one or more series back to back on one generator (the
// hit path's one, the segment's full and Range GETs).
type rateSession struct {
	spec   *Spec
	cfg    Config
	tgt    *Target
	rc     *Recorder
	g      loader // nil while its cell rests
	series []series
	log    *sendLog
	// What a new generator is made of when the cell is started again
	// (Resume): its connections, the body checks, the send log's hook,
	// and the object it warms.
	conns    int
	ev       *evidenceSet
	onRecord func(int, *loadgen.Record, loadgen.BodyCheck)
	path     string
}

func (s *rateSession) perSeries() int { return s.cfg.Warmups + s.cfg.Passes }

func (s *rateSession) Steps() int { return len(s.series) * s.perSeries() }

func (s *rateSession) Close() error {
	if s.g == nil {
		return nil
	}
	return s.g.Close()
}

// Rest closes the generator (its connections) before the cell's engine
// and origin are stopped between its steps.
func (s *rateSession) Rest() error {
	err := s.Close()
	s.g = nil
	return err
}

// Resume makes a generator on the cell's new target and warms the object
// in the new engine's empty cache, as Open did, before the next step.
func (s *rateSession) Resume(ctx context.Context, tgt *Target) error {
	g, err := newLoader(ctx, tgt, &s.cfg, s.conns, s.ev, s.onRecord)
	if err != nil {
		return err
	}
	s.g, s.tgt = g, tgt
	s.log.shards = make([][]sendRec, g.Shards())
	return warm(ctx, g, s.rc, s.path, nil)
}

func (s *rateSession) Step(ctx context.Context, step int) error {
	sr, i := &s.series[step/s.perSeries()], step%s.perSeries()
	return s.pass(ctx, sr, i, passLabel(i, s.cfg.Warmups, s.cfg.Passes, ""))
}

// PerPass is a step per series: one more measured pass of each.
func (s *rateSession) PerPass() int { return len(s.series) }

// Extra runs measured pass Passes+1+e/PerPass of series e%PerPass, after
// the planned ones, recorded as they are.
func (s *rateSession) Extra(ctx context.Context, e int) error {
	sr, n := &s.series[e%len(s.series)], s.cfg.Passes+e/len(s.series)
	return s.pass(ctx, sr, s.cfg.Warmups+n, fmt.Sprintf("pass %d (%d planned, more to decide)", n+1, s.cfg.Passes))
}

// pass runs and records pass i of a series (warm-ups first), label its
// progress line.
func (s *rateSession) pass(ctx context.Context, sr *series, i int, label string) error {
	s.rc.Progress.step(sr.label+label, sr.pass.Duration)
	spoiled := make([][]results.SpoiledAttempt, len(sr.tests))
	for attempt := 0; ; attempt++ {
		before := take(ctx, s.tgt)
		started := time.Now()
		w := startWatch(s.tgt, s.log)
		r, err := s.g.Run(ctx, sr.pass)
		w.stop()
		if err != nil {
			return err
		}
		if r.Interrupted {
			return ctx.Err()
		}
		p := newPass(i, s.cfg.Warmups, r, generatorReasons(r))
		p.started = started
		p.sampledBy(w)
		s.rc.observe(ctx, s.spec, s.tgt, p, before)
		p.ev.Stalls = stallEvidence(w.stalls, started)
		p.excuseHostWaits(w)
		p.ev.Claims = claims(r)
		p.ev.Generator = generatorFigures(r, 50, 99)
		var recs []sendRec
		if s.log != nil {
			recs = s.log.all()
		}
		qs := make([]float64, len(sr.tests))
		for k, t := range sr.tests {
			qs[k] = t.q
		}
		more, invalidFor, spoil, host := judgeTests(p, qs, r, recs, w)
		if host != "" {
			if !p.warmup && attempt < s.cfg.HostRepeats {
				for k, t := range sr.tests {
					v, why := p.latencyValue(r.TTFB, t.q)
					reasons := append(append(append([]string{}, p.reasons...), more[k]...), p.latencyReasonsAt(t.q)...)
					if !invalidFor[k] {
						// Valid for this test, run again for the others.
						reasons = append(reasons, spoil...)
					}
					if v == nil && why != "" {
						reasons = append(reasons, why)
					}
					spoiled[k] = append(spoiled[k], results.SpoiledAttempt{StartedAt: started.UTC(), Value: v,
						InvalidReasons: reasons, Host: host, Evidence: &results.Evidence{OtherCPU: p.ev.OtherCPU, Stalls: p.ev.Stalls, Hosts: p.ev.Hosts}})
				}
				continue
			}
		}
		for k, t := range sr.tests {
			t.add(p, r.TTFB, more[k]...)
			if len(spoiled[k]) > 0 {
				t.r.Passes[len(t.r.Passes)-1].Spoiled = spoiled[k]
			}
		}
		return s.rc.Save()
	}
}

// judgeTests judges a rate pass for its tests of quantiles qs, each on its
// own reasons: more are the instrument's (the generator's lateness, the
// host's queue of waits), invalidFor says which tests the pass is invalid
// for, and when it is invalid for one and the host spoiled it, host says
// how and spoil, the reason naming it, is in the more of each invalid
// test. A p99 moved by the generator's lateness does not take the p50
// with it.
func judgeTests(p *passInfo, qs []float64, r *loadgen.Result, recs []sendRec, w *hostWatch) (more [][]string, invalidFor []bool, spoil []string, host string) {
	more, invalidFor = make([][]string, len(qs)), make([]bool, len(qs))
	invalid := false
	for k, q := range qs {
		more[k] = p.instrumental(append(judgeLateness(r, q, recs, w, p.ev), nonEmpty(p.hostWaitsAt[q])...))
		invalidFor[k] = len(p.reasons) > 0 || len(p.latencyReasonsAt(q)) > 0 || len(more[k]) > 0
		invalid = invalid || invalidFor[k]
	}
	if host = hostSpoil(p.ev, r.Elapsed); !invalid || host == "" {
		return more, invalidFor, nil, ""
	}
	spoil = p.instrumental([]string{"the host spoiled the pass: " + host})
	for k := range more {
		if invalidFor[k] {
			more[k] = append(more[k], spoil...)
		}
	}
	return more, invalidFor, spoil, host
}

// openRate makes a generator, warms the object and lists the series.
func openRate(ctx context.Context, spec *Spec, cfg Config, tgt *Target, rc *Recorder, segN int64, path string, series []series) (*rateSession, error) {
	ev := newEvidenceSet(tgt.Seed)
	ev.segN = segN
	if tgt.OriginConfig != nil {
		ev.know(*tgt.OriginConfig, path)
	}
	log := &sendLog{}
	onRecord := log.onRecord
	if len(tgt.Agents) > 0 {
		// The send log serves this host's stall watch, which does not
		// watch other hosts: their records would only cost the transfer.
		onRecord = nil
	}
	conns := pick(cfg.Connections, spec.Connections)
	g, err := newLoader(ctx, tgt, &cfg, conns, ev, onRecord)
	if err != nil {
		return nil, err
	}
	log.shards = make([][]sendRec, g.Shards())
	if err := warm(ctx, g, rc, path, nil); err != nil {
		g.Close()
		return nil, err
	}
	for _, sr := range series {
		for _, t := range sr.tests {
			t.r.Aggregation += saturatedAtAgg
		}
	}
	return &rateSession{spec: spec, cfg: cfg, tgt: tgt, rc: rc, g: g, series: series, log: log,
		conns: conns, ev: ev, onRecord: onRecord, path: path}, nil
}

func newGenerator(ctx context.Context, tgt *Target, cfg *Config, conns int, ev *evidenceSet, onRecord func(int, *loadgen.Record, loadgen.BodyCheck)) (*loadgen.Generator, error) {
	g, err := loadgen.New(ctx, loadgen.Options{URL: tgt.URL, TLSConfig: tgt.TLS, Connections: conns, Timeout: cfg.Timeout,
		ChecksumHeader: origin.ChecksumHeader, BodyCheck: ev.factory, OnRecord: onRecord, CPUs: cfg.CPUs,
		// An engine or origin inside this process collects its own
		// garbage during passes, as it would anywhere.
		KeepGC: tgt.InProcess})
	if err != nil {
		return nil, fmt.Errorf("load generator: %w", err)
	}
	return g, nil
}

// warm fetches an object until the cache holds it. Failed requests do not
// stop the workload (its passes will show them) but are noted in the run.
func warm(ctx context.Context, g loader, rc *Recorder, path string, header [][2]string) error {
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

// generatorFigures are the generator's figures a workload keeps beside its
// tests, with the lateness evidence of the quantiles it publishes.
func generatorFigures(r *loadgen.Result, quantiles ...float64) *results.GeneratorFigures {
	g := &results.GeneratorFigures{TTFBUncorrectedP50Ms: msq(r.TTFBUncorrected, 50), TotalP50Ms: msq(r.Total, 50),
		TotalP99Ms: msq(r.Total, 99), ScheduleLagP99Ms: msq(r.ScheduleLag, 99), CPUSeconds: round3(r.CPUSeconds)}
	g.TLS, g.Hosts = r.TLS, r.Parts
	g.ConnectionWaits = JudgeShortfall(r).Waits
	for _, e := range r.LagEffects {
		if slices.Contains(quantiles, e.Quantile) {
			g.LagEffect = append(g.LagEffect, e.Ms())
		}
	}
	return g
}

func claims(r *loadgen.Result) *results.CacheClaims {
	return &results.CacheClaims{Hit: r.Cache.Hit, Miss: r.Cache.Miss, Stale: r.Cache.Stale, Unknown: r.Cache.Unknown}
}

func pick[T comparable](override, def T) T {
	var zero T
	if override != zero {
		return override
	}
	return def
}

func ptr[T any](v T) *T { return &v }
