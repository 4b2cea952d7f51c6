package workloads

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/engines/cost"
	"github.com/hlsbench/hlsbench/origin"
	"github.com/hlsbench/hlsbench/results"
	"github.com/hlsbench/hlsbench/results/stats"
	"github.com/hlsbench/hlsbench/workloads/loadgen"
)

// LiveAudience is an audience of players: live channels whose playlists
// advance in real time and VOD titles, chosen by popularity, each viewer
// polling and fetching on its own player's clock.
const LiveAudience = "live-audience"

// The audience's defaults: a load that fits a 2-core machine, the
// generator on one core (about 500 requests and 35 MB a second).
const (
	DefaultViewers        = 500
	DefaultAudienceZipf   = 1.0
	DefaultVODShare       = 0.25
	DefaultSwitchShare    = 0.2
	DefaultRamp           = 10 * time.Second
	DefaultWatch          = 30 * time.Second
	DefaultAudiencePasses = 3
	// audienceWarmups precede the measured passes, and each curve size's
	// one measured pass: they fill the cache.
	audienceWarmups = 1
	// startFromEnd is where a live player starts: that many segments from
	// the end of its first playlist (RFC 8216, 6.3.3: not less than three
	// target durations from the end).
	startFromEnd = 3
	// maxAudienceConns bounds the generator's pool.
	maxAudienceConns = 2000
	// restartEstimate is an engine restart between curve sizes.
	restartEstimate = 3 * time.Second
)

// DefaultStoreSizes are the miss-ratio curve's store sizes besides the
// policy's (512 MiB): the audience's catalogue is larger than the smaller.
var DefaultStoreSizes = []int64{128 << 20, 32 << 20}

type liveAudience struct {
	sizes []int64 // the curve's other store sizes; nil: DefaultStoreSizes
}

// live-audience's settings: viewers joining over ramp then watching for
// watch in each of its passes (after one warm-up); the origin's channels,
// titles, ladder and target duration; the popularity exponent and the
// shares of viewers on VOD and switching rendition; the miss-ratio curve's
// store sizes besides the policy's.
var (
	viewersSetting = intSetting("viewers", DefaultViewers, "live-audience: players joining over the ramp, each with its own clock").
			Accept(between(1, 100000, "1 to 100000")).Record("live_audience.viewers")
	channelsSetting = intSetting("channels", origin.DefaultChannels, "live-audience: live channels, chosen with Zipf popularity").
			Accept(atLeast(1, "1 or more")).Record("live_audience.channels")
	titlesSetting = intSetting("titles", origin.DefaultTitles, "live-audience: VOD titles of 30 segments, chosen with Zipf popularity").
			Accept(atLeast(1, "1 or more")).Record("live_audience.titles")
	ladderSetting = newParam("ladder", origin.DefaultLadder, "live-audience: the ABR ladder, bits per second, ascending (a segment is bitrate × target-duration / 8 bytes)", "bitrates",
		origin.ParseLadder, origin.FormatLadder).
		Accept(func(l []int64) string {
			if len(l) == 0 {
				return "want at least one bitrate, e.g. " + origin.FormatLadder(origin.DefaultLadder)
			}
			return ""
		}).Record("live_audience.ladder_bps")
	targetDurationSetting = durationSetting("target-duration", origin.DefaultTargetDuration, "live-audience: every segment's duration; live playlists move on by one segment this often").
				Accept(atLeast(time.Nanosecond, "a positive duration, e.g. 2s")).Record("live_audience.target_duration")
	audienceZipfSetting = floatSetting("audience-zipf", DefaultAudienceZipf, "live-audience: the Zipf exponent of channel and title popularity (0: uniform)").
				Accept(between(0.0, 10, "an exponent from 0 (uniform) to 10")).Record("live_audience.zipf")
	vodShareSetting = floatSetting("vod-share", DefaultVODShare, "live-audience: the share of viewers on VOD, 0 to 1").
			Accept(between(0.0, 1, "a share from 0 to 1")).Record("live_audience.vod_share")
	switchShareSetting = floatSetting("switch-share", DefaultSwitchShare, "live-audience: the share of viewers switching rendition every 3 to 6 segments, 0 to 1").
				Accept(between(0.0, 1, "a share from 0 to 1")).Record("live_audience.switch_share")
	rampSetting = durationSetting("ramp", DefaultRamp, "live-audience: viewers join at random over this long in each pass").
			Quick(4 * time.Second).Accept(atLeast(time.Duration(0), "0 (every viewer at once) or more")).Record("live_audience.ramp")
	watchSetting = durationSetting("watch", DefaultWatch, "live-audience: then every viewer watches this long").
			Quick(8 * time.Second).Accept(atLeast(time.Second, "at least 1s of watching after the ramp")).Record("live_audience.watch")
	audiencePassesSetting = intSetting("audience-passes", DefaultAudiencePasses, "live-audience: measured passes after its warm-up").
				Quick(1).Accept(atLeast(1, "1 or more")).Record("live_audience.passes")
	storeSizesSetting = newParam("store-sizes", DefaultStoreSizes, "live-audience: the miss-ratio curve's store sizes besides the policy's 512MiB, each after an engine restart and a warm-up (comma list, or none)", "sizes",
		origin.ParseByteList, origin.FormatByteList).
		Accept(func(l []int64) string {
			for _, n := range l {
				if n < 1<<20 {
					return "want sizes of at least 1MiB"
				}
			}
			return ""
		}).Record("live_audience.store_sizes")
)

