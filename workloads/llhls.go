package workloads

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"syscall"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/origin"
	"github.com/hlsbench/hlsbench/results"
	"github.com/hlsbench/hlsbench/workloads/loadgen"
)

// LLHLS is a low-latency live stream (partial segments, preload hints,
// blocking playlist reloads) watched by viewers that play it as LL-HLS
// players do: how soon a part reaches them once it exists at the origin,
// how long the engine holds a blocking reload, whether the engine's held
// requests coalesce at the origin, and whether it ever answers before a
// part exists.
const LLHLS = "ll-hls"

// llWarmups is ll-hls's unmeasured passes: one, which fills the engine's
// connections and the stream's first parts.
const llWarmups = 1

// llChannel is the channel every viewer watches: one crowd, so that the
// engine's coalescing of its held requests is what the origin counts.
const llChannel = 0

type llHLS struct{}

// ll-hls's settings: the crowd, how long each pass watches, the passes,
// and the stream's parts.
var (
	llViewersSetting = intSetting("ll-viewers", 100, "ll-hls: LL-HLS players watching one low-latency channel, each with a blocking reload and a preload-hinted part under way").
				Accept(between(1, 2000, "1 to 2000")).Record("ll_hls.viewers")
	llWatchSetting = durationSetting("ll-watch", 10*time.Second, "ll-hls: how long the viewers play in each pass").
			Quick(6 * time.Second).Accept(atLeast(2*time.Second, "at least 2s")).Record("ll_hls.watch")
	llPassesSetting = intSetting("ll-passes", 5, "ll-hls: measured passes after its warm-up").
			Quick(2).Accept(atLeast(1, "1 or more")).Record("ll_hls.passes")
	partTargetSetting = durationSetting("part-target", origin.DefaultPartTarget, "ll-hls: every part's duration, the stream's PART-TARGET (100ms to 5s, whole milliseconds)").
				Accept(func(d time.Duration) string {
			if d < 100*time.Millisecond || d > 5*time.Second || d%time.Millisecond != 0 {
				return "want 100ms to 5s, a whole number of milliseconds"
			}
			return ""
		}).Record("ll_hls.part_target")
	partsPerSegmentSetting = intSetting("parts-per-segment", origin.DefaultPartsPerSegment, "ll-hls: parts of a segment").
				Accept(between(1, 100, "1 to 100")).Record("ll_hls.parts_per_segment")
)

func (llHLS) Settings() []Setting {
	return []Setting{llViewersSetting, llWatchSetting, llPassesSetting, partTargetSetting, partsPerSegmentSetting}
}

// validate checks the stream the settings make with the origin's own rules
// (a segment of at most a minute, say).
func (llHLS) validate(c Config) error {
	_, err := origin.New(origin.Config{LL: llOf(c)})
	var ce *origin.ConfigError
	if !errors.As(err, &ce) {
		return err
	}
	name := partsPerSegmentSetting.Name() // the window follows the segment
	if ce.Field == "LL.PartTarget" {
		name = partTargetSetting.Name()
	}
	return fieldErr(name, "%s", ce.Msg)
}

// llOf is the origin's low-latency stream as c shapes it.
func llOf(c Config) origin.LL {
	return origin.LL{Channels: 1, PartTarget: partTargetSetting.Of(c), PartsPerSegment: partsPerSegmentSetting.Of(c)}
}

func (llHLS) measuresCache() {}

func (llHLS) Spec() Spec {
	p := engines.DefaultPolicy()
	// Playlists for a second (engines count whole seconds): a blocking
	// reload's URI names its part, so each is its own object; parts never
	// change.
	p.ManifestTTL, p.HealthyGrace, p.SegmentTTL = time.Second, time.Second, time.Hour
	return Spec{Name: LLHLS, Title: "Low-latency HLS", Policy: p,
		Description: "LL-HLS players on one low-latency channel (parts, preload hints, blocking playlist reloads): part delivery from ready at the origin to first byte, blocking-reload hold, origin requests per part, answers before their part existed"}
}

// configure gives the origin the run's stream, answering at once: a part
// is held until it is ready, and nothing else should wait.
func (llHLS) configure(s Spec, cfg Config) Spec {
	ll := llOf(cfg)
	s.origin = func(c *origin.Config) {
		c.LL = ll
		c.FirstByteDelay = origin.NoDelay
	}
	return s
}

// llCondition is the key of LLConditions in the results.
const llCondition = "ll"

