package workloads

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/hlsbench/hlsbench/results"
	"github.com/hlsbench/hlsbench/workloads/loadgen"
)

func fakeResult(engine, test string, value *float64, passes ...results.Pass) *results.Result {
	r := &results.Result{ID: HitPath + "/" + test, Workload: HitPath, Test: test, Title: test + " title",
		Engine: engine, Runtime: "process", Topology: "plaintext", Unit: "ms", LowerIsBetter: true,
		ErrorsByKind: map[string]int64{}}
	for i := range passes {
		p := &passInfo{index: passes[i].Index, reasons: passes[i].InvalidReasons}
		if passes[i].InvalidBy == results.InvalidByInstrument {
			p.instrumental(p.reasons)
		}
		addPass(r, p, passes[i].Value, passes[i].NoValue)
	}
	r.Value = value
	r.Recount()
	return r
}

// The table's figures, its legend, and the causes under it each once. The
// late pass 3 is the instrument's: the two valid passes of three are a
// figure.
func TestTable(t *testing.T) {
	lag := "the generator's own lateness moved TTFB p99 from 0.210 ms to 1.104 ms (tolerance 0.050 ms)"
	var rs []*results.Result
	rs = append(rs,
		fakeResult("builtin", "p50-ttfb", results.F(0.1234),
			results.Pass{Index: 1, Value: results.F(0.12)}, results.Pass{Index: 2, Value: results.F(0.13)},
			results.Pass{Index: 3, Value: results.F(9), InvalidReasons: []string{lag}, InvalidBy: results.InvalidByInstrument}),
		fakeResult("builtin", "p99-ttfb", results.F(1234.5),
			results.Pass{Index: 1, Value: results.F(900)}, results.Pass{Index: 2, Value: results.F(1500)},
			results.Pass{Index: 3, Value: results.F(9), InvalidReasons: []string{lag}, InvalidBy: results.InvalidByInstrument}),
		fakeResult("nginx", "p50-ttfb", nil, results.Pass{Index: 1, NoValue: "no successful request: 5 of 5 failed (status 5)",
			InvalidReasons: []string{"no successful request: 5 of 5 failed (status 5)"}}),
		fakeResult("nginx", "p99-ttfb", nil),
	)
	for i := 0; i < 12; i++ {
		rs = append(rs, fakeResult("varnish", "p50-ttfb", nil, results.Pass{Index: 1, InvalidReasons: []string{
			strings.Repeat("x", i+1) + " distinct cause"}}))
	}
	var b bytes.Buffer
	WriteTable(&b, specOf(HitPath), rs)
	out := b.String()
	t.Log("\n" + out)
	for _, line := range strings.Split(out, "\n") {
		if n := len([]rune(line)); n > TableWidth {
			t.Errorf("line of %d columns: %q", n, line)
		}
	}
	for _, want := range []string{
		"0.123 ms [0.120–0.130 ms]", // three significant figures, unit inside the brackets
		"1.23 s [0.900–1.50 s]",     // one unit for the value and its spread
		"lower", "2/3", "0/1", "—",
		"value: the test's figure over its valid measured passes",
		"builtin, every test, pass 3: the generator's own lateness moved TTFB p99 from 0.210 ms",
		"no measured pass finished",
		"and 7 more causes",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q", want)
		}
	}
	if n := strings.Count(out, "moved TTFB p99 from 0.210 ms"); n != 1 {
		t.Errorf("the lag cause of pass 3 is printed %d times, want once", n)
	}
}

