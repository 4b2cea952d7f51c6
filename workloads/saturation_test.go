package workloads

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/results"
	"github.com/hlsbench/hlsbench/workloads/loadgen"
)

// rated is a rate pass's generator result: offered rate, carried rate,
// requests, connections.
func rated(offered, carried float64, requests int64, conns int) *loadgen.Result {
	return &loadgen.Result{Mode: "rate", Target: offered, CarriedRPS: carried, AchievedRPS: carried * 0.95,
		Requests: requests, OK: requests, Answered: requests, Connections: conns, ErrorsByKind: map[string]int64{}}
}

// A rate pass is saturated when it carried under 97 % of its offered rate,
// dropped requests, or its requests waited for a free connection with
// nothing measured to say the waits moved nothing; a healthy pass whose last
// answers arrive a latency after the last send (AchievedRPS under 97 %) is
// not, and a pass that offers no rate never is.
func TestSaturationVerdict(t *testing.T) {
	poolLimited := rated(500, 499, 5000, 20)
	poolLimited.PoolLimited, poolLimited.Queued = true, 4812
	dropped := rated(500, 490, 5000, 20)
	dropped.Dropped = 3
	tail := rated(100, 99.6, 200, 20)
	tail.AchievedRPS = 95.2
	burst := &loadgen.Result{Mode: "burst", Requests: 50, OK: 50, AchievedRPS: 10}
	tgt := &Target{Engine: results.Engine{Name: "builtin", Runtime: engines.RuntimeInproc}, InProcess: true}
	for _, c := range []struct {
		name string
		lr   *loadgen.Result
		want []string // nil: not saturated
	}{
		{"pool limited", poolLimited, []string{"saturated: carried 499.0 of 500 rps; every one of 20 connections busy (4812 of 5000 requests waited for one)"}},
		{"carried 60 %", rated(100, 60, 200, 20), []string{"saturated: carried 60.0 of 100 rps"}},
		{"dropped", dropped, []string{"every one of 20 connections busy (3 of 5000 were dropped, the waiting queue full)"}},
		{"carried 96.9 %", rated(1000, 969, 2000, 50), []string{"carried 969.0 of 1000 rps"}},
		{"healthy with a tail", tail, nil},
		{"carried 97 %", rated(1000, 970, 2000, 50), nil},
		{"burst", burst, nil},
	} {
		got := saturation(tgt, c.lr, &results.Evidence{}, 2*time.Second)
		if (got != "") != (c.want != nil) || isSaturated(c.lr) != (c.want != nil) {
			t.Errorf("%s: saturated %q, want saturated %v", c.name, got, c.want != nil)
		}
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q lacks %q", c.name, got, w)
			}
		}
	}
}

// The reason names what each party used of the CPUs it may use over the
// pass, the busiest first, each with its measured figure, and says so
// where the engine's CPU is not measured.
func TestSaturationNamesTheBusiest(t *testing.T) {
	lr := rated(500, 199.6, 5000, 20)
	lr.PoolLimited, lr.Queued, lr.ShardCPU = true, 4812, []float64{0.61}
	proxyv2 := &Target{Engine: results.Engine{Name: "varnish", Runtime: engines.RuntimeProcess, Terminator: "hitch"},
		ServerCPUs: []int{0}, GeneratorCPUs: []int{1}}
	ev := &results.Evidence{Cost: &results.Cost{EngineCPUSeconds: results.F(1.1), TerminatorCPUSeconds: results.F(0.86),
		OriginCPUSeconds: results.F(0.01)}, OtherCPU: &results.OtherCPU{Share: 0.02, GeneratorBusyShare: 0.64}}
	got := saturation(proxyv2, lr, ev, 2*time.Second)
	want := "saturated: carried 199.6 of 500 rps; every one of 20 connections busy (4812 of 5000 requests waited for one), and what the waits moved was not measured; " +
		"engine and terminator together 98% of CPU 0, which they share, generator 64% of 1 core while sending (generator loop 61% of its core), " +
		"engine CPU 55% of its core, terminator (hitch) 43% of its core"
	if got != want {
		t.Errorf("reason\n got %q\nwant %q", got, want)
	}

	// The generator the busiest, with other processes worth naming, on a
	// machine where the engine may use three cores.
	lr.ShardCPU = []float64{0.97, 0.4}
	wide := &Target{Engine: results.Engine{Name: "nginx", Runtime: engines.RuntimeProcess}, ServerCPUs: []int{0, 1, 2}}
	ev = &results.Evidence{Cost: &results.Cost{EngineCPUSeconds: results.F(1.8)},
		OtherCPU: &results.OtherCPU{Share: 0.12, StealSeconds: 0.4}}
	got = saturation(wide, lr, ev, 2*time.Second)
	if !strings.HasSuffix(got, "; busiest generator loop 97% of its core, engine CPU 30% of its 3 cores, other processes and steal 12% of the measured CPUs (steal 0.40 s)") {
		t.Errorf("reason %q: want the generator's loop first, then the engine, then other processes", got)
	}

	// In-process, the engine's CPU is not measured: said, not guessed.
	lr.ShardCPU = []float64{0.3}
	got = saturation(&Target{Engine: results.Engine{Name: "builtin", Runtime: engines.RuntimeInproc}, InProcess: true}, lr, &results.Evidence{}, 2*time.Second)
	if !strings.HasSuffix(got, "; generator loop 30% of its core, the engine's CPU is not measured (it runs inside hlsbench's own process)") {
		t.Errorf("in-process reason %q", got)
	}
}