// LLConditions are ll-hls's stream and audience as they ran.
type LLConditions struct {
	Viewers         int              `json:"viewers"`
	Watch           results.Duration `json:"watch"`
	PartTarget      results.Duration `json:"part_target"`
	PartsPerSegment int              `json:"parts_per_segment"`
	PartBytes       int64            `json:"part_bytes"`
}

func (llHLS) Conditions(s Spec, cfg Config) results.Conditions {
	c := protocol(cfg)
	c.Warmups, c.Passes = llWarmups, llPassesSetting.Of(cfg) // its own protocol, as Open runs it
	ll := llOf(cfg).WithDefaults()
	c.Connections = 2 * llViewersSetting.Of(cfg)
	c.SetOwn(llCondition, &LLConditions{Viewers: llViewersSetting.Of(cfg), Watch: results.Duration(llWatchSetting.Of(cfg)),
		PartTarget: results.Duration(ll.PartTarget), PartsPerSegment: ll.PartsPerSegment, PartBytes: ll.PartSize()})
	return c
}

// conditionFacts are the stream and its viewers.
func (llHLS) conditionFacts(c results.Conditions) (load, rest []results.Fact) {
	l, ok := results.OwnCondition[LLConditions](c, llCondition)
	if !ok {
		return nil, nil
	}
	return []results.Fact{{Label: "Viewers", Value: fmt.Sprintf("%d LL-HLS players on one channel for %s a pass, each with a blocking reload and the preload-hinted part under way", l.Viewers, l.Watch)}},
		[]results.Fact{{Label: "Stream", Value: fmt.Sprintf("parts of %s (%d bytes), %d a segment", l.PartTarget, l.PartBytes, l.PartsPerSegment)}}
}

func (llHLS) Estimate(cfg Config) time.Duration {
	return startEstimate + time.Duration(llWarmups+llPassesSetting.Of(cfg))*(llWatchSetting.Of(cfg)+time.Second)
}

// llDeliveryAgg is how part delivery is measured.
const llDeliveryAgg = "from a part ready at the origin (its X-Origin-Part-Ready stamp) to its first byte at the viewer, for every part answered whole with a stamp: asked for before it was ready (at the live edge, by its preload hint) or after, catching up (the evidence's catch_up_parts), each from its own ready stamp; a pass with an answer before its part existed is invalid; the valid measured passes merged (HDR histogram), per-pass values each pass's own"

// llHoldAgg is how the blocking-reload hold is measured.
const llHoldAgg = "from a blocking playlist reload's send to its first byte, for every reload sent before the part it waits for was ready (that part's stamp) and answered whole with it: how long the engine (and the origin behind it) held it; reloads sent after their part was ready are counted apart (the evidence's catch_up_reloads), and a pass with an answer before its part existed is invalid; the valid measured passes merged (HDR histogram)"

func (llHLS) listTests() []latencyDef {
	return []latencyDef{
		{id: "p50-part-delivery", title: "p50 part delivery", q: 50,
			agg: llDeliveryAgg},
		{id: "p99-part-delivery", title: "p99 part delivery", q: 99,
			agg: llDeliveryAgg},
		{id: "p50-reload-hold", title: "p50 blocking-reload hold", q: 50, agg: llHoldAgg},
		{id: "p99-reload-hold", title: "p99 blocking-reload hold", q: 99, agg: llHoldAgg},
		{id: "origin-part-requests", title: "Origin requests per part", unit: "x", lower: true,
			axis: "Origin part requests, per part played at the live edge (1 x: every part fetched once, the viewers' requests coalesced)",
			agg:  "every part request the origin received (held until its part was ready, answered at once, abandoned, timed out, or past the hint) ÷ the parts the viewers asked for before they were ready and got whole, on time (the evidence's edge_parts), summed over the valid measured passes; each of those cost the origin a request at least, so under 1 x is impossible and such a pass is invalid, saying so"},
		{id: "origin-reload-requests", title: "Origin blocking reloads per part", unit: "x", lower: true,
			axis: "Origin blocking reloads, per part whose reloads were held (1 x: the viewers' reloads for each part coalesced)",
			agg:  "every blocking playlist reload the origin received (held until its part was ready, answered at once, abandoned, timed out, or rejected) ÷ the parts whose blocking reloads the viewers sent before the part was ready and got with it (the evidence's held_reload_parts), summed over the valid measured passes; each of those cost the origin a request at least, so under 1 x is impossible and such a pass is invalid, saying so"},
		{id: "early-answers", title: "Answers before their part existed", unit: "answers", lower: true,
			agg: "answers whose first byte came before their part's ready stamp, parts failing their checksum, and blocking reloads lacking the part they waited for: must be 0; summed over the valid measured passes"},
	}
}

