package workloads

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hlsbench/hlsbench/engines/cpuload"
	"github.com/hlsbench/hlsbench/results"
	"github.com/hlsbench/hlsbench/workloads/loadgen"
)

var hostT0 = time.Unix(2000, 0)

// lateRecs is 1000 answers of 1 ms sent on time every ms from hostT0, and
// 20 more sent 3 ms late from at on (TTFB 4 ms from the intended time):
// late enough to move p99 from 1 ms to 4 ms.
func lateRecs(at time.Duration) []sendRec {
	var recs []sendRec
	for i := range 1000 {
		recs = append(recs, sendRec{at: hostT0.Add(time.Duration(i) * time.Millisecond).UnixNano(), ttfb: int64(time.Millisecond)})
	}
	for i := range 20 {
		recs = append(recs, sendRec{at: hostT0.Add(at + time.Duration(i)*50*time.Microsecond).UnixNano(),
			lag: int64(3 * time.Millisecond), ttfb: int64(4 * time.Millisecond)})
	}
	return recs
}

// stalledAt is a watch over CPUs 0 and 1 with one 3 ms stall of cpu at
// 500 ms, and the pass evidence it makes.
func stalledAt(tgt *Target, cpu int) (*hostWatch, *results.Evidence) {
	w := &hostWatch{tgt: tgt, started: hostT0, stalls: cpuload.Stalls{CPUs: []int{0, 1}, Policy: "fifo",
		Period: time.Millisecond, Threshold: 500 * time.Microsecond,
		Stalls: []cpuload.Stall{{CPU: cpu, At: hostT0.Add(500 * time.Millisecond), Duration: 3 * time.Millisecond}}}}
	return w, &results.Evidence{Stalls: stallEvidence(w.stalls, hostT0)}
}

func TestInStall(t *testing.T) {
	st := []cpuload.Stall{{CPU: 1, At: hostT0.Add(time.Second), Duration: 2 * time.Millisecond}}
	for _, c := range []struct {
		at   time.Duration
		want bool
	}{
		{time.Second + time.Millisecond, true},       // inside
		{time.Second - 2*time.Millisecond, true},     // due a stall's length before it
		{time.Second - 2100*time.Microsecond, false}, // earlier
		{time.Second + 2100*time.Microsecond, false}, // after it ended
	} {
		if got := inStall(hostT0.Add(c.at).UnixNano(), st); got != c.want {
			t.Errorf("send at %v: in stall %v, want %v", c.at, got, c.want)
		}
	}
}

// Late sends inside a stall of the engine's CPU are the host's: with them
// counted from their intended time, the generator moved nothing; the same
// sends outside any stall are the generator's.
func TestAttribute(t *testing.T) {
	stall := []cpuload.Stall{{CPU: 1, At: hostT0.Add(500 * time.Millisecond), Duration: 3 * time.Millisecond}}
	a := attribute(lateRecs(500*time.Millisecond), stall, 99)
	if a.late != 20 || a.hostLate != 20 || a.corrected != a.generator || !a.excused() {
		t.Errorf("in the stall: %+v, excused %v; want 20 of 20 late sends the host's, excused", a, a.excused())
	}
	a = attribute(lateRecs(800*time.Millisecond), stall, 99)
	if a.late != 20 || a.hostLate != 0 || a.excused() || a.corrected-a.generator < 2*time.Millisecond {
		t.Errorf("outside the stall: %+v, excused %v; want the generator's, not excused", a, a.excused())
	}
	// Answers came at their steady rate while those sends waited: no burst.
	if a = attributeAll(lateRecs(800*time.Millisecond), stall, nil, 99); a.waitArrivals < 2 || a.waitArrivals > 5 ||
		a.waitExpected < 2 || a.waitExpected > 5 {
		t.Errorf("steady answers: %.1f arrived per late send, %.1f expected; want about 3 and 3", a.waitArrivals, a.waitExpected)
	}
	// Half in the stall: the other half still moves p99.
	recs := lateRecs(500 * time.Millisecond)
	for i := len(recs) - 10; i < len(recs); i++ {
		recs[i].at += int64(300 * time.Millisecond)
	}
	a = attribute(recs, stall, 99)
	if a.hostLate != 10 || a.excused() {
		t.Errorf("half in the stall: %+v, excused %v; want 10 the host's, not excused", a, a.excused())
	}
}

