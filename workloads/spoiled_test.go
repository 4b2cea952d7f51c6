package workloads

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/results"
	"github.com/hlsbench/hlsbench/workloads/loadgen"
)

// A pass's class is recorded where its reasons are judged (issue 50): the
// generator's lateness, a host that spoiled the pass, a busy generator
// and the generator's own checks are the instrument's; failed requests
// are the engine's, and so is a pass with both. A latency cell of 7 valid
// passes and 3 the instrument spoiled is valid on the 7, its value theirs
// alone; with 4 valid of 10, or one pass of failed requests, it is not.
func TestLatencyCellJudgedOnItsPasses(t *testing.T) {
	rc := &Recorder{Run: results.NewRun("t", "", nil)}
	spec := specOf(HitPath)
	tgt := &Target{Engine: results.Engine{Name: "nginx", Runtime: engines.RuntimeProcess}}
	hist := func(ms float64) *hdr.Histogram {
		h := loadgen.NewHistogram()
		for range 100 {
			h.RecordValue(int64(ms * 1e6))
		}
		return h
	}
	late := "the generator's own lateness moved TTFB p99 from 0.127 ms to 0.179 ms, past its tolerance"
	clock := "the generator host's clock moved during the pass"
	type pass struct {
		late, host, busy, clock, failed bool
	}
	cell := func(name string, passes []pass) *results.Result {
		lt := rc.latency(&spec, tgt, name, name, 99)
		for i, ps := range passes {
			v := 0.127
			if ps.late {
				v = 0.179
			}
			lr := rated(500, 499.8, 1000, 20)
			lr.TTFB, lr.Total, lr.TTFBFromDispatch, lr.TotalFromDispatch = hist(v), hist(v), hist(v), hist(v)
			if ps.clock {
				lr.Invalidate(clock)
			}
			if ps.failed {
				lr.Errors, lr.OK, lr.ErrorsByKind = 3, 997, map[string]int64{"timeout": 3}
			}
			p := newPass(i, 0, lr, generatorReasons(lr))
			p.ev = &results.Evidence{}
			var more []string
			if ps.late {
				more = p.instrumental([]string{late})
			}
			if ps.host {
				more = append(more, p.instrumental([]string{"the host spoiled the pass: CPU 1: steal 0 %, interrupts 0 %, other processes 31 %"})...)
			}
			if ps.busy {
				p.busy = "every CPU was at least 90% busy during the pass"
			}
			lt.add(p, hist(v), more...)
		}
		return lt.r
	}
	valid, spoiled := pass{}, pass{late: true}
	repeat := func(n int, p pass) []pass {
		out := make([]pass, n)
		for i := range out {
			out[i] = p
		}
		return out
	}

	r := cell("7 valid, 3 late", append(repeat(7, valid), pass{late: true}, pass{late: true, host: true}, pass{busy: true, clock: true}))
	if !r.Valid || r.ValidPasses != 7 || r.SpoiledPasses != 3 || len(r.InvalidReasons) != 0 || r.Value == nil || *r.Value > 0.128 {
		t.Errorf("7 valid, 3 spoiled: valid %v, %d valid, %d spoiled, value %v, reasons %q; want valid on the 7, their value",
			r.Valid, r.ValidPasses, r.SpoiledPasses, val(r.Value), r.InvalidReasons)
	}
	for _, p := range r.Passes[7:] {
		if p.InvalidBy != results.InvalidByInstrument {
			t.Errorf("pass %d (%q): invalid by %q, want the instrument", p.Index, p.InvalidReasons, p.InvalidBy)
		}
	}

	r = cell("4 valid, 6 late", append(repeat(4, valid), repeat(6, spoiled)...))
	if r.Valid || r.SpoiledPasses != 6 || len(r.InvalidReasons) != 6 || !strings.HasPrefix(r.InvalidReasons[0], "pass 5: the generator's own lateness") {
		t.Errorf("4 valid, 6 spoiled: valid %v, %d spoiled, reasons %q; want invalid, every late pass a reason", r.Valid, r.SpoiledPasses, r.InvalidReasons)
	}

	r = cell("9 valid, 1 failed", append(repeat(9, valid), pass{failed: true}))
	if r.Valid || r.SpoiledPasses != 0 || len(r.InvalidReasons) != 1 || r.Passes[9].InvalidBy != results.InvalidByEngine {
		t.Errorf("9 valid, 1 failed: valid %v, %d spoiled, reasons %q, pass 10 by %q; want invalid by the engine",
			r.Valid, r.SpoiledPasses, r.InvalidReasons, r.Passes[9].InvalidBy)
	}

	r = cell("9 valid, 1 late and failed", append(repeat(9, valid), pass{late: true, failed: true}))
	if r.Valid || r.Passes[9].InvalidBy != results.InvalidByEngine || len(r.InvalidReasons) != 2 {
		t.Errorf("9 valid, 1 late and failed: valid %v, pass 10 by %q, reasons %q; want invalid by the engine, both reasons",
			r.Valid, r.Passes[9].InvalidBy, r.InvalidReasons)
	}
}