func (llHLS) Open(ctx context.Context, s Spec, cfg Config, tgt *Target, rc *Recorder) (Session, error) {
	ls := &llSession{spec: &s, cfg: cfg, tgt: tgt, rc: rc, ll: llOf(cfg).WithDefaults()}
	defs := llHLS{}.listTests()
	ls.lat = rc.latencies(&s, tgt, defs[:4])
	for i, d := range defs[:4] {
		if d.agg != "" {
			ls.lat[i].r.Aggregation = d.agg
		}
	}
	ls.parts = &sumTest{r: rc.newTest(&s, tgt, defs[4]), value: ratio, fetches: true}
	ls.reloads = &sumTest{r: rc.newTest(&s, tgt, defs[5]), value: ratio, fetches: true}
	ls.early = &sumTest{r: rc.newTest(&s, tgt, defs[6]), value: func(num, _ int64) float64 { return float64(num) }}
	return ls, nil
}

type llSession struct {
	spec *Spec
	cfg  Config
	tgt  *Target
	rc   *Recorder
	ll   origin.LL

	lat                   []*latencyTest // part delivery p50, p99; reload hold p50, p99
	parts, reloads, early *sumTest
}

func (ls *llSession) Steps() int   { return llWarmups + llPassesSetting.Of(ls.cfg) }
func (ls *llSession) Close() error { return nil }

// llHLSPart is the key of LLEvidence in a pass's evidence.
const llHLSPart = "ll"

// LLEvidence is an ll-hls pass: what the viewers asked and got, and what
// the origin answered, during it.
type LLEvidence struct {
	Viewers int `json:"viewers"`
	// Requests, Errors and Early are the viewers', by kind (load, reload,
	// part); Unproven answers carried no ready stamp; Cut requests were
	// still under way at the end of the pass.
	Requests map[string]int64 `json:"requests"`
	Errors   map[string]int64 `json:"errors"`
	Early    map[string]int64 `json:"early"`
	Unproven int64            `json:"unproven"`
	CatchUp  int64            `json:"catch_up_parts"`
	// CatchUpReloads are blocking reloads sent after their part was
	// ready: no hold, so not in the hold's figure.
	CatchUpReloads int64 `json:"catch_up_reloads"`
	Cut            int64 `json:"cut"`
	// PartsPublished is how many parts the channel published during the
	// pass; the origin's counts are its requests and answers over the same
	// span. EdgeParts are the parts the viewers asked for before they were
	// ready and got whole, on time, and HeldReloadParts those whose
	// blocking reloads were held for them (LLFigures).
	PartsPublished  int64          `json:"parts_published"`
	EdgeParts       int64          `json:"edge_parts"`
	HeldReloadParts int64          `json:"held_reload_parts"`
	Origin          origin.LLStats `json:"origin"`
	GeneratorCPU    float64        `json:"generator_cpu_s"`
	PartLatencyP50  *float64       `json:"part_latency_p50_ms"`
	ReloadHoldP50   *float64       `json:"reload_hold_p50_ms"`
}