func lateResult() *loadgen.Result {
	return &loadgen.Result{LagEffects: []loadgen.LagEffect{{Figure: "ttfb", Quantile: 99, Corrected: 4 * time.Millisecond,
		FromDispatch: time.Millisecond, Exceeded: true}}}
}

// judgeLateness drops the lateness reason only for stalls of the engine's
// CPUs, and records why; a stall on the generator's CPU alone excuses
// nothing.
func TestJudgeLateness(t *testing.T) {
	tgt := &Target{GeneratorCPUs: []int{0}, ServerCPUs: []int{1}, CPUs: []int{0, 1}}
	for _, c := range []struct {
		cpu     int
		excused bool
	}{{1, true}, {0, false}} {
		w, ev := stalledAt(tgt, c.cpu)
		why := judgeLateness(lateResult(), 99, lateRecs(500*time.Millisecond), w, ev)
		if c.excused {
			if len(why) != 0 || len(ev.Stalls.Excused) != 1 || ev.Stalls.HostLate != 20 ||
				!strings.Contains(ev.Stalls.Excused[0], "CPU 1 stalled 3.0 ms at 0.50 s") {
				t.Errorf("stall on the engine's CPU: reasons %q, evidence %+v", why, ev.Stalls)
			}
			continue
		}
		if len(why) != 1 || !strings.Contains(why[0], "the generator's own lateness moved TTFB p99") || len(ev.Stalls.Excused) != 0 {
			t.Errorf("stall on the generator's CPU: reasons %q, evidence %+v", why, ev.Stalls)
		}
	}
	// Without a sampler the reason stands.
	if why := judgeLateness(lateResult(), 99, lateRecs(0), nil, &results.Evidence{}); len(why) != 1 {
		t.Errorf("without stalls: %q", why)
	}
}

// A class of requests (purge-stampede's windows, repeated-bans' quarters)
// is judged as a pass is: lateness in stalls of the engine's CPUs is
// excused and recorded, the generator's stands.
func TestLateClassJudge(t *testing.T) {
	tgt := &Target{GeneratorCPUs: []int{0}, ServerCPUs: []int{1}, CPUs: []int{0, 1}}
	class := func() *lateClass {
		c := newLateClass()
		for _, r := range lateRecs(500 * time.Millisecond) {
			c.add(r.at, r.ttfb, r.ttfb-r.lag)
		}
		return c
	}
	for _, c := range []struct {
		cpu     int
		excused bool
	}{{1, true}, {0, false}} {
		w, ev := stalledAt(tgt, c.cpu)
		why := class().judge("refill TTFB", 99, w, ev)
		if c.excused {
			if len(why) != 0 || len(ev.Stalls.Excused) != 1 || !strings.Contains(ev.Stalls.Excused[0], "refill TTFB p99 to 4.002 ms was the host's") {
				t.Errorf("stall on the engine's CPU: reasons %q, excused %q", why, ev.Stalls.Excused)
			}
			continue
		}
		if len(why) != 2 || !strings.Contains(why[0], "moved the refill TTFB p99 from 1.000 ms to 4.002 ms") || len(ev.Stalls.Excused) != 0 ||
			!strings.Contains(why[1], "while the generator's 20 late sends of the window waited") ||
			!strings.Contains(why[1], "20 of them fell in stalls of the generator's CPU") {
			t.Errorf("stall on the generator's CPU: reasons %q, excused %q", why, ev.Stalls.Excused)
		}
	}
	// Without a sampler the reason stands; a class not recorded has none.
	if why := class().judge("refill TTFB", 99, nil, &results.Evidence{}); len(why) != 1 {
		t.Errorf("without stalls: %q", why)
	}
	var none *lateClass
	if why := none.judge("last quarter's TTFB", 99, nil, nil); why != nil {
		t.Errorf("no class: %q", why)
	}
	// Merged, two classes keep every send.
	m := newLateClass()
	m.merge(class())
	m.merge(class())
	if len(m.recs) != 2040 || m.corr.TotalCount() != 2040 || m.disp.TotalCount() != 2040 {
		t.Errorf("merged: %d sends, %d and %d recorded", len(m.recs), m.corr.TotalCount(), m.disp.TotalCount())
	}
}