// A pass saturated and nothing else is the saturation's; saturated and
// late, the instrument's; late and missed, the engine's.
func TestInvalidByOfSaturation(t *testing.T) {
	p := &passInfo{index: 1, ev: &results.Evidence{}, saturated: "saturated: carried 400 of 500 rps"}
	if got := p.invalidBy([]string{p.saturated}); got != results.InvalidBySaturation {
		t.Errorf("saturated alone: %q, want saturation", got)
	}
	p.instrumental([]string{"late"})
	if got := p.invalidBy([]string{p.saturated, "late"}); got != results.InvalidByInstrument {
		t.Errorf("saturated and late: %q, want the instrument", got)
	}
	if got := p.invalidBy([]string{"late", "a miss where a hit was due"}); got != results.InvalidByEngine {
		t.Errorf("late and a miss: %q, want the engine", got)
	}
	if got := p.invalidBy(nil); got != "" {
		t.Errorf("no reason: %q, want none", got)
	}
}

// The table counts the passes the host or the instrument spoiled beside
// the valid ones, says what that means under it, and keeps its width.
func TestTableCountsSpoiledPasses(t *testing.T) {
	rc := &Recorder{Run: results.NewRun("t", "", nil)}
	spec := specOf(HitPath)
	tgt := &Target{Engine: results.Engine{Name: "nginx", Runtime: engines.RuntimeProcess}}
	h := loadgen.NewHistogram()
	for range 100 {
		h.RecordValue(127e3)
	}
	for _, d := range []struct {
		id string
		q  float64
	}{{"p50-ttfb", 50}, {"p99-ttfb", 99}} {
		lt := rc.latency(&spec, tgt, d.id, d.id, d.q)
		for i := range 10 {
			p := newPass(i, 0, rated(500, 499.8, 1000, 20), nil)
			p.ev = &results.Evidence{}
			var more []string
			if d.q == 99 && i >= 7 {
				more = p.instrumental([]string{"the generator's own lateness moved TTFB p99 from 0.127 ms to 0.179 ms"})
			}
			lt.add(p, h, more...)
		}
	}
	var b bytes.Buffer
	WriteTable(&b, spec, rc.Results())
	t.Log("\n" + b.String())
	for _, line := range strings.Split(b.String(), "\n") {
		if n := len([]rune(line)); n > TableWidth {
			t.Errorf("line of %d columns: %q", n, line)
		}
	}
	out := strings.Join(strings.Fields(b.String()), " ")
	for _, want := range []string{"10/10\n", "7/10 (3)", "(k): k passes the host or the instrument spoiled"} {
		if want == "10/10\n" {
			if !strings.Contains(b.String(), want) {
				t.Errorf("table lacks p50's %q", want)
			}
			continue
		}
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q", want)
		}
	}
}

// A crash is the engine's: the passes it ended are invalid by the engine
// whatever made them invalid before, and the cell is invalid although
// the passes the instrument spoiled were fewer than half.
func TestCrashedPassesAreTheEngines(t *testing.T) {
	rc := &Recorder{Run: results.NewRun("t", "", nil)}
	spec := specOf(HitPath)
	tgt := &Target{Engine: results.Engine{Name: "nginx", Runtime: engines.RuntimeProcess, Topology: "plaintext"}}
	lt := rc.latency(&spec, tgt, "p99-ttfb", "p99 TTFB", 99)
	h := loadgen.NewHistogram()
	h.RecordValue(127e3)
	for i := range 10 {
		p := newPass(i, 0, rated(500, 499.8, 1000, 20), nil)
		p.ev = &results.Evidence{}
		var more []string
		if i >= 8 {
			more = p.instrumental([]string{"the generator's own lateness moved TTFB p99"})
		}
		lt.add(p, h, more...)
	}
	if !lt.r.Valid || lt.r.SpoiledPasses != 2 {
		t.Fatalf("before the crash: valid %v, %d spoiled; want valid, 2 spoiled", lt.r.Valid, lt.r.SpoiledPasses)
	}
	c := &cell{name: lt.r.Engine, topology: lt.r.Topology}
	if err := rc.crashed(&spec, c, map[*results.Result]int{lt.r: 9}, errors.New("nginx: the kernel killed 1 of its processes")); err != nil {
		t.Fatal(err)
	}
	if p := lt.r.Passes[9]; lt.r.Valid || p.InvalidBy != results.InvalidByEngine || lt.r.SpoiledPasses != 1 {
		t.Errorf("after the crash: valid %v, pass 10 by %q, %d spoiled; want invalid, pass 10 the engine's, 1 spoiled", lt.r.Valid, p.InvalidBy, lt.r.SpoiledPasses)
	}
}
