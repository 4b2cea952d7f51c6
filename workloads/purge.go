package workloads

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/engines/cost"
	"github.com/hlsbench/hlsbench/origin"
	"github.com/hlsbench/hlsbench/results"
	"github.com/hlsbench/hlsbench/results/stats"
	"github.com/hlsbench/hlsbench/workloads/loadgen"
)

// PurgeStampede is steady load over a whole stream, invalidated at a known
// instant while the load goes on: the refill, proven at the origin.
const PurgeStampede = "purge-stampede"

// The purge-stampede stream and its load.
const (
	// PurgeSegments segments and the two playlists make the stream.
	PurgeSegments = 500
	// PurgeSegmentSize is every segment's size: 500 of them fit any
	// engine's store twice over.
	PurgeSegmentSize = 256 << 10
	// PurgeZipf is the popularity exponent over the stream's objects,
	// playlists first, then segments in order: a few objects are hot.
	PurgeZipf = 1.0
	// purgeWindow is the step recovery is judged at: from a step on, the
	// TTFB p99 of the next recoverSpan of requests that were not the first
	// for their object since the purge must be within recoverBound of the
	// p99 before the purge.
	purgeWindow  = 100 * time.Millisecond
	recoverBound = 1.10
	recoverSpan  = time.Second
	// refillSpan is the refill window: the requests sent in the first
	// second from the purge's start (all of the pass after it when that is
	// shorter). It is the same on every engine: a window that ended at the
	// engine's own recovery would judge a fast engine on its misses and
	// one that never recovers on seconds of hits.
	refillSpan = time.Second
	// purgeWorkers send a per-object purge's requests side by side.
	purgeWorkers = 16
	// cpuEvery is how often the engine's CPU time is read during a pass.
	cpuEvery = 100 * time.Millisecond
)

// PurgeModeAuto lets each engine invalidate with its own mechanism: a
// ban where it has one (Varnish, Vinyl Cache, the built-in cache), else a
// PURGE per object (NGINX, an external proxy).
const PurgeModeAuto = engines.PurgeAuto

type purgeStampede struct{}

// purge-stampede's settings: how the stream is invalidated, the method of
// a per-object purge, and the load before and after the purge in each pass.
var (
	purgeModeSetting = stringSetting("purge-mode", PurgeModeAuto, "purge-stampede's invalidation: auto (each engine's own: a ban where it has one, else a request per object), ban (one call for the stream's prefix) or purge (a request per object)").
				Accept(func(m string) string {
			switch m {
			case PurgeModeAuto, engines.PurgeBan, engines.PurgeObject:
				return ""
			}
			return fmt.Sprintf("want %s, %s or %s", PurgeModeAuto, engines.PurgeBan, engines.PurgeObject)
		}).Record("purge_stampede.mode")
	purgeMethodSetting = stringSetting("purge-method", engines.PurgeMethod, "purge-stampede: the HTTP method of a per-object purge (an external proxy is purged this way)").
				Accept(func(m string) string {
			if !validMethod(m) {
				return "want an HTTP method, a token such as PURGE or BAN"
			}
			return ""
		}).Record("purge_stampede.method")
	purgeBeforeSetting = durationSetting("purge-before", 2*time.Second, "purge-stampede: load before the purge in each pass").
				Quick(time.Second).Accept(atLeast(500*time.Millisecond, "at least 500ms of load before the purge")).Record("purge_stampede.before")
	purgeAfterSetting = durationSetting("purge-after", 6*time.Second, "purge-stampede: load after the purge in each pass").
				Quick(3 * time.Second).Accept(atLeast(time.Second, "at least 1s of load after the purge")).Record("purge_stampede.after")
)

// The keys of purge's own conditions in the results.
const (
	objectsCondition     = "objects"      // how many objects a pass spreads its requests over
	zipfCondition        = "zipf"         // the Zipf exponent of their popularity
	purgeModeCondition   = "purge_mode"   // how the stream is invalidated (auto, ban or purge)
	purgeMethodCondition = "purge_method" // the method of a per-object purge
	purgeBeforeCondition = "purge_before" // the load before the purge
	purgeAfterCondition  = "purge_after"  // the load after it
)

// conditionFacts are the stream's objects and how it was invalidated.
func (purgeStampede) conditionFacts(c results.Conditions) (load, rest []results.Fact) {
	return nil, purgeFacts(c)
}

// purgeFacts are purge-stampede's and repeated-bans' lines: the objects,
// then the purge, or the bans when one object was invalidated at a time.
func purgeFacts(c results.Conditions) []results.Fact {
	var f []results.Fact
	if n, _ := results.OwnCondition[int](c, objectsCondition); n > 0 {
		zipf, _ := results.OwnCondition[float64](c, zipfCondition)
		f = append(f, results.Fact{Label: "Objects", Value: fmt.Sprintf("%d, Zipf popularity (exponent %s)", n, results.Sig3(zipf))})
	}
	mode, _ := results.OwnCondition[string](c, purgeModeCondition)
	if mode == "" {
		return f
	}
	how := mode
	switch mode {
	case engines.PurgeAuto:
		how = "each engine's own way: a ban of the stream's prefix where it has one, else a request per object"
	case engines.PurgeBan:
		how = "a ban of the stream's prefix"
	case engines.PurgeObject:
		how = "a request per object"
	}
	if method, _ := results.OwnCondition[string](c, purgeMethodCondition); method != "" {
		how += " (per-object method " + method + ")"
	}
	before, _ := results.OwnCondition[results.Duration](c, purgeBeforeCondition)
	after, _ := results.OwnCondition[results.Duration](c, purgeAfterCondition)
	if every, _ := results.OwnCondition[results.Duration](c, banEveryCondition); every > 0 {
		how = strings.NewReplacer("a ban of the stream's prefix", "a ban of the object's URL").Replace(how)
		return append(f, results.Fact{Label: "Bans", Value: fmt.Sprintf("one object every %s, the least popular first, from %s after the pass starts for %s: %s", every, before, after, how)})
	}
	return append(f, results.Fact{Label: "Purge", Value: fmt.Sprintf("the whole stream, %s after the pass starts, then %s of load: %s", before, after, how)})
}

func (purgeStampede) measuresCache() {}

// configure gives the policy the run's purge mode, which the engines render.
func (purgeStampede) configure(s Spec, cfg Config) Spec {
	if mode := purgeModeSetting.Of(cfg); mode != "" && s.Policy.Purge != "" {
		s.Policy.Purge = mode
	}
	return s
}

func (purgeStampede) Settings() []Setting {
	return []Setting{purgeModeSetting, purgeMethodSetting, purgeBeforeSetting, purgeAfterSetting}
}

// validMethod is an HTTP method token (RFC 9110: tchar), not GET or HEAD,
// which would fetch instead of purging.
func validMethod(m string) bool {
	if m == "" || len(m) > 32 || m == "GET" || m == "HEAD" {
		return false
	}
	for _, r := range m {
		if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", r)) {
			return false
		}
	}
	return true
}

