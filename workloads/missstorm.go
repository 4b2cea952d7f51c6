package workloads

import (
	"context"
	"fmt"
	"time"

	"github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/origin"
	"github.com/hlsbench/hlsbench/results"
	"github.com/hlsbench/hlsbench/workloads/loadgen"
)

// MissStorm is many clients at once on a cold segment: coalescing,
// counted at the origin.
const MissStorm = "miss-storm"

type missStorm struct{}

// clientsSetting is how many clients a burst releases at once.
var clientsSetting = intSetting("clients", 200, "miss-storm: clients released together on a cold segment").
	Accept(between(1, 10000, "1 to 10000")).Record("miss_storm_clients")

// The keys of missstorm's own conditions in the results.
const (
	burstCondition = "burst" // how many clients a burst releases at once
)

// conditionFacts is the burst, beside the rate on a page.
func (missStorm) conditionFacts(c results.Conditions) (load, rest []results.Fact) {
	if n, _ := results.OwnCondition[int](c, burstCondition); n > 0 {
		load = append(load, results.Fact{Label: "Burst", Value: fmt.Sprintf("%d clients released at once", n)})
	}
	return load, nil
}

func (missStorm) measuresCache() {}
func (missStorm) spreads()       {}

func (missStorm) Settings() []Setting { return []Setting{clientsSetting} }

func (missStorm) Spec() Spec {
	p := engines.DefaultPolicy()
	p.SegmentTTL = 24 * time.Hour
	return Spec{Name: MissStorm, Title: "Miss-storm coalescing", Policy: p,
		Description: "200 clients released together on a never-requested 4 MiB segment; origin fetches counted at the origin"}
}

func (missStorm) Conditions(s Spec, cfg Config) results.Conditions {
	c := protocol(cfg)
	c.Connections, c.ObjectBytes = clientsSetting.Of(cfg), origin.DefaultSegmentSize
	c.SetOwn(burstCondition, clientsSetting.Of(cfg))
	return c
}

func (missStorm) Estimate(cfg Config) time.Duration {
	return startEstimate + time.Duration(max(cfg.Warmups, 0)+cfg.Passes)*burstEstimate
}

type missStormSession struct {
	spec     *Spec
	cfg      Config
	tgt      *Target
	rc       *Recorder
	g        loader
	ev       *evidenceSet
	p50, p99 *latencyTest
	co       *results.Result

	clients, fetches int64 // over the valid measured bursts
}

func (missStorm) listTests() []latencyDef {
	return []latencyDef{{id: "p50-ttfb", title: "p50 TTFB", q: 50}, {id: "p99-ttfb", title: "p99 TTFB", q: 99},
		{id: "coalescing", title: "Coalescing efficiency", unit: "x", axis: "Clients per origin fetch (200 x is perfect coalescing)"}}
}

func (missStorm) Open(ctx context.Context, s Spec, cfg Config, tgt *Target, rc *Recorder) (Session, error) {
	ev := newEvidenceSet(tgt.Seed)
	g, err := newLoader(ctx, tgt, &cfg, clientsSetting.Of(cfg), ev, nil)
	if err != nil {
		return nil, err
	}
	return &missStormSession{spec: &s, cfg: cfg, tgt: tgt, rc: rc, g: g, ev: ev,
		p50: rc.latency(&s, tgt, "p50-ttfb", "p50 TTFB", 50),
		p99: rc.latency(&s, tgt, "p99-ttfb", "p99 TTFB", 99),
		co: rc.newResult(&s, tgt, "coalescing", "Coalescing efficiency", "x", false,
			"clients ÷ origin fetches of the burst's object, counted at the origin, over the valid measured bursts"),
	}, nil
}

func (m *missStormSession) Steps() int   { return m.cfg.Warmups + m.cfg.Passes }
func (m *missStormSession) Close() error { return m.g.Close() }

func (m *missStormSession) Step(ctx context.Context, i int) error {
	m.rc.Progress.step(passLabel(i, m.cfg.Warmups, m.cfg.Passes, "burst"), burstEstimate)
	clients := clientsSetting.Of(m.cfg)
	n := int64(1_000_000 + i) // a segment no earlier burst asked for
	m.ev.segN = n
	path := fmt.Sprintf(SegmentPath, n) + "?run=" + m.tgt.Nonce
	before := take(ctx, m.tgt)
	started := time.Now()
	r, err := m.g.Run(ctx, loadgen.Pass{Burst: clients, Path: path})
	if err != nil {
		return err
	}
	if r.Interrupted {
		return ctx.Err()
	}
	p := newPass(i, m.cfg.Warmups, r, generatorReasons(r))
	p.started = started
	fetches := m.rc.observe(ctx, m.spec, m.tgt, p, before).origin.Objects[path].Fetches
	if before.origin.Objects[path].Fetches != 0 {
		p.reasons = append(p.reasons, "the object was fetched before the burst: not cold")
	}
	if fetches == 0 {
		p.reasons = append(p.reasons, "no origin fetch for the burst's object: it was not cold, coalescing cannot be measured")
	}
	p.ev.SetPart(burstPart, &BurstEvidence{Object: path, ObjectFetches: fetches, Clients: clients})
	p.ev.Claims = claims(r)
	p.ev.Generator = generatorFigures(r, 50, 99)
	m.p50.add(p, r.TTFB, p.instrumental(lateness(r, 50))...)
	m.p99.add(p, r.TTFB, p.instrumental(lateness(r, 99))...)
	var x *float64
	why := ""
	if fetches > 0 {
		x = ptr(round3(float64(clients) / float64(fetches)))
	} else {
		why = "no origin fetch for the burst's object"
	}
	if rp := addPass(m.co, p, x, why); !rp.Warmup && rp.Valid {
		m.clients += int64(clients)
		m.fetches += fetches
		v := round3(float64(m.clients) / float64(m.fetches))
		m.co.Value = ptr(v)
		m.co.SetFigure(figCoalescing, v)
		m.co.SetFigure(figOriginFetches, float64(m.fetches))
		m.co.Recount()
	}
	return m.rc.Save()
}

// figCoalescing is the coalescing test's own figure in its result: the
// clients per origin fetch over the valid passes (its value), beside the
// origin fetches behind it (figOriginFetches).
const figCoalescing = "coalescing_x"

// burstPart is the key of BurstEvidence in a pass's evidence.
const burstPart = "burst"

// BurstEvidence is a miss-storm burst's object and the origin's fetches of
// it: coalescing is Clients ÷ ObjectFetches.
type BurstEvidence struct {
	Object        string `json:"object"`
	ObjectFetches int64  `json:"object_fetches"`
	Clients       int    `json:"clients"`
}
