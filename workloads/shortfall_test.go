package workloads

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/engines/cpuload"
	"github.com/hlsbench/hlsbench/results"
	"github.com/hlsbench/hlsbench/workloads/loadgen"
)

// waited is a 10 s rate pass of n requests that carried its rate, each
// answered in 1 ms (TTFB) and 2 ms (total) once written, of which one
// request per entry of at waited wait for a free connection, dispatched
// at at[i] after t0. Its histograms are the generator's: from the
// dispatch instant with the waits in, from the write without them.
func waited(n int64, wait time.Duration, at ...time.Duration) *loadgen.Result {
	lr := rated(float64(n)/10, float64(n)/10, n, 50)
	lr.Duration = 10 * time.Second
	lr.TTFBUncorrected, lr.TTFBFromDispatch = loadgen.NewHistogram(), loadgen.NewHistogram()
	lr.TotalUncorrected, lr.TotalFromDispatch = loadgen.NewHistogram(), loadgen.NewHistogram()
	lr.ConnectionWait, lr.QueuedAt = loadgen.NewHistogram(), loadgen.NewHistogram()
	for i := range n {
		var w time.Duration
		if i < int64(len(at)) {
			w = wait
			loadgen.Clamp(lr.QueuedAt, at[i].Microseconds())
			loadgen.Clamp(lr.ConnectionWait, int64(w))
		}
		loadgen.Clamp(lr.TTFBUncorrected, int64(time.Millisecond))
		loadgen.Clamp(lr.TotalUncorrected, int64(2*time.Millisecond))
		loadgen.Clamp(lr.TTFBFromDispatch, int64(time.Millisecond+w))
		loadgen.Clamp(lr.TotalFromDispatch, int64(2*time.Millisecond+w))
	}
	lr.Queued = int64(len(at))
	// The generator's own flag: more than 0.1 % of the requests waited.
	lr.PoolLimited = float64(lr.Queued) > loadgen.PoolLimitedShare*float64(n)
	return lr
}

// times is n instants from from, step apart.
func times(n int, from, step time.Duration) []time.Duration {
	var at []time.Duration
	for i := range n {
		at = append(at, from+time.Duration(i)*step)
	}
	return at
}