// A saturated pass is invalid for its latency tests alone, with its
// reason; counts at the origin of the same pass stay valid; every test of
// the pass records the offered and carried rate and the saturation; a
// latency test's value is its valid passes' alone, and its SaturatedValue
// the quantile over the saturated passes merged.
func TestSaturatedPassLatencyInvalidCountsValid(t *testing.T) {
	rc := &Recorder{Run: results.NewRun("t", "", nil)}
	spec := specOf(Segment)
	tgt := &Target{Engine: results.Engine{Name: "builtin", Runtime: engines.RuntimeProcess}}
	lt := rc.latency(&spec, tgt, "full-p99-ttfb", "p99 TTFB, 4 MiB full GET", 99)
	count := &sumTest{r: rc.newResult(&spec, tgt, "fetches", "origin fetches", "", true, "sum"), value: ratio}
	hist := func(ms ...float64) *hdr.Histogram {
		h := loadgen.NewHistogram()
		for _, v := range ms {
			for range 100 {
				h.RecordValue(int64(v * 1e6))
			}
		}
		return h
	}
	healthy := rated(500, 499.8, 1000, 20)
	full := rated(500, 199.6, 1000, 20)
	full.PoolLimited, full.Queued = true, 940
	pass := func(i int, lr *loadgen.Result, h *hdr.Histogram) {
		p := &passInfo{index: i, lr: lr, ev: &results.Evidence{}}
		p.judgeSaturation(tgt, 2*time.Second)
		lt.add(p, h)
		count.add(p, results.F(1), "", 1, 1)
	}
	pass(1, healthy, hist(2))
	pass(2, full, hist(3000))
	pass(3, full, hist(3500))
	r := lt.r
	if r.Valid || r.ValidPasses != 1 || r.Value == nil || *r.Value > 2.01 {
		t.Errorf("latency: valid %v, %d valid passes, value %v: want the healthy pass's 2 ms alone", r.Valid, r.ValidPasses, val(r.Value))
	}
	if r.SaturatedPasses != 2 || r.SaturatedValue == nil || *r.SaturatedValue < 3400 || *r.SaturatedValue > 3510 {
		t.Errorf("latency: %d saturated passes, saturated value %v: want 2 and the p99 of both saturated passes merged (3.5 s)",
			r.SaturatedPasses, val(r.SaturatedValue))
	}
	if len(r.InvalidReasons) != 2 || !strings.HasPrefix(r.InvalidReasons[0], "pass 2: saturated: carried 199.6 of 500 rps; every one of 20 connections busy") {
		t.Errorf("latency reasons %q", r.InvalidReasons)
	}
	if r.OfferedRPS == nil || *r.OfferedRPS != 500 || r.AchievedRPS == nil || *r.AchievedRPS != 199.6 {
		t.Errorf("latency: offered %v, achieved %v: want 500 and the median carried 199.6", val(r.OfferedRPS), val(r.AchievedRPS))
	}
	c := count.r
	if !c.Valid || c.ValidPasses != 3 || c.SaturatedPasses != 2 {
		t.Errorf("count: valid %v, %d valid passes, %d saturated: want every pass valid, the saturation recorded", c.Valid, c.ValidPasses, c.SaturatedPasses)
	}
	if p := c.Passes[1]; p.Saturated == "" || p.OfferedRPS != 500 || p.AchievedRPS != 199.6 || !p.PoolLimited {
		t.Errorf("count's pass 2: %+v: want the pass's saturation, offered and carried rate", p)
	}
}

