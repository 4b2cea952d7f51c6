package workloads

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/hlsbench/hlsbench/results"
)

func fakeResult(engine, test string, value *float64, passes ...results.Pass) *results.Result {
	r := &results.Result{ID: HitPath + "/" + test, Workload: HitPath, Test: test, Title: test + " title",
		Engine: engine, Runtime: "process", Topology: "plaintext", Unit: "ms", LowerIsBetter: true,
		ErrorsByKind: map[string]int64{}}
	for i := range passes {
		p := &passInfo{index: passes[i].Index, reasons: passes[i].InvalidReasons}
		addPass(r, p, passes[i].Value, passes[i].NoValue)
	}
	r.Value = value
	setNoValue(r)
	return r
}

func TestTable(t *testing.T) {
	lag := "the generator's own lateness moved TTFB p99 from 0.210 ms to 1.104 ms (tolerance 0.050 ms)"
	var rs []*results.Result
	rs = append(rs,
		fakeResult("builtin", "p50-ttfb", results.F(0.1234),
			results.Pass{Index: 1, Value: results.F(0.12)}, results.Pass{Index: 2, Value: results.F(0.13)},
			results.Pass{Index: 3, Value: results.F(9), InvalidReasons: []string{lag}}),
		fakeResult("builtin", "p99-ttfb", results.F(1234.5),
			results.Pass{Index: 1, Value: results.F(900)}, results.Pass{Index: 2, Value: results.F(1500)},
			results.Pass{Index: 3, Value: results.F(9), InvalidReasons: []string{lag}}),
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
	if strings.Count(out, "lateness") != 1 {
		t.Errorf("the lag cause of pass 3 is printed %d times, want once", strings.Count(out, "lateness"))
	}
}

func TestSig3(t *testing.T) {
	for v, want := range map[float64]string{0.38249: "0.382", 0.465: "0.465", 0.0504: "0.0504", 2.3456: "2.35", 56.78: "56.8", 542.6: "543", 0: "0", 100: "100"} {
		if got := sig3(v); got != want {
			t.Errorf("sig3(%v) = %s, want %s", v, got, want)
		}
	}
}

func TestPlanCPUs(t *testing.T) {
	for n, want := range map[int][2]int{1: {0, 0}, 2: {1, 1}, 3: {1, 2}, 4: {1, 3}, 16: {4, 12}} {
		p := planCPUs(n)
		if len(p.Generator) != want[0] || len(p.Servers) != want[1] {
			t.Errorf("%d CPUs: generator %v servers %v", n, p.Generator, p.Servers)
		}
		seen := map[int]bool{}
		for _, c := range append(append([]int{}, p.Generator...), p.Servers...) {
			if seen[c] || c < 0 || c >= n {
				t.Errorf("%d CPUs: CPU %d given twice or out of range", n, c)
			}
			seen[c] = true
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
	if got := b.String(); !strings.HasPrefix(got, "\r\033[K[nginx] segment") || !strings.Contains(got, "\r\033[Khlsbench: saved\n") {
		t.Errorf("live output %q: want the line redrawn and cleared before a note", got)
	}
	var none *Progress
	none.step("nothing", time.Second) // a nil Progress prints nothing and does not panic
}
