package workloads

import (
	"errors"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/engines/builtin"
	"github.com/hlsbench/hlsbench/engines/cost"
	"github.com/hlsbench/hlsbench/results"
	"github.com/hlsbench/hlsbench/workloads/loadgen"
)

func bansConfig() Config {
	return purgeConfig() // testConfig's: one pass of 1 s + 4 s of bans
}

// banFigures are a result's measured passes' ban evidence.
func banFigures(t *testing.T, r *results.Result) []*BanEvidence {
	t.Helper()
	return passEvidence(t, r, "ban", func(e *results.Evidence) *BanEvidence { return results.Part[BanEvidence](e, bansPart) })
}

// The built-in cache bans one object a second; it keeps no ban list, and
// every banned object's next answer is a new copy.
func TestRepeatedBansBuiltin(t *testing.T) {
	if testing.Short() {
		t.Skip("a pass of repeated bans")
	}
	run := execute(t, RunSpec{Engines: []string{"builtin"}, Workloads: mustSpecs(t, RepeatedBans), Config: bansConfig()})
	drift := find(t, run, "builtin", RepeatedBans+"/ttfb-drift")
	for _, be := range banFigures(t, drift) {
		t.Logf("pass: %d calls (%v ms median, %v max), p99 first quarter %v ms (%d requests), last %v ms (%d), %d answered after, %d stale",
			be.Calls, val(be.DurationP50Ms), val(be.DurationMaxMs), val(be.First.P99Ms), be.First.Requests, val(be.Last.P99Ms), be.Last.Requests,
			be.AnsweredAfter, be.StaleAfterPurge)
		// From 1 s to 5 s, one a second: at 1, 2, 3 and 4 s.
		if be.Mode != engines.PurgeBan || be.Calls != 4 || be.Failed != 0 {
			t.Errorf("mode %q, %d calls, %d failed: want 4 bans, none failed", be.Mode, be.Calls, be.Failed)
		}
		if be.AnsweredAfter < int64(be.Calls) || be.StaleAfterPurge != 0 {
			t.Errorf("%d stale of %d answers after a ban: want none, and at least the checks' %d", be.StaleAfterPurge, be.AnsweredAfter, be.Calls)
		}
		if len(be.Windows) != 5 || be.Windows[4].Calls != 4 || be.Windows[0].Calls != 0 || be.Windows[1].Calls != 1 {
			t.Errorf("windows %+v: want 5 seconds, no call in the first, one more in each after", be.Windows)
		}
		if be.First.Requests == 0 || be.Last.Requests == 0 || be.BanList != nil {
			t.Errorf("first %+v last %+v ban list %v", be.First, be.Last, val64(be.BanList))
		}
	}
	if l := find(t, run, "builtin", RepeatedBans+"/ban-list"); l.NotApplicable == "" || l.Value != nil {
		t.Errorf("ban list %v (%q): the built-in cache keeps none, want not applicable", val(l.Value), l.NotApplicable)
	}
	if st := find(t, run, "builtin", RepeatedBans+"/stale-after-purge"); st.Value == nil || *st.Value != 0 {
		t.Errorf("stale after a ban %v (%s), want a measured 0", val(st.Value), st.NoValue)
	}
	if d := find(t, run, "builtin", RepeatedBans+"/purge-duration"); d.Value == nil || *d.Value <= 0 || *d.Value > 1000 {
		t.Errorf("ban duration %v ms (%s)", val(d.Value), d.NoValue)
	}
	// The drifts and the last quarter's p99 depend on this machine's noise:
	// a value or the reason.
	for _, id := range []string{"ttfb-drift", "p99-ttfb-bans", "engine-cpu-drift"} {
		r := find(t, run, "builtin", RepeatedBans+"/"+id)
		if (r.Value == nil) == (r.NoValue == "") {
			t.Errorf("%s: value %v, no value %q: want one of them", id, val(r.Value), r.NoValue)
		}
		t.Logf("%s: %v %s (%s)", id, val(r.Value), r.Unit, r.NoValue)
	}
}

