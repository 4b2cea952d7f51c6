package report

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hlsbench/hlsbench/results"
)

// staleAudience is the part of live-audience's pass evidence that
// staleMeaning reads: the worst live-edge staleness of the pass.
type staleAudience struct {
	StalenessMaxS *float64 `json:"staleness_max_s"`
}

// staleOutlier is how many times its p99 a cell's worst live-edge
// staleness must be before the page explains it: below, the worst answer
// is the tail the p99 already describes.
const staleOutlier = 10

// staleMeaning explains a live-audience cell whose worst live playlist was
// far staler than its p99 says, when the cell's own passes explain it: the
// copy was older than half the time between the starts of its passes, so
// it was cached in an earlier pass and kept while the engine sat idle (in
// a suite, the other cells run their passes in between). An engine that
// serves an expired object of any age while one background update runs
// (NGINX's proxy_cache_use_stale updating) hands that copy to the first
// request of the next pass; an engine with a grace limit refuses it and
// fetches. The p99 holds these answers only as a few among thousands, so
// without this sentence a reader sees neither the worst copy nor why;
// without the pass interval they would read the idle gap, which the
// workload makes, as a property of the engine. "" when there is nothing to
// explain.
func staleMeaning(label, engine string, r *results.Result) string {
	if r.Workload != "live-audience" || r.Test != "live-edge-staleness" || r.Value == nil || *r.Value <= 0 {
		return ""
	}
	worst := 0.0
	var starts []time.Time
	for _, p := range r.Passes {
		if !p.StartedAt.IsZero() {
			starts = append(starts, p.StartedAt)
		}
		if p.Warmup || !p.Valid {
			continue
		}
		if a := results.Part[staleAudience](p.Evidence, "audience"); a != nil && a.StalenessMaxS != nil {
			worst = max(worst, *a.StalenessMaxS)
		}
	}
	if worst < staleOutlier**r.Value || len(starts) < 2 {
		return ""
	}
	slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
	gaps := make([]float64, 0, len(starts)-1)
	for i := 1; i < len(starts); i++ {
		gaps = append(gaps, starts[i].Sub(starts[i-1]).Seconds())
	}
	slices.Sort(gaps)
	every := gaps[len(gaps)/2]
	if worst < every/2 {
		return ""
	}
	s := fmt.Sprintf("%s served a live playlist up to %s stale, %s× its p99: its passes started every %s and the engine sat idle between them "+
		"(in a suite, while the other cells ran theirs), so the first request of a pass for a playlist last fetched in the pass before was answered with that old copy.",
		label, valueText(worst, "s"), results.Sig3(worst / *r.Value), valueText(every, "s"))
	if baseEngine(engine) == "nginx" {
		s += " Serving it is NGINX's behaviour under the same policy: proxy_cache_use_stale updating serves an expired object of any age " +
			"while one background update runs, where Varnish's and Vinyl Cache's grace refuses an object past its TTL plus grace and fetches anew, " +
			"so in service a rendition nobody watched for a while gives its first viewer the copy from when it was last watched; the age, set by the idle time, is the workload's."
	}
	return s
}

// runCost is what one cell of a latency test says about the host's speed
// in the run that measured it: the generator's own CPU per request of each
// measured pass, and when its first measured pass started.
type runCost struct {
	source, topology string
	cpuPerRequest    []float64 // ms
	started          time.Time
}

// runCostOf reads a cell's generator CPU per request from its passes.
func runCostOf(source string, r *results.Result) runCost {
	c := runCost{source: source, topology: r.Topology}
	for _, p := range r.Passes {
		if p.Warmup || p.Requests <= 0 || p.Evidence == nil || p.Evidence.Generator == nil || p.Evidence.Generator.CPUSeconds <= 0 {
			continue
		}
		if c.started.IsZero() || p.StartedAt.Before(c.started) {
			c.started = p.StartedAt
		}
		c.cpuPerRequest = append(c.cpuPerRequest, 1000*p.Evidence.Generator.CPUSeconds/float64(p.Requests))
	}
	return c
}

// runSpeedGap is how many times more CPU a request the generator must
// have spent in a plaintext run than in a TLS one before the page says the
// host ran at another speed: TLS costs the generator more (it decrypts),
// so any ratio above 1 already says so; 1.5 leaves the passes' own spread
// out of it.
const runSpeedGap = 1.5

// runSpeedMeaning says when a latency test's topologies were measured in
// different runs at different host speeds, so that a topology's figure
// against another's is the host's difference. The generator's own CPU per
// request is the measure: it does the same work for every engine of a
// topology, and more for TLS (it decrypts every body) than for plaintext.
// A run of TLS cells whose generator spent much less CPU a request than a
// plaintext run's can only have had a faster host — the segment Range
// p50s of 0.016 ms over TLS against 0.088 ms in plaintext on the page of
// 2026-12-05 were such runs, 11 hours apart, where one run of both
// topologies measured them equal. Only that direction is said: a TLS run
// that costs more could be TLS's own cost. "" when the cells are of one
// run, or nothing shows a host that changed.
func runSpeedMeaning(t Test, costs []runCost) string {
	if !t.Latency() {
		return ""
	}
	type run struct {
		source     string
		topologies []string
		cpu        []float64
		started    time.Time
		tls        bool
	}
	var runs []*run
	for _, c := range costs {
		if len(c.cpuPerRequest) == 0 {
			continue
		}
		i := slices.IndexFunc(runs, func(r *run) bool { return r.source == c.source })
		if i < 0 {
			runs = append(runs, &run{source: c.source, started: c.started})
			i = len(runs) - 1
		}
		r := runs[i]
		if !slices.Contains(r.topologies, c.topology) {
			r.topologies = append(r.topologies, c.topology)
		}
		r.tls = r.tls || c.topology == "tls" || c.topology == "proxyv2"
		r.cpu = append(r.cpu, c.cpuPerRequest...)
		if c.started.Before(r.started) {
			r.started = c.started
		}
	}
	median := func(v []float64) float64 {
		s := slices.Clone(v)
		slices.Sort(s)
		if len(s)%2 == 1 {
			return s[len(s)/2]
		}
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	for _, plain := range runs {
		if plain.tls {
			continue
		}
		for _, enc := range runs {
			if !enc.tls || slices.Contains(enc.topologies, "plaintext") {
				continue
			}
			p, e := median(plain.cpu), median(enc.cpu)
			if p < runSpeedGap*e {
				continue
			}
			names := make([]string, len(enc.topologies))
			for i, tp := range enc.topologies {
				names[i] = topologyName(tp)
			}
			encName := strings.Join(names, " and ")
			return fmt.Sprintf("The plaintext cells and the %s cells were measured in different runs (%s, from %s; %s, from %s), and the host was faster in the second: "+
				"its generator spent %s ms of CPU a request, decryption included, against %s ms in plaintext (%s× as much), "+
				"so lower figures in %s than in plaintext here are the host's speed, not the topology's; compare topologies only within one run.",
				encName, plain.source, plain.started.UTC().Format("2006-01-02 15:04 UTC"), enc.source, enc.started.UTC().Format("2006-01-02 15:04 UTC"),
				results.Sig3(e), results.Sig3(p), results.Sig3(p/e), encName)
		}
	}
	return ""
}