func (purgeStampede) Spec() Spec {
	p := engines.DefaultPolicy()
	// Nothing expires during a pass: every origin fetch after the purge is
	// the purge's.
	p.ManifestTTL, p.SegmentTTL = 24*time.Hour, 24*time.Hour
	p.Purge = PurgeModeAuto
	return Spec{Name: PurgeStampede, Title: "Purge stampede", Rate: 500, Connections: 50, Policy: p,
		SegmentSize: PurgeSegmentSize,
		Description: "500 rps over a stream's playlists and 500 segments (Zipf popularity, warm cache), the whole stream invalidated at a known instant as the load goes on; the refill counted at the origin, staleness proven from its stamps"}
}

// Tests are purge-stampede's, known before it runs (for cells that are not
// applicable).
func (purgeStampede) Tests() []latencyDef {
	return []latencyDef{
		{id: "refill-amplification", title: "Refill amplification", unit: "x", lower: true,
			axis: "Origin fetches per object requested after the purge (1 x is a perfectly coalesced refill)",
			agg:  "origin fetches of the stream's objects from the purge's start to the pass's end ÷ distinct objects with a good answer to a request sent after the purge returned, counted at the origin; the valid measured passes' sums. A pass with fewer fetches than objects is invalid: the purge left copies behind"},
		{id: "recovery", title: "Time to recover", unit: "s", lower: true,
			agg: "from the purge's start until the TTFB p99 of the next second of requests, but the first for each object since the purge (a miss on any engine; a failure counts at the timeout), is back within 10 % of the p99 before the purge, at 100 ms steps; the median of the valid measured passes, a pass that did not recover counting as the longest (its value the least it can be: how far recovery was looked for), null when the median pass did not recover. A pass whose purge removed nothing is invalid, and so is a saturated one (it carried under 97 % of its offered rate, or its waits for a free connection moved its p50 or p99 past the generator's tolerance or grew through the pass: its TTFB counts queueing)"},
		{id: "stale-after-purge", title: "Stale answers after the purge", unit: "per 1000 answers", lower: true,
			agg: "1000 × good answers to requests sent after the purge returned whose copy the origin made before the purge started ÷ such answers whose staleness could be proven (they carried the origin's X-Origin-Generated stamp), the valid measured passes' sums; each pass's value is its own rate, the result's stale count the raw sum"},
		{id: "p50-ttfb-refill", title: "p50 TTFB during the refill", q: 50,
			agg: "p50 TTFB of every request sent in the refill window, the first second from the purge's start (the same on every engine; the pass after the purge when shorter), a timeout counted at the timeout, of the valid measured passes merged; a failed request there makes the pass invalid"},
		{id: "p99-ttfb-refill", title: "p99 TTFB during the refill", q: 99,
			agg: "p99 TTFB of every request sent in the refill window, the first second from the purge's start (the same on every engine; the pass after the purge when shorter), a timeout counted at the timeout, of the valid measured passes merged; a failed request there makes the pass invalid"},
		{id: "purge-duration", title: "Purge duration", unit: "ms", lower: true,
			agg: "from the purge call to its return (a ban accepted, or every per-object request answered); the median of the valid measured passes"},
	}
}

func (purgeStampede) Conditions(s Spec, cfg Config) results.Conditions {
	c := protocol(cfg)
	c.RateRPS, c.Connections = pick(cfg.Rate, s.Rate), pick(cfg.Connections, s.Connections)
	c.ObjectBytes = s.SegmentSize
	c.SetOwn(objectsCondition, PurgeSegments+2)
	c.SetOwn(zipfCondition, PurgeZipf)
	c.SetOwn(purgeModeCondition, purgeMode(cfg, s))
	c.SetOwn(purgeBeforeCondition, results.Duration(purgeBeforeSetting.Of(cfg)))
	c.SetOwn(purgeAfterCondition, results.Duration(purgeAfterSetting.Of(cfg)))
	if purgeMethodSetting.Of(cfg) != "" {
		c.SetOwn(purgeMethodCondition, purgeMethodSetting.Of(cfg))
	}
	c.EngineCost = controlCost
	return c
}

func purgeMode(cfg Config, s Spec) string {
	if purgeModeSetting.Of(cfg) != "" {
		return purgeModeSetting.Of(cfg)
	}
	return s.Policy.Purge
}

func (purgeStampede) Estimate(cfg Config) time.Duration {
	return startEstimate + time.Duration(max(cfg.Warmups, 0)+cfg.Passes)*(purgeBeforeSetting.Of(cfg)+purgeAfterSetting.Of(cfg)+time.Second)
}

// purgeSession is the workload on one target.
type purgeSession struct {
	spec   *Spec
	cfg    Config
	tgt    *Target
	rc     *Recorder
	g      *loadgen.Generator
	log    *purgeLog
	paths  []string
	prefix string
	mode   string // engines.PurgeBan or engines.PurgeObject
	method string
	rate   float64
	client *http.Client
	// watch watched the host through the last pass: its stalls excuse
	// the lateness they account for.
	watch *hostWatch

	amp, stale    *sumTest
	recovery, dur *results.Result
	p50, p99      *latencyTest

	// Over the valid measured passes.
	recoveries []censoredValue
	durations  []float64
}

func (w purgeStampede) Open(ctx context.Context, s Spec, cfg Config, tgt *Target, rc *Recorder) (Session, error) {
	ps, err := openStream(ctx, s, cfg, tgt, rc)
	if err != nil {
		return nil, err
	}
	ps.newTests(rc)
	return ps, nil
}

// newTests records purge-stampede's tests for ps's target.
func (ps *purgeSession) newTests(rc *Recorder) {
	res := map[string]*results.Result{}
	for _, d := range (purgeStampede{}).Tests() {
		if d.q == 0 {
			res[d.id] = rc.newTest(ps.spec, ps.tgt, d)
			continue
		}
		lt := rc.latency(ps.spec, ps.tgt, d.id, d.title, d.q)
		lt.r.Aggregation = d.agg + saturatedAgg
		if d.q == 50 {
			ps.p50 = lt
		} else {
			ps.p99 = lt
		}
	}
	ps.amp = &sumTest{r: res["refill-amplification"], value: ratio, fetches: true}
	ps.stale = &sumTest{r: res["stale-after-purge"], value: perThousand}
	ps.recovery, ps.dur = res["recovery"], res["purge-duration"]
}

