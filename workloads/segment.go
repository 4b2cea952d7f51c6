package workloads

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/origin"
	"github.com/hlsbench/hlsbench/results"
	"github.com/hlsbench/hlsbench/workloads/loadgen"
)

// Segment is a 4 MiB segment served whole and as a 64 KiB Range.
const Segment = "segment"

// SegmentPath is a segment the workloads request (the origin serves any
// number).
const SegmentPath = "/stream/segment-%d.ts"

// rangeBytes is the Range GET's length.
const rangeBytes = 65536

type segment struct{}

func (segment) spreads() {}
func (segment) extends() {}

func (segment) Spec() Spec {
	p := engines.DefaultPolicy()
	p.SegmentTTL = 24 * time.Hour
	return Spec{Name: Segment, Title: "4 MB segment serve", Rate: 500, Connections: 20, Policy: p,
		Description: "4 MiB full GET and 64 KiB Range GET, each at 500 rps, warm cache"}
}

func (segment) Conditions(s Spec, cfg Config) results.Conditions {
	c := protocol(cfg)
	c.RateRPS, c.Connections = pick(cfg.Rate, s.Rate), pick(cfg.Connections, s.Connections)
	c.ObjectBytes, c.RangeBytes = origin.DefaultSegmentSize, rangeBytes
	c.PassDuration = results.Duration(cfg.PassDuration)
	return c
}

func (segment) Estimate(cfg Config) time.Duration {
	return startEstimate + 2*time.Duration(max(cfg.Warmups, 0)+cfg.Passes)*cfg.PassDuration
}

// segment's tests: the full GET's, then the Range GET's.
var (
	segmentFullTests  = []latencyDef{{id: "full-p50-ttfb", title: "p50 TTFB, 4 MiB full GET", q: 50}, {id: "full-p99-ttfb", title: "p99 TTFB, 4 MiB full GET", q: 99}}
	segmentRangeTests = []latencyDef{{id: "range-p50-ttfb", title: "p50 TTFB, 64 KiB Range GET", q: 50},
		{id: "range-p99-ttfb", title: "p99 TTFB, 64 KiB Range GET", q: 99}}
)

// Tests are the tests of segment, which runs over every topology.
func (segment) Tests() []latencyDef {
	return append(slices.Clone(segmentFullTests), segmentRangeTests...)
}

func (segment) Open(ctx context.Context, s Spec, cfg Config, tgt *Target, rc *Recorder) (Session, error) {
	path := fmt.Sprintf(SegmentPath, 0) + "?run=" + tgt.Nonce
	rate := pick(cfg.Rate, s.Rate)
	rng := [][2]string{{"Range", fmt.Sprintf("bytes=0-%d", rangeBytes-1)}}
	sess, err := openRate(ctx, &s, cfg, tgt, rc, 0, path, []series{
		{label: "full GET ", pass: loadgen.Pass{Path: path, Rate: rate, Duration: cfg.PassDuration},
			tests: rc.latencies(&s, tgt, segmentFullTests)},
		{label: "Range GET ", pass: loadgen.Pass{Path: path, Header: rng, Rate: rate, Duration: cfg.PassDuration},
			tests: rc.latencies(&s, tgt, segmentRangeTests)},
	})
	if err != nil {
		return nil, err // a nil *rateSession is not a nil Session
	}
	return sess, nil
}
