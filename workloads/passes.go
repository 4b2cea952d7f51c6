package workloads

import (
	"context"
	"fmt"
	"math"
	"sort"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

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
	Engine results.Engine
	// Counters reads the engine's own counters; nil when it has none.
	Counters func(ctx context.Context) (map[string]float64, error)
	// Nonce makes this run's objects cold (and distinct per engine).
	Nonce string
	// UpstreamKey names the engine counter of its requests to the origin
	// (health probes excluded), compared with the origin's own count.
	UpstreamKey string
}

// UpstreamKeys are the engines' counters of requests to the origin.
var UpstreamKeys = map[string]string{
	"builtin": "origin_fetches",
	"varnish": "MAIN.backend_req",
	"vinyl":   "MAIN.backend_req",
	"nginx":   "upstream_requests",
}

// Recorder collects the results of a run and saves the file after every
// pass, so an interrupted run keeps what finished.
type Recorder struct {
	Run  *results.Run
	Dir  string
	list []*results.Result
	path string
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
		Unit: unit, LowerIsBetter: lower, Aggregation: agg, InvalidReasons: []string{}, Passes: []results.Pass{}}
	rc.list = append(rc.list, r)
	return r
}

// latencyTest is a percentile of a latency over every measured sample.
type latencyTest struct {
	r    *results.Result
	q    float64
	hist *hdr.Histogram
}

func (rc *Recorder) latency(spec *Spec, tgt *Target, test, title string, q float64) *latencyTest {
	agg := fmt.Sprintf("p%g of every measured request's sample, all measured passes merged (HDR histogram); per-pass values are each pass's own p%g", q, q)
	return &latencyTest{r: rc.newResult(spec, tgt, test, title, "ms", true, agg), q: q,
		hist: loadgen.NewHistogram()}
}

func msq(h *hdr.Histogram, q float64) float64 {
	if h.TotalCount() == 0 {
		return 0
	}
	return float64(h.ValueAtQuantile(q)) / 1e6
}

// passInfo is what every test of one pass shares.
type passInfo struct {
	index   int
	warmup  bool
	lr      *loadgen.Result // nil for passes with no generator figures
	reasons []string
	extra   map[string]any
}

func (p *passInfo) base(value float64) results.Pass {
	rp := results.Pass{Index: p.index, Warmup: p.warmup, Value: value, Valid: len(p.reasons) == 0,
		InvalidReasons: p.reasons, Extra: p.extra}
	if p.lr != nil {
		rp.Requests, rp.Errors, rp.PoolLimited = p.lr.Requests, p.lr.Errors, p.lr.PoolLimited
		rp.AchievedRPS = math.Round(p.lr.AchievedRPS*10) / 10
		if len(p.lr.ErrorsByKind) > 0 {
			rp.ErrorsByKind = p.lr.ErrorsByKind
		}
	}
	return rp
}

func (t *latencyTest) add(p *passInfo, h *hdr.Histogram) {
	addPass(t.r, p, msq(h, t.q))
	if p.warmup {
		return
	}
	t.hist.Merge(h)
	t.r.Value = round3(msq(t.hist, t.q))
	if enc, err := results.EncodeHistogram(t.hist); err == nil {
		t.r.Histogram = enc
	}
}

// addPass appends a pass and recomputes validity and spread.
func addPass(r *results.Result, p *passInfo, value float64) {
	r.Passes = append(r.Passes, p.base(round3(value)))
	if !p.warmup {
		for _, why := range p.reasons {
			r.InvalidReasons = append(r.InvalidReasons, fmt.Sprintf("pass %d: %s", p.index, why))
		}
	}
	measured := 0
	for _, ps := range r.Passes {
		if !ps.Warmup {
			measured++
		}
	}
	r.Valid = measured > 0 && len(r.InvalidReasons) == 0
	r.Spread = results.SpreadOf(r.Passes)
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// generatorReasons turns a generator result into reasons a pass is invalid:
// the generator's own verdict, and failed requests (a figure over the
// survivors would hide them).
func generatorReasons(r *loadgen.Result) []string {
	reasons := append([]string{}, r.InvalidReasons...)
	if r.Errors > 0 {
		reasons = append(reasons, fmt.Sprintf("%d of %d requests failed (%s)", r.Errors, r.Requests, kinds(r.ErrorsByKind)))
	}
	return reasons
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

// snapshot reads the origin's and the engine's counters around a pass.
type snapshot struct {
	origin  origin.Stats
	engine  map[string]float64
	errs    []string
	takenAt time.Time
}

func take(ctx context.Context, tgt *Target) snapshot {
	s := snapshot{takenAt: time.Now()}
	var err error
	if s.origin, err = tgt.Origin.Stats(ctx); err != nil {
		s.errs = append(s.errs, "origin stats: "+err.Error())
	}
	if tgt.Counters != nil {
		if s.engine, err = tgt.Counters(ctx); err != nil {
			s.errs = append(s.errs, "engine counters: "+err.Error())
		}
	}
	return s
}

// delta is what happened between two snapshots: origin requests (health
// excluded) and the engine's counters, and whether the engine's count of its
// origin requests agrees with the origin's.
func delta(tgt *Target, a, b snapshot) map[string]any {
	fetches := b.origin.Fetches - a.origin.Fetches
	failed := b.origin.Failed - a.origin.Failed
	ex := map[string]any{"origin_fetches": fetches, "origin_failed": failed}
	if b.engine != nil && a.engine != nil {
		d := map[string]float64{}
		for k, v := range b.engine {
			if x := v - a.engine[k]; x != 0 {
				d[k] = x
			}
		}
		ex["engine_counters"] = d
		if tgt.UpstreamKey != "" {
			up := int64(d[tgt.UpstreamKey])
			ex["engine_upstream_requests"] = up
			// The origin counts answered and failed object requests.
			ex["origin_minus_engine"] = fetches + failed - up
		}
	}
	if errs := append(a.errs, b.errs...); len(errs) > 0 {
		ex["counter_errors"] = errs
	}
	return ex
}

// agree notes in the run when the engine's count of origin requests and the
// origin's own differ by more than one in a pass.
func agree(rc *Recorder, spec *Spec, tgt *Target, p *passInfo) {
	d, ok := p.extra["origin_minus_engine"].(int64)
	if ok && (d > 1 || d < -1) {
		rc.Run.Warnings = append(rc.Run.Warnings, fmt.Sprintf(
			"%s on %s, pass %d: the origin counted %d requests, the engine %d (%s)", spec.Name, tgt.Engine.Name, p.index,
			p.extra["origin_fetches"].(int64)+p.extra["origin_failed"].(int64), p.extra["engine_upstream_requests"], tgt.UpstreamKey))
	}
}

func claims(r *loadgen.Result) map[string]int64 {
	return map[string]int64{"hit": r.Cache.Hit, "miss": r.Cache.Miss, "stale": r.Cache.Stale, "unknown": r.Cache.Unknown}
}

func pick[T comparable](override, def T) T {
	var zero T
	if override != zero {
		return override
	}
	return def
}