// A proxy that answers PURGE and keeps its copy is caught by the GET after
// each call: the copy the origin made before the call.
func TestRepeatedBansIgnoredIsCaught(t *testing.T) {
	if testing.Short() {
		t.Skip("a pass of repeated bans")
	}
	p := specOf(RepeatedBans).Policy
	run := external(t, RepeatedBans, bansConfig(), externalCache(t, p, true, func(c *builtin.Cache) http.Handler { return ignoringPurges{c} }))
	st := find(t, run, "external", RepeatedBans+"/stale-after-purge")
	for _, be := range banFigures(t, st) {
		if be.Mode != engines.PurgeObject || be.Method != engines.PurgeMethod || be.Calls != 4 {
			t.Errorf("mode %q method %q, %d calls: want 4 PURGEs", be.Mode, be.Method, be.Calls)
		}
		if be.StaleAfterPurge == 0 || be.StaleAfterPurge != be.AnsweredAfter {
			t.Errorf("%d stale of %d answers after a purge: want every one", be.StaleAfterPurge, be.AnsweredAfter)
		}
	}
	if st.Value == nil || *st.Value == 0 {
		t.Errorf("stale after a purge %v (%s): want the ignored purges caught", val(st.Value), st.NoValue)
	}
	for _, id := range []string{"ban-list", "engine-cpu-drift"} {
		if r := find(t, run, "external", RepeatedBans+"/"+id); r.NotApplicable == "" {
			t.Errorf("%s on an external proxy: %v, want not applicable", id, val(r.Value))
		}
	}
}

// The evidence of a pass from records made to the nanosecond: requests for
// an object banned in the pass are left out from its call on, the quarters
// and seconds hold the rest, and a stale check is counted.
func TestBanEvidenceArithmetic(t *testing.T) {
	ms := int64(time.Millisecond)
	start := time.Unix(1000, 0)
	t0 := start.UnixNano()
	total := 4 * time.Second
	bs := &banSession{purgeSession: &purgeSession{mode: engines.PurgeBan, paths: []string{"/m", "/p", "/s0", "/s1", "/s2"},
		log: &purgeLog{shards: make([][]purgeRec, 1)}}}
	add := func(at int64, obj int, ttfb int64) {
		stamp := t0 - ms // made before the pass
		if obj == 4 && at >= 1000*ms {
			stamp = t0 + at // a new copy after its ban
		}
		bs.log.shards[0] = append(bs.log.shards[0], purgeRec{intended: t0 + at, ttfb: ttfb, obj: obj, status: 200, stamp: stamp})
	}
	// 1 ms answers for the playlists through the pass, 5 ms in the last
	// second; /s2 is banned at 1 s and answers 80 ms from then on.
	for i := int64(0); i < 4000; i++ {
		ttfb := ms
		if i >= 3000 {
			ttfb = 5 * ms
		}
		add(i*ms, int(i%2), ttfb)
		if i%10 == 0 {
			if i >= 1000 {
				add(i*ms, 4, 80*ms)
			} else {
				add(i*ms, 4, ms)
			}
		}
	}
	list := int64(7)
	made := []banCall{
		{obj: 4, sent: t0 + 1000*ms, returned: t0 + 1002*ms, checked: true, stamp: t0 + 1003*ms, list: &list},
		{obj: 3, sent: t0 + 2000*ms, returned: t0 + 2010*ms, checked: true, stamp: t0 - ms}, // stale
	}
	be := bs.banEvidence(made, &cpuSeries{}, start, total)
	if be.Calls != 2 || be.StaleAfterPurge != 1 || be.AnsweredAfter != 2+299 {
		t.Errorf("%d calls, %d stale of %d answered after: want 2, 1 of 301 (2 checks, /s2's 299 answers after its ban)", be.Calls, be.StaleAfterPurge, be.AnsweredAfter)
	}
	// The ban list was read after the first call only: none at the end
	// (issue 23 item 18; b479891 gave the first call's 7).
	if val(be.DurationP50Ms) != 6 || val(be.DurationMaxMs) != 10 || be.BanList != nil {
		t.Errorf("durations %v ms median %v max, ban list %v: want 6, 10, null", val(be.DurationP50Ms), val(be.DurationMaxMs), val64(be.BanList))
	}
	// The quarters: the first second holds /s2's 100 requests before its
	// ban; the last none of its.
	if be.First.Requests != 1100 || be.Last.Requests != 1000 {
		t.Errorf("first quarter %d requests, last %d: want 1100 and 1000", be.First.Requests, be.Last.Requests)
	}
	if math.Abs(val(be.First.P99Ms)-1) > 0.01 || math.Abs(val(be.Last.P99Ms)-5) > 0.01 {
		t.Errorf("p99 first %v ms last %v ms, want 1 and 5", val(be.First.P99Ms), val(be.Last.P99Ms))
	}
	if len(be.Windows) != 4 || be.Windows[0].Calls != 0 || be.Windows[1].Calls != 1 || be.Windows[3].Calls != 2 ||
		be.Windows[1].BanList == nil || be.Windows[2].BanList != nil || be.Windows[1].Requests != 1000 {
		t.Errorf("windows %+v", be.Windows)
	}
}