// openStream makes the stream's objects, the generator over them and the
// client that warms and purges them, on tgt (purge-stampede and
// repeated-bans share them).
func openStream(ctx context.Context, s Spec, cfg Config, tgt *Target, rc *Recorder) (*purgeSession, error) {
	ps := &purgeSession{spec: &s, cfg: cfg, tgt: tgt, rc: rc, log: &purgeLog{}, rate: pick(cfg.Rate, s.Rate),
		prefix: "/stream/", method: pick(purgeMethodSetting.Of(cfg), engines.PurgeMethod)}
	ps.mode = tgt.PurgeMode
	if ps.mode == "" {
		ps.mode = engines.PurgeObject // an external proxy: a request per object
	}
	if ps.mode == engines.PurgeBan && tgt.Ban == nil {
		return nil, fmt.Errorf("purge mode ban: %s cannot ban", tgt.Engine.Name)
	}
	// The stream's objects, this run's own: popularity follows the order.
	q := "?run=" + tgt.Nonce + "-purge"
	ps.paths = []string{ManifestPath + q, origin.MasterPath + q}
	for n := range PurgeSegments {
		ps.paths = append(ps.paths, fmt.Sprintf(SegmentPath, n)+q)
	}
	ev := newEvidenceSet(tgt.Seed)
	if tgt.OriginConfig != nil {
		// Whole bodies are checked by their CRC, and without it against
		// the objects the origin's config fixes.
		ev.know(*tgt.OriginConfig, ps.paths...)
	}
	g, err := newGenerator(ctx, tgt, &cfg, pick(cfg.Connections, s.Connections), ev, ps.log.record)
	if err != nil {
		return nil, err
	}
	ps.g = g
	ps.log.shards = make([][]purgeRec, g.Shards())
	tr := &http.Transport{TLSClientConfig: tgt.TLS, MaxIdleConnsPerHost: purgeWorkers, DisableCompression: true}
	ps.client = &http.Client{Transport: countAnswers{tr, &ps.log.control}, Timeout: cfg.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return ps, nil
}

func (ps *purgeSession) Steps() int { return ps.cfg.Warmups + ps.cfg.Passes }

func (ps *purgeSession) Close() error {
	ps.client.CloseIdleConnections()
	return ps.g.Close()
}

// purgeDone is what the purge call did.
type purgeDone struct {
	start, returned time.Time
	// sent and done are when each object's invalidation was sent and
	// answered (unix ns): the ban's start and return for every object.
	sent, done     []int64
	atStart        origin.Stats // the origin's counters just before it
	statsErr       error        // reading them failed
	purged, absent int64
	failed         int64
	samples        []string
	err            error
}

func (ps *purgeSession) Step(ctx context.Context, i int) error {
	cfg, tgt := ps.cfg, ps.tgt
	ps.rc.Progress.step(passLabel(i, cfg.Warmups, cfg.Passes, "")+" (purge after "+purgeBeforeSetting.Of(cfg).String()+")",
		purgeBeforeSetting.Of(cfg)+purgeAfterSetting.Of(cfg))
	warmErr := ps.warm(ctx)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	ps.log.reset()
	before := take(ctx, tgt)
	started := time.Now()

	// The engine's CPU time, read every cpuEvery through the pass.
	var cpu cpuSeries
	stopCPU := cpu.sample(tgt)

	// The purge outlives nothing: an interrupt stops it, and it may take
	// the rest of the pass and a request timeout at most.
	pctx, pcancel := context.WithTimeout(ctx, purgeBeforeSetting.Of(cfg)+purgeAfterSetting.Of(cfg)+cfg.Timeout)
	defer pcancel()
	done := make(chan purgeDone, 1)
	timer := time.AfterFunc(purgeBeforeSetting.Of(cfg), func() { done <- ps.purge(pctx) })
	w := startWatch(tgt, nil)
	r, runErr := ps.g.Run(ctx, loadgen.Pass{Paths: ps.paths, Zipf: PurgeZipf, Rate: ps.rate,
		Duration: purgeBeforeSetting.Of(cfg) + purgeAfterSetting.Of(cfg), Seed: uint64(i + 1)})
	w.stop()
	var pd purgeDone
	if timer.Stop() {
		pd.err = errors.New("the pass ended before the purge")
	} else {
		pd = <-done
	}
	stopCPU()
	// The recovery keeps failed requests too: a failure counts at the
	// timeout.
	p, after, err := ps.endPass(ctx, i, r, runErr, started, before, w, warmErr)
	if err != nil {
		return err
	}
	if pd.err != nil {
		p.reasons = append(p.reasons, "purge: "+pd.err.Error())
	}
	if pd.failed > 0 {
		p.reasons = append(p.reasons, fmt.Sprintf("%d of %d purge requests failed (%s): the stream was not invalidated",
			pd.failed, len(ps.paths), strings.Join(pd.samples, "; ")))
	}
	p.ev.Generator = generatorFigures(r, 50, 99)
	var pe *PurgeEvidence
	if !pd.start.IsZero() {
		pe = ps.evidence(&pd, before, after, &cpu, r.Start.Add(r.Duration))
		p.ev.SetPart(purgePart, pe)
		if pe.FetchesBefore != nil && *pe.FetchesBefore > 0 {
			p.reasons = append(p.reasons, fmt.Sprintf(
				"the origin fetched the stream's objects %d times before the purge: the cache did not hold the whole stream", *pe.FetchesBefore))
		}
		if pd.absent > 0 && !p.warmup {
			ps.rc.Run.Warnings = append(ps.rc.Run.Warnings, fmt.Sprintf(
				"%s on %s, pass %d: %d of %d objects were not in the cache when purged (404), though it had been warmed: its PURGE may not use the GET's cache key",
				ps.spec.Name, tgt.Engine.Name, p.index, pd.absent, len(ps.paths)))
		}
	}
	ps.record(p, r, pe, &pd)
	return ps.rc.Save()
}

// warm asks for every object of the stream until the engine holds it (the
// last pass's purge left most of them uncached).
func (ps *purgeSession) warm(ctx context.Context) error {
	var failed []string
	var mu sync.Mutex
	ps.each(ctx, func(ctx context.Context, path string) {
		status, err := ps.fetch(ctx, http.MethodGet, path)
		if err == nil && status != http.StatusOK {
			err = fmt.Errorf("GET %s answered %d", path, status)
		}
		if err != nil {
			mu.Lock()
			failed = append(failed, err.Error())
			mu.Unlock()
		}
	})
	if len(failed) > 0 {
		sort.Strings(failed)
		return fmt.Errorf("warming the stream: %d of %d objects failed (%s)", len(failed), len(ps.paths), failed[0])
	}
	return nil
}

// each runs f on every object, purgeWorkers at a time.
func (ps *purgeSession) each(ctx context.Context, f func(context.Context, string)) {
	work := make(chan string)
	var wg sync.WaitGroup
	for range purgeWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for path := range work {
				f(ctx, path)
			}
		}()
	}
	for _, path := range ps.paths {
		if ctx.Err() != nil {
			break
		}
		work <- path
	}
	close(work)
	wg.Wait()
}