// Waits for a connection saturate a pass for the tests whose quantile
// they moved: a host's blip that queued 200 requests 2 ms moved the p99
// alone, and the p50 of the same pass stays a TTFB. On a98cdfc the pass
// was saturated for both, and hit-path runs lost Varnish's p50 to blips
// that moved its p99.
func TestWaitsSaturateTheQuantileTheyMoved(t *testing.T) {
	rc := &Recorder{Run: results.NewRun("t", "", nil)}
	spec := specOf(HitPath)
	tgt := &Target{Engine: results.Engine{Name: "varnish", Runtime: engines.RuntimeProcess}}
	p50 := rc.latency(&spec, tgt, "p50-ttfb", "p50 TTFB", 50)
	p99 := rc.latency(&spec, tgt, "p99-ttfb", "p99 TTFB", 99)
	lr := waited(10000, 2*time.Millisecond, times(200, 0, 50*time.Millisecond)...)
	p := &passInfo{index: 1, lr: lr, ev: &results.Evidence{}}
	p.judgeSaturation(tgt, 10*time.Second)
	if p.saturated == "" || p.saturatedFor(50) != "" || !strings.Contains(p.saturatedFor(99), "moved TTFB p99") {
		t.Fatalf("saturated %q; for p50 %q; for p99 %q: want the pass and its p99 saturated, its p50 not", p.saturated, p.saturatedFor(50), p.saturatedFor(99))
	}
	p50.add(p, lr.TTFBFromDispatch)
	p99.add(p, lr.TTFBFromDispatch)
	if r := p50.r; !r.Valid || r.ValidPasses != 1 || r.SaturatedPasses != 0 || r.Passes[0].Saturated != "" || r.SaturatedValue != nil {
		t.Errorf("p50: valid %v, %d valid, %d saturated, pass saturated %q: want valid, not saturated", r.Valid, r.ValidPasses, r.SaturatedPasses, r.Passes[0].Saturated)
	}
	r := p99.r
	if r.Valid || r.SaturatedPasses != 1 || r.SaturatedValue == nil || len(r.InvalidReasons) != 1 ||
		!strings.Contains(r.InvalidReasons[0], "saturated: carried 1000.0 of 1000 rps; the waits for a free connection moved TTFB p99 from 1.000 ms to 3.000 ms") ||
		r.Passes[0].InvalidBy != results.InvalidBySaturation {
		t.Errorf("p99: valid %v, %d saturated, saturated value %v, reasons %q, by %q: want saturated by the waits", r.Valid, r.SaturatedPasses, val(r.SaturatedValue), r.InvalidReasons, r.Passes[0].InvalidBy)
	}
	// A rate not carried saturates both.
	short := rated(1000, 900, 10000, 50)
	p = &passInfo{index: 2, lr: short, ev: &results.Evidence{}}
	p.judgeSaturation(tgt, 10*time.Second)
	if p.saturatedFor(50) == "" || p.saturatedFor(99) == "" {
		t.Errorf("90 %% carried: for p50 %q, for p99 %q: want both saturated", p.saturatedFor(50), p.saturatedFor(99))
	}
}