// figure is r's own figure under key; -1 when it has none.
func figure(r *results.Result, key string) float64 {
	if v, ok := r.Figure(key); ok {
		return v
	}
	return -1
}

func val64(p *int64) int64 {
	if p == nil {
		return -1
	}
	return *p
}

// banRecording is a repeated-bans session on a Varnish-like target, with
// its tests as Open makes them, for records and calls made up.
func banRecording() *banSession {
	s := repeatedBans{}.Spec()
	tgt := &Target{Engine: results.Engine{Name: "varnish"}, Groups: []cost.Group{{Name: costEngine}}}
	rc := &Recorder{Run: &results.Run{}}
	bs := &banSession{purgeSession: &purgeSession{spec: &s, cfg: Config{Timeout: 10 * time.Second}, tgt: tgt, rc: rc,
		mode: engines.PurgeBan, paths: []string{"/m", "/p", "/s0", "/s1", "/s2"}, log: &purgeLog{shards: make([][]purgeRec, 1)}}}
	bs.newTests(rc, &s, tgt)
	return bs
}

// banPass is measured pass i, whose generator answered every request,
// invalid for reasons.
func banPass(i int, reasons ...string) *passInfo {
	return &passInfo{index: i, lr: &loadgen.Result{Requests: 4000, OK: 4000}, reasons: reasons, started: time.Unix(1000, 0), ev: &results.Evidence{}}
}

// banQuarters fills bs's log with a 4 s pass from t0 of requests for the
// playlists, one a millisecond, answered in 1 ms; edit may change each
// (at: ns from t0).
func banQuarters(bs *banSession, t0 int64, edit func(at int64, rec *purgeRec)) {
	ms := int64(time.Millisecond)
	bs.log.shards[0] = bs.log.shards[0][:0]
	for i := int64(0); i < 4000; i++ {
		rec := purgeRec{intended: t0 + i*ms, ttfb: ms, obj: int(i % 2), status: 200}
		if edit != nil {
			edit(i*ms, &rec)
		}
		bs.log.shards[0] = append(bs.log.shards[0], rec)
	}
}

func passOf(t *testing.T, r *results.Result, i int) results.Pass {
	t.Helper()
	for _, p := range r.Passes {
		if p.Index == i && !p.Warmup {
			return p
		}
	}
	t.Fatalf("%s: no pass %d", r.ID, i)
	return results.Pass{}
}

func reasonWith(p results.Pass, s string) bool {
	for _, r := range p.InvalidReasons {
		if strings.Contains(r, s) {
			return true
		}
	}
	return false
}