// fetch sends method for path, reads the whole answer and returns its
// status.
func (ps *purgeSession) fetch(ctx context.Context, method, path string) (int, error) {
	status, _, err := ps.fetchStamp(ctx, method, path)
	return status, err
}

// fetchStamp is fetch, with the origin's stamp of the copy answered (its
// GeneratedHeader, unix ns; 0 without one).
func (ps *purgeSession) fetchStamp(ctx context.Context, method, path string) (int, int64, error) {
	req, err := http.NewRequestWithContext(ctx, method, ps.tgt.URL+path, nil)
	if err != nil {
		return 0, 0, err
	}
	resp, err := ps.client.Do(req)
	if err != nil {
		return 0, 0, fmt.Errorf("%s %s: %w", method, path, err)
	}
	stamp, _ := strconv.ParseInt(resp.Header.Get(origin.GeneratedHeader), 10, 64)
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil {
		return resp.StatusCode, stamp, fmt.Errorf("%s %s: %w", method, path, err)
	}
	return resp.StatusCode, stamp, nil
}

// purge invalidates the whole stream: one ban of its prefix, or a request
// per object. The origin's counters are read just before.
func (ps *purgeSession) purge(ctx context.Context) purgeDone {
	var pd purgeDone
	pd.atStart, pd.statsErr = ps.tgt.Origin.Stats(ctx)
	n := len(ps.paths)
	pd.sent, pd.done = make([]int64, n), make([]int64, n)
	pd.start = time.Now()
	if ps.mode == engines.PurgeBan {
		pd.err = ps.ban(ctx, ps.prefix)
		pd.returned = time.Now()
		for i := range n {
			pd.sent[i], pd.done[i] = pd.start.UnixNano(), pd.returned.UnixNano()
		}
		return pd
	}
	index := make(map[string]int, n)
	for i, p := range ps.paths {
		index[p] = i
	}
	var mu sync.Mutex
	seen := map[string]int{}
	ps.each(ctx, func(ctx context.Context, path string) {
		sent := time.Now().UnixNano()
		status, err := ps.fetch(ctx, ps.method, path)
		done := time.Now().UnixNano()
		mu.Lock()
		defer mu.Unlock()
		pd.sent[index[path]], pd.done[index[path]] = sent, done
		switch {
		case err != nil:
			pd.failed++
			seen[strings.ReplaceAll(err.Error(), path, "OBJECT")]++
		case status >= 200 && status <= 299:
			pd.purged++
		case status == http.StatusNotFound:
			pd.absent++
		default:
			pd.failed++
			seen[fmt.Sprintf("%s answered %d", ps.method, status)]++
		}
	})
	pd.returned = time.Now()
	if ctx.Err() != nil && pd.err == nil {
		pd.err = fmt.Errorf("stopped after %d of %d objects: %w", pd.purged+pd.absent+pd.failed, n, context.Cause(ctx))
	}
	pd.samples = failSamples(seen)
	return pd
}

// failSamples are the first three kinds of failure seen, each with its
// count, in order.
func failSamples(seen map[string]int) []string {
	var out []string
	for msg, n := range seen {
		out = append(out, fmt.Sprintf("%s ×%d", msg, n))
	}
	sort.Strings(out)
	return out[:min(len(out), 3)]
}

// countAnswer classes a good answer to a request sent after its object's
// invalidation returned, from the origin's stamp of the copy and when the
// invalidation was sent: unproven without a stamp, stale when older.
func countAnswer(stamp, sent int64, answered, unproven, stale *int64) {
	*answered++
	switch {
	case stamp == 0:
		*unproven++
	case stamp < sent:
		*stale++
	}
}

// endPass makes pass i from the generator's result once the load stopped:
// nil and the error when it failed or was interrupted, else the pass
// observed from the before snapshot (and the host by w), with the
// warm-up's failure if any.
func (ps *purgeSession) endPass(ctx context.Context, i int, r *loadgen.Result, runErr error, started time.Time,
	before snapshot, w *hostWatch, warmErr error) (*passInfo, snapshot, error) {
	if runErr != nil {
		return nil, snapshot{}, runErr
	}
	if r.Interrupted {
		return nil, snapshot{}, ctx.Err()
	}
	// Failed requests are a finding here, not a fault of the pass: the
	// counts keep them, the TTFB tests are invalid with them (a quantile
	// of the survivors would hide them).
	_, verdict := r.Verdict()
	p := newPass(i, ps.cfg.Warmups, r, verdict)
	p.started, p.control = started, ps.log.control.Load()
	if w != nil {
		p.sampledBy(w)
	}
	after := ps.rc.observe(ctx, ps.spec, ps.tgt, p, before)
	if w != nil {
		p.ev.Stalls = stallEvidence(w.stalls, started)
	}
	ps.watch = w
	if warmErr != nil {
		p.reasons = append(p.reasons, warmErr.Error())
	}
	p.ev.Claims = claims(r)
	return p, after, nil
}