// A window's quantile is uncertain by a few ranks: lateness that reorders
// only the largest values of a small window moves no p99 it can resolve
// and rejects nothing; lateness that moves it past the quantile's 95 %
// bound does, in a small window and in a large one.
func TestClassLatenessBound(t *testing.T) {
	us := int64(time.Microsecond)
	// window is n requests: the dispatch TTFB of each (tail values last),
	// late of them sent 2 ms late (taken from the 100 µs ones).
	window := func(bulk int64, tail []int64, late int) []string {
		corr, disp := loadgen.NewHistogram(), loadgen.NewHistogram()
		for i := range bulk {
			v := 100 * us
			_ = disp.RecordValue(v)
			if i < int64(late) {
				v += 2000 * us
			}
			_ = corr.RecordValue(v)
		}
		for _, v := range tail {
			_ = disp.RecordValue(v)
			_ = corr.RecordValue(v)
		}
		return classLateness("refill TTFB", corr, disp, 99)
	}
	small := []int64{300 * us, 500 * us, 900 * us} // 250 requests: p99 the 3rd largest, 300 µs
	if why := window(247, small, 2); len(why) != 0 {
		t.Errorf("2 late sends of 250 (p99 300 µs → 900 µs, the window's largest): %q, want none", why)
	}
	if why := window(247, small, 3); len(why) != 1 || !strings.Contains(why[0], "moved the refill TTFB p99 from 0.300 ms to 2.1") ||
		!strings.Contains(why[0], "past 0.900 ms, the highest p99 its 250 requests allow at 95 % confidence") {
		t.Errorf("3 late sends of 250: %q, want the reason with the bound", why)
	}
	var tail []int64
	for range 250 {
		tail = append(tail, 1000*us)
	}
	// 25,000 requests, the top 1 % at 1 ms: 300 late sends (1.2 %) move
	// the p99 from 100 µs past every dispatch value near it.
	if why := window(24750, tail, 300); len(why) != 1 || !strings.Contains(why[0], "from 0.100 ms to 2.1") {
		t.Errorf("300 late sends of 25,000: %q, want rejected", why)
	}
	if why := window(24750, tail, 0); len(why) != 0 {
		t.Errorf("no late sends: %q", why)
	}
}

// aboveAllowed against the binomial's quantiles: how many values may lie
// above the rank that bounds the quantile at 97.5 %.
func TestAboveAllowed(t *testing.T) {
	for _, c := range []struct {
		n      int64
		p      float64
		lo, hi int64
	}{
		{250, 0.01, 0, 0},       // P(none above) = 8 %: the largest bounds it
		{1000, 0.01, 3, 4},      // mean 10, sd 3.1
		{25000, 0.01, 217, 221}, // mean 250, sd 15.7: 250 - 1.96 sd = 219
		{1000, 0.5, 467, 470},   // mean 500, sd 15.8
		{10, 0.5, 1, 1},         // P(A ≤ 1) = 1.1 %, P(A ≤ 2) = 5.5 %
	} {
		if got := aboveAllowed(c.n, c.p); got < c.lo || got > c.hi {
			t.Errorf("aboveAllowed(%d, %g) = %d, want %d to %d", c.n, c.p, got, c.lo, c.hi)
		}
	}
}