// Item 2: the last quarter's slow requests that time out must not leave
// the quarter: the engine that times out gets no lower drift or p99 than
// the one that answered them slowly, and its pass is invalid with the
// count.
func TestBanQuartersCountFailures(t *testing.T) {
	ms := int64(time.Millisecond)
	start := time.Unix(1000, 0)
	t0 := start.UnixNano()
	total := 4 * time.Second
	// Every 50th request of the last quarter (20 of 1000) is slow: one
	// engine answers it in 5 s, the other times out.
	slow := func(at int64) bool { return at >= 3000*ms && (at/ms)%50 == 0 }
	run := func(timeout bool) (drift, p99 results.Pass, be *BanEvidence, bs *banSession) {
		bs = banRecording()
		banQuarters(bs, t0, func(at int64, rec *purgeRec) {
			if !slow(at) {
				return
			}
			if timeout {
				rec.ttfb, rec.status, rec.err, rec.kind = 0, 0, true, "timeout"
			} else {
				rec.ttfb = 5000 * ms
			}
		})
		p := banPass(1)
		be = bs.banEvidence(nil, &cpuSeries{}, start, total)
		bs.record(p, be, nil)
		return passOf(t, bs.drift, 1), passOf(t, bs.late.r, 1), be, bs
	}
	slowDrift, slowP99, slowBE, _ := run(false)
	toDrift, toP99, toBE, bs := run(true)
	t.Logf("slow: last p99 %v ms, drift %v; timeouts: last p99 %v ms, drift %v", val(slowBE.Last.P99Ms), val(slowDrift.Value), val(toBE.Last.P99Ms), val(toDrift.Value))
	if toDrift.Value == nil || slowDrift.Value == nil || *toDrift.Value < *slowDrift.Value {
		t.Errorf("drift %v with timeouts, %v with slow answers: the timeouts must not score better", val(toDrift.Value), val(slowDrift.Value))
	}
	if toP99.Value == nil || slowP99.Value == nil || *toP99.Value < *slowP99.Value || val(toBE.Last.P99Ms) < val(slowBE.Last.P99Ms) {
		t.Errorf("last quarter's p99 %v ms (evidence %v) with timeouts, %v ms with slow answers: the timeouts must not score better",
			val(toP99.Value), val(toBE.Last.P99Ms), val(slowP99.Value))
	}
	if !slowDrift.Valid || !slowP99.Valid {
		t.Errorf("slow answers: drift valid %v %v, p99 valid %v %v: want both valid", slowDrift.Valid, slowDrift.InvalidReasons, slowP99.Valid, slowP99.InvalidReasons)
	}
	want := "20 of 1000 requests in the last quarter failed (timeout 20)"
	if toDrift.Valid || toP99.Valid || !reasonWith(toDrift, want) || !reasonWith(toP99, want) {
		t.Errorf("timeouts: drift valid %v %q, p99 valid %v %q: want both invalid with %q", toDrift.Valid, toDrift.InvalidReasons, toP99.Valid, toP99.InvalidReasons, want)
	}
	if bs.drift.Value != nil || bs.late.r.Value != nil {
		t.Errorf("timeouts: drift %v, p99 %v: want null, no valid pass", val(bs.drift.Value), val(bs.late.r.Value))
	}
	if toBE.Last.Errors != 20 || toBE.Last.Requests != 1000 {
		t.Errorf("last quarter %d errors of %d requests, want 20 of 1000", toBE.Last.Errors, toBE.Last.Requests)
	}
	// A failure in the first quarter spoils the drift, not the last
	// quarter's p99; one that is not a timeout has no latency.
	bs = banRecording()
	banQuarters(bs, t0, func(at int64, rec *purgeRec) {
		if at < 1000*ms && (at/ms)%100 == 0 {
			rec.ttfb, rec.status, rec.err, rec.kind = 0, 503, true, "status"
		}
	})
	p := banPass(1)
	be := bs.banEvidence(nil, &cpuSeries{}, start, total)
	bs.record(p, be, nil)
	d, l := passOf(t, bs.drift, 1), passOf(t, bs.late.r, 1)
	if want := "10 of 1000 requests in the first quarter failed (status 10)"; d.Valid || !reasonWith(d, want) || !l.Valid {
		t.Errorf("a first quarter with 10 503s: drift valid %v %q (want invalid with %q), last p99 valid %v %q (want valid)", d.Valid, d.InvalidReasons, want, l.Valid, l.InvalidReasons)
	}
	if val(be.First.P99Ms) != 1 || be.Windows[0].Errors != 10 {
		t.Errorf("first quarter p99 %v ms, first second %d errors: want 1 ms (a 503 has no latency) and 10", val(be.First.P99Ms), be.Windows[0].Errors)
	}
}