// A pass is saturated when its shortfall matters: it carried under 97 %
// of its rate, its waits for a connection moved a published quantile past
// the lateness tolerance, or they grew through the pass. A few waits that
// moved nothing (one blip of the host) keep it valid, counted in its
// evidence. On 9e8fb7e any wait at all saturated a pass.
func TestShortfallMatters(t *testing.T) {
	blip := waited(10000, 400*time.Microsecond, times(18, 3200*time.Millisecond, 50*time.Microsecond)...)
	moved := waited(10000, 2*time.Millisecond, times(200, 0, 50*time.Millisecond)...)
	carried90 := rated(1000, 900, 10000, 50)
	var grow []time.Duration
	for q, n := range []int{5, 10, 20, 40} {
		grow = append(grow, times(n, time.Duration(q)*2500*time.Millisecond+10*time.Millisecond, 2400*time.Millisecond/time.Duration(n))...)
	}
	growingQueue := waited(10000, 10*time.Microsecond, grow...)
	oneBlip := waited(10000, 10*time.Microsecond, times(75, 5*time.Second, time.Millisecond)...)
	// A stall in the last quarter: 0, 0, 0, 36 is not a queue that grows.
	lastBlip := waited(10000, 10*time.Microsecond, times(36, 9*time.Second, time.Millisecond)...)
	for _, c := range []struct {
		name      string
		lr        *loadgen.Result
		saturated []string // nil: not saturated
		waits     string
	}{
		{"18 waits that moved nothing", blip, nil,
			"18 of 10000 requests waited for a connection, up to 0.400 ms; TTFB p50 unchanged, p99 unchanged; total p50 unchanged, p99 unchanged"},
		{"waits that moved p99", moved, []string{"the waits for a free connection moved TTFB p99 from 1.000 ms to 3.000 ms (tolerance 0.150 ms), total p99 from 2.001 ms to 4.002 ms (tolerance 0.200 ms)"},
			"200 of 10000 requests waited for a connection, up to 2.001 ms; TTFB p50 unchanged, p99 +2.000 ms; total p50 unchanged, p99 +2.001 ms"},
		{"carried 90 %", carried90, []string{"carried 900.0 of 1000 rps, under 97%"}, ""},
		{"waits growing through the pass", growingQueue, []string{"grew through the pass (5, 10, 20, 40 in its quarters)"}, "75 of 10000 requests waited"},
		{"as many waits in one blip", oneBlip, nil, "75 of 10000 requests waited for a connection, up to 0.010 ms"},
		{"a blip in the last quarter", lastBlip, nil, "36 of 10000 requests waited for a connection, up to 0.010 ms"},
	} {
		sf := JudgeShortfall(c.lr)
		if sf.Saturated != (c.saturated != nil) || isSaturated(c.lr) != sf.Saturated {
			t.Errorf("%s: saturated %v (%q), want %v", c.name, sf.Saturated, sf.Reasons, c.saturated != nil)
		}
		for _, w := range c.saturated {
			if !strings.Contains(strings.Join(sf.Reasons, "; "), w) {
				t.Errorf("%s: reasons %q lack %q", c.name, sf.Reasons, w)
			}
		}
		if !strings.Contains(sf.Waits, c.waits) || (c.waits == "") != (sf.Waits == "") {
			t.Errorf("%s: waits %q, want %q", c.name, sf.Waits, c.waits)
		}
	}
	// Judged for its p50 alone, the pass whose waits moved its p99 is not
	// saturated: its waits are counted, what they moved said.
	if sf := judgeShortfallAt(moved, 50); sf.Saturated || !strings.Contains(sf.Waits, "TTFB p50 unchanged") {
		t.Errorf("moved, at p50: saturated %v (%q), waits %q: want not saturated", sf.Saturated, sf.Reasons, sf.Waits)
	}
	if sf := judgeShortfallAt(moved, 99); !sf.Saturated {
		t.Errorf("moved, at p99: not saturated")
	}
	tgt := &Target{Engine: results.Engine{Name: "nginx", Runtime: engines.RuntimeProcess}}
	if got := saturation(tgt, blip, &results.Evidence{}, 10*time.Second); got != "" {
		t.Errorf("the blip's pass is saturated: %q", got)
	}
	if got := saturation(tgt, moved, &results.Evidence{}, 10*time.Second); !strings.HasPrefix(got,
		"saturated: carried 1000.0 of 1000 rps; the waits for a free connection moved TTFB p99") {
		t.Errorf("the moved pass's reason: %q", got)
	}
}