// Stalls that overlap on two CPUs are one, named with both.
func TestStallText(t *testing.T) {
	st := cpuload.Stalls{CPUs: []int{0, 1}, Policy: "fifo", Period: time.Millisecond, Threshold: 500 * time.Microsecond,
		Stalls: []cpuload.Stall{
			{CPU: 0, At: hostT0.Add(2410 * time.Millisecond), Duration: 3 * time.Millisecond},
			{CPU: 1, At: hostT0.Add(2411 * time.Millisecond), Duration: 2100 * time.Microsecond},
			{CPU: 1, At: hostT0.Add(time.Second), Duration: 600 * time.Microsecond},
		}}
	e := stallEvidence(st, hostT0)
	if got, want := stallText(e), "CPU 0 and 1 stalled 3.1 ms at 2.41 s, CPU 1 stalled 0.6 ms at 1.00 s (3 stalls of over 0.5 ms, 5.7 ms in all)"; got != want {
		t.Errorf("stall text %q, want %q", got, want)
	}
	if e.Count != 3 || e.LongestMs != 3 || e.TotalMs != 5.7 {
		t.Errorf("evidence %+v", e)
	}
}

// The host is named only past a threshold.
func TestHostSpoil(t *testing.T) {
	quiet := &results.Evidence{OtherCPU: &results.OtherCPU{PerCPU: []results.CPUShare{{CPU: 0, Steal: 1, IRQ: 10, Ours: 60, Other: 2}}},
		Stalls: &results.Stalls{Count: 1, TotalMs: 1}}
	if s := hostSpoil(quiet, 2*time.Second); s != "" {
		t.Errorf("a quiet host spoiled the pass: %q", s)
	}
	busy := &results.Evidence{OtherCPU: &results.OtherCPU{PerCPU: []results.CPUShare{{CPU: 0, Ours: 60}, {CPU: 1, Steal: 12, IRQ: 9, Other: 4}}},
		Stalls: &results.Stalls{Count: 4, TotalMs: 25, LateSends: 10, HostLate: 6,
			Worst: []results.StallAt{{CPUs: "0,1", AtS: 2.41, Ms: 3.1}}}}
	s := hostSpoil(busy, 2*time.Second)
	for _, want := range []string{"CPU 1: steal 12 %, interrupts 9 %, other processes 4 %", "4 stalls took 25.0 ms of the 2.0 s pass",
		"CPU 0 and 1 stalled 3.1 ms at 2.41 s", "6 of 10 late sends fell in stalls"} {
		if !strings.Contains(s, want) {
			t.Errorf("host %q lacks %q", s, want)
		}
	}
	if strings.Contains(s, "CPU 0:") {
		t.Errorf("host %q names CPU 0, which only ran ours", s)
	}
}

// The table names what the host did that rejected nothing: lateness its
// stalls account for, and attempts it spoiled that were run again.
func TestTableNamesTheHost(t *testing.T) {
	r := &results.Result{ID: "hit-path/p99-ttfb", Workload: HitPath, Test: "p99-ttfb", Title: "p99 TTFB", Engine: "builtin",
		Unit: "ms", LowerIsBetter: true, Value: results.F(1.5), Passes: []results.Pass{
			{Index: 1, Valid: true, Value: results.F(1.5), Evidence: &results.Evidence{Stalls: &results.Stalls{
				Excused: []string{"the lateness that moved TTFB p99 to 1.674 ms was the host's: CPU 0 and 1 stalled 3.1 ms at 2.41 s"}}}},
			{Index: 2, Valid: true, Value: results.F(1.4), Spoiled: []results.SpoiledAttempt{
				{Host: "CPU 1: steal 12 %, interrupts 9 %, other processes 4 %", InvalidReasons: []string{"late"}}}},
		}}
	r.Recount()
	var b strings.Builder
	WriteTable(&b, specOf(HitPath), []*results.Result{r})
	out := strings.Join(strings.Fields(b.String()), " ")
	for _, want := range []string{"the host's part (its lateness rejects no pass", "CPU 0 and 1 stalled 3.1 ms at 2.41 s",
		"an attempt was run again: the host spoiled it: CPU 1: steal 12 %"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "why passes are invalid") {
		t.Errorf("a table of valid passes lists invalid reasons:\n%s", out)
	}
}