// Item 10: the drift and the last quarter's p99 are judged for the
// generator's lateness on their own quarters, not on the whole pass.
func TestBanLatenessPerQuarter(t *testing.T) {
	ms := int64(time.Millisecond)
	start := time.Unix(1000, 0)
	t0 := start.UnixNano()
	total := 4 * time.Second
	// late makes every 20th request of [from, to) dispatched 50 ms late:
	// its TTFB from the schedule is 51 ms, from the dispatch 1 ms.
	late := func(from, to int64) func(int64, *purgeRec) {
		return func(at int64, rec *purgeRec) {
			if at >= from*ms && at < to*ms && (at/ms)%20 == 0 {
				rec.lag, rec.ttfb = 50*ms, 51*ms
			}
		}
	}
	pass := func(edit func(int64, *purgeRec), r *loadgen.Result) (drift, p99 results.Pass) {
		bs := banRecording()
		banQuarters(bs, t0, edit)
		p := banPass(1)
		if r != nil {
			p.lr = r
		}
		be := bs.banEvidence(nil, &cpuSeries{}, start, total)
		bs.record(p, be, nil)
		return passOf(t, bs.drift, 1), passOf(t, bs.late.r, 1)
	}
	// Late in the last quarter: both figures moved, though the whole
	// pass's p99 (5 % of a quarter is 1.25 % of the pass) was not.
	d, l := pass(late(3000, 4000), nil)
	want := "the generator's own lateness moved the last quarter's TTFB p99"
	if d.Valid || l.Valid || !reasonWith(d, want) || !reasonWith(l, want) {
		t.Errorf("late in the last quarter: drift valid %v %q, p99 valid %v %q: want both invalid with %q", d.Valid, d.InvalidReasons, l.Valid, l.InvalidReasons, want)
	}
	// Late in the first quarter: the drift's denominator moved, not the
	// last quarter's p99.
	d, l = pass(late(0, 1000), nil)
	if want := "the generator's own lateness moved the first quarter's TTFB p99"; d.Valid || !reasonWith(d, want) || !l.Valid {
		t.Errorf("late in the first quarter: drift valid %v %q (want invalid with %q), p99 valid %v %q (want valid)", d.Valid, d.InvalidReasons, want, l.Valid, l.InvalidReasons)
	}
	// Late in the middle only, where nothing is published: the whole
	// pass's figure says the p99 moved, the quarters did not.
	r := &loadgen.Result{Requests: 4000, OK: 4000, LagEffects: []loadgen.LagEffect{{Figure: "ttfb", Quantile: 99, Corrected: 51 * time.Millisecond, FromDispatch: time.Millisecond, Exceeded: true}}}
	d, l = pass(late(1000, 3000), r)
	if !d.Valid || !l.Valid {
		t.Errorf("late between the quarters: drift valid %v %q, p99 valid %v %q: want both valid", d.Valid, d.InvalidReasons, l.Valid, l.InvalidReasons)
	}
}