// The keys of audience's own conditions in the results.
const (
	audienceCondition = "audience" // the audience as it ran (AudienceConditions)
)

func (liveAudience) measuresCache() {}

func (liveAudience) Settings() []Setting {
	return []Setting{viewersSetting, channelsSetting, titlesSetting, ladderSetting, targetDurationSetting, audienceZipfSetting,
		vodShareSetting, switchShareSetting, rampSetting, watchSetting, audiencePassesSetting, storeSizesSetting}
}

// validate checks the origin's live channels as the settings shape them.
func (liveAudience) validate(c Config) error {
	_, err := origin.New(origin.Config{Live: origin.Live{Channels: channelsSetting.Of(c), Titles: titlesSetting.Of(c),
		Ladder: ladderSetting.Of(c), TargetDuration: targetDurationSetting.Of(c)}})
	var ce *origin.ConfigError
	if errors.As(err, &ce) {
		name := strings.ToLower(strings.TrimPrefix(ce.Field, "Live."))
		for _, s := range (liveAudience{}).Settings() {
			if strings.ReplaceAll(s.Name(), "-", "") == name {
				name = s.Name()
			}
		}
		return fieldErr(name, "%s", ce.Msg)
	}
	return err
}

func (liveAudience) Spec() Spec {
	p := engines.DefaultPolicy()
	// A live playlist changes every target duration: cached for half of
	// one (engines count whole seconds) and served past that for a second
	// at most while it is refreshed. Segments never change.
	p.ManifestTTL, p.HealthyGrace, p.SegmentTTL = time.Second, time.Second, time.Hour
	return Spec{Name: LiveAudience, Title: "Live audience", Policy: p,
		Description: "player-like viewers joining over a ramp: live channels whose playlists advance every target duration and VOD titles, chosen by Zipf popularity over an ABR ladder; hit ratio and offload counted at the origin, live-edge staleness from its stamps, stall risk, and a miss-ratio curve over store sizes"}
}

// storeSizes are the curve's sizes: the policy's, then the others.
func (w liveAudience) storeSizes(s *Spec) []int64 {
	others := w.sizes
	if others == nil {
		others = DefaultStoreSizes
	}
	return append([]int64{s.Policy.StoreBytes}, others...)
}

// Tests are live-audience's, known before it runs.
func (w liveAudience) Tests() []latencyDef {
	s := w.Spec()
	defs := []latencyDef{
		{id: "hit-ratio", title: "Request hit ratio", unit: "%",
			agg: "1 − (origin object answers + failed requests) ÷ requests, counted at the origin over the valid measured passes, summed: a failed request (no answer, or not a good 200) is a miss served from nowhere, and a pass with any failed request is invalid"},
		{id: "byte-offload", title: "Origin offload in bytes", unit: "%",
			agg: "1 − (body bytes the origin sent + sizes of the segments whose requests failed) ÷ (body bytes of the viewers' good answers + those sizes), over the valid measured passes, summed: an error page's body is no delivered byte, and a pass with any failed request is invalid"},
		{id: "origin-per-segment", title: "Origin requests per new live segment", unit: "x", lower: true,
			axis: "Origin fetches per new live segment asked for (1 x is perfect coalescing at the live edge)",
			agg:  "(origin fetches of the live segments published during a pass + failed requests of them) ÷ how many of them viewers asked for, counted at the origin; the valid measured passes' sums; a pass with any failed request is invalid"},
		{id: "p99-ttfb-playlist", title: "p99 TTFB, playlists", q: 99,
			agg: "p99 TTFB of every master and media playlist request, from the player's intended send time, of the valid measured passes merged"},
		{id: "p99-ttfb-segment", title: "p99 TTFB, segments", q: 99,
			agg: "p99 TTFB of every segment request, from the player's intended send time (when a playlist listed it, or when playback left room for it), of the valid measured passes merged"},
		{id: "stall-risk", title: "Stall risk", unit: "%", lower: true,
			agg: "segment downloads slower than the segment's duration (intended send to last byte), or failed, ÷ segment requests; the valid measured passes' sums"},
		{id: "live-edge-staleness", title: "Live-edge staleness, p99", unit: "s", lower: true,
			agg: "how long before a live media playlist reached the viewer the origin had published a segment it does not list (from the origin's X-Hlsbench-Live-Edge stamp, not Age; 0 when it listed the newest); p99 of every live playlist answer of the valid measured passes; a pass in which a live playlist request failed is invalid"},
		{id: "bytes-per-object", title: "Engine memory per cached object", unit: "bytes", lower: true,
			agg: "the engine's memory (its processes' proportional set sizes, smaps Pss, so pages they share count once) and cache files after a pass, less the same when it started, ÷ the distinct objects the origin served it; the median of the valid measured passes"},
	}
	for _, size := range w.storeSizes(&s) {
		defs = append(defs, latencyDef{id: missRatioID(size), title: "Miss ratio, store " + sizeName(size), unit: "%", lower: true,
			agg: fmt.Sprintf("(origin object answers + failed requests) ÷ requests with the engine's store at %s, in the first measured pass after one warm-up on an engine started at that size (every size alike: at the policy's, the first of its measured passes); invalid with any failed request", sizeName(size))})
	}
	return defs
}

func missRatioID(size int64) string {
	return "miss-ratio-" + strings.ToLower(strings.ReplaceAll(sizeName(size), " ", ""))
}

