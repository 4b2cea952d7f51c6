package workloads

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/hlsbench/hlsbench/origin"
	"github.com/hlsbench/hlsbench/results"
	"github.com/hlsbench/hlsbench/workloads/loadgen"
)

// flapJudge is an origin-flap session with no generator, for judging
// synthetic cycles: the origin started failing at at, having last generated
// the object a second before (so its TTL expires a second into the phase).
func flapJudge(t *testing.T, ctl OriginControl) (*flapSession, flip) {
	t.Helper()
	s := specOf(OriginFlap)
	cfg := testConfig()
	tgt := &Target{Origin: ctl, Engine: results.Engine{Name: "synthetic"}}
	o := &flapSession{spec: &s, cfg: cfg, tgt: tgt, rc: &Recorder{Run: &results.Run{}}, log: &flapLog{shards: make([][]flapRec, 1)},
		path: ManifestPath + "?run=t-flap"}
	o.tests()
	at := time.Unix(1_700_000_000, 0)
	return o, flip{at: at, lastGen: at.Add(-time.Second).UnixNano()}
}

// flapCycle fills the session's log: healthy fresh answers in the second
// before the failure, then failing-phase answers served stale from the
// last generation, each with the given TTFB and schedule lag.
func flapCycle(o *flapSession, f flip, healthyLag, failTTFB, failLag time.Duration) {
	recs := o.log.shards[0][:0]
	for i := range 100 {
		in := f.at.Add(-time.Second + time.Duration(i)*10*time.Millisecond)
		recs = append(recs, flapRec{intended: in, ttfb: time.Millisecond + healthyLag, total: 2*time.Millisecond + healthyLag,
			lag: healthyLag, status: 200, stamp: in.UnixNano()})
	}
	for i := range 200 {
		in := f.at.Add(time.Duration(i) * 10 * time.Millisecond)
		recs = append(recs, flapRec{intended: in, ttfb: failTTFB, total: failTTFB + time.Millisecond,
			lag: failLag, status: 200, stamp: f.lastGen})
	}
	o.log.shards[0] = recs
}

// flapPass is a measured cycle whose generator checks passed.
func flapPass() *passInfo {
	return &passInfo{index: 1, lr: &loadgen.Result{Requests: 300, OK: 300}, ev: &results.Evidence{}, started: time.Unix(1_700_000_000, 0)}
}

func reasonsOf(r *results.Result) string {
	return strings.Join(r.Passes[len(r.Passes)-1].InvalidReasons, " | ")
}

// Issue 23 item 9: a cycle during which the generator had no rest measured
// the generator, so its TTFB while failing is invalid; the grace ratio, a
// count, stays valid.
func TestFlapFailingTTFBGeneratorBusy(t *testing.T) {
	o, f := flapJudge(t, nil)
	flapCycle(o, f, 0, 2*time.Millisecond, 0)
	p := flapPass()
	p.busy = "the generator used 99% of its 1 core during the pass"
	o.judge(p, f)
	if tt := o.ttfb.r; tt.Passes[0].Valid || !strings.Contains(reasonsOf(tt), p.busy) {
		t.Errorf("TTFB while failing: valid %v, reasons %q: want the busy generator to make it invalid", tt.Passes[0].Valid, reasonsOf(tt))
	}
	if gr := o.gr; !gr.Passes[0].Valid {
		t.Errorf("grace ratio invalid (%s): a count does not depend on how fast the generator read", reasonsOf(gr))
	}
}

// Issue 23 item 10: the TTFB while failing is judged for the generator's
// lateness on the failing phase's own requests. A generator late only in
// the failing phase moved the figure (the whole pass, mostly on time, may
// not show it); one late only in the healthy phase did not.
func TestFlapFailingTTFBLatenessOwnWindow(t *testing.T) {
	t.Run("late while failing", func(t *testing.T) {
		o, f := flapJudge(t, nil)
		// 20 ms from the intended time, 5 ms of it the generator's lateness.
		flapCycle(o, f, 0, 20*time.Millisecond, 5*time.Millisecond)
		o.judge(flapPass(), f) // the whole pass's checks found nothing
		if tt := o.ttfb.r; tt.Passes[0].Valid || !strings.Contains(reasonsOf(tt), "lateness") {
			t.Errorf("TTFB while failing %v ms: valid %v, reasons %q: want it invalid for the generator's lateness in the failing phase",
				val(tt.Value), tt.Passes[0].Valid, reasonsOf(tt))
		}
		if gr := o.gr; !gr.Passes[0].Valid {
			t.Errorf("grace ratio invalid (%s): lateness does not move a count", reasonsOf(gr))
		}
	})
	t.Run("late while healthy", func(t *testing.T) {
		o, f := flapJudge(t, nil)
		flapCycle(o, f, 500*time.Millisecond, 20*time.Millisecond, 0)
		p := flapPass()
		// The whole pass's p50 moved: a third of its requests were late.
		p.lr.LagEffects = []loadgen.LagEffect{{Figure: "ttfb", Quantile: 50, Corrected: 40 * time.Millisecond,
			FromDispatch: 20 * time.Millisecond, Exceeded: true}}
		o.judge(p, f)
		if tt := o.ttfb.r; !tt.Passes[0].Valid || math.Abs(val(tt.Value)-20) > 0.1 {
			t.Errorf("TTFB while failing %v ms: valid %v, reasons %q: want 20 ms, valid: the generator was on time while the origin failed",
				val(tt.Value), tt.Passes[0].Valid, reasonsOf(tt))
		}
	})
}