// evidence reads a pass's records against its purge; the load was
// scheduled until end. It is long (about 160 lines) for a reason: one walk
// over the pass's records fills every field of PurgeEvidence in the order
// they are documented, each from the sums before it; split, each part
// would take and return a dozen of those sums.
func (ps *purgeSession) evidence(pd *purgeDone, before, after snapshot, cpu *cpuSeries, end time.Time) *PurgeEvidence {
	pe := &PurgeEvidence{Mode: ps.mode, Objects: len(ps.paths), Start: pd.start.UTC(), Returned: pd.returned.UTC(),
		Purged: pd.purged, NotCached: pd.absent, Failed: pd.failed, FailSamples: pd.samples, Windows: []PurgeWindow{}}
	if ps.mode == engines.PurgeBan {
		pe.Prefix = ps.prefix
	} else {
		pe.Method = ps.method
	}
	pe.DurationMs = round3(float64(pd.returned.Sub(pd.start)) / 1e6)
	// Origin fetches, when all three readings of its counters succeeded.
	if pd.statsErr == nil && len(before.errs) == 0 && len(after.errs) == 0 {
		var fb, fa, most int64
		for _, path := range ps.paths {
			atStart := pd.atStart.Objects[path].Fetches
			fb += atStart - before.origin.Objects[path].Fetches
			n := after.origin.Objects[path].Fetches - atStart
			fa += n
			most = max(most, n)
		}
		pe.FetchesBefore, pe.FetchesAfter, pe.MaxObjectFetches = ptr(fb), ptr(fa), ptr(most)
	}
	start := pd.start.UnixNano()
	refillLen := max(min(refillSpan, purgeAfterSetting.Of(ps.cfg)), 0)
	refillEnd := start + int64(refillLen)
	pe.RefillWindowMs = float64(refillLen) / 1e6
	timeout := int64(ps.cfg.Timeout)
	requested := make([]bool, len(ps.paths)) // since its invalidation was sent
	seen := make([]bool, len(ps.paths))      // answered since it returned
	// Each window's TTFBs from the intended send time and, beside them,
	// from the dispatch (TTFB - lag): the generator's own lateness is
	// judged on the window a figure is made of, not the whole pass.
	beforeC, refillC, afterH := newLateClass(), newLateClass(), loadgen.NewHistogram()
	var recs []purgeRec
	for _, s := range ps.log.shards {
		recs = append(recs, s...)
	}
	sort.Slice(recs, func(a, b int) bool { return recs[a].intended < recs[b].intended })
	// Windows from the purge's start: all their requests, and those that
	// were not the first for their object since its invalidation (what
	// recovery is judged on).
	type window struct {
		all                    *hdr.Histogram
		repeat                 *lateClass
		n, first, errs, staleN int64
	}
	var wins []window
	for i := range recs {
		rec := &recs[i]
		good := rec.good()
		if rec.intended < start {
			phase(&pe.Before, nil, rec, good)
			if good {
				beforeC.add(rec.intended, max(rec.ttfb, 0), max(rec.ttfb-rec.lag, 0))
			}
			continue
		}
		k := int((rec.intended - start) / int64(purgeWindow))
		for len(wins) <= k {
			wins = append(wins, window{all: loadgen.NewHistogram(), repeat: newLateClass()})
		}
		w := &wins[k]
		w.n++
		first := false
		if rec.intended >= pd.sent[rec.obj] {
			first = !requested[rec.obj]
			requested[rec.obj] = true
		}
		if first {
			w.first++
			pe.FirstAfter++
		}
		if !good {
			w.errs++
		} else {
			_ = w.all.RecordValue(max(rec.ttfb, 0))
		}
		if !first {
			// A failure counts at the timeout: it is no recovery.
			v, d := max(rec.ttfb, 0), max(rec.ttfb-rec.lag, 0)
			if !good {
				v, d = timeout, timeout
			}
			w.repeat.add(rec.intended, v, d)
		}
		if rec.intended >= pd.done[rec.obj] && good {
			// A failed answer refilled nothing: it is not an object the
			// amplification counts.
			seen[rec.obj] = true
			was := pe.StaleAfterPurge
			countAnswer(rec.stamp, pd.sent[rec.obj], &pe.AnsweredAfter, &pe.Unproven, &pe.StaleAfterPurge)
			w.staleN += pe.StaleAfterPurge - was
		}
		if rec.intended >= refillEnd {
			phase(&pe.After, afterH, rec, good)
			continue
		}
		// The refill: a timeout counts at the timeout; another failure has
		// no TTFB (the count makes the refill's figures invalid).
		pe.Refill.Requests++
		switch {
		case good:
			refillC.add(rec.intended, max(rec.ttfb, 0), max(rec.ttfb-rec.lag, 0))
		case rec.kind == "timeout":
			pe.Refill.Errors++
			pe.RefillTimeouts++
			refillC.add(rec.intended, timeout, timeout)
		default:
			pe.Refill.Errors++
		}
	}
	for _, s := range seen {
		if s {
			pe.DistinctAfter++
		}
	}
	beforeH := beforeC.corr
	pe.ReferenceP99Ms = msq(beforeH, 99)
	pe.Before.P50Ms, pe.Before.P99Ms = msq(beforeH, 50), pe.ReferenceP99Ms
	// Recovery: the first step from which the repeat requests' p99 over
	// the next recoverSpan is within the bound of the reference. Only
	// steps with a whole span of the schedule after them are judged.
	// Lateness is judged on what the decision rests on: the reference,
	// and the span of every step up to the one recovered at (all of them
	// when none was); record judges them, with the host's stalls.
	decided := []namedClass{{"TTFB before the purge", beforeC}}
	span := int(recoverSpan / purgeWindow)
	whole := int(end.Sub(pd.start) / purgeWindow) // windows the schedule fills
	judged := min(whole, len(wins)) - span + 1    // steps with a whole span after them
	if judged > 0 {
		pe.RecoveryJudgedMs = ptr(float64(time.Duration(judged)*purgeWindow) / 1e6)
	}
	recovered := -1
	for k := 0; k < len(wins); k++ {
		w := &wins[k]
		var next *float64
		if k < judged {
			c := newLateClass()
			for j := k; j < k+span; j++ {
				c.merge(wins[j].repeat)
			}
			next = msq(c.corr, 99)
			if recovered < 0 {
				decided = append(decided, namedClass{fmt.Sprintf("TTFB of repeat requests in the second from %s after the purge", time.Duration(k)*purgeWindow), c})
			}
		}
		pe.Windows = append(pe.Windows, PurgeWindow{AtMs: float64(time.Duration(k)*purgeWindow) / 1e6,
			Requests: w.n, First: w.first, Errors: w.errs, Stale: w.staleN, P99Ms: msq(w.all, 99), NextP99Ms: next})
		if recovered < 0 && pe.ReferenceP99Ms != nil && next != nil && *next <= recoverLimit(*pe.ReferenceP99Ms) {
			recovered = k
		}
	}
	if recovered >= 0 {
		pe.RecoveredMs = ptr(float64(time.Duration(recovered)*purgeWindow) / 1e6)
	}
	pe.Refill.P50Ms, pe.Refill.P99Ms = msq(refillC.corr, 50), msq(refillC.corr, 99)
	pe.After.P50Ms, pe.After.P99Ms = msq(afterH, 50), msq(afterH, 99)
	ps.log.refill, ps.log.recovery = refillC, decided
	pe.EngineCPUBefore = cpu.cores(time.Time{}, pd.start)
	pe.EngineCPURefill = cpu.cores(pd.start, time.Unix(0, min(refillEnd, end.UnixNano())))
	return pe
}

// recoverLimit is the p99 a recovery must come back to: within
// recoverBound of the reference, or the generator's resolution
// (loadgen.LagToleranceFloor) above it when that is more.
func recoverLimit(refMs float64) float64 {
	return max(recoverBound*refMs, refMs+float64(loadgen.LagToleranceFloor)/1e6)
}

// phase counts rec in ph, and records its TTFB in h (when not nil) if it
// was good.
func phase(ph *PhaseTTFB, h *hdr.Histogram, rec *purgeRec, good bool) {
	ph.Requests++
	if !good {
		ph.Errors++
		return
	}
	if h != nil {
		_ = h.RecordValue(max(rec.ttfb, 0))
	}
}

// namedClass is a class of requests a decision rested on, and its name in
// the reasons.
type namedClass struct {
	name string
	c    *lateClass
}

// firstLate is the reasons of the first class, in order, whose lateness
// (the host's share taken out) moved its p99: what a decision resting on
// them all cannot stand on.
func firstLate(classes []namedClass, w *hostWatch, ev *results.Evidence) []string {
	for _, nc := range classes {
		if why := nc.c.judge(nc.name, 99, w, ev); len(why) > 0 {
			return why
		}
	}
	return nil
}