// When other processes spoil a pass, the reason names the three that took
// the most of that CPU, with their share of it, so that a compiler is told
// from dockerd; below the threshold no name is given. On 9e8fb7e the
// reason said "other processes 14 %" and nothing more.
func TestHostSpoilNamesOthers(t *testing.T) {
	per := []cpuload.CPUTime{
		{CPU: 0, Capacity: 2, Ours: 1.2, Other: 0.28, Idle: 0.52, Busiest: []cpuload.Proc{
			{PID: 20, Name: "cc1", Seconds: 0.18}, {PID: 21, Name: "dockerd", Seconds: 0.062}, {PID: 22, Name: "containerd", Seconds: 0.024}}},
		{CPU: 1, Capacity: 2, Ours: 1, Other: 0.04, Idle: 0.96, Busiest: []cpuload.Proc{{PID: 21, Name: "dockerd", Seconds: 0.04}}},
	}
	ev := &results.Evidence{OtherCPU: &results.OtherCPU{PerCPU: cpuShares(per)}}
	s := hostSpoil(ev, 2*time.Second)
	if want := "CPU 0: steal 0 %, interrupts 0 %, other processes 14 % (cc1 9.0 %, dockerd 3.1 %, containerd 1.2 %)"; s != want {
		t.Errorf("host %q, want %q", s, want)
	}
	if got := ev.OtherCPU.PerCPU[1].Busiest; len(got) != 1 || got[0] != "dockerd 2.0 %" {
		t.Errorf("CPU 1's busiest %q, want dockerd's 2.0 %% kept in the evidence", got)
	}
}

// When the processes this host lists took little of a CPU's other share,
// the rest is said to be in no process it lists (another PID namespace's,
// or ended), not left to named processes of 0.1 % to pass for the cause:
// measured here, "other processes 33 % (process_api 0.1 %, kdamond.0 0.1
// %)" on a sandbox whose neighbours /proc does not list.
func TestHostSpoilUnseenOthers(t *testing.T) {
	per := []cpuload.CPUTime{{CPU: 0, Capacity: 2, Ours: 0.6, Other: 0.66, Unseen: 0.654, Idle: 0.74, Busiest: []cpuload.Proc{
		{PID: 20, Name: "process_api", Seconds: 0.002}, {PID: 21, Name: "kdamond.0", Seconds: 0.002}}}}
	ev := &results.Evidence{OtherCPU: &results.OtherCPU{PerCPU: cpuShares(per)}}
	want := "CPU 0: steal 0 %, interrupts 0 %, other processes 33 % (process_api 0.1 %, kdamond.0 0.1 %; 33 % in no process this host lists: " +
		"another PID namespace's (a container or sandbox beside this one) or processes that ended during the pass)"
	if s := hostSpoil(ev, 2*time.Second); s != want {
		t.Errorf("host %q,\nwant %q", s, want)
	}
}

// The interrupts of a pass that moves 4 MiB 500 times a second are mostly
// the network softirqs of its own bytes, run on the engine's CPU: the cost
// of serving, not the host's (issue 50: "CPU 0: steal 0 %, interrupts 35
// %, other processes 0 %" spoiled 9 of 20 segment passes). Timers or the
// block layer past the threshold, or network softirqs past what the pass's
// bytes explain, are still the host's.
func TestHostSpoilOwnNetworkInterrupts(t *testing.T) {
	const window = 5 * time.Second
	moved := int64(500 * 4 << 20 * 5) // 9.8 GiB
	pass := func(irq, netIRQ float64, bytes int64) *results.Evidence {
		per := []cpuload.CPUTime{{CPU: 0, Capacity: 5, Interrupts: irq * 5, NetInterrupts: netIRQ * 5, Ours: 2.5, Idle: 5 - 2.5 - irq*5}}
		return &results.Evidence{OtherCPU: &results.OtherCPU{PerCPU: cpuShares(per), MovedBytes: bytes, NetIRQCeiling: netIRQCeiling(bytes, window)}}
	}
	if c := netIRQCeiling(moved, window); c != 97.7 {
		t.Errorf("ceiling of 9.8 GiB in 5 s %.1f %%, want 97.7 (0.5 s a GiB)", c)
	}
	if s := hostSpoil(pass(0.35, 0.33, moved), window); s != "" {
		t.Errorf("the pass's own network softirqs spoiled it: %q", s)
	}
	for _, tc := range []struct {
		name        string
		irq, netIRQ float64
		bytes       int64
		want        string
	}{
		{"timers and block", 0.58, 0.33, moved, "CPU 0: steal 0 %, interrupts 58 % (25 % not the network's cost of the pass's own bytes), other processes 0 %"},
		{"past the bytes' ceiling", 0.35, 0.33, moved / 10, "CPU 0: steal 0 %, interrupts 35 % (25 % not the network's cost of the pass's own bytes), other processes 0 %"},
		{"no bytes", 0.35, 0.33, 0, "CPU 0: steal 0 %, interrupts 35 % (35 % not the network's cost of the pass's own bytes), other processes 0 %"},
	} {
		if s := hostSpoil(pass(tc.irq, tc.netIRQ, tc.bytes), window); s != tc.want {
			t.Errorf("%s: host %q, want %q", tc.name, s, tc.want)
		}
	}
}

