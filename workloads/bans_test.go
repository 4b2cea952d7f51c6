package workloads

import (
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/engines/builtin"
	"github.com/hlsbench/hlsbench/results"
)

func bansConfig() Config {
	return purgeConfig() // testConfig's: one pass of 1 s + 4 s of bans
}

// banFigures are a result's measured passes' ban evidence.
func banFigures(t *testing.T, r *results.Result) []*results.BanEvidence {
	t.Helper()
	return passEvidence(t, r, "ban", func(e *results.Evidence) *results.BanEvidence { return e.Bans })
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
	if val(be.DurationP50Ms) != 6 || val(be.DurationMaxMs) != 10 || val64(be.BanList) != 7 {
		t.Errorf("durations %v ms median %v max, ban list %v: want 6, 10, 7", val(be.DurationP50Ms), val(be.DurationMaxMs), val64(be.BanList))
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

func val64(p *int64) int64 {
	if p == nil {
		return -1
	}
	return *p
}
