package workloads

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/engines/builtin"
	"github.com/hlsbench/hlsbench/origin"
	"github.com/hlsbench/hlsbench/results"
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
func purgeFigures(t *testing.T, r *results.Result) []*results.PurgeEvidence {
	t.Helper()
	return passEvidence(t, r, "purge", func(e *results.Evidence) *results.PurgeEvidence { return e.Purge })
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
func TestPurgeIgnoredIsCaught(t *testing.T) {
	if testing.Short() {
		t.Skip("three passes of a purge")
	}
	p := specOf(PurgeStampede).Policy
	run := external(t, PurgeStampede, purgeConfig(), externalCache(t, p, true, func(c *builtin.Cache) http.Handler { return ignoringPurges{c} }))
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
	if amp := find(t, run, "external", PurgeStampede+"/refill-amplification"); amp.Value == nil || *amp.Value != 0 {
		t.Errorf("amplification %v (%s): want a measured 0, nothing was fetched again", val(amp.Value), amp.NoValue)
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
	cfg.PurgeMode = engines.PurgeBan
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
	ps := &purgeSession{cfg: Config{PurgeAfter: 3 * time.Second, Timeout: 10 * time.Second}, mode: engines.PurgeBan,
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
	end := start.Add(ps.cfg.PurgeAfter)
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
	if pe.Refill.Requests != 22 || pe.Before.Requests != 1000 || pe.After.Requests != 2700 {
		t.Errorf("phases before %d refill %d after %d, want 1000, 22, 2700", pe.Before.Requests, pe.Refill.Requests, pe.After.Requests)
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