// Waits for a connection that began in the host's stall of the engine's
// CPU, or as long after it, are the host's queue: a pass whose only
// shortfall is their move of the p99 is not saturated for it but invalid
// by the host. The same waits spread over the pass, outside any stall,
// saturate it. On 0392197 both were the engine's saturation.
func TestHostStallWaitsAreTheHosts(t *testing.T) {
	t0 := time.Unix(1000, 0)
	stall := cpuload.Stall{CPU: 0, At: t0.Add(3 * time.Second), Duration: 15 * time.Millisecond}
	tgt := &Target{Engine: results.Engine{Name: "varnish", Runtime: engines.RuntimeProcess}, ServerCPUs: []int{0}}
	judge := func(lr *loadgen.Result, stalls ...cpuload.Stall) *passInfo {
		lr.Start = t0
		w := &hostWatch{tgt: tgt, stalls: cpuload.Stalls{CPUs: []int{0}, Policy: "fifo", Stalls: stalls}, started: t0}
		p := &passInfo{index: 1, lr: lr, ev: &results.Evidence{}}
		p.judgeSaturation(tgt, 10*time.Second)
		p.ev.Stalls = stallEvidence(w.stalls, t0)
		p.excuseHostWaits(w)
		return p
	}
	inStall := judge(waited(10000, 2*time.Millisecond, times(200, 3*time.Second+time.Millisecond, 100*time.Microsecond)...), stall)
	if inStall.saturatedFor(99) != "" || inStall.saturated != "" {
		t.Errorf("waits in the host's stall: saturated %q, for p99 %q: want neither", inStall.saturated, inStall.saturatedFor(99))
	}
	if why := inStall.hostWaitsAt[99]; !strings.HasPrefix(why, "the host queued the requests: the waits for a free connection moved TTFB p99") ||
		!strings.Contains(why, "200 of 200 requests that waited for a connection began waiting in a stall the host took on the engine's CPU") {
		t.Errorf("waits in the host's stall: the host's reason %q", why)
	}
	// The cell's own stall (its thread runnable) excuses nothing.
	own := stall
	own.Cell = true
	if p := judge(waited(10000, 2*time.Millisecond, times(200, 3*time.Second+time.Millisecond, 100*time.Microsecond)...), own); p.saturatedFor(99) == "" || len(p.hostWaitsAt) != 0 {
		t.Errorf("waits in the cell's own stall: for p99 %q, host's %v: want saturated", p.saturatedFor(99), p.hostWaitsAt)
	}
	// Nor does a stall its CPU spent busy, the cell's bytes in the kernel
	// (cpuload's Stall.Busy), with no thread of the cell runnable after.
	busy := stall
	busy.Busy = stall.Duration
	if p := judge(waited(10000, 2*time.Millisecond, times(200, 3*time.Second+time.Millisecond, 100*time.Microsecond)...), busy); p.saturatedFor(99) == "" || len(p.hostWaitsAt) != 0 {
		t.Errorf("waits in a stall its CPU spent busy: for p99 %q, host's %v: want saturated", p.saturatedFor(99), p.hostWaitsAt)
	}
	// The whole machine stopped is the host's, busy or not.
	busy.Together = stall.Duration
	if p := judge(waited(10000, 2*time.Millisecond, times(200, 3*time.Second+time.Millisecond, 100*time.Microsecond)...), busy); p.saturatedFor(99) != "" {
		t.Errorf("waits in a stall of the whole machine: saturated for p99 %q", p.saturatedFor(99))
	}
	spread := judge(waited(10000, 2*time.Millisecond, times(200, 0, 50*time.Millisecond)...), stall)
	if spread.saturatedFor(99) == "" || len(spread.hostWaitsAt) != 0 {
		t.Errorf("waits spread over the pass: for p99 %q, host's %v: want saturated", spread.saturatedFor(99), spread.hostWaitsAt)
	}
	// A rate not carried stays saturated, stalls or none.
	short := rated(1000, 900, 10000, 50)
	short.Queued, short.QueuedAt = 1, loadgen.NewHistogram()
	loadgen.Clamp(short.QueuedAt, (3 * time.Second).Microseconds())
	if p := judge(short, stall); p.saturatedFor(50) == "" {
		t.Errorf("90 %% carried beside a stall: not saturated")
	}
}

// A pass the host stalled is spoiled for the tests it is invalid for: its
// p99, moved by waits spread over the pass, names the host beside its
// saturation; its p50, which nothing moved, stays valid. On 0392197 the
// host's reason went to every test of the pass, and a fresh clone's
// `make run` lost the built-in cache's 4 MiB p50 in 15 of 20 passes to
// stalls that spoiled only the p99's judgement.
func TestHostSpoilsTheTestsThePassIsInvalidFor(t *testing.T) {
	t0 := time.Unix(1000, 0)
	tgt := &Target{Engine: results.Engine{Name: "builtin", Runtime: engines.RuntimeProcess}, ServerCPUs: []int{0}}
	lr := waited(10000, 2*time.Millisecond, times(200, 0, 50*time.Millisecond)...)
	lr.Start, lr.Elapsed = t0, 10*time.Second
	var stalls []cpuload.Stall
	for i := range 20 {
		stalls = append(stalls, cpuload.Stall{CPU: 0, At: t0.Add(time.Duration(i)*500*time.Millisecond + 7*time.Millisecond), Duration: 10 * time.Millisecond})
	}
	w := &hostWatch{tgt: tgt, stalls: cpuload.Stalls{CPUs: []int{0}, Policy: "fifo", Stalls: stalls}, started: t0}
	p := &passInfo{index: 1, lr: lr, ev: &results.Evidence{}}
	p.judgeSaturation(tgt, 10*time.Second)
	p.ev.Stalls = stallEvidence(w.stalls, t0)
	p.excuseHostWaits(w)
	more, invalidFor, spoil, host := judgeTests(p, []float64{50, 99}, lr, nil, w)
	if !strings.Contains(host, "20 stalls took 200.0 ms of the 10.0 s pass") || len(spoil) != 1 {
		t.Fatalf("host %q, spoil %q: want the 20 stalls named", host, spoil)
	}
	if invalidFor[0] || len(more[0]) != 0 {
		t.Errorf("p50: invalid %v, reasons %q: want valid, no reason", invalidFor[0], more[0])
	}
	if !invalidFor[1] || !slices.Contains(more[1], spoil[0]) {
		t.Errorf("p99: invalid %v, reasons %q: want invalid, the host named", invalidFor[1], more[1])
	}
}