// Item 5: stale-after-purge compares cells with different numbers of
// valid passes: per 1000 answers whose staleness could be proven, not a
// sum that grows with the passes.
func TestBanStalePer1000(t *testing.T) {
	cell := func(passes []BanEvidence, invalid int) *results.Result {
		bs := banRecording()
		for i := range passes {
			var why []string
			if i < invalid {
				why = []string{"an invalid pass"}
			}
			p := banPass(i+1, why...)
			bs.record(p, &passes[i], nil)
		}
		return bs.stale
	}
	// Three valid passes, 1 stale of 100 each: 10 per 1000.
	a := cell([]BanEvidence{{AnsweredAfter: 100, StaleAfterPurge: 1}, {AnsweredAfter: 100, StaleAfterPurge: 1}, {AnsweredAfter: 100, StaleAfterPurge: 1}}, 0)
	// One valid pass of three, 2 stale of 100: 20.
	b := cell([]BanEvidence{{AnsweredAfter: 100, StaleAfterPurge: 9}, {AnsweredAfter: 100, StaleAfterPurge: 9}, {AnsweredAfter: 100, StaleAfterPurge: 2}}, 2)
	t.Logf("a %v %s (stale %v), b %v %s (stale %v)", val(a.Value), a.Unit, figure(a, figStale), val(b.Value), b.Unit, figure(b, figStale))
	if val(a.Value) != 10 || figure(a, figStale) != 3 || a.Unit != "per 1000 answers" || a.ValidPasses != 3 {
		t.Errorf("3 passes of 1 stale in 100: %v %s, %v stale over %d valid passes: want 10 per 1000 answers, 3 stale over 3", val(a.Value), a.Unit, figure(a, figStale), a.ValidPasses)
	}
	if val(b.Value) != 20 || figure(b, figStale) != 2 || b.ValidPasses != 1 {
		t.Errorf("1 valid pass of 2 stale in 100: %v, %v stale over %d valid passes: want 20, 2 over 1", val(b.Value), figure(b, figStale), b.ValidPasses)
	}
	if !(val(b.Value) > val(a.Value)) {
		t.Errorf("the cell with the higher share of stale answers (%v) must not read as better than the other (%v)", val(b.Value), val(a.Value))
	}
	if p := passOf(t, a, 1); val(p.Value) != 10 {
		t.Errorf("pass 1's own value %v: want its own 10 per 1000", val(p.Value))
	}
	// Answers without the origin's stamp prove nothing: the pass's own
	// figure is over the 100 of 200 that carried one (and it is invalid).
	c := cell([]BanEvidence{{AnsweredAfter: 200, Unproven: 100, StaleAfterPurge: 2}}, 0)
	if p := passOf(t, c, 1); val(p.Value) != 20 || p.Valid {
		t.Errorf("2 stale of 200 answers, 100 unproven: %v (valid %v), want 20, invalid", val(p.Value), p.Valid)
	}
}

// Item 18: the ban list at the end is the one read after the pass's last
// call; a read that failed there makes it null with the reason, never an
// earlier call's list.
func TestBanListAfterLastCall(t *testing.T) {
	start := time.Unix(1000, 0)
	t0 := start.UnixNano()
	ms := int64(time.Millisecond)
	five, six := int64(5), int64(6)
	calls := func(last banCall) []banCall {
		return []banCall{
			{obj: 4, sent: t0 + 1000*ms, returned: t0 + 1001*ms, list: &five},
			{obj: 3, sent: t0 + 2000*ms, returned: t0 + 2001*ms, list: &six},
			last,
		}
	}
	for _, c := range []struct {
		name string
		last banCall
		want string
	}{
		{"the read failed", banCall{obj: 2, sent: t0 + 3000*ms, returned: t0 + 3001*ms, listErr: errors.New("varnishstat: exit status 2")},
			"the ban list could not be read after the last call (call 3 of 3: varnishstat: exit status 2)"},
		{"the call failed", banCall{obj: 2, sent: t0 + 3000*ms, returned: t0 + 3001*ms, err: errors.New("varnishadm: exit status 1")},
			"the last call failed (call 3 of 3: varnishadm: exit status 1)"},
	} {
		bs := banRecording()
		banQuarters(bs, t0, nil)
		made := calls(c.last)
		be := bs.banEvidence(made, &cpuSeries{}, start, 4*time.Second)
		p := banPass(1)
		bs.record(p, be, made)
		lp := passOf(t, bs.list, 1)
		if be.BanList != nil || lp.Value != nil || lp.Valid || !strings.Contains(lp.NoValue, c.want) || bs.list.Value != nil {
			t.Errorf("%s: evidence %v, pass %v (valid %v, %q), test %v: want null, with %q", c.name, val64(be.BanList), val(lp.Value), lp.Valid, lp.NoValue, val(bs.list.Value), c.want)
		}
	}
	// Read after the last call: that list.
	seven := int64(7)
	bs := banRecording()
	made := calls(banCall{obj: 2, sent: t0 + 3000*ms, returned: t0 + 3001*ms, list: &seven})
	be := bs.banEvidence(made, &cpuSeries{}, start, 4*time.Second)
	if val64(be.BanList) != 7 {
		t.Errorf("ban list %v, want 7, read after the last call", val64(be.BanList))
	}
}
