package workloads

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/engines/builtin"
	"github.com/hlsbench/hlsbench/origin"
	"github.com/hlsbench/hlsbench/report"
	"github.com/hlsbench/hlsbench/results"
	"github.com/hlsbench/hlsbench/workloads/loadgen"
)

func purgeConfig() Config {
	cfg := testConfig()
	cfg.Rate = 1000 // in-process: the generator shares two cores with the cache
	return cfg
}

// passEvidence is what get picks from each measured pass's evidence of r,
// each required.
func passEvidence[T any](t *testing.T, r *results.Result, what string, get func(*results.Evidence) *T) []*T {
	t.Helper()
	var out []*T
	for _, p := range r.Passes {
		if p.Warmup {
			continue
		}
		if p.Evidence == nil || get(p.Evidence) == nil {
			t.Fatalf("%s pass %d: no %s evidence", r.ID, p.Index, what)
		}
		out = append(out, get(p.Evidence))
	}
	if len(out) == 0 {
		t.Fatalf("%s: no measured pass", r.ID)
	}
	return out
}

// purgeFigures are a result's measured passes' purge evidence.
func purgeFigures(t *testing.T, r *results.Result) []*PurgeEvidence {
	t.Helper()
	return passEvidence(t, r, "purge", func(e *results.Evidence) *PurgeEvidence { return results.Part[PurgeEvidence](e, purgePart) })
}

// The built-in cache bans the whole stream in one call and refills it with
// one origin fetch per object: amplification 1, nothing stale.
func TestPurgeStampedeBuiltin(t *testing.T) {
	if testing.Short() {
		t.Skip("three passes of a purge")
	}
	run := execute(t, RunSpec{Engines: []string{"builtin"}, Workloads: mustSpecs(t, PurgeStampede), Config: purgeConfig()})
	amp := find(t, run, "builtin", PurgeStampede+"/refill-amplification")
	for _, pe := range purgeFigures(t, amp) {
		t.Logf("pass: %s %s in %.3f ms; fetches %d before, %d after for %d objects (most of one: %d); %d answers after, %d stale; recovered %v ms (reference p99 %v ms)",
			pe.Mode, pe.Prefix, pe.DurationMs, ival(pe.FetchesBefore), ival(pe.FetchesAfter), pe.DistinctAfter, ival(pe.MaxObjectFetches),
			pe.AnsweredAfter, pe.StaleAfterPurge, val(pe.RecoveredMs), val(pe.ReferenceP99Ms))
		if pe.Mode != engines.PurgeBan || pe.Prefix != "/stream/" {
			t.Errorf("mode %q prefix %q, want the built-in cache's own: a ban of /stream/", pe.Mode, pe.Prefix)
		}
		if ival(pe.FetchesBefore) != 0 {
			t.Errorf("%d origin fetches before the purge: the warm cache held the stream", ival(pe.FetchesBefore))
		}
		if ival(pe.MaxObjectFetches) != 1 || pe.DistinctAfter == 0 {
			t.Errorf("most fetches of one object %d over %d objects: want 1, the cache coalesces", ival(pe.MaxObjectFetches), pe.DistinctAfter)
		}
		if pe.StaleAfterPurge != 0 || pe.AnsweredAfter == 0 {
			t.Errorf("%d stale of %d answers after the purge: want none", pe.StaleAfterPurge, pe.AnsweredAfter)
		}
		if len(pe.Windows) != 0 || pe.Refill.Requests == 0 {
			t.Errorf("%d windows (they are recovery's), refill %+v", len(pe.Windows), pe.Refill)
		}
	}
	for _, pe := range purgeFigures(t, find(t, run, "builtin", PurgeStampede+"/recovery")) {
		if len(pe.Windows) < 10 {
			t.Errorf("recovery's evidence has %d windows of 100 ms, want the 2 s after the purge", len(pe.Windows))
		}
	}
	if v := val(amp.Value); v < 0.95 || v > 1.05 {
		t.Errorf("refill amplification %v (%s), want 1 ± 0.05", v, amp.NoValue)
	}
	st := find(t, run, "builtin", PurgeStampede+"/stale-after-purge")
	if st.Value == nil || *st.Value != 0 {
		t.Errorf("stale after purge %v (%s), want a measured 0", val(st.Value), st.NoValue)
	}
	if d := find(t, run, "builtin", PurgeStampede+"/purge-duration"); d.Value == nil || *d.Value <= 0 || *d.Value > 1000 {
		t.Errorf("purge duration %v ms (%s)", val(d.Value), d.NoValue)
	}
	// Recovery and the refill's TTFB depend on this machine's noise; they
	// have a value or say why not.
	for _, id := range []string{"recovery", "p50-ttfb-refill", "p99-ttfb-refill"} {
		r := find(t, run, "builtin", PurgeStampede+"/"+id)
		if (r.Value == nil) == (r.NoValue == "") {
			t.Errorf("%s: value %v, no value %q: want one of them", id, val(r.Value), r.NoValue)
		}
		t.Logf("%s: %v %s (%s)", id, val(r.Value), r.Unit, r.NoValue)
	}
}