// Stalls that ended with a thread of the cell runnable on their CPU are the
// cell's own work keeping the sampler off, not the host's (issue 50: "171
// stalls took 114.5 ms of the 5.0 s pass"): only the others spoil a pass.
func TestHostSpoilCellStalls(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var stalls []cpuload.Stall
	for i := range 171 {
		stalls = append(stalls, cpuload.Stall{CPU: 0, At: t0.Add(time.Duration(i) * 20 * time.Millisecond), Duration: 670 * time.Microsecond, Cell: i >= 20})
	}
	stalls[0].Duration = 4 * time.Millisecond
	stalls[100].Duration = 9 * time.Millisecond
	st := cpuload.Stalls{CPUs: []int{0}, Period: time.Millisecond, Threshold: 500 * time.Microsecond, Policy: "fifo", Stalls: stalls}
	ev := &results.Evidence{Stalls: stallEvidence(st, t0)}
	if e := ev.Stalls; e.Count != 171 || e.CellCount != 151 || fmt.Sprintf("%.1f %.1f", e.CellMs, e.TotalMs) != "109.5 126.2" {
		t.Errorf("stalls %d (%.1f ms), the cell's %d (%.1f ms): want 171 (126.2), 151 (109.5)", e.Count, e.TotalMs, e.CellCount, e.CellMs)
	}
	if s := hostSpoil(ev, 5*time.Second); s != "" {
		t.Errorf("the cell's own stalls spoiled the pass: %q", s)
	}
	// The same stalls, none of them with the cell runnable: the host's.
	for i := range stalls {
		stalls[i].Cell = false
	}
	ev = &results.Evidence{Stalls: stallEvidence(st, t0)}
	if s, want := hostSpoil(ev, 5*time.Second), "171 stalls took 126.2 ms of the 5.0 s pass: CPU 0 stalled 9.0 ms at 2.00 s"; !strings.HasPrefix(s, want) {
		t.Errorf("host %q, want it to begin %q", s, want)
	}
	// Past the threshold with the cell's taken out, the reason counts the host's alone.
	for i := range stalls {
		stalls[i].Cell = i%2 == 1
	}
	ev = &results.Evidence{Stalls: stallEvidence(st, t0)}
	want := "86 stalls the host took (their CPU sat idle past the sampler's deadline, or every CPU stopped at once) took 69.3 ms of the 5.0 s pass: CPU 0 stalled 9.0 ms at 2.00 s, CPU 0 stalled 4.0 ms at 0.00 s, CPU 0 stalled 0.7 ms at 0.04 s (85 stalls, 57.0 ms, ended with a thread of the cell runnable: not the host's)"
	if s := hostSpoil(ev, 5*time.Second); s != want {
		t.Errorf("host %q,\nwant %q", s, want)
	}
	// The same stalls with their CPU busy, not idle (the cell's bytes in
	// the kernel, a write it slept in): this machine's own work.
	for i := range stalls {
		stalls[i].Busy = stalls[i].Duration
	}
	ev = &results.Evidence{Stalls: stallEvidence(st, t0)}
	if e := ev.Stalls; e.BusyCount != 86 || fmt.Sprintf("%.1f", e.BusyMs) != "69.3" {
		t.Errorf("busy stalls %d (%.1f ms): want 86 (69.3)", e.BusyCount, e.BusyMs)
	}
	if s := hostSpoil(ev, 5*time.Second); s != "" {
		t.Errorf("stalls of a busy CPU spoiled the pass: %q", s)
	}
	// Busy a quarter of the time: the idle rest is the host's.
	for i := range stalls {
		stalls[i].Busy = stalls[i].Duration / 4
	}
	ev = &results.Evidence{Stalls: stallEvidence(st, t0)}
	want = "86 stalls the host took (their CPU sat idle past the sampler's deadline, or every CPU stopped at once) took 52.0 ms of the 5.0 s pass: CPU 0 stalled 9.0 ms at 2.00 s, CPU 0 stalled 4.0 ms at 0.00 s, CPU 0 stalled 0.7 ms at 0.04 s (85 stalls, 57.0 ms, ended with a thread of the cell runnable; 17.3 ms more their CPU was busy with this machine's own work, not idle: not the host's)"
	if s := hostSpoil(ev, 5*time.Second); s != want {
		t.Errorf("host %q,\nwant %q", s, want)
	}
}