func (ls *llSession) Step(ctx context.Context, i int) error {
	watch := llWatchSetting.Of(ls.cfg)
	ls.rc.Progress.step(passLabel(i, llWarmups, llPassesSetting.Of(ls.cfg), "pass"), watch)
	before := take(ctx, ls.tgt)
	cpu0 := processCPU()
	started := time.Now()
	figs, err := RunLLViewers(ctx, LLViewers{BaseURL: ls.tgt.URL, Channel: llChannel, Viewers: llViewersSetting.Of(ls.cfg),
		Duration: watch, Stagger: min(watch/4, 2*ls.ll.PartTarget)})
	if err != nil {
		return err
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	ended := time.Now()
	cpu := processCPU() - cpu0
	p := newPass(i, llWarmups, nil, nil)
	p.started = started
	after := ls.rc.observe(ctx, ls.spec, ls.tgt, p, before)
	g0, k0 := ls.ll.Edge(started)
	g1, k1 := ls.ll.Edge(ended)
	published := (g1*int64(ls.ll.PartsPerSegment) + int64(k1)) - (g0*int64(ls.ll.PartsPerSegment) + int64(k0))
	od := after.origin.LL.Sub(before.origin.LL)
	ev := &LLEvidence{Viewers: figs.Viewers, Requests: byKind(figs.Requests), Errors: byKind(figs.Errors), Early: byKind(figs.Early),
		Unproven: figs.Unproven, CatchUp: figs.CatchUp, CatchUpReloads: figs.CatchUpReloads, Cut: figs.Cut, PartsPublished: published,
		EdgeParts: int64(len(figs.EdgeParts)), HeldReloadParts: int64(len(figs.HeldReloads)), Origin: od, GeneratorCPU: round3(cpu.Seconds()),
		PartLatencyP50: msq(figs.PartLatency, 50), ReloadHoldP50: msq(figs.ReloadHold, 50)}
	p.ev.SetPart(llHLSPart, ev)

	var failed, asked int64
	for k := range figs.Requests {
		failed, asked = failed+figs.Errors[k], asked+figs.Requests[k]
	}
	var latWhy []string
	if failed > 0 {
		latWhy = append(latWhy, fmt.Sprintf("%d of %d viewer requests failed (%s)", failed, asked, kinds(byKind(figs.Errors))))
	}
	// An answer before its part existed is a hold that did not hold and a
	// part that may not be the part, and sends its viewer off the edge to
	// ask again: no figure made beside it is the engine at the edge,
	// whatever it comes to, and none may rank.
	var earlyWhy []string
	early := figs.EarlyAnswers()
	if early > 0 {
		earlyWhy = append(earlyWhy, fmt.Sprintf("%d early answers: the engine answered before the part existed", early))
		latWhy = append(latWhy, earlyWhy...)
	}
	if figs.Unproven > 0 {
		latWhy = append(latWhy, fmt.Sprintf("%d answers carried no ready stamp from the origin: their delivery is unproven", figs.Unproven))
	}
	if busy := generatorShare(ls.tgt, cpu, ended.Sub(started)); busy >= loadgen.CPULimit {
		latWhy = append(latWhy, fmt.Sprintf("the viewers used %.0f%% of the generator's CPUs: answers waited for them to be read, so the figures may be the viewers', not the engine's: lower ll-viewers or give the generator more cores", 100*busy))
	}
	for j, h := range []*hdr.Histogram{figs.PartLatency, figs.PartLatency, figs.ReloadHold, figs.ReloadHold} {
		t := ls.lat[j]
		v, why := msq(h, t.q), ""
		if v == nil {
			why = "no part was answered whole"
			if j >= 2 {
				why = "no blocking reload was held for its part and answered whole"
			}
		}
		t.addValue(p, h, v, why, latWhy...)
	}
	perPart(ls.parts, p, od.PartRequests, ev.EdgeParts, "origin part requests", "parts the viewers got at the live edge",
		"no part was asked for before it was ready and answered whole, on time", earlyWhy...)
	perPart(ls.reloads, p, od.BlockingRequests, ev.HeldReloadParts, "blocking reloads at the origin", "parts whose blocking reloads were held",
		"no blocking reload was held for its part and answered with it", earlyWhy...)
	ls.early.add(p, ptr(float64(early)), "", early, 0)
	return ls.rc.Save()
}

// perPart adds a pass of an origin-requests-per-part test: n requests
// over parts, parts of which (what) the viewers got before anyone could
// have had them: each cost the origin a request at least, whatever the
// engine, so a figure under 1 x is impossible and its pass is invalid,
// saying so, rather than ranked as coalescing better than perfect. more
// are other reasons the pass is invalid.
func perPart(t *sumTest, p *passInfo, n, parts int64, requests, what, none string, more ...string) {
	if parts <= 0 {
		t.add(p, nil, none, 0, 0, more...)
		return
	}
	v := round3(ratio(n, parts))
	if n < parts {
		more = append(append([]string{}, more...), fmt.Sprintf("%d %s for %d %s (%.3g x): under 1 x is impossible, as no one could have had those parts before they existed: the origin did not count the requests that brought them", n, requests, parts, what, v))
	}
	t.add(p, &v, "", n, parts, more...)
}

// byKind is counts by LLKind as the evidence keeps them.
func byKind(n [3]int64) map[string]int64 {
	m := map[string]int64{}
	for k, v := range n {
		m[LLKind(k).String()] = v
	}
	return m
}

// processCPU is this process's CPU time so far: the viewers', as the
// origin and the engine run apart (not in-process: see generatorShare).
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// generatorShare is the viewers' CPU over a pass as a share of the CPUs
// they may use (the generator's, or all); 0 when the origin or the engine
// ran in this process too, whose CPU no one can tell apart.
func generatorShare(tgt *Target, cpu, wall time.Duration) float64 {
	n := len(tgt.GeneratorCPUs)
	if n == 0 {
		n = runtime.NumCPU()
	}
	if tgt.InProcess || wall <= 0 {
		return 0
	}
	return cpu.Seconds() / (wall.Seconds() * float64(n))
}