// sizeName is a store size as people write it: "512 MiB".
func sizeName(n int64) string {
	for _, u := range []struct {
		name string
		n    int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.n && n%u.n == 0 {
			return fmt.Sprintf("%d %s", n/u.n, u.name)
		}
	}
	if n >= 1<<20 {
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d B", n)
}

func (w liveAudience) Conditions(s Spec, cfg Config) results.Conditions {
	c := protocol(cfg)
	c.Warmups, c.Passes = audienceWarmups, audiencePassesSetting.Of(cfg) // its own protocol, as Open runs it
	a := audienceOf(cfg)
	c.Connections = a.conns()
	c.SetOwn(audienceCondition, &AudienceConditions{Viewers: a.viewers, Channels: a.live.Channels, Titles: a.live.Titles, Zipf: a.zipf,
		Ladder: a.live.Ladder, TargetDuration: results.Duration(a.live.TargetDuration), Window: a.live.Window,
		TitleSegments: a.live.TitleSegments, VODShare: a.vodShare, SwitchShare: a.switchShare,
		Ramp: results.Duration(a.ramp), Watch: results.Duration(a.watch), StoreSizes: w.storeSizes(&s)})
	return c
}

func (w liveAudience) Estimate(cfg Config) time.Duration {
	s := w.Spec()
	pass := rampSetting.Of(cfg) + watchSetting.Of(cfg) + 2*time.Second
	others := len(w.storeSizes(&s)) - 1
	steps := audienceWarmups + audiencePassesSetting.Of(cfg) + others*(audienceWarmups+1)
	return startEstimate + time.Duration(steps)*pass + time.Duration(others)*restartEstimate
}

// configure is the workload with the run's audience: its origin serves
// the channels and titles, and its curve the run's store sizes.
func (liveAudience) configure(s Spec, cfg Config) Spec {
	s.w = liveAudience{sizes: storeSizesSetting.Of(cfg)}
	s.Live = audienceOf(cfg.withDefaults()).live
	return s
}

// audienceSession is live-audience on one target.
type audienceSession struct {
	spec  *Spec
	w     liveAudience
	cfg   Config
	a     audience
	tgt   *Target
	rc    *Recorder
	g     *loadgen.Generator
	sizes []int64
	q     string
	plans []*viewerPlan

	memAtStart *int64
	memWhy     string // why memory cannot be read, or ""

	hit, offload, perSeg, stall *sumTest
	curve                       []*sumTest
	stale, perObj               *results.Result
	playlist, segment           *latencyTest

	// Over the valid measured passes.
	staleH     *hdr.Histogram
	perObjects []float64
}

func (w liveAudience) Open(ctx context.Context, s Spec, cfg Config, tgt *Target, rc *Recorder) (Session, error) {
	as := &audienceSession{spec: &s, w: w, cfg: cfg, a: audienceOf(cfg), tgt: tgt, rc: rc, sizes: w.storeSizes(&s),
		q: "?run=" + tgt.Nonce + "-audience", staleH: loadgen.NewHistogram()}
	res := map[string]*results.Result{}
	for _, d := range w.Tests() {
		if d.q > 0 {
			lt := rc.latency(&s, tgt, d.id, d.title, d.q)
			lt.r.Aggregation = d.agg
			if d.id == "p99-ttfb-playlist" {
				as.playlist = lt
			} else {
				as.segment = lt
			}
			continue
		}
		r := rc.newTest(&s, tgt, d)
		r.LowerIsBetter = d.lower
		res[d.id] = r
	}
	as.hit = &sumTest{r: res["hit-ratio"], value: complement, fetches: true}
	as.offload = &sumTest{r: res["byte-offload"], value: complement}
	as.perSeg = &sumTest{r: res["origin-per-segment"], value: ratio, fetches: true}
	as.stall = &sumTest{r: res["stall-risk"], value: percent}
	as.stale, as.perObj = res["live-edge-staleness"], res["bytes-per-object"]
	for _, size := range as.sizes {
		as.curve = append(as.curve, &sumTest{r: res[missRatioID(size)], value: percent, fetches: true})
	}
	if !as.resizable() {
		why := "an external proxy's store is its operator's: hlsbench cannot size it"
		for _, t := range as.curve[1:] {
			t.r.NotApplicable, t.r.NoValue = why, "not applicable: "+why
		}
	}
	switch {
	case !hasEngineCPU(tgt) && tgt.InProcess:
		as.memWhy = "the engine runs inside hlsbench's own process (runtime " + tgt.Engine.Runtime + "): its memory is not apart from the generator's"
	case !hasEngineCPU(tgt):
		as.memWhy = tgt.Engine.Name + "'s processes were not started by hlsbench: their memory is not read"
	}
	if as.memWhy != "" {
		as.perObj.NotApplicable, as.perObj.NoValue = as.memWhy, "not applicable: "+as.memWhy
	}
	if err := as.connect(ctx); err != nil {
		return nil, err
	}
	return as, nil
}

// connect opens the generator on the target and reads the engine's memory
// before anything is cached.
func (as *audienceSession) connect(ctx context.Context) error {
	g, err := newGenerator(ctx, as.tgt, &as.cfg, as.a.conns(), newEvidenceSet(as.tgt.Seed), nil)
	if err != nil {
		return err
	}
	as.g = g
	if as.memWhy == "" && as.memAtStart == nil {
		if m, err := engineMemory(as.tgt); err == nil {
			as.memAtStart = &m
		}
	}
	return nil
}

func (as *audienceSession) resizable() bool {
	return as.tgt.Engine.EngineName() != engines.ExternalName
}

// phase is which store size step i runs at (0: the policy's), and
// whether it is a warm-up.
func (as *audienceSession) phase(i int) (phase int, warmup bool, index int) {
	main := audienceWarmups + audiencePassesSetting.Of(as.cfg)
	if i < main {
		if i < audienceWarmups {
			return 0, true, i + 1
		}
		return 0, false, i + 1 - audienceWarmups
	}
	j := i - main
	per := audienceWarmups + 1
	k := j % per
	if k < audienceWarmups {
		return 1 + j/per, true, k + 1
	}
	return 1 + j/per, false, 1
}

func (as *audienceSession) Steps() int {
	return audienceWarmups + audiencePassesSetting.Of(as.cfg) + (len(as.sizes)-1)*(audienceWarmups+1)
}

// PolicyAt is the engine's policy from step i on, when it changes there:
// each curve size starts with an engine of that store size.
func (as *audienceSession) PolicyAt(i int) (engines.Policy, bool) {
	ph, warm, index := as.phase(i)
	if ph == 0 || !warm || index != 1 || !as.resizable() {
		return engines.Policy{}, false
	}
	p := as.spec.Policy
	p.StoreBytes = as.sizes[ph]
	return p, true
}

// Retarget moves the session to a restarted engine.
func (as *audienceSession) Retarget(ctx context.Context, tgt *Target) error {
	as.g.Close()
	as.tgt = tgt
	return as.connect(ctx)
}

func (as *audienceSession) Close() error { return as.g.Close() }

func (as *audienceSession) Step(ctx context.Context, i int) error {
	ph, warm, index := as.phase(i)
	if ph > 0 && !as.resizable() {
		return nil // its tests are not applicable
	}
	d := as.a.ramp + as.a.watch
	what := fmt.Sprintf("pass %d/%d", index, audiencePassesSetting.Of(as.cfg))
	switch {
	case warm && ph > 0:
		what = "warm-up at store " + sizeName(as.sizes[ph])
	case warm:
		what = fmt.Sprintf("warm-up %d/%d", index, audienceWarmups)
	case ph > 0:
		what = "pass at store " + sizeName(as.sizes[ph])
	}
	as.rc.Progress.step(fmt.Sprintf("%s (%d viewers)", what, as.a.viewers), d)

	start := time.Now()
	u := newUniverse(&as.a, start, d+5*time.Second)
	// The measured passes at every store size have the same audience (a
	// curve compares sizes, not casts); warm-ups have their own.
	seed := uint64(index)
	if warm {
		seed += 1000
	}
	seeds := as.a.cast(seed)
	shards := as.g.Shards()
	as.plans = make([]*viewerPlan, shards)
	before := take(ctx, as.tgt)
	r, runErr := as.g.Run(ctx, loadgen.Pass{Paths: u.paths(as.q), Duration: d, Seed: seed,
		Plan: func(shard int) loadgen.Plan {
			as.plans[shard] = newViewerPlan(u, seeds, shard, shards, seed)
			return as.plans[shard]
		}})
	if runErr != nil {
		return runErr
	}
	if r.Interrupted {
		return ctx.Err()
	}
	// Failed requests are a finding (stall risk counts them), not a fault
	// of the pass; the TTFB tests say so.
	_, verdict := r.Verdict()
	p := &passInfo{index: index, warmup: warm, lr: r, reasons: verdict, started: start}
	after := as.rc.observe(ctx, as.spec, as.tgt, p, before)
	p.ev.Claims = claims(r)
	p.ev.Generator = generatorFigures(r, 50, 99)
	fig := as.figures(u, seeds, r, before, after)
	fig.ev.StoreBytes = as.sizes[ph]
	p.ev.SetPart(audiencePart, fig.ev)
	if ph == 0 {
		as.record(p, r, fig)
	}
	if as.curvePass(i) {
		as.recordCurve(ph, p, fig)
	}
	return as.rc.Save()
}

// passFigures are a pass's figures, and the histograms its latency tests
// merge.
type passFigures struct {
	ev                       *AudienceEvidence
	playlist, segment, stale *hdr.Histogram
	// lateness, per latency figure: why the generator's lateness moved it.
	playlistLate, segmentLate, downloadLate, staleLate []string
	memWhy                                             string
}

// figures are a pass's figures from its viewers' requests. It is long
// (about 150 lines) for a reason: one walk over every viewer's
// requests makes every figure of the pass at once, as the requests are
// too many to walk once per figure.
func (as *audienceSession) figures(u *universe, seeds []viewerSeed, r *loadgen.Result, before, after snapshot) *passFigures {
	td := as.a.live.TargetDuration
	f := &passFigures{ev: &AudienceEvidence{Viewers: len(seeds), BodyBytes: r.BodyBytes},
		playlist: loadgen.NewHistogram(), segment: loadgen.NewHistogram(), stale: loadgen.NewHistogram()}
	for _, v := range seeds {
		if v.live {
			f.ev.Live++
		} else {
			f.ev.VOD++
		}
	}
	plDisp, segDisp, dl, dlDisp := loadgen.NewHistogram(), loadgen.NewHistogram(), loadgen.NewHistogram(), loadgen.NewHistogram()
	liveLag := loadgen.NewHistogram() // the live playlists' schedule lag
	staleMax := int64(0)
	edge := map[int32]bool{} // live segments published in the pass that a viewer asked for
	passStart := r.Start.UnixNano()
	for _, p := range as.plans {
		if p == nil {
			continue
		}
		f.ev.Switches += p.switches
		f.ev.Unplanned += p.beyond
		for i := range p.log {
			rec := &p.log[i]
			f.ev.Requests++
			if rec.status > 0 {
				f.ev.Answered++
			}
			o := u.object(int(rec.obj))
			good := rec.good()
			if good {
				f.ev.GoodBodyBytes += rec.body
			} else {
				f.ev.Failed++
			}
			if o.playlist {
				f.ev.Playlists++
				if !good {
					f.ev.FailedPlaylists++
					if o.live && o.kind == evMedia {
						f.ev.FailedLivePlaylists++
					}
					continue
				}
				_ = f.playlist.RecordValue(max(rec.ttfb, 0))
				_ = plDisp.RecordValue(max(rec.ttfb-rec.lag, 0))
				if o.live && o.kind == evMedia {
					f.ev.LivePlaylists++
					if rec.edge < 0 {
						f.ev.Unproven++
						continue
					}
					got := rec.intended + rec.total
					missed := origin.LivePublished(rec.edge+1, td).UnixNano()
					stale := max(got-missed, 0)
					loadgen.Clamp(f.stale, stale) // past 60 s as 60 s; the max is kept apart
					staleMax = max(staleMax, stale)
					_ = liveLag.RecordValue(max(rec.lag, 0))
				}
				continue
			}
			f.ev.Segments++
			isEdge := o.live && origin.LivePublished(o.seg, td).UnixNano() >= passStart
			if isEdge {
				edge[rec.obj] = true
			}
			if !good {
				f.ev.FailedSegments++
				f.ev.Stalls++
				// What the viewer did not get: the segment's size, as the
				// origin makes it.
				f.ev.UndeliveredBytes += as.a.live.SegmentSize(o.r)
				if isEdge {
					f.ev.EdgeFailed++
				}
				continue
			}
			if rec.total > int64(td) {
				f.ev.Stalls++
			}
			_ = f.segment.RecordValue(max(rec.ttfb, 0))
			_ = segDisp.RecordValue(max(rec.ttfb-rec.lag, 0))
			_ = dl.RecordValue(max(rec.total, 0))
			_ = dlDisp.RecordValue(max(rec.total-rec.lag, 0))
		}
	}
	ev := f.ev
	ev.PlaylistP50Ms, ev.PlaylistP99Ms = msq(f.playlist, 50), msq(f.playlist, 99)
	ev.SegmentP50Ms, ev.SegmentP99Ms = msq(f.segment, 50), msq(f.segment, 99)
	ev.DownloadP50Ms, ev.DownloadP99Ms = msq(dl, 50), msq(dl, 99)
	if f.stale.TotalCount() > 0 {
		ev.StalenessP50S = ptr(round3(float64(f.stale.ValueAtQuantile(50)) / 1e9))
		ev.StalenessP99S = ptr(round3(float64(f.stale.ValueAtQuantile(99)) / 1e9))
		ev.StalenessMaxS = ptr(round3(float64(staleMax) / 1e9))
	}
	f.playlistLate = classLateness("playlist TTFB", f.playlist, plDisp, 99)
	f.segmentLate = classLateness("segment TTFB", f.segment, segDisp, 99)
	f.downloadLate = classLateness("segment download time", dl, dlDisp, 99)
	// Staleness is seconds: the generator's lateness moves it by its
	// schedule lag at most, judged against the same tolerance.
	if f.stale.TotalCount() > 0 {
		e := loadgen.LagEffect{Corrected: time.Duration(f.stale.ValueAtQuantile(99))}
		if lag := time.Duration(liveLag.ValueAtQuantile(99)); lag > e.Tolerance() {
			f.staleLate = []string{fmt.Sprintf("the generator's schedule lag p99 on live playlists, %.3f ms, is more than the tolerance of the staleness p99 (%.3f ms): fewer viewers, or a quieter machine",
				float64(lag)/1e6, float64(e.Tolerance())/1e6)}
		}
	}
	ev.EdgeSegments = int64(len(edge))
	if len(before.errs) == 0 && len(after.errs) == 0 {
		ev.OriginFetches = ptr(after.origin.Fetches - before.origin.Fetches)
		ev.OriginBytes = ptr(after.origin.Bytes - before.origin.Bytes)
		// A failed request is a miss served from nowhere: it counts as an
		// origin fetch it did not cost, and its segment's bytes as bytes
		// the origin would have sent, so failing fast never scores.
		if ev.Requests > 0 {
			ev.HitRatio = ptr(round3(complement(hitMisses(ev), ev.Requests)))
		}
		if n, of := offloadSums(ev); of > 0 {
			ev.ByteOffload = ptr(round3(complement(n, of)))
		}
		var n, most int64
		for obj := range edge {
			path := u.path(int(obj), as.q)
			k := after.origin.Objects[path].Fetches - before.origin.Objects[path].Fetches
			n += k
			most = max(most, k)
		}
		ev.EdgeFetches, ev.EdgeMostFetches = ptr(n), ptr(most)
		// What the engine holds: every object the origin served it since
		// it started (nothing expires but the playlists, which it
		// replaces), and their bodies.
		for _, o := range after.origin.Objects {
			if o.Fetches > 0 {
				ev.Objects++
				ev.PayloadBytes += o.Bytes / o.Fetches
			}
		}
	}
	if as.memWhy == "" {
		m, err := engineMemory(as.tgt)
		switch {
		case err != nil:
			f.memWhy = "the engine's memory could not be read: " + err.Error()
		case as.memAtStart == nil:
			f.memWhy = "the engine's memory could not be read when it started"
		default:
			ev.MemoryAtStart, ev.Memory = as.memAtStart, ptr(m)
		}
	}
	return f
}

// engineMemory is the engine's memory now and its cache files: its
// processes' proportional set sizes, so pages they share (the binary,
// NGINX's keys zone, Varnish's shared-memory log) count once, not once per
// process as their resident sizes would.
func engineMemory(tgt *Target) (int64, error) {
	var g *cost.Group
	for i := range tgt.Groups {
		if tgt.Groups[i].Name == costEngine {
			g = &tgt.Groups[i]
		}
	}
	if g == nil {
		return 0, fmt.Errorf("no engine process group")
	}
	mem, err := cost.PSSNow(*g)
	if err != nil {
		return 0, err
	}
	if tgt.CacheBytes != nil {
		files, err := tgt.CacheBytes()
		if err != nil {
			return 0, fmt.Errorf("cache files: %w", err)
		}
		mem += files
	}
	return mem, nil
}

// record adds a pass at the policy's store to the audience's tests.
func (as *audienceSession) record(p *passInfo, r *loadgen.Result, f *passFigures) {
	ev := f.ev
	noOrigin := "the origin's counters could not be read around the pass"
	timed := func(late []string) []string {
		return append(append([]string{}, p.instrumental(late)...), p.latencyReasons()...)
	}

	// Counts at the origin, a failed request counted as a miss served
	// from nowhere; any failure makes them invalid (failedCounts).
	failures := failedCounts(ev, r)
	why := noOrigin
	if ev.OriginFetches != nil {
		why = "no request was sent"
	}
	as.hit.add(p, ev.HitRatio, why, hitMisses(ev), ev.Requests, failures...)
	why = noOrigin
	if ev.OriginBytes != nil {
		why = "no body byte was received"
	}
	n, of := offloadSums(ev)
	as.offload.add(p, ev.ByteOffload, why, n, of, failures...)
	var per *float64
	why = noOrigin
	switch {
	case ev.EdgeFetches == nil:
	case ev.EdgeSegments == 0:
		why = "no viewer asked for a live segment published during the pass"
	default:
		per = ptr(round3(float64(*ev.EdgeFetches+ev.EdgeFailed) / float64(ev.EdgeSegments)))
	}
	as.perSeg.add(p, per, why, deref(ev.EdgeFetches)+ev.EdgeFailed, ev.EdgeSegments, failures...)

	// Latency, per class of request.
	failed := func(n, of int64, what string) []string {
		if n == 0 {
			return nil
		}
		return []string{fmt.Sprintf("%d of %d %s requests failed (%s over the pass): they have no TTFB", n, of, what, kinds(r.ErrorsByKind))}
	}
	for _, t := range []struct {
		lt         *latencyTest
		h          *hdr.Histogram
		late, fail []string
		n          int64
	}{{as.playlist, f.playlist, f.playlistLate, failed(ev.FailedPlaylists, ev.Playlists, "playlist"), ev.Playlists},
		{as.segment, f.segment, f.segmentLate, failed(ev.FailedSegments, ev.Segments, "segment"), ev.Segments}} {
		v, why := p.latencyValue(t.h, t.lt.q)
		if v == nil && t.n > 0 {
			why = "every one of them failed"
		}
		t.lt.addValue(p, t.h, v, why, append(timed(t.late), t.fail...)...)
	}

	// Stall risk: a share of downloads, judged on their download time.
	var sr *float64
	if ev.Segments > 0 {
		sr = ptr(round3(100 * float64(ev.Stalls) / float64(ev.Segments)))
	}
	as.stall.add(p, sr, "no segment was requested", ev.Stalls, ev.Segments, timed(f.downloadLate)...)

	// Live-edge staleness, proven from the origin's stamps. A failed live
	// playlist is a failure of the test: an engine that fails its stale
	// playlists would otherwise look fresher.
	var st *float64
	why = "no live playlist was answered"
	var stMore []string
	if n := ev.FailedLivePlaylists; n > 0 {
		stMore = append(stMore, fmt.Sprintf("%d of %d live playlist requests failed (%s over the pass): their staleness is unknown",
			n, n+ev.LivePlaylists, kinds(r.ErrorsByKind)))
	}
	switch {
	case ev.LivePlaylists > 0 && ev.Unproven == ev.LivePlaylists:
		why = fmt.Sprintf("none of the %d live playlists carried the origin's %s: their staleness cannot be proven", ev.LivePlaylists, origin.LiveEdgeHeader)
	case ev.StalenessP99S != nil:
		st = ev.StalenessP99S
		if ev.Unproven > 0 {
			stMore = append(stMore, fmt.Sprintf("%d of %d live playlists carried no %s: their staleness cannot be proven", ev.Unproven, ev.LivePlaylists, origin.LiveEdgeHeader))
		}
	}
	if rp := addPass(as.stale, p, st, why, append(timed(f.staleLate), stMore...)...); !rp.Warmup && rp.Valid {
		as.staleH.Merge(f.stale)
		as.stale.Value = ptr(round3(float64(as.staleH.ValueAtQuantile(99)) / 1e9))
		as.stale.Recount()
	}

	// Memory per object.
	if as.memWhy == "" {
		var bpo *float64
		why := f.memWhy
		var more []string
		switch {
		case why != "":
		case ev.Objects == 0:
			why = "the origin served the engine no object"
		default:
			bpo = ptr(float64((*ev.Memory - *ev.MemoryAtStart) / ev.Objects))
			if ev.PayloadBytes > ev.StoreBytes {
				more = append(more, fmt.Sprintf("the origin served %s of objects into a store of %s: some were evicted, so fewer objects than counted are held",
					sizeName(ev.PayloadBytes), sizeName(ev.StoreBytes)))
			}
		}
		if rp := addPass(as.perObj, p, bpo, why, more...); !rp.Warmup && rp.Valid {
			as.perObjects = append(as.perObjects, *bpo)
			as.perObj.Value = ptr(stats.Median(as.perObjects))
			as.perObj.Recount()
		}
	}
}

// recordCurve adds a pass to the miss ratio at its store size: failed
// requests are misses, and any makes the pass invalid, as for the hit
// ratio.
func (as *audienceSession) recordCurve(ph int, p *passInfo, f *passFigures) {
	ev := f.ev
	why := "the origin's counters could not be read around the pass"
	if ev.OriginFetches != nil {
		why = "no request was sent"
	}
	as.curve[ph].add(p, missRatio(ev), why, hitMisses(ev), ev.Requests, failedCounts(ev, p.lr)...)
}

// curvePass says whether step i's pass is one of the miss-ratio curve's.
// Every size is measured alike: an engine started with that store, one
// warm-up, and the first measured pass after it. At the policy's size that
// is the engine the session started on and its first measured pass; the
// later ones are warmer and stay out of the curve.
func (as *audienceSession) curvePass(i int) bool {
	ph, warm, index := as.phase(i)
	return ph > 0 || warm || index == 1
}

// hitMisses are a pass's misses: the origin's object answers, and the
// failed requests, each a miss served from nowhere.
func hitMisses(ev *AudienceEvidence) int64 { return deref(ev.OriginFetches) + ev.Failed }

// missRatio is (origin object answers + failed requests) ÷ requests, in
// percent; nil without the origin's counters or a request.
func missRatio(ev *AudienceEvidence) *float64 {
	if ev.OriginFetches == nil || ev.Requests == 0 {
		return nil
	}
	return ptr(round3(percent(hitMisses(ev), ev.Requests)))
}

// offloadSums are byte offload's sums: the origin's body bytes and the
// failed segments' sizes (bytes a viewer did not get are not offloaded),
// of the good answers' body bytes and those sizes. An error page's body is
// no delivered byte.
func offloadSums(ev *AudienceEvidence) (n, of int64) {
	return deref(ev.OriginBytes) + ev.UndeliveredBytes, ev.GoodBodyBytes + ev.UndeliveredBytes
}

// audienceFailureTolerance is how many failed requests a pass's counts at
// the origin tolerate: none. The origin never fails in live-audience, so a
// failure is the engine's (or the generator's), and a failed request's
// would-be origin fetch is unknown: counted as a miss it may over-charge
// an engine, left out it would flatter one that fails fast.
const audienceFailureTolerance = 0

// failedCounts is why a pass's hit ratio, byte offload, origin requests per
// segment and miss ratio are invalid: its failed requests, counted.
func failedCounts(ev *AudienceEvidence, r *loadgen.Result) []string {
	if ev.Failed <= audienceFailureTolerance {
		return nil
	}
	var by string
	if r != nil && len(r.ErrorsByKind) > 0 {
		by = "; " + kinds(r.ErrorsByKind)
	}
	return []string{fmt.Sprintf("%d of %d requests failed (%d of %d playlists, %d of %d segments%s): each counts as a miss served from nowhere, and any failure makes the counts at the origin invalid",
		ev.Failed, ev.Requests, ev.FailedPlaylists, ev.Playlists, ev.FailedSegments, ev.Segments, by)}
}

// restarter is a session whose later steps need the engine under another
// policy (live-audience's store sizes): the runner restarts the engine
// with it before step i, the origin staying, and hands the session the
// new target.
type restarter interface {
	PolicyAt(i int) (engines.Policy, bool)
	Retarget(ctx context.Context, tgt *Target) error
}

var (
	_ Session   = (*audienceSession)(nil)
	_ restarter = (*audienceSession)(nil)
)

// LargestStore is the largest cache store any of specs gives an engine
// under cfg: a policy's, or a size of live-audience's miss-ratio curve
// (the engine restarted under each).
func LargestStore(specs []Spec, cfg Config) int64 {
	var n int64
	for _, s := range specs {
		n = max(n, s.Policy.StoreBytes)
		if s.Name != LiveAudience {
			continue
		}
		sizes := storeSizesSetting.Of(cfg)
		if sizes == nil {
			sizes = DefaultStoreSizes
		}
		for _, v := range sizes {
			n = max(n, v)
		}
	}
	return n
}

// audiencePart is the key of AudienceEvidence in a pass's evidence.
const audiencePart = "audience"

// AudienceEvidence is what a live-audience pass's viewers did and got,
// and what the origin served them.
type AudienceEvidence struct {
	// StoreBytes is the engine's store in the pass (the policy's, or a
	// miss-ratio curve's size).
	StoreBytes int64 `json:"store_bytes"`
	// Viewers joined, live and on VOD, and how many switched rendition
	// at least once.
	Viewers  int   `json:"viewers"`
	Live     int   `json:"live"`
	VOD      int   `json:"vod"`
	Switches int64 `json:"switches"`
	// Unplanned counts segments playlists listed that viewers skipped: more
	// than 5 minutes older than the pass, past what its plan covers.
	Unplanned int64 `json:"unplanned,omitempty"`
	Requests  int64 `json:"requests"`
	Answered  int64 `json:"answered"`
	Playlists int64 `json:"playlists"`
	Segments  int64 `json:"segments"`
	// Failed counts the requests without a good answer (no answer, a
	// status other than 200, a short or wrong body): FailedPlaylists and
	// FailedSegments of them by class, FailedLivePlaylists the live media
	// playlists among the playlists. Each is a miss served from nowhere.
	Failed              int64 `json:"failed"`
	FailedPlaylists     int64 `json:"failed_playlists"`
	FailedSegments      int64 `json:"failed_segments"`
	FailedLivePlaylists int64 `json:"failed_live_playlists"`
	// OriginFetches and OriginBytes are the origin's object answers and
	// their body bytes over the pass; BodyBytes what the viewers received,
	// error pages included, GoodBodyBytes the good answers' bodies alone,
	// and UndeliveredBytes the sizes of the segments whose requests failed.
	OriginFetches    *int64 `json:"origin_fetches"`
	OriginBytes      *int64 `json:"origin_bytes"`
	BodyBytes        int64  `json:"body_bytes"`
	GoodBodyBytes    int64  `json:"good_body_bytes"`
	UndeliveredBytes int64  `json:"undelivered_bytes"`
	// HitRatio and ByteOffload are percentages: 1 − (origin fetches +
	// failed requests) ÷ requests, and 1 − (origin bytes + undelivered
	// bytes) ÷ (good body bytes + undelivered bytes).
	HitRatio    *float64 `json:"hit_ratio_pct"`
	ByteOffload *float64 `json:"byte_offload_pct"`
	// EdgeSegments are the live segments published during the pass that a
	// viewer asked for, EdgeFetches the origin's fetches of them,
	// EdgeMostFetches the most of one, and EdgeFailed the failed requests
	// of them: origin requests per new segment is (EdgeFetches +
	// EdgeFailed) ÷ EdgeSegments.
	EdgeSegments    int64  `json:"edge_segments"`
	EdgeFetches     *int64 `json:"edge_fetches"`
	EdgeMostFetches *int64 `json:"edge_most_fetches"`
	EdgeFailed      int64  `json:"edge_failed"`
	// Playlist and segment TTFB, and segment download time, from the
	// player's intended send time.
	PlaylistP50Ms *float64 `json:"playlist_ttfb_p50_ms"`
	PlaylistP99Ms *float64 `json:"playlist_ttfb_p99_ms"`
	SegmentP50Ms  *float64 `json:"segment_ttfb_p50_ms"`
	SegmentP99Ms  *float64 `json:"segment_ttfb_p99_ms"`
	DownloadP50Ms *float64 `json:"segment_download_p50_ms"`
	DownloadP99Ms *float64 `json:"segment_download_p99_ms"`
	// Stalls are segment downloads slower than the segment's duration, or
	// failed, of Segments.
	Stalls int64 `json:"stalls"`
	// LivePlaylists are the good live media playlist answers (the failed
	// ones are FailedLivePlaylists); Unproven
	// those without the origin's edge stamp; StalenessP50S and P99S how far
	// behind the origin's live edge they were when they arrived, and
	// StaleMaxS the most.
	LivePlaylists int64    `json:"live_playlists"`
	Unproven      int64    `json:"unproven,omitempty"`
	StalenessP50S *float64 `json:"staleness_p50_s"`
	StalenessP99S *float64 `json:"staleness_p99_s"`
	StalenessMaxS *float64 `json:"staleness_max_s"`
	// Memory is the engine's memory (its processes' proportional set
	// sizes, so pages they share count once) and its cache files, Objects
	// the distinct objects the origin served it since it started, and
	// PayloadBytes their bodies: bytes per object is Memory − MemoryAtStart
	// over Objects.
	MemoryAtStart *int64 `json:"memory_at_start_bytes,omitempty"`
	Memory        *int64 `json:"memory_bytes,omitempty"`
	Objects       int64  `json:"objects"`
	PayloadBytes  int64  `json:"payload_bytes"`
}

// AudienceConditions is live-audience's audience as it ran: viewers joining over
// Ramp then watching for Watch in each pass, live channels and VOD titles
// chosen with Zipf popularity, an ABR ladder (bits per second), a share of
// the viewers on VOD and a share switching rendition, and the engine's
// store sizes the miss-ratio curve was measured at (the policy's first).
type AudienceConditions struct {
	Viewers        int              `json:"viewers"`
	Channels       int              `json:"channels"`
	Titles         int              `json:"titles"`
	Zipf           float64          `json:"zipf"`
	Ladder         []int64          `json:"ladder_bps"`
	TargetDuration results.Duration `json:"target_duration"`
	Window         int              `json:"window"`
	TitleSegments  int              `json:"title_segments"`
	VODShare       float64          `json:"vod_share"`
	SwitchShare    float64          `json:"switch_share"`
	Ramp           results.Duration `json:"ramp"`
	Watch          results.Duration `json:"watch"`
	StoreSizes     []int64          `json:"store_sizes"`
}

// String is the audience in one line, "" for none: what Comparable
// compares.
func (a *AudienceConditions) String() string {
	if a == nil {
		return ""
	}
	return fmt.Sprintf("%d viewers over %v then %v, %d channels, %d titles of %d segments, zipf %g, ladder %v bps, %v segments, window %d, vod %g, switch %g, stores %v",
		a.Viewers, time.Duration(a.Ramp), time.Duration(a.Watch), a.Channels, a.Titles, a.TitleSegments, a.Zipf, a.Ladder,
		time.Duration(a.TargetDuration), a.Window, a.VODShare, a.SwitchShare, a.StoreSizes)
}