// record adds a pass to every test; pe is nil when no purge was made.
func (ps *purgeSession) record(p *passInfo, r *loadgen.Result, pe *PurgeEvidence, pd *purgeDone) {
	// The windows are recovery's evidence: the other tests' passes keep
	// the rest, so the file does not hold them six times.
	full := p
	if pe != nil {
		lean := *p
		ev, pc := *p.ev, *pe
		pc.Windows = nil
		ev.Parts = maps.Clone(ev.Parts) // shared with p's
		ev.SetPart(purgePart, &pc)
		lean.ev = &ev
		p = &lean
	}
	noPurge := ""
	if pe == nil {
		noPurge = "no purge was made"
		if pd.err != nil {
			noPurge += ": " + pd.err.Error()
		}
	}
	// A purge that left copies behind has no refill to measure: its
	// amplification, recovery, refill TTFB and duration would be those of
	// a cache that kept serving hits.
	miss := ""
	if pe != nil {
		miss = missed(pe)
	}
	pr := &purgeRecord{ps: ps, p: p, full: full, r: r, pe: pe, miss: miss, noPurge: noPurge}
	pr.amplification()
	pr.recovery()
	pr.stale()
	pr.refillTTFB()
	pr.duration()
}

// purgeRecord is one pass being added to purge-stampede's tests: p without
// the recovery windows, full with them; pe nil, with noPurge saying why,
// when no purge was made; miss, when the purge left copies behind.
type purgeRecord struct {
	ps            *purgeSession
	p, full       *passInfo
	r             *loadgen.Result
	pe            *PurgeEvidence
	miss, noPurge string
}

// amplification adds the pass to refill amplification.
func (pr *purgeRecord) amplification() {
	ps, p, pe, miss, noPurge := pr.ps, pr.p, pr.pe, pr.miss, pr.noPurge
	// Amplification: a value only when the origin was counted, objects
	// were answered after the purge, and every one of them was fetched
	// again.
	var amp *float64
	ampWhy := noPurge
	var ampMore []string // the missed purge makes the pass invalid, whatever else does
	switch {
	case pe == nil:
	case pe.FetchesAfter == nil:
		ampWhy = "the origin's counters could not be read around the purge"
	case pe.DistinctAfter == 0:
		ampWhy = "no object had a good answer to a request sent after the purge returned"
	case miss != "":
		ampWhy = miss
		ampMore = append(ampMore, miss)
	default:
		amp = ptr(round3(float64(*pe.FetchesAfter) / float64(pe.DistinctAfter)))
	}
	var fetched, distinct int64
	if pe != nil {
		fetched, distinct = deref(pe.FetchesAfter), pe.DistinctAfter
	}
	ps.amp.add(p, amp, ampWhy, fetched, distinct, ampMore...)
}

// recovery adds the pass to time to recover.
func (pr *purgeRecord) recovery() {
	ps, p, full, pe, miss, noPurge := pr.ps, pr.p, pr.full, pr.pe, pr.miss, pr.noPurge
	// Recovery, in seconds. A pass that did not recover is a finding: its
	// value is the least it can be (how far recovery was looked for), and
	// the test's median counts it as the longest. Latency moved by the
	// generator's lateness in the windows it was decided on cannot say when
	// the engine recovered.
	var rec *float64
	recWhy := noPurge
	censored := false
	switch {
	case pe == nil:
	case miss != "":
		recWhy = miss
	case pe.ReferenceP99Ms == nil:
		recWhy = "no good answer before the purge: nothing to recover to"
	case pe.RecoveredMs != nil:
		rec = ptr(round3(*pe.RecoveredMs / 1e3))
	case pe.RecoveryJudgedMs == nil:
		recWhy = fmt.Sprintf("no step after the purge had the %s of requests after it that a recovery is judged on", recoverSpan)
	default:
		censored = true
		rec = ptr(round3(*pe.RecoveryJudgedMs / 1e3))
	}
	var more []string
	if miss != "" {
		more = append(more, miss)
	}
	more = append(more, p.instrumental(firstLate(ps.log.recovery, ps.watch, p.ev))...)
	more = append(more, p.latencyReasons()...)
	rp := addPass(ps.recovery, full, rec, recWhy, more...)
	if censored {
		rp.NoValue = fmt.Sprintf("did not recover within %s s: the TTFB p99 of repeat requests over %s never came back within 10%% of its %s ms before the purge; %s s is the least it can be",
			results.Sig3(*rec), recoverSpan, results.Sig3(*pe.ReferenceP99Ms), results.Sig3(*rec))
	}
	if !rp.Warmup && rp.Valid {
		ps.recoveries = append(ps.recoveries, censoredValue{v: *rec, censored: censored})
		if m, ok := censoredMedian(ps.recoveries); ok {
			ps.recovery.Value = ptr(round3(m))
		} else {
			ps.recovery.Value, ps.recovery.NoValue = nil, notRecovered(ps.recoveries)
		}
		ps.recovery.Recount()
	}
}

// stale adds the pass to stale answers after the purge.
func (pr *purgeRecord) stale() {
	ps, p, pe, noPurge := pr.ps, pr.p, pr.pe, pr.noPurge
	// Stale answers after the purge, per 1000 of the answers whose
	// staleness the origin's stamps prove: a rate, so cells with different
	// numbers of valid passes compare.
	var st *float64
	stWhy := noPurge
	var stMore []string
	var stale, proven int64
	if pe != nil {
		stale, proven = pe.StaleAfterPurge, pe.AnsweredAfter-pe.Unproven
	}
	switch {
	case pe == nil:
	case proven == 0 && pe.AnsweredAfter > 0:
		stWhy = fmt.Sprintf("none of the %d answers after the purge carried the origin's stamp (%s): staleness cannot be proven", pe.AnsweredAfter, origin.GeneratedHeader)
	case pe.AnsweredAfter == 0:
		stWhy = "no good answer to a request sent after the purge returned"
	default:
		st = ptr(round3(perThousand(stale, proven)))
		if pe.Unproven > 0 {
			stMore = append(stMore, fmt.Sprintf("%d of %d answers after the purge carried no origin stamp (%s): whether they were stale cannot be proven",
				pe.Unproven, pe.AnsweredAfter, origin.GeneratedHeader))
		}
	}
	ps.stale.add(p, st, stWhy, stale, proven, stMore...)
	if ps.stale.den > 0 {
		ps.stale.r.SetFigure(figStale, float64(ps.stale.num))
	}
}