// slowFailOrigin changes its mode at once and returns from SetMode only
// hold later, as a Server does while it cuts the connections it had in
// refuse and drop modes. old is an origin that does not report when its
// mode changed.
type slowFailOrigin struct {
	hold    time.Duration
	old     bool
	path    string
	mode    origin.Mode
	since   int64
	lastGen int64
}

func (s *slowFailOrigin) SetMode(_ context.Context, m origin.Mode) error {
	s.mode, s.since = m, time.Now().UnixNano()
	time.Sleep(s.hold)
	return nil
}

func (s *slowFailOrigin) Stats(context.Context) (origin.Stats, error) {
	st := origin.Stats{Objects: map[string]origin.ObjectStats{s.path: {Fetches: 1, LastGenerated: s.lastGen}}}
	if !s.old {
		st.Mode, st.ModeSince = s.mode, s.since
	}
	return st, nil
}

// Issue 23 item 11: the failing phase starts when the origin started
// failing, by its own report, not when SetMode returned: the requests
// refused in between belong to it, not to the healthy phase.
func TestFlapFailStartIsTheOrigins(t *testing.T) {
	ctl := &slowFailOrigin{hold: 300 * time.Millisecond}
	o, _ := flapJudge(t, ctl)
	failModeSetting.In(&o.cfg, origin.Refuse)
	ctl.path, ctl.lastGen = o.path, time.Now().Add(-3*time.Second).UnixNano() // expired before the failure
	f := o.fail(context.Background())
	if f.err != nil {
		t.Fatal(f.err)
	}
	if f.at.UnixNano() != ctl.since {
		t.Errorf("the failing phase starts %v after the origin started failing, want at it", f.at.Sub(time.Unix(0, ctl.since)))
	}
	changed := time.Unix(0, ctl.since)
	var recs []flapRec
	for i := range 100 { // healthy, fresh
		in := changed.Add(-time.Second + time.Duration(i)*10*time.Millisecond)
		recs = append(recs, flapRec{intended: in, ttfb: time.Millisecond, total: 2 * time.Millisecond, status: 200, stamp: in.UnixNano()})
	}
	for i := range 20 { // refused while SetMode had not returned
		recs = append(recs, flapRec{intended: changed.Add(time.Duration(i) * 10 * time.Millisecond), err: "connect"})
	}
	for i := range 100 { // then served stale
		in := changed.Add(ctl.hold + time.Duration(i)*10*time.Millisecond)
		recs = append(recs, flapRec{intended: in, ttfb: time.Millisecond, total: 2 * time.Millisecond, status: 200, stamp: ctl.lastGen})
	}
	o.log.shards[0] = recs
	p := flapPass()
	o.judge(p, f)
	fe := results.Part[FlapEvidence](p.ev, flapPart)
	if fe.Healthy.Errors != 0 || fe.Failing.Errors != 20 || fe.Healthy.Fresh != 100 {
		t.Errorf("healthy %+v, failing %+v: want the 20 refused requests in the failing phase", fe.Healthy, fe.Failing)
	}
	if !fe.FailStart.Equal(changed) {
		t.Errorf("fail_start %v, want the origin's %v", fe.FailStart, changed.UTC())
	}
	if a := fe.ModeChangeAnswered; a == nil || a.Before(changed.Add(ctl.hold)) {
		t.Errorf("mode_change_answered %v: want SetMode's return, %v or more after the change", a, ctl.hold)
	}
	if o.ttfb.r.Passes[0].Valid {
		t.Errorf("TTFB while failing valid at %v ms: the refused requests were not counted in it", val(o.ttfb.r.Value))
	}
}

// An origin that does not report when its mode changed (older than
// Stats.ModeSince) leaves the failing phase's start unknown: the cycle
// says so rather than counting from a zero time or silently from SetMode's
// return.
func TestFlapFailStartUnreported(t *testing.T) {
	ctl := &slowFailOrigin{old: true}
	o, _ := flapJudge(t, ctl)
	ctl.path, ctl.lastGen = o.path, time.Now().Add(-time.Second).UnixNano()
	f := o.fail(context.Background())
	if f.err == nil || !strings.Contains(f.err.Error(), "did not report") {
		t.Errorf("error %v: want the missing instant named", f.err)
	}
	if f.at.IsZero() || f.at.UnixNano() < ctl.since {
		t.Errorf("fail start %v: want SetMode's return as the fallback, not a zero time", f.at)
	}
}
