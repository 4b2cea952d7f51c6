package workloads

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/engines/cost"
	"github.com/hlsbench/hlsbench/engines/cpuload"
	"github.com/hlsbench/hlsbench/origin"
	"github.com/hlsbench/hlsbench/results"
	"github.com/hlsbench/hlsbench/workloads/loadgen"
)

// cpuSnapshots are two readings of CPU 0 far enough apart that the kernel
// counted ticks between them.
func cpuSnapshots(t *testing.T) (snapshot, snapshot) {
	t.Helper()
	a := cpuload.Take([]int{0}, cpuload.Ours{})
	time.Sleep(60 * time.Millisecond)
	b := cpuload.Take([]int{0}, cpuload.Ours{})
	if d := cpuload.Between(a, b); d.Err != nil || len(d.BusyShare) == 0 {
		t.Skipf("no CPU reading on this machine: %v", d.Err)
	}
	return snapshot{cpu: &a}, snapshot{cpu: &b}
}

// A pinned generator is judged on its sending window, as its event loops
// are: CPU spent draining slow answers after the last send does not make
// the sending window busy, and a busy sending window is not hidden by a
// long, idle drain after it.
func TestGeneratorBusyJudgesTheSendingWindow(t *testing.T) {
	a, b := cpuSnapshots(t)
	tgt := &Target{GeneratorCPUs: []int{1}}
	for _, c := range []struct {
		name string
		lr   loadgen.Result
		busy bool
	}{
		{"cpu spent draining", loadgen.Result{OK: 100, Elapsed: 10 * time.Second, CPUSeconds: 9.6,
			SendWindow: 5 * time.Second, SendCPUSeconds: 1}, false},
		{"busy while sending, idle drain", loadgen.Result{OK: 100, Elapsed: 10 * time.Second, CPUSeconds: 2,
			SendWindow: time.Second, SendCPUSeconds: 0.98}, true},
		{"polling is rest", loadgen.Result{OK: 100, Elapsed: time.Second, CPUSeconds: 0.99, SpinSeconds: 0.5,
			SendWindow: time.Second, SendCPUSeconds: 0.99, SendSpinSeconds: 0.5}, false},
	} {
		p := &passInfo{lr: &c.lr, ev: &results.Evidence{OtherCPU: &results.OtherCPU{}}}
		generatorBusy(tgt, p, a, b)
		if got := p.busy != ""; got != c.busy {
			t.Errorf("%s: busy %v (%q, share %v), want %v", c.name, got, p.busy, p.ev.OtherCPU.GeneratorBusyShare, c.busy)
		}
		if c.busy && !strings.Contains(p.busy, "while sending") {
			t.Errorf("%s: the reason does not say the window: %q", c.name, p.busy)
		}
	}
}

// The engine's CPU per 1000 requests is over every answer it gave: 503s
// cost it CPU too, and leaving them out of the denominator charges their
// CPU to the good answers. A request with no answer (refused, timed out
// before a status) is not one it gave.
func TestCostOfDividesByEveryAnswer(t *testing.T) {
	us := []cost.Usage{{Name: costEngine, CPUSeconds: 2}, {Name: costTerminator, CPUSeconds: 1}}
	r := &loadgen.Result{Requests: 1050, OK: 900, Errors: 150, StatusCodes: map[int]int64{200: 900, 503: 100},
		ErrorsByKind: map[string]int64{"status": 100, "timeout": 50}}
	c := costOf(us, r, 0)
	if c.EngineCPUMsPer1000 == nil || *c.EngineCPUMsPer1000 != 2000 {
		t.Errorf("engine CPU-ms per 1000 %v, want 2000: 2 s over 1000 answers (900 good, 100 errors)", valOf(c.EngineCPUMsPer1000))
	}
	if c.TerminatorCPUMsPer1000 == nil || *c.TerminatorCPUMsPer1000 != 1000 {
		t.Errorf("terminator CPU-ms per 1000 %v, want 1000", valOf(c.TerminatorCPUMsPer1000))
	}
	if c := costOf(us, r, 1000); c.EngineCPUMsPer1000 == nil || *c.EngineCPUMsPer1000 != 1000 || c.ControlRequests != 1000 || c.Answers != 1000 {
		t.Errorf("with 1000 control requests: %v CPU-ms per 1000 over %d answers and %d control requests, want 1000 over 1000 and 1000",
			valOf(c.EngineCPUMsPer1000), c.Answers, c.ControlRequests)
	}
	none := costOf(us, &loadgen.Result{Requests: 10, Errors: 10, ErrorsByKind: map[string]int64{"refused": 10}}, 0)
	if none.EngineCPUMsPer1000 != nil {
		t.Errorf("no answer: engine CPU-ms per 1000 %v, want null", valOf(none.EngineCPUMsPer1000))
	}
}