// The generator gets the last quarter of the CPUs this process may use (at
// least one), one event loop pinned on each in order, and the engine and
// origin the rest. The lists are hosts this one is not: a cpuset such as
// [2 5 7] is pinned by its own numbers, not by 0 to its count.
func TestPlanCPUs(t *testing.T) {
	seq := func(from, to int) []int {
		var s []int
		for i := from; i < to; i++ {
			s = append(s, i)
		}
		return s
	}
	for _, c := range []struct{ cpus, gen, servers []int }{
		{nil, nil, nil},
		{[]int{1}, nil, nil},
		{[]int{0, 1}, []int{1}, []int{0}},
		{[]int{0, 1, 2, 3}, []int{3}, []int{0, 1, 2}},
		{[]int{2, 5, 7}, []int{7}, []int{2, 5}},
		{[]int{7, 2, 5}, []int{7}, []int{2, 5}},
		{seq(4, 12), []int{10, 11}, seq(4, 10)},
		{seq(0, 16), seq(12, 16), seq(0, 12)},
	} {
		p := planCPUs(c.cpus)
		if !slices.Equal(p.Generator, c.gen) || !slices.Equal(p.Servers, c.servers) {
			t.Errorf("CPUs %v: generator %v servers %v, want %v and %v", c.cpus, p.Generator, p.Servers, c.gen, c.servers)
		}
		// What the generator's loops are pinned to, from the plan alone.
		loops := loadgen.LoopCPUs(loadgen.Options{CPUs: p.Generator, Connections: 100})
		if !slices.Equal(loops, c.gen) {
			t.Errorf("CPUs %v: event loops pinned to %v, want one on each of %v", c.cpus, loops, c.gen)
		}
	}
}

func TestProgress(t *testing.T) {
	var b bytes.Buffer
	now := time.Unix(0, 0)
	p := NewProgress(&b, false)
	p.now = func() time.Time { return now }
	p.begin(100 * time.Second)
	p.Note("run x")
	p.at("[builtin] hit-path")
	now = now.Add(2 * time.Second)
	p.step("pass 1/20", 5*time.Second)
	now = now.Add(10 * time.Second)
	p.step("pass 2/20", 5*time.Second)
	out := b.String()
	for _, want := range []string{"hlsbench: run x\n", "[builtin] hit-path: starting the origin and the engine · 0m00s elapsed · about 1m40s left\n",
		"[builtin] hit-path: pass 2/20 · 0m12s elapsed · about 2m39s left\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("progress lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\r") {
		t.Error("plain output has carriage returns")
	}
	b.Reset()
	live := NewProgress(&b, true)
	live.begin(time.Minute)
	live.at("[nginx] segment")
	live.Note("saved")
	if got := b.String(); !strings.HasPrefix(got, "\r\033[K[----------]   0% [nginx] segment") || !strings.Contains(got, "\r\033[Khlsbench: saved\n") {
		t.Errorf("live output %q: want the line redrawn and cleared before a note", got)
	}
	var none *Progress
	none.step("nothing", time.Second) // a nil Progress prints nothing and does not panic
}

// A test's value comes from its valid measured passes only: an invalid
// pass's samples and the warm-ups are left out, and with no valid pass
// there is no value, with the first cause.
func TestValueFromValidPassesOnly(t *testing.T) {
	rc := &Recorder{Run: results.NewRun("t", "", nil)}
	spec := specOf(HitPath)
	tgt := &Target{Engine: results.Engine{Name: "builtin"}}
	lt := rc.latency(&spec, tgt, "p50-ttfb", "p50 TTFB", 50)
	hist := func(ms float64) *hdr.Histogram {
		h := loadgen.NewHistogram()
		for range 100 {
			h.RecordValue(int64(ms * 1e6))
		}
		return h
	}
	ok := &loadgen.Result{OK: 100, Requests: 100}
	lt.add(&passInfo{index: 1, warmup: true, lr: ok}, hist(50))
	lt.add(&passInfo{index: 1, lr: ok}, hist(1))
	lt.add(&passInfo{index: 2, lr: ok, reasons: []string{"late"}}, hist(100))
	lt.add(&passInfo{index: 3, lr: ok}, hist(1))
	r := lt.r
	if r.Value == nil || *r.Value > 1.01 || r.ValidPasses != 2 || r.MeasuredPasses != 3 || r.Valid ||
		len(r.InvalidReasons) != 1 || r.InvalidReasons[0] != "pass 2: late" || r.Requests != 300 {
		t.Errorf("value %v, %d of %d valid, valid %v, reasons %v, requests %d: want 1 ms from passes 1 and 3",
			val(r.Value), r.ValidPasses, r.MeasuredPasses, r.Valid, r.InvalidReasons, r.Requests)
	}
	if r.Spread == nil || r.Spread.N != 2 || r.Spread.Max > 1.01 {
		t.Errorf("spread %+v: want the valid passes only", r.Spread)
	}

	none := rc.latency(&spec, tgt, "p99-ttfb", "p99 TTFB", 99)
	failed := &loadgen.Result{Requests: 10, Errors: 10, ErrorsByKind: map[string]int64{"status": 10}}
	none.add(&passInfo{index: 1, lr: failed}, loadgen.NewHistogram())
	none.add(&passInfo{index: 2, lr: ok, reasons: []string{"late"}}, hist(1))
	r = none.r
	if r.Value != nil || r.Valid || r.ValidPasses != 0 || !strings.Contains(r.NoValue, "no valid pass of 2: no successful request: 10 of 10 failed (status 10)") ||
		r.Errors != 10 || r.ErrorsByKind["status"] != 10 {
		t.Errorf("value %v no_value %q errors %d: want null with the first cause", val(r.Value), r.NoValue, r.Errors)
	}
	if p := r.Passes[0]; p.Valid || p.Value != nil || len(p.InvalidReasons) == 0 {
		t.Errorf("a pass without a value must be invalid with its reason: %+v", p)
	}
}

