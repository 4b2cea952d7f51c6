package loadgen

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// chainPlan plans, per event loop, `chains` first requests 20 ms apart
// (object 0) and, on each good answer to a first request, one follow-up for
// object 1 at the instant the answer was known: a player asking for a
// segment once its playlist arrived.
type chainPlan struct {
	mu      *sync.Mutex // guards the test's view, not the plan's work
	firsts  []time.Duration
	follows []time.Duration // planned follow-up times
	told    *[]planSeen
	shard   int
}

type planSeen struct {
	shard    int
	obj      int
	status   int
	lag      time.Duration
	intended time.Time
	at       time.Duration
}

func (p *chainPlan) Next() (Planned, bool) {
	switch {
	case len(p.follows) > 0 && (len(p.firsts) == 0 || p.follows[0] <= p.firsts[0]):
		return Planned{At: p.follows[0], Obj: 1, Tag: int64(-len(p.follows))}, true
	case len(p.firsts) > 0:
		return Planned{At: p.firsts[0], Obj: 0, Tag: int64(len(p.firsts))}, true
	}
	return Planned{}, false
}

func (p *chainPlan) Pop() {
	if n, _ := p.Next(); n.Obj == 1 {
		p.follows = p.follows[1:]
	} else {
		p.firsts = p.firsts[1:]
	}
}

func (p *chainPlan) Answered(rec *Record, _ BodyCheck, at time.Duration) {
	p.mu.Lock()
	*p.told = append(*p.told, planSeen{shard: p.shard, obj: rec.Object, status: rec.Status, lag: rec.Lag, intended: rec.Intended, at: at})
	if (rec.Object == 0) != (rec.Tag > 0) {
		panic(fmt.Sprintf("object %d came back with tag %d", rec.Object, rec.Tag))
	}
	p.mu.Unlock()
	if rec.Object == 0 && rec.Status == 200 {
		p.follows = append(p.follows, at)
	}
}