func valOf(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// noOrigin is an origin that counts nothing.
type noOrigin struct{}

func (noOrigin) SetMode(context.Context, origin.Mode) error  { return nil }
func (noOrigin) Stats(context.Context) (origin.Stats, error) { return origin.Stats{}, nil }

// hlsbench's own requests to the engine in a pass (purges, bans, the
// checks after them) are counted apart, and are in the engine's CPU per
// 1000 answers with the generator's: their CPU is in the meter's reading.
// The warm-up's GETs, before the meter starts, are not.
func TestControlRequestsCounted(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/fail") {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		w.Write([]byte("x"))
	}))
	defer srv.Close()
	bans := 0
	tgt := &Target{URL: srv.URL, Origin: noOrigin{}, Engine: results.Engine{Name: "external"}, PurgeMode: engines.PurgeObject,
		Ban:    func(context.Context, string) error { bans++; return nil },
		Groups: []cost.Group{{Name: costEngine, PGID: syscall.Getpgrp()}}}
	cfg := testConfig()
	cfg.Connections = 2
	rc := &Recorder{Run: &results.Run{}}
	spec := specOf(PurgeStampede)
	ps, err := openStream(context.Background(), spec, cfg, tgt, rc)
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	ctx := context.Background()
	if _, err := ps.fetch(ctx, http.MethodGet, "/warm"); err != nil { // warming: before the pass
		t.Fatal(err)
	}
	ps.log.reset()
	before := take(ctx, tgt)
	for _, m := range []string{engines.PurgeMethod, engines.PurgeMethod, http.MethodGet} {
		if _, err := ps.fetch(ctx, m, "/object"); err != nil {
			t.Fatal(err)
		}
	}
	if err := ps.ban(ctx, "/stream/"); err != nil || bans != 1 {
		t.Fatalf("ban: %v, %d calls", err, bans)
	}
	gone, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := ps.fetch(gone, engines.PurgeMethod, "/object"); err == nil { // never answered: not counted
		t.Fatal("a cancelled request was answered")
	}
	r, err := ps.g.Run(ctx, loadgen.Pass{Paths: []string{"/ok", "/fail"}, Requests: 40, Duration: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := ps.endPass(ctx, cfg.Warmups, r, nil, time.Now(), before, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := p.ev.Cost
	if c == nil || c.EngineCPUSeconds == nil {
		t.Fatalf("no cost measured: %+v", c)
	}
	if c.ControlRequests != 4 || c.Answers != 40 {
		t.Errorf("control requests %d, answers %d: want 4 (two purges, a check, a ban) and 40 (every answer, the 503s too)", c.ControlRequests, c.Answers)
	}
	if want := round3(*c.EngineCPUSeconds * 1e3 / (44.0 / 1e3)); c.EngineCPUMsPer1000 == nil || math.Abs(*c.EngineCPUMsPer1000-want) > want*0.01+0.01 {
		t.Errorf("engine CPU-ms per 1000 %v, want about %v: its CPU over 44 answers", valOf(c.EngineCPUMsPer1000), want)
	}
	ps.log.reset()
	if n := ps.log.control.Load(); n != 0 {
		t.Errorf("after a reset, %d control requests: want 0", n)
	}
}