// A TTFB test is judged on its own figure and quantile: lateness that moved
// the total, or another quantile, does not invalidate it.
func TestLatenessPerFigure(t *testing.T) {
	r := &loadgen.Result{OK: 10, Requests: 10, LagEffects: []loadgen.LagEffect{
		{Figure: "total", Quantile: 99, Corrected: 2e6, FromDispatch: 1e6, Exceeded: true},
		{Figure: "ttfb", Quantile: 50, Corrected: 2e5, FromDispatch: 1e5, Exceeded: true},
		{Figure: "ttfb", Quantile: 99, Corrected: 3e5, FromDispatch: 2.9e5},
	}}
	if got := lateness(r, 99); len(got) != 0 {
		t.Errorf("p99 TTFB judged on the total: %v", got)
	}
	if got := lateness(r, 50); len(got) != 1 || !strings.Contains(got[0], "TTFB p50 from 0.100 ms to 0.200 ms") {
		t.Errorf("p50 TTFB: %v", got)
	}
}

// A wrapped line never parts a number from its unit where a no-break space
// joins them (with a plain space, this line breaks between 21.8 and MB).
func TestWrapKeepsNoBreakSpace(t *testing.T) {
	got := wrap("engine cost, builtin (full-p50-ttfb, full-p99-ttfb): 716\u00a0CPU-ms per 1000 requests, peak RSS 21.8\u00a0MB", 98, "  ", "    ")
	if !strings.Contains(got, "21.8\u00a0MB") || strings.Contains(got, "21.8\n") {
		t.Errorf("wrapped:\n%s", got)
	}
}

// The plan counts every cell: an engine in each topology a workload runs
// over (hit-path in three, miss-storm in plaintext only), less the cells a
// resumed suite skips; a cell found not applicable comes off it.
func TestEstimateRunCountsCells(t *testing.T) {
	specs, err := Specs("hit-path,miss-storm")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Quick()
	hit, storm := Estimate(specs[0], cfg), Estimate(specs[1], cfg)
	spec := RunSpec{Workloads: specs, Engines: []string{"builtin", "nginx"},
		Topologies: []string{"plaintext", "tls", "proxyv2"}}
	if got, want := EstimateRun(spec, cfg), 6*hit+2*storm; got != want {
		t.Errorf("2 engines × 3 topologies of hit-path, 2 of miss-storm: planned %v, want %v", got, want)
	}
	spec.Skip = func(engine, topo, workload string) bool { return engine == "nginx" && topo == "tls" }
	if got, want := EstimateRun(spec, cfg), 5*hit+2*storm; got != want {
		t.Errorf("nginx tls skipped: planned %v, want %v", got, want)
	}
	p := NewProgress(io.Discard, false)
	p.begin(EstimateRun(spec, cfg))
	p.unplan(hit - startEstimate)
	if want := 4*hit + 2*storm + startEstimate; p.planned != want {
		t.Errorf("after a cell not applicable: planned %v, want %v", p.planned, want)
	}
}