func TestPlanFollowsAnswers(t *testing.T) {
	var mu sync.Mutex
	hits := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits[r.URL.Path]++
		mu.Unlock()
		if r.URL.Path == "/first" {
			time.Sleep(5 * time.Millisecond)
		}
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	const chains = 10
	g := newGen(t, Options{URL: srv.URL, Connections: 8, Shards: 2})
	var told []planSeen
	var tmu sync.Mutex
	start := time.Now()
	r := run(t, g, Pass{Paths: []string{"/first", "/then"}, Duration: 2 * time.Second, Plan: func(shard int) Plan {
		p := &chainPlan{mu: &tmu, told: &told, shard: shard}
		for i := range chains {
			p.firsts = append(p.firsts, time.Duration(i)*20*time.Millisecond)
		}
		return p
	}})
	if r.Mode != "plan" || r.Target != 0 {
		t.Errorf("mode %q target %v, want plan and no rate", r.Mode, r.Target)
	}
	// Every loop ran its plan: 2 × 10 firsts, each followed once. The
	// server's goroutines wrote hits: read them under its lock.
	mu.Lock()
	defer mu.Unlock()
	if hits["/first"] != 2*chains || hits["/then"] != 2*chains || r.Requests != 4*chains || r.OK != 4*chains {
		t.Fatalf("hits %v, %d requests %d ok: want %d of each path", hits, r.Requests, r.OK, 2*chains)
	}
	// Nothing left to plan, nothing in flight: the pass ends long before its 2 s.
	if el := time.Since(start); el > time.Second {
		t.Errorf("the pass took %v: a plan with nothing left should end it", el)
	}
	var firsts, follows []planSeen
	for _, s := range told {
		if s.obj == 0 {
			firsts = append(firsts, s)
		} else {
			follows = append(follows, s)
		}
	}
	if len(firsts) != 2*chains || len(follows) != 2*chains {
		t.Fatalf("told %d firsts and %d follow-ups", len(firsts), len(follows))
	}
	// A follow-up is counted from when the answer before it was known,
	// not from when the generator got round to sending it.
	t0 := r.Start
	for _, f := range follows {
		if f.lag < 0 || f.lag > 50*time.Millisecond {
			t.Errorf("follow-up lag %v", f.lag)
		}
		found := false
		for _, s := range firsts {
			if s.shard == f.shard && absDur(t0.Add(s.at).Sub(f.intended)) < 5*time.Millisecond {
				found = true
			}
		}
		if !found {
			t.Errorf("follow-up intended at %v has no first answer known then on loop %d", f.intended.Sub(t0), f.shard)
		}
	}
	for _, s := range firsts {
		// Firsts follow the plan's clock: 20 ms apart from the start.
		off := s.intended.Sub(t0)
		if rem := off % (20 * time.Millisecond); rem > 5*time.Millisecond && rem < 15*time.Millisecond {
			t.Errorf("first request intended at %v: off the plan's 20 ms clock", off)
		}
	}
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// A plan's requests past the pass's end are not sent, and a failure is
// told to the plan too.
func TestPlanEndAndFailures(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/bad") {
			http.Error(w, "no", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	g := newGen(t, Options{URL: srv.URL, Connections: 2, Shards: 1})
	var told []planSeen
	var tmu sync.Mutex
	r := run(t, g, Pass{Paths: []string{"/bad", "/ok"}, Duration: 300 * time.Millisecond, Plan: func(shard int) Plan {
		// /bad (object 0) at 0 and 100 ms, then one at 10 s: past the end.
		return &chainPlan{mu: &tmu, told: &told, firsts: []time.Duration{0, 100 * time.Millisecond, 10 * time.Second}}
	}})
	if r.Requests != 2 || len(told) != 2 {
		t.Fatalf("%d requests, %d told: want the 2 planned before the end", r.Requests, len(told))
	}
	for _, s := range told {
		if s.status != 503 {
			t.Errorf("told status %d, want 503", s.status)
		}
	}
	if _, err := g.Run(t.Context(), Pass{Paths: []string{"/ok"}, Rate: 10, Duration: time.Second, Plan: func(int) Plan { return nil }}); !IsConfigError(err) {
		t.Errorf("a plan with a rate: %v, want a config error", err)
	}
	if _, err := g.Run(t.Context(), Pass{Paths: []string{"/ok"}, Plan: func(int) Plan { return nil }}); !IsConfigError(err) {
		t.Errorf("a plan without a duration: %v, want a config error", err)
	}
}

// busyPlan sends /a and /b at the start; told /a's answer it keeps the
// loop busy for `busy` (a generator behind its work), told /b's it plans a
// follow-up for /c at the given instant.
type busyPlan struct {
	busy time.Duration
	next []Planned
	told []Record
}

func (p *busyPlan) Next() (Planned, bool) {
	if len(p.next) == 0 {
		return Planned{}, false
	}
	return p.next[0], true
}

func (p *busyPlan) Pop() { p.next = p.next[1:] }

func (p *busyPlan) Answered(rec *Record, _ BodyCheck, at time.Duration) {
	p.told = append(p.told, *rec)
	switch rec.Object {
	case 0:
		time.Sleep(p.busy)
	case 1:
		p.next = append(p.next, Planned{At: at, Obj: 2})
	}
}

// A follow-up is intended at the instant its answer arrived, not when the
// loop got round to it: a loop kept busy while /b's answer waited in its
// socket sends /c late, and that lateness is the generator's (its Lag), not
// taken off /c's TTFB.
func TestPlanFollowUpFromArrival(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/b" {
			time.Sleep(20 * time.Millisecond) // arrives while the loop is busy with /a
		}
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	g := newGen(t, Options{URL: srv.URL, Connections: 2, Shards: 1})
	const busy = 300 * time.Millisecond
	var p *busyPlan
	r := run(t, g, Pass{Paths: []string{"/a", "/b", "/c"}, Duration: 2 * time.Second, Plan: func(int) Plan {
		p = &busyPlan{busy: busy, next: []Planned{{At: 0, Obj: 0}, {At: 0, Obj: 1}}}
		return p
	}})
	if r.OK != 3 || len(p.told) != 3 {
		t.Fatalf("%d ok, %d told: want /a, /b and /c answered", r.OK, len(p.told))
	}
	var b, c *Record
	for i := range p.told {
		switch p.told[i].Object {
		case 1:
			b = &p.told[i]
		case 2:
			c = &p.told[i]
		}
	}
	if b == nil || c == nil {
		t.Fatalf("told %+v: want /b and /c", p.told)
	}
	arrived := b.Intended.Add(b.TTFB) // /b's answer fits one read: its first byte's stamp is its arrival
	if !c.Intended.Equal(arrived) {
		t.Errorf("/c intended at %v, /b's answer arrived at %v: want the follow-up intended at the arrival",
			c.Intended.Sub(r.Start), arrived.Sub(r.Start))
	}
	// The loop sent /c only after its busy spell: that delay is its lag.
	if c.Lag < busy/2 {
		t.Errorf("/c's schedule lag %v: want the loop's busy spell (about %v) counted against it", c.Lag, busy-20*time.Millisecond)
	}
}