// The interrupts on the engine's CPU are part of the cost of serving: the
// pass's cost records them, the result keeps their median over the valid
// passes, and the table says them beside the engine's CPU.
func TestEngineIRQBesideCost(t *testing.T) {
	oc := &results.OtherCPU{PerCPU: []results.CPUShare{{CPU: 0, IRQ: 35, NetIRQ: 33}, {CPU: 1, IRQ: 4, NetIRQ: 1}}}
	if irq, net := engineIRQ(oc, []int{0}); irq == nil || net == nil || *irq != 35 || *net != 33 {
		t.Fatalf("engine's CPU 0: interrupts %v, network %v, want 35 and 33", irq, net)
	}
	if irq, net := engineIRQ(oc, []int{0, 1}); *irq != 19.5 || *net != 17 {
		t.Errorf("engine's CPUs 0 and 1: interrupts %v, network %v, want their means 19.5 and 17", *irq, *net)
	}
	if irq, _ := engineIRQ(oc, []int{2}); irq != nil {
		t.Errorf("an unmeasured CPU's interrupts %v, want none", *irq)
	}
	pass := func(i int, irq, net float64, valid bool) results.Pass {
		return results.Pass{Index: i, Valid: valid, Value: results.F(1), Evidence: &results.Evidence{Cost: &results.Cost{
			EngineCPUMsPer1000: results.F(716), EngineIRQ: results.F(irq), EngineNetIRQ: results.F(net)}}}
	}
	r := &results.Result{ID: "segment/full-p50-ttfb", Workload: Segment, Test: "full-p50-ttfb", Title: "p50", Engine: "builtin",
		Unit: "ms", LowerIsBetter: true, Value: results.F(1), Passes: []results.Pass{
			pass(1, 30, 28, true), pass(2, 35, 33, true), pass(3, 36, 34, true), pass(4, 90, 10, false)}}
	r.Recount()
	if r.EngineIRQ == nil || *r.EngineIRQ != 35 || *r.EngineNetIRQ != 33 {
		t.Fatalf("result's interrupts %v, network %v: want the valid passes' medians 35 and 33", r.EngineIRQ, r.EngineNetIRQ)
	}
	var b strings.Builder
	writeCost(&b, []*results.Result{r})
	out := strings.ReplaceAll(b.String(), "\n    ", " ")
	if want := "716\u00a0CPU-ms per 1000 requests, —, interrupts 35\u00a0% of its CPU (33\u00a0% network softirqs)"; !strings.Contains(out, want) {
		t.Errorf("cost %q lacks %q", out, want)
	}
}