// refillTTFB adds the pass to the refill's TTFB tests.
func (pr *purgeRecord) refillTTFB() {
	ps, p, r, pe, miss, noPurge := pr.ps, pr.p, pr.r, pr.pe, pr.miss, pr.noPurge
	// TTFB during the refill window, judged for the generator's lateness
	// on that window's requests.
	for _, t := range []*latencyTest{ps.p50, ps.p99} {
		var v *float64
		why := noPurge
		var h *hdr.Histogram
		var more []string
		if pe != nil {
			h = ps.log.refill.corr
			v, why = p.latencyValue(h, t.q)
			if v == nil && pe.Refill.Requests > 0 && pe.Refill.Errors == pe.Refill.Requests {
				why = fmt.Sprintf("no good answer during the refill: %d of %d requests failed", pe.Refill.Errors, pe.Refill.Requests)
			}
			if miss != "" {
				more = append(more, miss)
			}
			more = append(more, p.instrumental(ps.log.refill.judge("refill TTFB", t.q, ps.watch, p.ev))...)
		}
		more = append(more, p.latencyReasons()...)
		if pe != nil && pe.Refill.Errors > 0 && v != nil {
			msg := fmt.Sprintf("%d of %d requests during the refill failed", pe.Refill.Errors, pe.Refill.Requests)
			if k := kinds(r.ErrorsByKind); k != "" {
				msg += " (" + k + " over the pass)"
			}
			switch t := pe.RefillTimeouts; {
			case t == pe.Refill.Errors:
				msg += fmt.Sprintf(": they timed out and count at the %s timeout", ps.cfg.Timeout)
			case t > 0:
				msg += fmt.Sprintf(": %d timed out and count at the %s timeout, the others have no TTFB", t, ps.cfg.Timeout)
			default:
				msg += ": they have no TTFB"
			}
			more = append(more, msg)
		}
		t.addValue(p, h, v, why, more...)
	}
}

// duration adds the pass to the purge call's duration.
func (pr *purgeRecord) duration() {
	ps, p, pe, miss, noPurge := pr.ps, pr.p, pr.pe, pr.miss, pr.noPurge
	// The purge call's own duration, from this process: a ban's includes
	// starting varnishadm (in its container, with docker).
	var d *float64
	var dMore []string
	if pe != nil {
		d = ptr(pe.DurationMs)
		if miss != "" {
			dMore = append(dMore, miss)
		}
	}
	if rp := addPass(ps.dur, p, d, noPurge, dMore...); !rp.Warmup && rp.Valid {
		ps.durations = append(ps.durations, *d)
		ps.dur.Value = ptr(round3(stats.Median(ps.durations)))
		ps.dur.Recount()
	}
}

// missed says how a pass's purge left copies behind, or "" when it did
// not or that cannot be told. Every object answered after its
// invalidation returned must have been fetched from the origin again, so
// fewer origin fetches after the purge than such objects (or, without the
// origin's counters, no answer after it but stale ones) prove the engine
// kept copies it was told to drop.
func missed(pe *PurgeEvidence) string {
	proven := pe.AnsweredAfter - pe.Unproven
	stale := ""
	if proven > 0 {
		stale = fmt.Sprintf(", and %d of the %d answers after it that carry the origin's stamp were copies made before it", pe.StaleAfterPurge, proven)
	}
	switch {
	case pe.FetchesAfter != nil && *pe.FetchesAfter == 0 && pe.DistinctAfter > 0:
		return fmt.Sprintf("the purge removed nothing: 0 origin fetches after it for %d objects%s", pe.DistinctAfter, stale)
	case pe.FetchesAfter != nil && *pe.FetchesAfter < pe.DistinctAfter:
		return fmt.Sprintf("the purge left copies behind: %d origin fetches after it for %d objects answered after it%s", *pe.FetchesAfter, pe.DistinctAfter, stale)
	case pe.FetchesAfter == nil && proven > 0 && pe.StaleAfterPurge == proven:
		return fmt.Sprintf("the purge removed nothing: all %d answers after it that carry the origin's stamp were copies made before it", proven)
	}
	return ""
}

// censoredValue is a valid measured pass's figure: v itself, or (censored)
// the least it can be — a recovery in seconds when the pass did not
// recover, a capacity the search could only bound from below.
type censoredValue struct {
	v        float64
	censored bool
}

// censoredMedian is the median of the outcomes, a censored pass (one that
// did not recover) counting as higher than every one that is not; ok is
// false when the median pass (either middle one, for an even count) is
// censored.
func censoredMedian(o []censoredValue) (m float64, ok bool) {
	s := append([]censoredValue{}, o...)
	sort.Slice(s, func(a, b int) bool {
		if s[a].censored != s[b].censored {
			return !s[a].censored
		}
		return s[a].v < s[b].v
	})
	n := len(s)
	if n == 0 || s[n/2].censored {
		return 0, false
	}
	if n%2 == 1 {
		return s[n/2].v, true
	}
	return (s[n/2-1].v + s[n/2].v) / 2, true
}

// notRecovered is the recovery test's reason for no value when the median
// pass did not recover.
func notRecovered(o []censoredValue) string {
	var k int
	var w float64
	for _, x := range o {
		if x.censored {
			k++
			w = max(w, x.v)
		}
	}
	return fmt.Sprintf("did not recover within %s s in %d of %d passes", results.Sig3(w), k, len(o))
}

// purgeRec is one request of a pass.
type purgeRec struct {
	intended int64 // unix ns
	ttfb     int64
	lag      int64 // the generator's schedule lag: ttfb-lag counts from the dispatch
	obj      int
	status   int
	err      bool
	kind     string // the error kind ("timeout", …), "" without one
	stamp    int64
}

func (r *purgeRec) good() bool { return !r.err && r.status >= 200 && r.status <= 299 }

// purgeLog collects records per event loop, without locks.
type purgeLog struct {
	shards [][]purgeRec
	// purge-stampede's alone, the last pass's: the refill's requests, and
	// the classes recovery was decided on.
	refill   *lateClass
	recovery []namedClass
	// control counts hlsbench's own requests the engine answered in the
	// pass (purges, bans, checks: see costOf).
	control controlCount
}

func (l *purgeLog) record(shard int, rec *loadgen.Record, check loadgen.BodyCheck) {
	pr := purgeRec{intended: rec.Intended.UnixNano(), ttfb: int64(rec.TTFB), lag: int64(rec.Lag), obj: rec.Object, status: rec.Status, err: rec.Err != "",
		kind: rec.Err}
	if e, ok := check.(*evidence); ok && rec.Status != 0 {
		pr.stamp = e.stamp
	}
	l.shards[shard] = append(l.shards[shard], pr)
}

func (l *purgeLog) reset() {
	for i := range l.shards {
		l.shards[i] = l.shards[i][:0]
	}
	l.refill, l.recovery = nil, nil
	l.control.Store(0)
}

// cpuSeries is the engine's CPU time read through a pass.
type cpuSeries struct {
	mu  sync.Mutex
	at  []time.Time
	cpu []float64
}

