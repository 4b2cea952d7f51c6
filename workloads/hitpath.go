package workloads

import (
	"context"
	"time"

	"github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/origin"
	"github.com/hlsbench/hlsbench/results"
	"github.com/hlsbench/hlsbench/workloads/loadgen"
)

// HitPath is TTFB on the media playlist from a warm cache.
const HitPath = "hit-path"

// ManifestPath is the media playlist the workloads request.
const ManifestPath = "/stream/index.m3u8"

type hitPath struct{}

func (hitPath) spreads() {}
func (hitPath) extends() {}

func (hitPath) Spec() Spec {
	p := engines.DefaultPolicy()
	// A TTL longer than any run: every request is a pure hit.
	p.ManifestTTL = 24 * time.Hour
	return Spec{Name: HitPath, Title: "Hit-path TTFB", Rate: 5000, Connections: 50, Policy: p,
		Description: "TTFB at 5000 rps on the 2 KB media playlist, warm cache"}
}

func (hitPath) Conditions(s Spec, cfg Config) results.Conditions {
	c := protocol(cfg)
	c.RateRPS, c.Connections = pick(cfg.Rate, s.Rate), pick(cfg.Connections, s.Connections)
	c.ObjectBytes, c.PassDuration = origin.DefaultManifestSize, results.Duration(cfg.PassDuration)
	return c
}

func (hitPath) Estimate(cfg Config) time.Duration {
	return startEstimate + time.Duration(max(cfg.Warmups, 0)+cfg.Passes)*cfg.PassDuration
}

// hitPathTests are hit-path's tests.
var hitPathTests = []latencyDef{{id: "p50-ttfb", title: "p50 TTFB", q: 50}, {id: "p99-ttfb", title: "p99 TTFB", q: 99}}

// Tests are the tests of hit-path, which runs over every topology.
func (hitPath) Tests() []latencyDef { return hitPathTests }

func (hitPath) Open(ctx context.Context, s Spec, cfg Config, tgt *Target, rc *Recorder) (Session, error) {
	path := ManifestPath + "?run=" + tgt.Nonce
	sess, err := openRate(ctx, &s, cfg, tgt, rc, -1, path, []series{{
		pass:  loadgen.Pass{Path: path, Rate: pick(cfg.Rate, s.Rate), Duration: cfg.PassDuration},
		tests: rc.latencies(&s, tgt, hitPathTests),
	}})
	if err != nil {
		return nil, err // a nil *rateSession is not a nil Session
	}
	return sess, nil
}