// The cost line of a PROXYv2 cell is the table's longest: the engine's CPU
// and memory, its interrupts and the terminator's cost. Folded, it stays
// within the table's width and breaks between clauses only (on ed63dc7 it
// broke inside "the TLS terminator in front of it"), for every engine's
// figures of a hit-path run and for the widest figures there are.
func TestTableCostLineWithinWidth(t *testing.T) {
	for _, c := range []struct {
		engine                     string
		cpu, rss, irq, net, tc, tm float64
	}{
		{"nginx", 40, 21.2, 1, 1, 63, 17},
		{"builtin", 59.5, 24.9, 5, 5, 56.5, 17},
		{"vinyl@trunk-27d2ce15b", 54, 105, 11, 11, 60, 17},
		{"vinyl@trunk-27d2ce15b", 1234, 1023, 100, 100, 1234, 1023},
	} {
		cost := &results.Cost{EngineCPUMsPer1000: results.F(c.cpu), EnginePeakRSSBytes: mib(c.rss),
			EngineIRQ: results.F(c.irq), EngineNetIRQ: results.F(c.net),
			TerminatorCPUMsPer1000: results.F(c.tc), TerminatorPeakRSSBytes: mib(c.tm)}
		var rs []*results.Result
		for _, test := range []string{"p50-ttfb", "p99-ttfb"} {
			r := &results.Result{ID: HitPath + "/" + test, Workload: HitPath, Test: test, Title: test, Engine: c.engine,
				Runtime: "process", Topology: "proxyv2", Unit: "ms", LowerIsBetter: true, Value: results.F(0.1),
				Passes: []results.Pass{{Index: 1, Valid: true, Value: results.F(0.1), StartedAt: time.Unix(1, 0), Evidence: &results.Evidence{Cost: cost}}}}
			r.Recount()
			rs = append(rs, r)
		}
		var b bytes.Buffer
		WriteTable(&b, specOf(HitPath), rs)
		out := b.String()
		t.Log("\n" + out)
		lines := strings.Split(out, "\n")
		for _, line := range lines {
			if n := len([]rune(line)); n > TableWidth {
				t.Errorf("%s: line of %d columns: %q", c.engine, n, line)
			}
		}
		for _, clause := range []string{
			"interrupts " + fmt.Sprint(c.irq) + "\u00a0% of its CPU (" + fmt.Sprint(c.net) + "\u00a0% network softirqs)",
			"the TLS terminator in front of it: " + results.Sig3(c.tc) + "\u00a0CPU-ms per 1000 requests, peak RSS " + results.Sig3(c.tm) + "\u00a0MB",
		} {
			if !slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, clause) }) {
				t.Errorf("%s: the clause %q is broken across lines:\n%s", c.engine, clause, out)
			}
		}
	}
}

// mib is a size of v MiB in bytes.
func mib(v float64) *int64 {
	n := int64(v * (1 << 20))
	return &n
}