// sample reads the engine's group every cpuEvery until the returned stop
// is called; a target without one records nothing.
func (c *cpuSeries) sample(tgt *Target) (stop func()) {
	var g *cost.Group
	for i := range tgt.Groups {
		if tgt.Groups[i].Name == costEngine {
			g = &tgt.Groups[i]
		}
	}
	if g == nil {
		return func() {}
	}
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(cpuEvery)
		defer t.Stop()
		rd := cost.NewCPUReader(*g)
		for {
			if v, err := rd.Now(); err == nil {
				c.mu.Lock()
				c.at, c.cpu = append(c.at, time.Now()), append(c.cpu, v)
				c.mu.Unlock()
			}
			select {
			case <-quit:
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(quit); wg.Wait() }
}

// cores is the engine's CPU in cores between from and to (from zero: the
// first reading), from the readings nearest inside; nil with fewer than
// two readings there.
func (c *cpuSeries) cores(from, to time.Time) *float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	first, last := -1, -1
	for i, t := range c.at {
		if t.Before(from) || t.After(to) {
			continue
		}
		if first < 0 {
			first = i
		}
		last = i
	}
	if first < 0 || last <= first {
		return nil
	}
	d := c.at[last].Sub(c.at[first]).Seconds()
	if d <= 0 {
		return nil
	}
	return ptr(round3((c.cpu[last] - c.cpu[first]) / d))
}

// purgePart is the key of PurgeEvidence in a pass's evidence.
const purgePart = "purge"

// PurgeEvidence is a purge-stampede pass: the invalidation, what the
// origin fetched after it, what the viewers got, and how latency behaved
// before, during and after the refill.
type PurgeEvidence struct {
	// Mode is how the stream was invalidated: "ban" (one call for a URL
	// prefix: Prefix) or "purge" (one request per object, Method).
	Mode    string `json:"mode"`
	Method  string `json:"method,omitempty"`
	Prefix  string `json:"prefix,omitempty"`
	Objects int    `json:"objects"`
	// Start is when the purge call was made; Returned when it returned (a
	// ban accepted, or every per-object request answered).
	Start      time.Time `json:"start"`
	Returned   time.Time `json:"returned"`
	DurationMs float64   `json:"duration_ms"`
	// Purged, NotCached and Failed count per-object answers: 200, 404 (the
	// engine did not hold it) and anything else (FailSamples say what).
	Purged      int64    `json:"purged,omitempty"`
	NotCached   int64    `json:"not_cached,omitempty"`
	Failed      int64    `json:"failed,omitempty"`
	FailSamples []string `json:"fail_samples,omitempty"`
	// FetchesBefore counts the origin's fetches of the stream's objects
	// from the pass's start to the purge (0 when the cache held them all);
	// FetchesAfter from the purge's start to the pass's end, the most of
	// one object in MaxObjectFetches (null when the origin's counters could
	// not be read); DistinctAfter the objects with a good answer to a
	// request sent after their invalidation returned. Amplification is
	// FetchesAfter ÷ DistinctAfter; fewer fetches than objects prove the
	// purge left copies behind.
	FetchesBefore    *int64 `json:"fetches_before"`
	FetchesAfter     *int64 `json:"fetches_after"`
	DistinctAfter    int64  `json:"distinct_after"`
	MaxObjectFetches *int64 `json:"max_object_fetches"`
	// AnsweredAfter counts good answers to requests sent after their
	// object's invalidation returned; StaleAfterPurge those of them whose
	// copy the origin made before it was sent (its X-Origin-Generated
	// stamp); Unproven those without a stamp.
	AnsweredAfter   int64 `json:"answered_after"`
	StaleAfterPurge int64 `json:"stale_after_purge"`
	Unproven        int64 `json:"unproven,omitempty"`
	// ReferenceP99Ms is the TTFB p99 before the purge. RecoveredMs is how
	// long after the purge's start the TTFB p99 of the next second of
	// requests came back within 10 % of it, counting the requests for
	// objects already asked for since the purge (a first request after a
	// purge goes to the origin on any engine: FirstAfter counts them), at
	// 100 ms steps; null when it did not in the pass. RecoveryJudgedMs is
	// how far it was looked for: every step before it has a whole second
	// of the pass after it (null when none has), so a pass that did not
	// recover took at least that long.
	ReferenceP99Ms   *float64 `json:"reference_p99_ms"`
	RecoveredMs      *float64 `json:"recovered_ms"`
	RecoveryJudgedMs *float64 `json:"recovery_judged_ms"`
	FirstAfter       int64    `json:"first_after"`
	// Before, Refill and After are the requests sent before the purge, in
	// the refill window (RefillWindowMs from the purge's start, the same on
	// every engine), and after it. A refill request that timed out counts
	// in the refill's TTFB at the timeout (RefillTimeouts); other failures
	// have none.
	Before         PhaseTTFB `json:"before"`
	Refill         PhaseTTFB `json:"refill"`
	After          PhaseTTFB `json:"after"`
	RefillWindowMs float64   `json:"refill_window_ms"`
	RefillTimeouts int64     `json:"refill_timeouts,omitempty"`
	// Windows are the 100 ms windows from the purge's start on (in the
	// recovery test's passes only).
	Windows []PurgeWindow `json:"windows,omitempty"`
	// EngineCPUBefore and EngineCPURefill are the engine's CPU, in cores,
	// before the purge and during the refill (null where the engine runs
	// in hlsbench's own process or the refill was shorter than a sample).
	EngineCPUBefore *float64 `json:"engine_cpu_before"`
	EngineCPURefill *float64 `json:"engine_cpu_refill"`
}

// PhaseTTFB is the TTFB of the requests sent in one phase of a pass.
// ErrorsByKind are its failed requests by kind, where the workload counts
// them (repeated-bans' quarters, which count a timeout at the timeout).
type PhaseTTFB struct {
	Requests     int64            `json:"requests"`
	Errors       int64            `json:"errors"`
	ErrorsByKind map[string]int64 `json:"errors_by_kind,omitempty"`
	P50Ms        *float64         `json:"p50_ms"`
	P99Ms        *float64         `json:"p99_ms"`
}

// PurgeWindow is one window after a purge: its start (ms after the
// purge's), requests sent in it, the first requests for an object since
// the purge among them, failed ones, origin copies made before the purge
// among its answers (from the stamps), and the TTFB p99 of its requests
// (NextP99Ms: of the requests of the second from its start that were not
// the first for their object, which recovery is judged on; null where the
// pass ends sooner).
type PurgeWindow struct {
	AtMs      float64  `json:"at_ms"`
	Requests  int64    `json:"requests"`
	First     int64    `json:"first"`
	Errors    int64    `json:"errors"`
	Stale     int64    `json:"stale,omitempty"`
	P99Ms     *float64 `json:"p99_ms"`
	NextP99Ms *float64 `json:"next_p99_ms"`
}