// ignoringPurges is a cache that answers PURGE 200 and keeps everything.
type ignoringPurges struct{ c *builtin.Cache }

func (h ignoringPurges) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == engines.PurgeMethod {
		w.Write([]byte("purged (not really)\n"))
		return
	}
	h.c.ServeHTTP(w, r)
}

// externalCache serves a built-in cache under policy p (coalescing as
// asked) in front of the origin address, wrapped by wrap.
func externalCache(t *testing.T, p engines.Policy, coalesce bool, wrap func(*builtin.Cache) http.Handler) func(string) string {
	return func(addr string) string {
		bp := engines.BuiltinPolicy(p)
		bp.Coalesce = coalesce
		c, err := builtin.New(builtin.Config{Origin: "http://" + addr, Policy: bp})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		srv := httptest.NewServer(wrap(c))
		t.Cleanup(srv.Close)
		return srv.URL
	}
}

// A proxy that answers PURGE but purges nothing is caught: its answers after
// the purge are copies the origin made before it, and it fetches nothing.
// Its refill figures are invalid with the reason, and a report over it and
// the built-in cache names it best on no purge-stampede test.
func TestPurgeIgnoredIsCaught(t *testing.T) {
	if testing.Short() {
		t.Skip("three passes of a purge, twice")
	}
	p := specOf(PurgeStampede).Policy
	addr, dir := freeAddr(t), t.TempDir()
	run := execute(t, RunSpec{Engines: []string{"external"}, Workloads: mustSpecs(t, PurgeStampede), Config: purgeConfig(),
		ExternalURLs: map[string]string{"external": externalCache(t, p, true, func(c *builtin.Cache) http.Handler { return ignoringPurges{c} })(addr)}, OriginListens: map[string]string{"external": addr}, OutDir: dir})
	st := find(t, run, "external", PurgeStampede+"/stale-after-purge")
	for _, pe := range purgeFigures(t, st) {
		if pe.Mode != engines.PurgeObject || pe.Method != engines.PurgeMethod || pe.Purged != int64(pe.Objects) {
			t.Errorf("mode %q method %q, %d of %d purged: want a PURGE per object, each answered 200", pe.Mode, pe.Method, pe.Purged, pe.Objects)
		}
		if pe.StaleAfterPurge == 0 || pe.StaleAfterPurge != pe.AnsweredAfter {
			t.Errorf("%d stale of %d answers after the purge: want every one", pe.StaleAfterPurge, pe.AnsweredAfter)
		}
		if ival(pe.FetchesAfter) != 0 {
			t.Errorf("%d origin fetches after the purge: want none", ival(pe.FetchesAfter))
		}
	}
	if st.Value == nil || *st.Value == 0 {
		t.Errorf("stale after purge %v (%s): want the ignored purge caught", val(st.Value), st.NoValue)
	}
	for _, id := range []string{"refill-amplification", "recovery"} {
		r := find(t, run, "external", PurgeStampede+"/"+id)
		if r.Value != nil || r.Valid {
			t.Errorf("%s %v (valid %v): want null, nothing was purged", id, val(r.Value), r.Valid)
		}
		for _, ps := range r.Passes {
			if !ps.Warmup && !says(ps, "the purge removed nothing") {
				t.Errorf("%s pass %d: %v, want the purge that removed nothing named", id, ps.Index, ps.InvalidReasons)
			}
		}
	}

	// The report over it and the built-in cache.
	bdir := t.TempDir()
	execute(t, RunSpec{Engines: []string{"builtin"}, Workloads: mustSpecs(t, PurgeStampede), Config: purgeConfig(), OutDir: bdir})
	var files []string
	for _, d := range []string{dir, bdir} {
		f, err := filepath.Glob(filepath.Join(d, "run-*.json"))
		if err != nil || len(f) != 1 {
			t.Fatalf("run files in %s: %v (%v)", d, f, err)
		}
		files = append(files, f...)
	}
	in, err := report.Read(files)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := report.Build(in, report.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	tests := 0
	for _, w := range rep.Workloads {
		for _, rt := range w.Tests {
			if rt.Workload != PurgeStampede {
				continue
			}
			tests++
			var ext *report.Cell
			for i := range rt.Cells {
				if rt.Cells[i].Engine == "external" {
					ext = &rt.Cells[i]
				}
			}
			if ext == nil {
				t.Fatalf("%s: no cell of the external proxy", rt.ID)
			}
			t.Logf("%s: %s", rt.ID, rt.Finding)
			l := ext.Label
			if strings.HasPrefix(rt.Finding, "Only "+l) || strings.HasPrefix(rt.Finding, "A tie") && strings.Contains(rt.Finding, l) ||
				strings.Contains(rt.Finding, l+" is "+map[bool]string{true: "lowest", false: "highest"}[rt.LowerIsBetter]) {
				t.Errorf("%s: the finding names the proxy that ignores purges best: %s", rt.ID, rt.Finding)
			}
			if ext.Value == nil {
				continue
			}
			lead := true
			for _, c := range rt.Cells {
				if c.Engine != "external" && c.Value != nil && (*c.Value == *ext.Value || (*c.Value < *ext.Value) == rt.LowerIsBetter) {
					lead = false
				}
			}
			if lead {
				t.Errorf("%s: the proxy that ignores purges leads at %v: %s", rt.ID, *ext.Value, rt.Finding)
			}
		}
	}
	if tests != len((purgeStampede{}).Tests()) {
		t.Errorf("the report has %d purge-stampede tests, want %d", tests, len((purgeStampede{}).Tests()))
	}
}

// A cache that does not coalesce sends every request that finds an object
// missing to the origin: amplification above 1, several fetches of the hot
// objects.
func TestPurgeWithoutCoalescingIsCaught(t *testing.T) {
	if testing.Short() {
		t.Skip("three passes of a purge")
	}
	p := specOf(PurgeStampede).Policy
	run := external(t, PurgeStampede, purgeConfig(), externalCache(t, p, false, func(c *builtin.Cache) http.Handler { return c }))
	amp := find(t, run, "external", PurgeStampede+"/refill-amplification")
	for _, pe := range purgeFigures(t, amp) {
		t.Logf("fetches after %d for %d objects, most of one %d", ival(pe.FetchesAfter), pe.DistinctAfter, ival(pe.MaxObjectFetches))
		if ival(pe.MaxObjectFetches) < 3 {
			t.Errorf("most fetches of one object %d: want the hot ones fetched by several waiting clients", ival(pe.MaxObjectFetches))
		}
		if pe.StaleAfterPurge != 0 {
			t.Errorf("%d stale answers: the cache purged", pe.StaleAfterPurge)
		}
	}
	if v := val(amp.Value); !(v > 1.05) {
		t.Errorf("amplification %v (%s): want well above 1 without coalescing", v, amp.NoValue)
	}
}

// A cell whose engine cannot purge the way asked is not applicable, with
// the reason; an external proxy cannot be banned.
func TestPurgeBanNotApplicableForExternal(t *testing.T) {
	cfg := purgeConfig()
	purgeModeSetting.In(&cfg, engines.PurgeBan)
	run := external(t, PurgeStampede, cfg, func(addr string) string { return "http://" + addr })
	for _, d := range (purgeStampede{}).Tests() {
		r := find(t, run, "external", PurgeStampede+"/"+d.id)
		if r.NotApplicable == "" || r.Value != nil || r.Valid {
			t.Errorf("%s: not applicable %q value %v valid %v", d.id, r.NotApplicable, val(r.Value), r.Valid)
		}
	}
}

// The evidence of a pass, from records made up to the nanosecond: what is
// stale, what counts as requested after the purge, and when the p99 of the
// repeat requests is back.
func TestPurgeEvidenceArithmetic(t *testing.T) {
	ms := int64(time.Millisecond)
	t0 := time.Unix(1000, 0)
	start := t0.Add(time.Second)
	cfg := Config{Timeout: 10 * time.Second}
	purgeAfterSetting.In(&cfg, 3*time.Second)
	ps := &purgeSession{cfg: cfg, mode: engines.PurgeBan,
		prefix: "/stream/", paths: []string{"/a", "/b", "/c"}, log: &purgeLog{shards: make([][]purgeRec, 1)}}
	pd := &purgeDone{start: start, returned: start.Add(5 * time.Millisecond)}
	for range ps.paths {
		pd.sent = append(pd.sent, start.UnixNano())
		pd.done = append(pd.done, pd.returned.UnixNano())
	}
	pd.atStart.Objects = map[string]origin.ObjectStats{"/a": {Fetches: 1}, "/b": {Fetches: 1}, "/c": {Fetches: 1}}
	var before, after snapshot
	before.origin.Objects = map[string]origin.ObjectStats{"/a": {Fetches: 1}, "/b": {Fetches: 1}, "/c": {Fetches: 1}}
	after.origin.Objects = map[string]origin.ObjectStats{"/a": {Fetches: 3}, "/b": {Fetches: 2}, "/c": {Fetches: 1}}
	add := func(at int64, obj int, ttfb int64, stamp int64) {
		ps.log.shards[0] = append(ps.log.shards[0], purgeRec{intended: at, ttfb: ttfb, obj: obj, status: 200, stamp: stamp})
	}
	old := t0.UnixNano() - ms // made before the purge
	// Before the purge: hits of 1 ms.
	for i := int64(0); i < 1000; i++ {
		add(t0.UnixNano()+i*ms, int(i%3), ms, old)
	}
	s := start.UnixNano()
	add(s+1*ms, 0, 50*ms, s+1*ms) // in flight at the purge: not judged stale, first for /a
	for i := int64(0); i < 20; i++ {
		add(s+6*ms+i*ms/10, 0, 45*ms, s+1*ms) // wait for /a's fetch: slow repeat requests
	}
	add(s+7*ms, 1, 1*ms, old) // a stale answer after the purge returned, first for /b
	// From 300 ms on, repeat hits of 1 ms.
	for i := int64(0); i < 2700; i++ {
		add(s+300*ms+i*ms, int(i%2), ms, s+2*ms)
	}
	end := start.Add(purgeAfterSetting.Of(ps.cfg))
	pe := ps.evidence(pd, before, after, &cpuSeries{}, end)
	if ival(pe.FetchesBefore) != 0 || ival(pe.FetchesAfter) != 3 || ival(pe.MaxObjectFetches) != 2 {
		t.Errorf("fetches before %d after %d most %d, want 0, 3, 2", ival(pe.FetchesBefore), ival(pe.FetchesAfter), ival(pe.MaxObjectFetches))
	}
	if pe.DistinctAfter != 2 {
		t.Errorf("distinct after %d, want 2 (/a and /b; the request in flight at the purge does not count)", pe.DistinctAfter)
	}
	if pe.StaleAfterPurge != 1 || pe.AnsweredAfter != 2721 {
		t.Errorf("stale %d of %d answered after, want 1 of 2721", pe.StaleAfterPurge, pe.AnsweredAfter)
	}
	if pe.FirstAfter != 2 {
		t.Errorf("first requests after the purge %d, want 2", pe.FirstAfter)
	}
	// The second from window 0 holds the 20 slow repeat requests, 3 % of
	// it; from window 1 on every repeat request is a 1 ms hit.
	if pe.RecoveredMs == nil || *pe.RecoveredMs != 100 {
		t.Errorf("recovered at %v ms, want 100 (window 0's second holds the 45 ms repeat requests)", val(pe.RecoveredMs))
	}
	// The refill is the first second from the purge's start, whenever the
	// engine recovered: the 22 requests of the first 7 ms and 700 hits.
	if pe.Refill.Requests != 722 || pe.Before.Requests != 1000 || pe.After.Requests != 2000 || pe.RefillWindowMs != 1000 {
		t.Errorf("phases before %d refill %d (%v ms) after %d, want 1000, 722 (1000 ms), 2000", pe.Before.Requests, pe.Refill.Requests, pe.RefillWindowMs, pe.After.Requests)
	}
	if pe.ReferenceP99Ms == nil || *pe.ReferenceP99Ms != 1 {
		t.Errorf("reference p99 %v ms, want 1", val(pe.ReferenceP99Ms))
	}
	// Recovery is judged on a whole second: a p99 that is back only in the
	// last 0.7 s of the pass is no recovery.
	ps.log.shards[0] = ps.log.shards[0][:1022]
	for i := int64(0); i < 2300; i++ {
		add(s+i*ms+10*ms, int(i%2), 40*ms, s+2*ms)
	}
	for i := int64(0); i < 690; i++ {
		add(s+2310*ms+i*ms, int(i%2), ms, s+2*ms)
	}
	if pe := ps.evidence(pd, before, after, &cpuSeries{}, end); pe.RecoveredMs != nil {
		t.Errorf("recovered at %v ms with 0.7 s of good requests left, want none", *pe.RecoveredMs)
	}
	// Counters that could not be read give no fetch counts, not zeros.
	after.errs = []string{"origin stats: refused"}
	if pe := ps.evidence(pd, before, after, &cpuSeries{}, end); pe.FetchesAfter != nil || pe.FetchesBefore != nil {
		t.Errorf("fetches %v after, %v before without the origin's counters: want null", pe.FetchesAfter, pe.FetchesBefore)
	}
}

func ival(p *int64) int64 {
	if p == nil {
		return -1
	}
	return *p
}

// synthPurge is a purge-stampede session over made-up records: a request
// every millisecond for a second before a per-object purge of every object
// and PurgeAfter after it, the tests recorded as Open records them.
type synthPurge struct {
	ps            *purgeSession
	t0, start     int64
	pd            *purgeDone
	before, after snapshot
	passes        int
	// beforeReq is each request before the purge (nil: a hit).
	beforeReq synthReq
}

// synthReq is one made-up request, from the k-th ms since the purge's
// start (negative before it).
type synthReq func(k int64, obj int) purgeRec

func newSynthPurge(t *testing.T, objects int) *synthPurge {
	t.Helper()
	s := specOf(PurgeStampede)
	cfg := Config{Timeout: 10 * time.Second}
	purgeBeforeSetting.In(&cfg, time.Second)
	purgeAfterSetting.In(&cfg, 3*time.Second)
	tgt := &Target{Engine: results.Engine{Name: "synthetic"}}
	rc := &Recorder{Run: &results.Run{}}
	ps := &purgeSession{spec: &s, cfg: cfg, tgt: tgt, rc: rc, mode: engines.PurgeObject, method: engines.PurgeMethod,
		log: &purgeLog{shards: make([][]purgeRec, 1)}}
	for i := range objects {
		ps.paths = append(ps.paths, fmt.Sprintf("/o%d", i))
	}
	ps.newTests(rc)
	sp := &synthPurge{ps: ps, t0: time.Unix(1000, 0).UnixNano()}
	sp.start = sp.t0 + int64(purgeBeforeSetting.Of(cfg))
	sp.pd = &purgeDone{start: time.Unix(0, sp.start), returned: time.Unix(0, sp.start+5*int64(time.Millisecond))}
	sp.pd.atStart.Objects = map[string]origin.ObjectStats{}
	sp.before.origin.Objects = map[string]origin.ObjectStats{}
	for _, p := range ps.paths {
		sp.pd.sent = append(sp.pd.sent, sp.start)
		sp.pd.done = append(sp.pd.done, sp.pd.returned.UnixNano())
		sp.pd.atStart.Objects[p] = origin.ObjectStats{Fetches: 1}
		sp.before.origin.Objects[p] = origin.ObjectStats{Fetches: 1}
	}
	return sp
}

// old is a stamp the origin made before the purge.
func (sp *synthPurge) old() int64 { return sp.t0 - int64(time.Millisecond) }

// fresh is a stamp the origin made after it.
func (sp *synthPurge) fresh() int64 { return sp.start + int64(time.Millisecond) }

// hit is a 1 ms answer of a copy made before the purge.
func (sp *synthPurge) hit(k int64, obj int) purgeRec {
	return purgeRec{ttfb: int64(time.Millisecond), status: 200, stamp: sp.old()}
}

// fastRefill is an engine that refills in 100 ms: 20 ms misses, then 1 ms
// hits of fresh copies.
func (sp *synthPurge) fastRefill(k int64, obj int) purgeRec {
	if k < 100 {
		return purgeRec{ttfb: 20 * int64(time.Millisecond), status: 200, stamp: sp.fresh()}
	}
	return purgeRec{ttfb: int64(time.Millisecond), status: 200, stamp: sp.fresh()}
}

// neverRecovers is an engine whose p99 never comes back: 25 ms for 200 ms,
// then one request in 20 at 40 ms to the pass's end.
func (sp *synthPurge) neverRecovers(k int64, obj int) purgeRec {
	switch {
	case k < 200:
		return purgeRec{ttfb: 25 * int64(time.Millisecond), status: 200, stamp: sp.fresh()}
	case k%20 == 0:
		return purgeRec{ttfb: 40 * int64(time.Millisecond), status: 200, stamp: sp.fresh()}
	}
	return purgeRec{ttfb: int64(time.Millisecond), status: 200, stamp: sp.fresh()}
}

// pass makes one measured pass: before the purge every request is a hit,
// after it each is after(k, obj); the origin fetched each object
// fetchesEach times after the purge. lr is the generator's result (nil: a
// clean one); invalid makes the pass invalid for every test.
func (sp *synthPurge) pass(after synthReq, fetchesEach int64, lr *loadgen.Result, invalid ...string) *PurgeEvidence {
	ps := sp.ps
	ps.log.reset()
	ms := int64(time.Millisecond)
	n := int64(purgeBeforeSetting.Of(ps.cfg)+purgeAfterSetting.Of(ps.cfg)) / ms
	var ok, failed int64
	for i := int64(0); i < n; i++ {
		at := sp.t0 + i*ms
		obj := int(i % int64(len(ps.paths)))
		var rec purgeRec
		switch {
		case at < sp.start && sp.beforeReq != nil:
			rec = sp.beforeReq((at-sp.start)/ms, obj)
		case at < sp.start:
			rec = sp.hit(0, obj)
		default:
			rec = after((at-sp.start)/ms, obj)
		}
		rec.intended, rec.obj = at, obj
		if rec.good() {
			ok++
		} else {
			failed++
		}
		ps.log.shards[0] = append(ps.log.shards[0], rec)
	}
	sp.after.origin.Objects = map[string]origin.ObjectStats{}
	for _, p := range ps.paths {
		sp.after.origin.Objects[p] = origin.ObjectStats{Fetches: 1 + fetchesEach}
	}
	end := time.Unix(0, sp.t0+n*ms)
	pe := ps.evidence(sp.pd, sp.before, sp.after, &cpuSeries{}, end)
	if lr == nil {
		lr = &loadgen.Result{}
	}
	lr.Requests, lr.OK, lr.Errors = n, ok, failed
	sp.passes++
	p := &passInfo{index: sp.passes, lr: lr, reasons: invalid, ev: &results.Evidence{}}
	ps.record(p, lr, pe, sp.pd)
	return pe
}

// lastPass is the last pass of r.
func lastPass(t *testing.T, r *results.Result) results.Pass {
	t.Helper()
	if len(r.Passes) == 0 {
		t.Fatalf("%s: no pass", r.ID)
	}
	return r.Passes[len(r.Passes)-1]
}

// says reports whether one of the pass's reasons (or its NoValue) holds s.
func says(p results.Pass, s string) bool {
	for _, why := range append([]string{p.NoValue}, p.InvalidReasons...) {
		if strings.Contains(why, s) {
			return true
		}
	}
	return false
}

// The refill is the same window on every engine: one that never recovers is
// not judged on seconds of hits while a fast one is judged on its misses.
func TestPurgeRefillWindowIsFixed(t *testing.T) {
	fast, never := newSynthPurge(t, 50), newSynthPurge(t, 50)
	pf := fast.pass(fast.fastRefill, 1, nil)
	pn := never.pass(never.neverRecovers, 1, nil)
	if pf.RecoveredMs == nil || pn.RecoveredMs != nil {
		t.Fatalf("recovered at %v and %v ms: want the fast engine at once, the other never", val(pf.RecoveredMs), val(pn.RecoveredMs))
	}
	if pf.Refill.Requests != pn.Refill.Requests || pf.Refill.Requests != 1000 {
		t.Errorf("refill windows of %d and %d requests: want the same first second on both (1000)", pf.Refill.Requests, pn.Refill.Requests)
	}
	if val(pn.Refill.P50Ms) < val(pf.Refill.P50Ms) || val(pn.Refill.P99Ms) < val(pf.Refill.P99Ms) {
		t.Errorf("refill p50/p99 %v/%v ms never recovering, %v/%v ms recovering in 100 ms: the slower engine scores better",
			val(pn.Refill.P50Ms), val(pn.Refill.P99Ms), val(pf.Refill.P50Ms), val(pf.Refill.P99Ms))
	}
	for _, c := range []struct {
		name string
		sp   *synthPurge
	}{{"recovering", fast}, {"never recovering", never}} {
		for _, lt := range []*latencyTest{c.sp.ps.p50, c.sp.ps.p99} {
			if p := lastPass(t, lt.r); !p.Valid || p.Value == nil {
				t.Errorf("%s %s: valid %v value %v (%v)", c.name, lt.r.Test, p.Valid, val(p.Value), p.InvalidReasons)
			}
		}
	}
	if val(never.ps.p99.r.Value) <= val(fast.ps.p99.r.Value) {
		t.Errorf("p99 during the refill %v ms never recovering, %v ms recovering: want the never-recovering engine higher",
			val(never.ps.p99.r.Value), val(fast.ps.p99.r.Value))
	}
}

// A purge that removed nothing makes the refill's figures invalid with the
// reason, and an object whose requests after the purge all failed is not one
// the refill was counted for.
func TestPurgeThatRemovedNothingIsInvalid(t *testing.T) {
	sp := newSynthPurge(t, 50)
	sp.pass(sp.hit, 0, nil)
	ps := sp.ps
	if p := lastPass(t, ps.amp.r); p.Valid || !says(p, "the purge removed nothing: 0 origin fetches after it for 50 objects") {
		t.Errorf("amplification: valid %v value %v (%v): want invalid, the purge removed nothing", p.Valid, val(p.Value), p.InvalidReasons)
	}
	if ps.amp.r.Value != nil {
		t.Errorf("amplification %v: want null", *ps.amp.r.Value)
	}
	for _, r := range []*results.Result{ps.recovery, ps.p50.r, ps.p99.r, ps.dur} {
		if p := lastPass(t, r); p.Valid || r.Value != nil || !says(p, "the purge removed nothing") {
			t.Errorf("%s: valid %v value %v (%v): want invalid, the purge removed nothing", r.Test, p.Valid, val(r.Value), p.InvalidReasons)
		}
	}
	if p := lastPass(t, ps.stale.r); !p.Valid || ps.stale.r.Value == nil || *ps.stale.r.Value == 0 {
		t.Errorf("stale after purge: valid %v value %v (%v): want the stale answers counted", p.Valid, val(ps.stale.r.Value), p.InvalidReasons)
	}

	// Objects 40 to 49 fail after the purge: 40 objects were answered.
	sp = newSynthPurge(t, 50)
	pe := sp.pass(func(k int64, obj int) purgeRec {
		if obj >= 40 {
			return purgeRec{status: 503}
		}
		return sp.fastRefill(k, obj)
	}, 1, nil)
	if pe.DistinctAfter != 40 {
		t.Errorf("distinct objects after the purge %d, want 40: an object whose every answer failed was not refilled", pe.DistinctAfter)
	}
}

// Not recovering is a finding: a pass that did not recover is valid and
// counts as the longest; when the median pass did not recover, the figure is
// null with how often.
func TestPurgeRecoveryIsCensored(t *testing.T) {
	mostly := newSynthPurge(t, 50)
	for _, f := range []synthReq{mostly.fastRefill, mostly.neverRecovers, mostly.neverRecovers} {
		mostly.pass(f, 1, nil)
	}
	r := mostly.ps.recovery
	if r.Value != nil || !strings.Contains(r.NoValue, "did not recover within") || !strings.Contains(r.NoValue, "in 2 of 3 passes") {
		t.Errorf("recovery %v (%q): want null, did not recover in 2 of 3 passes", val(r.Value), r.NoValue)
	}
	if r.ValidPasses != 3 || !r.Valid {
		t.Errorf("%d of %d passes valid: a pass that did not recover is a finding, not an invalid pass", r.ValidPasses, r.MeasuredPasses)
	}
	once := newSynthPurge(t, 50)
	for _, f := range []synthReq{once.neverRecovers, once.fastRefill, once.fastRefill} {
		once.pass(f, 1, nil)
	}
	r = once.ps.recovery
	if r.Value == nil || *r.Value != 0.1 || r.ValidPasses != 3 {
		t.Errorf("recovery %v (%q), %d valid passes: want 0.1 s, the median of 3 with the one that did not recover longest", val(r.Value), r.NoValue, r.ValidPasses)
	}
	if p := r.Passes[0]; p.Value == nil || *p.Value < 2 || !says(p, "did not recover within") {
		t.Errorf("the pass that did not recover: value %v (%q): want its lower bound, said so", val(p.Value), p.NoValue)
	}
}

// Stale answers are a rate: a cell with fewer valid passes does not read as
// better.
func TestPurgeStaleIsPerThousand(t *testing.T) {
	oneStale := func(sp *synthPurge) synthReq {
		return func(k int64, obj int) purgeRec {
			rec := sp.fastRefill(k, obj)
			if k == 500 {
				rec.stamp = sp.old()
			}
			return rec
		}
	}
	all, few := newSynthPurge(t, 50), newSynthPurge(t, 50)
	var proven int64
	for i := range 3 {
		pe := all.pass(oneStale(all), 1, nil)
		proven += pe.AnsweredAfter - pe.Unproven
		var bad []string
		if i > 0 {
			bad = []string{"made invalid"}
		}
		few.pass(oneStale(few), 1, nil, bad...)
	}
	a, f := all.ps.stale.r, few.ps.stale.r
	if a.Value == nil || f.Value == nil || *a.Value != *f.Value {
		t.Errorf("stale after purge %v with 3 valid passes, %v with 1: want the same rate", val(a.Value), val(f.Value))
	}
	if want := round3(1000 * 3 / float64(proven)); val(a.Value) != want || a.Unit != "per 1000 answers" {
		t.Errorf("stale after purge %v %s, want %v per 1000 answers", val(a.Value), a.Unit, want)
	}
	if figure(a, figStale) != 3 {
		t.Errorf("stale count %v, want the raw 3", figure(a, figStale))
	}
}

// The generator's lateness is judged on the window each figure is made of:
// late requests in the refill make the refill's figures invalid, lateness
// elsewhere in the pass does not.
func TestPurgeLatenessJudgedOnWindow(t *testing.T) {
	ms := int64(time.Millisecond)
	late := newSynthPurge(t, 50)
	late.pass(func(k int64, obj int) purgeRec {
		rec := late.fastRefill(k, obj)
		if k < 1000 {
			rec.lag = 10 * ms
			rec.ttfb += rec.lag
		}
		return rec
	}, 1, nil)
	for _, lt := range []*latencyTest{late.ps.p50, late.ps.p99} {
		if p := lastPass(t, lt.r); p.Valid || !says(p, "the generator's own lateness moved the refill TTFB") {
			t.Errorf("%s with the generator 10 ms late through the refill: valid %v (%v)", lt.r.Test, p.Valid, p.InvalidReasons)
		}
	}
	// Late elsewhere in the pass: the whole pass's figures moved, not the
	// refill's.
	elsewhere := newSynthPurge(t, 50)
	lr := &loadgen.Result{LagEffects: []loadgen.LagEffect{
		{Figure: "ttfb", Quantile: 50, Corrected: 30 * time.Millisecond, FromDispatch: time.Millisecond, Exceeded: true},
		{Figure: "ttfb", Quantile: 99, Corrected: 30 * time.Millisecond, FromDispatch: time.Millisecond, Exceeded: true}}}
	elsewhere.pass(elsewhere.fastRefill, 1, lr)
	for _, r := range []*results.Result{elsewhere.ps.p50.r, elsewhere.ps.p99.r, elsewhere.ps.recovery} {
		if p := lastPass(t, r); !p.Valid {
			t.Errorf("%s with no late request in its window: invalid (%v)", r.Test, p.InvalidReasons)
		}
	}
	// Late before the purge: the reference recovery is judged against
	// moved.
	ref := newSynthPurge(t, 50)
	ref.beforeReq = func(k int64, obj int) purgeRec {
		rec := ref.hit(k, obj)
		rec.lag = 10 * ms
		rec.ttfb += rec.lag
		return rec
	}
	ref.pass(ref.fastRefill, 1, nil)
	if p := lastPass(t, ref.ps.recovery); p.Valid || !says(p, "the generator's own lateness moved") {
		t.Errorf("recovery with the generator 10 ms late before the purge: valid %v (%v)", p.Valid, p.InvalidReasons)
	}
}

// A refill request that timed out counts at the timeout, and makes the
// refill's figures invalid with the count.
func TestPurgeRefillTimeoutCounts(t *testing.T) {
	sp := newSynthPurge(t, 50)
	pe := sp.pass(func(k int64, obj int) purgeRec {
		if k < 20 {
			return purgeRec{err: true, kind: "timeout"}
		}
		return sp.fastRefill(k, obj)
	}, 1, nil)
	near := func(v *float64) bool { return v != nil && *v >= 10000 && *v <= 10100 } // the histogram's resolution
	if pe.Refill.Errors != 20 || pe.RefillTimeouts != 20 || !near(pe.Refill.P99Ms) {
		t.Errorf("refill: %d errors, %d timeouts, p99 %v ms: want 20, 20, the 10 s timeout", pe.Refill.Errors, pe.RefillTimeouts, val(pe.Refill.P99Ms))
	}
	if p := lastPass(t, sp.ps.p99.r); p.Valid || !near(p.Value) || !says(p, "20 of 1000 requests during the refill failed: they timed out and count at the 10s timeout") {
		t.Errorf("p99 during the refill: valid %v value %v (%v)", p.Valid, val(p.Value), p.InvalidReasons)
	}
}