// A steady server whose answers take 100 ms, offered 100 rps for 2 s, is
// not saturated; one that answers one request at a time, 20 ms each (at
// most 50 a second), is, and carries 50 or less. The first bound is kept
// loose (a busy machine may delay answers), the verdict is logged.
func TestSaturationSteadyAndCapped(t *testing.T) {
	if testing.Short() {
		t.Skip("two passes of 2 s")
	}
	steady := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(100 * time.Millisecond)
		w.Write([]byte("ok"))
	}))
	defer steady.Close()
	var one sync.Mutex
	capped := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		one.Lock()
		time.Sleep(20 * time.Millisecond)
		one.Unlock()
		w.Write([]byte("ok"))
	}))
	defer capped.Close()
	runAt := func(url string) *loadgen.Result {
		g, err := loadgen.New(context.Background(), loadgen.Options{URL: url, Connections: 20, Timeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close()
		r, err := g.Run(context.Background(), loadgen.Pass{Rate: 100, Duration: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	s := runAt(steady.URL)
	t.Logf("steady: %d answered, carried %.2f rps, achieved %.2f rps, pool limited %v, saturated %v",
		s.Answered, s.CarriedRPS, s.AchievedRPS, s.PoolLimited, isSaturated(s))
	if s.Answered != 200 || s.CarriedRPS < 90 || s.CarriedRPS > 110 {
		t.Errorf("steady: %d answered, carried %.2f rps: want 200 and about 100", s.Answered, s.CarriedRPS)
	}
	c := runAt(capped.URL)
	t.Logf("capped: %d answered, carried %.2f rps, pool limited %v, saturated %q", c.Answered, c.CarriedRPS, c.PoolLimited,
		saturation(&Target{}, c, &results.Evidence{}, c.Elapsed))
	if !isSaturated(c) || c.CarriedRPS > 51 {
		t.Errorf("capped: carried %.2f rps, saturated %v: want saturated at 50 rps or less", c.CarriedRPS, isSaturated(c))
	}
}

// The table shows each rate test's carried and offered rate, and a test
// whose median pass was saturated as saturated, in how many passes, with
// what a client saw, within the table's width; a workload that offers no rate has no
// such column.
func TestTableSaturated(t *testing.T) {
	rc := &Recorder{Run: results.NewRun("t", "", nil)}
	spec := specOf(Segment)
	tls := &Target{Engine: results.Engine{Name: "varnish@9.0.2", Runtime: engines.RuntimeProcess, Topology: "proxyv2", Terminator: "hitch"},
		ServerCPUs: []int{0}}
	hist := func(ms float64) *hdr.Histogram {
		h := loadgen.NewHistogram()
		for range 100 {
			h.RecordValue(int64(ms * 1e6))
		}
		return h
	}
	full := rated(500, 199.6, 1000, 20)
	full.PoolLimited, full.Queued = true, 812
	healthy := rated(500, 499.9, 1000, 20)
	for _, d := range segmentFullTests {
		lt := rc.latency(&spec, tls, d.id, d.title, d.q)
		for i := 1; i <= 3; i++ {
			p := &passInfo{index: i, lr: full, ev: &results.Evidence{Cost: &results.Cost{EngineCPUSeconds: results.F(1.2),
				TerminatorCPUSeconds: results.F(0.76)}}}
			p.saturated = saturation(tls, full, p.ev, 2*time.Second)
			lt.add(p, hist(3310))
		}
	}
	for _, d := range segmentRangeTests {
		lt := rc.latency(&spec, tls, d.id, d.title, d.q)
		for i := 1; i <= 3; i++ {
			lt.add(&passInfo{index: i, lr: healthy, ev: &results.Evidence{}}, hist(0.295+float64(i)/100))
		}
	}
	var b bytes.Buffer
	WriteTable(&b, spec, rc.Results())
	out := b.String()
	t.Log("\n" + out)
	for _, line := range strings.Split(out, "\n") {
		if n := len([]rune(line)); n > TableWidth {
			t.Errorf("line of %d columns: %q", n, line)
		}
	}
	// The reasons under the table are wrapped: read them unwrapped.
	out = strings.Join(strings.Fields(out), " ")
	for _, want := range []string{
		"carried", "199.6/500", "499.9/500", "3 saturated, saw 3.31 s", "0/3", "3/3",
		"saturated: carried 199.6 of 500 rps; every one of 20 connections busy",
		"engine and terminator together 98% of CPU 0, which they share",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q", want)
		}
	}

	// Tests of both directions beside the carried column: the directions
	// are said under the table, which keeps its width.
	flap := specOf(OriginFlap)
	in := &Target{Engine: results.Engine{Name: "builtin", Runtime: engines.RuntimeInproc}, InProcess: true}
	rc = &Recorder{Run: results.NewRun("t", "", nil)}
	lt := rc.latency(&flap, in, "p50-ttfb-failing", "p50 TTFB while the origin fails", 50)
	gr := &sumTest{r: rc.newResult(&flap, in, "grace-ratio", "Grace hit ratio", "%", false, "sum"), value: percent}
	for i := 1; i <= 2; i++ {
		p := &passInfo{index: i, lr: rated(1000, 1000, 3000, 10), ev: &results.Evidence{}}
		lt.add(p, hist(0.0640+float64(i)/500))
		gr.add(p, results.F(100), "", 10, 10)
	}
	b.Reset()
	WriteTable(&b, flap, rc.Results())
	t.Log("\n" + b.String())
	for _, line := range strings.Split(b.String(), "\n") {
		if n := len([]rune(line)); n > TableWidth {
			t.Errorf("line of %d columns: %q", n, line)
		}
	}
	if !strings.Contains(b.String(), "higher is better for Grace hit ratio, lower for the others") {
		t.Errorf("the table does not say which tests are better higher:\n%s", b.String())
	}

	b.Reset()
	WriteTable(&b, specOf(HitPath), []*results.Result{fakeResult("builtin", "p50-ttfb", results.F(0.1), results.Pass{Index: 1, Value: results.F(0.1)})})
	if strings.Contains(b.String(), "carried") {
		t.Errorf("a table of tests offering no rate shows a carried column:\n%s", b.String())
	}
}