// An invalid cell's value column says what made it invalid, by the
// results package's rule, and shows what it saw as no result: a
// saturated cell (its median pass saturated) is "saturated" even where
// the host spoiled every pass too, one whose passes the host spoiled is
// "spoiled" even where one was saturated, and a value from too few valid
// passes is "saw X", not a figure. On ed63dc7 the first two both read
// "saturated, saw X" and the last two their value as a valid cell's.
func TestTableInvalidCells(t *testing.T) {
	const (
		sat  = "saturated: carried 4996.0 of 5000 rps"
		late = "the generator's own lateness moved TTFB p99 from 0.804 ms to 1.224 ms (tolerance 0.061 ms)"
	)
	// pass is a measured pass at 5000 rps that saw v: valid, or invalid
	// by whom, and perhaps saturated.
	pass := func(i int, v float64, by string, saturated bool) results.Pass {
		p := results.Pass{Index: i, Value: results.F(v), Valid: by == "" && !saturated, OfferedRPS: 5000, AchievedRPS: 4999}
		switch by {
		case results.InvalidByInstrument:
			p.InvalidReasons = []string{late}
		case results.InvalidByEngine:
			p.InvalidReasons = []string{"3 of 5000 requests failed (status 3)"}
		}
		if saturated {
			p.Saturated = sat
			p.InvalidReasons = append(p.InvalidReasons, sat)
			if by == "" {
				by = results.InvalidBySaturation
			}
		}
		p.InvalidBy = by
		return p
	}
	ins, eng := results.InvalidByInstrument, results.InvalidByEngine
	cell := func(engine string, saw *float64, ps ...results.Pass) *results.Result {
		r := &results.Result{ID: HitPath + "/p99-ttfb", Workload: HitPath, Test: "p99-ttfb", Title: "p99 TTFB", Engine: engine,
			Runtime: "process", Topology: "proxyv2", Unit: "ms", LowerIsBetter: true, Passes: ps}
		r.Recount()
		r.Value, r.Spread = nil, results.SpreadOf(ps)
		if r.Spread != nil {
			r.Value = &r.Spread.Median
		}
		r.SaturatedValue = saw
		return r
	}
	for _, c := range []struct {
		r          *results.Result
		value      string // the value column
		valid      bool
		validCount string
	}{
		// Saturated in its median pass, and every pass spoiled by the host.
		{cell("varnish@9.0.2", results.F(0.115), pass(1, 0.1, ins, true), pass(2, 0.11, ins, true), pass(3, 0.12, ins, false)),
			"2 saturated, saw 0.115 ms", false, "0/3 (3)"},
		// Every pass spoiled by the host, one of them saturated too.
		{cell("vinyl@trunk-27d2ce15b", results.F(4.78), pass(1, 4, ins, true), pass(2, 4, ins, false), pass(3, 4, ins, false)),
			"3 spoiled", false, "0/3 (3)"},
		// One valid pass, one spoiled and one the engine's.
		{cell("varnish@9.0.2 (docker)", nil, pass(1, 0.061, "", false), pass(2, 0.07, ins, false), pass(3, 0.08, eng, false)),
			"1 invalid, saw 0.0610 ms", false, "1/3 (1)"},
		// One valid pass of three, the others spoiled.
		{cell("builtin", nil, pass(1, 1.56, "", false), pass(2, 2, ins, false), pass(3, 2, ins, false)),
			"2 spoiled, saw 1.56 ms", false, "1/3 (2)"},
		// Valid on two passes of three, the third spoiled: a figure.
		{cell("nginx", nil, pass(1, 0.996, "", false), pass(2, 1.36, "", false), pass(3, 2, ins, false)),
			"1.18 ms [0.996–1.36 ms]", true, "2/3 (1)"},
	} {
		if c.r.Valid != c.valid {
			t.Fatalf("%s: valid %v, want %v: the case is not what it says", c.r.Engine, c.r.Valid, c.valid)
		}
		var b bytes.Buffer
		WriteTable(&b, specOf(HitPath), []*results.Result{c.r})
		out := b.String()
		t.Log("\n" + out)
		var cols []string // engine, test, value, carried, valid
		for _, line := range strings.Split(out, "\n") {
			if n := len([]rune(line)); n > TableWidth {
				t.Errorf("line of %d columns: %q", n, line)
			}
			if strings.HasPrefix(line, "  "+EngineLabel(c.r)+"  ") {
				cols = regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(line), -1)
			}
		}
		if len(cols) != 5 || cols[2] != c.value || cols[4] != c.validCount {
			t.Errorf("%s: row %q, want the value %q and valid %q", c.r.Engine, cols, c.value, c.validCount)
		}
		if label, _, _ := strings.Cut(c.value, ","); !c.valid && !strings.Contains(out, "\n  k "+label[2:]) {
			t.Errorf("%s: the legend does not say what %q means:\n%s", c.r.Engine, label, out)
		}
	}
}
