package workloads

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/engines/cpuload"
	"github.com/hlsbench/hlsbench/results"
	"github.com/hlsbench/hlsbench/workloads/loadgen"
)

// Whose lateness it was. A late send is the generator's unless the host
// took the engine's CPU at the same moment: then an on-time client would
// have waited as long (the engine could not answer either), the corrected
// latency is what it would have seen, and the pass stands. The stall
// sampler (cpuload.StartStalls) says when each CPU was unavailable; the
// per-CPU split of /proc/stat says how much of it went to steal,
// interrupts and other processes.

// Host thresholds: past one of them on a measured CPU, the host is named in
// an invalid pass's reasons and the pass is repeated (Config.HostRepeats).
const (
	// HostStealShare and HostOtherShare: the hypervisor's or other
	// processes' share of a CPU over the pass.
	HostStealShare = 0.05
	HostOtherShare = 0.05
	// HostIRQShare is higher, and judges the interrupts that are not the
	// cell's own network softirqs (see hostIRQ): the split by counts gives
	// a timer's short softirq as much time as a batch of packets, so the
	// rest it leaves is an overestimate.
	HostIRQShare = 0.20
	// HostStallShare: the stalls' total share of the pass on one CPU.
	HostStallShare = 0.01
	// HostLateShare: the share of late sends the host's stalls account
	// for, in a pass whose lateness they do not excuse.
	HostLateShare = 0.5
)

// NetIRQPerGiB is the CPU seconds of network softirqs that moving one GiB
// over loopback may cost before the excess is the host's: measured here at
// 0.13 s (2 GiB between two sockets pinned to one CPU, both ends' softirqs
// on it) and 0.18 s of all interrupts in a segment pass at 2 GiB/s; the
// ceiling is about three times that, for slower machines.
const NetIRQPerGiB = 0.5

// lateSend is how late a send must be to count as late: loadgen's floor of
// tolerance, below which lateness moves no figure.
const lateSend = loadgen.LagToleranceFloor

// sendRec is one answered request, compact: intended send time (Unix ns),
// lateness and TTFB (ns, counted from the intended time).
type sendRec struct {
	at, lag, ttfb int64
}

// sendLog keeps a pass's answered requests per event loop, each written by
// its own loop's thread alone (OnRecord's contract), read between passes.
type sendLog struct {
	shards [][]sendRec
}

func (l *sendLog) onRecord(shard int, rec *loadgen.Record, _ loadgen.BodyCheck) {
	if l == nil || shard >= len(l.shards) || rec.TTFB <= 0 {
		return
	}
	l.shards[shard] = append(l.shards[shard], sendRec{at: rec.Intended.UnixNano(), lag: int64(rec.Lag), ttfb: int64(rec.TTFB)})
}

func (l *sendLog) reset() {
	for i := range l.shards {
		l.shards[i] = l.shards[i][:0]
	}
}

func (l *sendLog) all() []sendRec {
	var out []sendRec
	for _, s := range l.shards {
		out = append(out, s...)
	}
	return out
}

// inStall says whether a send intended at at (Unix ns) fell in one of the
// stalls, or before one by no more than its length (a send due just before
// the CPU went away waited for it as well).
func inStall(at int64, stalls []cpuload.Stall) bool {
	for _, s := range stalls {
		start, end := s.At.UnixNano(), s.End().UnixNano()
		if at >= start-int64(s.Duration) && at <= end {
			return true
		}
	}
	return false
}

// attribution is how a pass's lateness splits between the generator and
// the host at one quantile of TTFB.
type attribution struct {
	late, hostLate int64
	// corrected is the quantile from the intended send times; generator
	// is it with only the generator's own lateness taken out (counted from
	// the dispatch instant for sends outside the engine's CPU's stalls,
	// from the intended time inside them).
	corrected, generator time.Duration
	// genCPULate counts the generator's late sends (outside the engine's
	// stalls) that fell in a stall of another watched CPU (the
	// generator's); waitArrivals is the answers that arrived while the
	// generator's late sends waited, per send, and waitExpected what the
	// pass's mean rate of answers would have brought in the same time: far
	// more than expected says the loop was busy reading a burst.
	genCPULate                 int64
	waitArrivals, waitExpected float64
}

// attribute splits the lateness of recs at quantile q between the host
// (sends in stalls of the engine's CPUs) and the generator.
func attribute(recs []sendRec, stalls []cpuload.Stall, q float64) attribution {
	return attributeAll(recs, stalls, nil, q)
}

// attributeAll is attribute, also counting the generator's late sends in
// other stalls and the answers that arrived while they waited.
func attributeAll(recs []sendRec, stalls, other []cpuload.Stall, q float64) attribution {
	var a attribution
	corr, gen := loadgen.NewHistogram(), loadgen.NewHistogram()
	arrivals := make([]int64, 0, len(recs))
	var first, last int64
	for i, r := range recs {
		arrivals = append(arrivals, r.at+r.ttfb)
		if i == 0 || r.at < first {
			first = r.at
		}
		last = max(last, r.at)
	}
	slices.Sort(arrivals)
	var waited, genLate int64
	for _, r := range recs {
		_ = corr.RecordValue(r.ttfb)
		own := r.ttfb - r.lag
		if r.lag > int64(lateSend) {
			a.late++
			switch {
			case inStall(r.at, stalls):
				a.hostLate++
				own = r.ttfb
			default:
				genLate++
				waited += r.lag
				if inStall(r.at, other) {
					a.genCPULate++
				}
				lo, _ := slices.BinarySearch(arrivals, r.at)
				hi, _ := slices.BinarySearch(arrivals, r.at+r.lag)
				a.waitArrivals += float64(hi - lo)
			}
		}
		_ = gen.RecordValue(max(own, 0))
	}
	if genLate > 0 {
		a.waitArrivals /= float64(genLate)
		if last > first {
			a.waitExpected = float64(len(recs)) / float64(last-first) * float64(waited) / float64(genLate)
		}
	}
	if corr.TotalCount() > 0 {
		a.corrected, a.generator = time.Duration(corr.ValueAtQuantile(q)), time.Duration(gen.ValueAtQuantile(q))
	}
	return a
}

// excused says whether the generator's own lateness, the host's taken out,
// stays within loadgen's tolerance at the quantile.
func (a attribution) excused() bool {
	e := loadgen.LagEffect{Corrected: a.corrected, FromDispatch: a.generator}
	return a.hostLate > 0 && e.Corrected-e.FromDispatch <= e.Tolerance()
}

// hostWatch watches the host during one pass: the stall sampler on the
// measured CPUs, the generator's sends.
type hostWatch struct {
	tgt     *Target
	log     *sendLog
	sampler *cpuload.Sampler
	stalls  cpuload.Stalls
	started time.Time
	wall    time.Duration
}

// watchCPUs are the CPUs a pass is watched on: the measured ones, or the
// whole machine when nothing is pinned.
func watchCPUs(tgt *Target) []int {
	if len(tgt.CPUs) > 0 {
		return tgt.CPUs
	}
	return startCPUs
}

// engineCPUs are the CPUs whose stalls excuse lateness: the engine's
// (shared with the terminator and the origin), or every CPU unpinned.
func engineCPUs(tgt *Target) []int {
	if len(tgt.ServerCPUs) > 0 {
		return tgt.ServerCPUs
	}
	return watchCPUs(tgt)
}

// cellProcesses are the processes of the cell's engine, terminator and
// origin (Target.Groups), whose runnable threads make a stall the cell's
// own. Not hlsbench's: the generator is the instrument, pinned apart and
// always busy on its CPU; nor other cells': a suite's are frozen, and their
// threads (a varnishd's pools are hundreds) would only make each look,
// which the sampler takes at real-time priority on the engine's CPU, longer.
func cellProcesses(tgt *Target) []int {
	pgids := make([]int, 0, len(tgt.Groups))
	for _, g := range tgt.Groups {
		pgids = append(pgids, g.PGID)
	}
	return cpuload.GroupProcesses(pgids)
}

func startWatch(tgt *Target, log *sendLog) *hostWatch {
	w := &hostWatch{tgt: tgt, log: log, started: time.Now()}
	if log != nil {
		log.reset()
	}
	if tgt.Ours != nil {
		w.sampler = cpuload.StartCellStalls(watchCPUs(tgt), cpuload.DefaultStallPeriod, cpuload.DefaultStallThreshold, true,
			cellProcesses(tgt))
	}
	return w
}

func (w *hostWatch) stop() {
	if w.sampler != nil {
		w.stalls = w.sampler.Stop()
		w.wall = time.Since(w.started)
	}
}

// sampledBy records on p what the watch's stall sampler cost: its CPU
// time, in hlsbench's process or apart, and by CPU.
func (p *passInfo) sampledBy(w *hostWatch) {
	p.samplerCPU, p.samplerWall = w.stalls.CPUSeconds, w.wall
	p.samplerApart, p.samplerOn = w.stalls.Apart, w.stalls.OnCPU
}

// splitStalls are the stalls on the engine's CPUs and the others.
func (w *hostWatch) splitStalls() (engine, other []cpuload.Stall) {
	engine = w.engineStalls()
	for _, s := range w.stalls.Stalls {
		if !slices.Contains(engine, s) {
			other = append(other, s)
		}
	}
	return engine, other
}

// engineStalls are the stalls on the engine's CPUs.
func (w *hostWatch) engineStalls() []cpuload.Stall {
	cpus := engineCPUs(w.tgt)
	var out []cpuload.Stall
	for _, s := range w.stalls.Stalls {
		if slices.Contains(cpus, s.CPU) {
			out = append(out, s)
		}
	}
	return out
}

// stallEvidence is the pass's record of the stalls, or nil when none were
// sampled.
func stallEvidence(st cpuload.Stalls, started time.Time) *results.Stalls {
	if st.Policy == "" || len(st.CPUs) == 0 {
		return nil
	}
	e := &results.Stalls{CPUs: engines.CPUList(st.CPUs), Policy: st.Policy, PeriodMs: ms(st.Period),
		ThresholdMs: ms(st.Threshold), Count: len(st.Stalls), CPUSeconds: round3(st.CPUSeconds)}
	var total, cell, busy time.Duration
	var host []cpuload.Stall
	for _, s := range st.Stalls {
		total += s.Duration
		e.LongestMs = max(e.LongestMs, ms(s.Duration))
		switch {
		case s.ByHost():
			host = append(host, s)
		case s.Cell:
			e.CellCount++
		default:
			e.BusyCount++
		}
		if own := s.Duration - s.Host(); s.Cell {
			cell += own
		} else {
			busy += own
		}
	}
	e.TotalMs, e.CellMs, e.BusyMs, e.Unchecked, e.Unread = ms(total), ms(cell), ms(busy), st.Unchecked, st.Unread
	e.Worst = worstStalls(st.Stalls, started, 3)
	if len(host) < len(st.Stalls) {
		e.HostWorst = worstStalls(host, started, 3)
	}
	return e
}

func ms(d time.Duration) float64 { return round3(float64(d) / 1e6) }

// worstStalls merges stalls that overlap in time (on any CPUs) into one
// and keeps the n longest, longest first.
func worstStalls(stalls []cpuload.Stall, started time.Time, n int) []results.StallAt {
	type event struct {
		at, end time.Time
		cpus    []int
	}
	sorted := slices.Clone(stalls)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].At.Before(sorted[j].At) })
	var evs []event
	for _, s := range sorted {
		if k := len(evs) - 1; k >= 0 && !s.At.After(evs[k].end) {
			if s.End().After(evs[k].end) {
				evs[k].end = s.End()
			}
			if !slices.Contains(evs[k].cpus, s.CPU) {
				evs[k].cpus = append(evs[k].cpus, s.CPU)
			}
			continue
		}
		evs = append(evs, event{at: s.At, end: s.End(), cpus: []int{s.CPU}})
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].end.Sub(evs[i].at) > evs[j].end.Sub(evs[j].at) })
	var out []results.StallAt
	for _, e := range evs[:min(n, len(evs))] {
		slices.Sort(e.cpus)
		out = append(out, results.StallAt{CPUs: engines.CPUList(e.cpus), AtS: round3(e.at.Sub(started).Seconds()),
			Ms: ms(e.end.Sub(e.at))})
	}
	return out
}

// stallText names the worst stalls: "CPU 0 and 1 stalled 3.1 ms at 2.41 s".
func stallText(e *results.Stalls) string {
	if e == nil || len(e.Worst) == 0 {
		return ""
	}
	s := worstText(e.Worst)
	if e.Count > len(e.Worst) {
		s += fmt.Sprintf(" (%d stalls of over %.1f ms, %.1f ms in all)", e.Count, e.ThresholdMs, e.TotalMs)
	}
	return s
}

// worstText names stalls as stallText does, without the count.
func worstText(worst []results.StallAt) string {
	var parts []string
	for _, w := range worst {
		parts = append(parts, fmt.Sprintf("%s stalled %.1f ms at %.2f s", cpuNames(w.CPUs), w.Ms, w.AtS))
	}
	return strings.Join(parts, ", ")
}

// cpuNames is "CPU 0" or "CPU 0 and 1" from a CPU list "0" or "0,1".
func cpuNames(list string) string {
	return "CPU " + joinAnd(strings.Split(list, ","))
}

// cpuShares is the per-CPU split for the pass record, in percent.
func cpuShares(d []cpuload.CPUTime) []results.CPUShare {
	var out []results.CPUShare
	for _, t := range d {
		pct := func(v float64) float64 { return round1(100 * t.Share(v)) }
		c := results.CPUShare{CPU: t.CPU, Steal: pct(t.Steal), IRQ: pct(t.Interrupts), Ours: pct(t.Ours), Other: pct(t.Other), Unseen: pct(t.Unseen),
			NetIRQ: pct(t.NetInterrupts)}
		for _, p := range t.Busiest {
			if s := pct(p.Seconds); s >= 0.1 {
				c.Busiest = append(c.Busiest, fmt.Sprintf("%s %.1f %%", p.Name, s))
			}
		}
		out = append(out, c)
	}
	return out
}

func round1(v float64) float64 { return float64(int64(v*10+0.5)) / 10 }

// otherNames names what took a CPU's other share, so that a reader tells
// a compiler from dockerd from a helper of the engine's own: the busiest
// processes this host lists, and the part no process it lists took (on a
// machine shared through PID namespaces, most of it), which named
// processes of 0.1 % would otherwise pass for.
func otherNames(c results.CPUShare) string {
	var names []string
	if len(c.Busiest) > 0 {
		names = append(names, strings.Join(c.Busiest, ", "))
	}
	if c.Unseen >= 0.5*c.Other && c.Unseen > 0 {
		names = append(names, fmt.Sprintf("%.0f %% in no process this host lists: another PID namespace's (a container or sandbox beside this one) or processes that ended during the pass", c.Unseen))
	}
	if len(names) == 0 {
		return ""
	}
	return " (" + strings.Join(names, "; ") + ")"
}

// hostSpoil says what of the host spoiled the pass, "" when nothing passed
// its threshold: each CPU's steal, interrupts and other processes past
// theirs ("CPU 1: steal 12 %, interrupts 9 %, other processes 14 % (cc1
// 9.0 %, dockerd 3.1 %, containerd 1.2 %)", the busiest other processes on
// that CPU named when they passed theirs), its stalls
// past HostStallShare of the pass, and late sends the host accounts for.
func hostSpoil(ev *results.Evidence, window time.Duration) string {
	if ev == nil {
		return ""
	}
	var parts []string
	if oc := ev.OtherCPU; oc != nil {
		for _, c := range oc.PerCPU {
			irq := hostIRQ(c, oc.NetIRQCeiling)
			if c.Steal >= 100*HostStealShare || c.Other >= 100*HostOtherShare || irq >= 100*HostIRQShare {
				part := fmt.Sprintf("CPU %d: steal %.0f %%, interrupts %.0f %%", c.CPU, c.Steal, c.IRQ)
				if c.NetIRQ > 0 {
					part += fmt.Sprintf(" (%.0f %% not the network's cost of the pass's own bytes)", irq)
				}
				part += fmt.Sprintf(", other processes %.0f %%", c.Other)
				if c.Other >= 100*HostOtherShare {
					part += otherNames(c)
				}
				parts = append(parts, part)
			}
		}
	}
	// A placed run's hosts are judged alike, from their probes' counters.
	parts = append(parts, placedSpoil(ev.Hosts)...)
	// A stall that ended with a thread of the cell runnable on its CPU
	// was the cell's own work keeping the sampler off (cpuload's
	// Stall.Cell), and the time their CPU was not idle was this
	// machine's own work (Stall.Busy): only the rest is the host's.
	if st := ev.Stalls; st != nil && window > 0 && hostStallMs(st) >= 1e3*HostStallShare*window.Seconds() {
		var part string
		if st.CellCount == 0 && st.BusyMs == 0 {
			part = fmt.Sprintf("%d stalls took %.1f ms of the %.1f s pass: %s", st.Count, st.TotalMs, window.Seconds(), stallText(st))
		} else {
			part = fmt.Sprintf("%d stalls the host took (their CPU sat idle past the sampler's deadline, or every CPU stopped at once) took %.1f ms of the %.1f s pass: %s (%s)",
				st.Count-st.CellCount-st.BusyCount, hostStallMs(st), window.Seconds(), worstText(st.HostWorst), ownStallText(st))
		}
		parts = append(parts, part)
	}
	if st := ev.Stalls; st != nil && st.LateSends > 0 && float64(st.HostLate) >= HostLateShare*float64(st.LateSends) {
		parts = append(parts, fmt.Sprintf("%d of %d late sends fell in stalls of the engine's CPU", st.HostLate, st.LateSends))
	}
	return strings.Join(parts, "; ")
}

// hostStallMs is the host's part of a pass's stalls: those of the
// cell's and the time their CPU was busy (not idle) taken out.
func hostStallMs(st *results.Stalls) float64 {
	return max(st.TotalMs-st.CellMs-st.BusyMs, 0)
}

// ownStallText says what of the stalls was this machine's own work.
func ownStallText(st *results.Stalls) string {
	var own []string
	if st.CellCount > 0 {
		own = append(own, fmt.Sprintf("%d stalls, %.1f ms, ended with a thread of the cell runnable", st.CellCount, st.CellMs))
	}
	if st.BusyMs > 0 {
		own = append(own, fmt.Sprintf("%.1f ms more their CPU was busy with this machine's own work, not idle", st.BusyMs))
	}
	return strings.Join(own, "; ") + ": not the host's"
}

// hostIRQ is the percent of a CPU's interrupts the host is blamed for: all
// of them but its network softirqs, up to the ceiling the pass's bytes
// explain (OtherCPU.NetIRQCeiling). On loopback the softirqs that move a
// request's bytes run on the CPU of the task that sent them, the engine's:
// at 500 × 4 MiB a second a third of its CPU, which is the cost of serving,
// not interference. Timers, RCU, the block layer, hard interrupts, and
// network softirqs past the ceiling (a neighbour's traffic) stay the host's.
func hostIRQ(c results.CPUShare, ceiling float64) float64 {
	return max(c.IRQ-min(c.NetIRQ, ceiling), 0)
}

// netIRQCeiling is the percent of a CPU that moving bytes in a pass of
// window may take in network softirqs (NetIRQPerGiB a GiB).
func netIRQCeiling(bytes int64, window time.Duration) float64 {
	if bytes <= 0 || window <= 0 {
		return 0
	}
	return round1(100 * NetIRQPerGiB * float64(bytes) / (1 << 30) / window.Seconds())
}

// judgeLateness is lateness for a TTFB test at quantile q, with the host's
// share taken out: when the generator's own lateness moved the quantile
// past its tolerance but the sends late in stalls of the engine's CPUs
// account for it, the pass is not rejected and the excuse is recorded in
// the pass's stall evidence; otherwise the reason stands, naming the
// stalls' part when there was one.
func judgeLateness(r *loadgen.Result, q float64, recs []sendRec, w *hostWatch, ev *results.Evidence) []string {
	why := lateness(r, q)
	if len(why) == 0 || w == nil || ev == nil || ev.Stalls == nil {
		return why
	}
	engine, other := w.splitStalls()
	a := attributeAll(recs, engine, other, q)
	st := ev.Stalls
	st.LateSends, st.HostLate, st.LateSendMs = a.late, a.hostLate, ms(lateSend)
	st.GeneratorCPULate, st.WaitArrivals, st.WaitExpected = a.genCPULate, round1(a.waitArrivals), round1(a.waitExpected)
	if a.excused() {
		st.Excused = append(st.Excused, fmt.Sprintf("the lateness that moved TTFB p%g to %.3f ms was the host's: %d of %d late sends fell in stalls of the engine's CPU (%s); without them the generator's own lateness moves it %.3f ms, within its tolerance",
			q, float64(a.corrected)/1e6, a.hostLate, a.late, stallText(st), float64(a.corrected-a.generator)/1e6))
		return nil
	}
	if a.hostLate > 0 {
		why = append(why[:len(why):len(why)], fmt.Sprintf("%d of %d late sends fell in stalls of the engine's CPU (%s), too few to account for it", a.hostLate, a.late, stallText(st)))
	}
	return why
}

// lateClass is one class of a pass's requests that a figure is made of
// (purge-stampede's reference, refill and recovery windows, repeated-bans'
// quarters): its TTFB from the intended send time and from the dispatch,
// and the sends themselves, so that its lateness is judged as a whole
// pass's is, the host's share taken out.
type lateClass struct {
	corr, disp *hdr.Histogram
	recs       []sendRec
}

func newLateClass() *lateClass {
	return &lateClass{corr: loadgen.NewHistogram(), disp: loadgen.NewHistogram()}
}

// add records one request sent at at (Unix ns): v its TTFB from the
// intended send time, d from the dispatch (a timeout counts at the
// timeout in both, less the lateness the caller takes out of d).
func (c *lateClass) add(at, v, d int64) {
	_ = c.corr.RecordValue(v)
	_ = c.disp.RecordValue(d)
	c.recs = append(c.recs, sendRec{at: at, lag: v - d, ttfb: v})
}

// merge adds o's requests to c.
func (c *lateClass) merge(o *lateClass) {
	c.corr.Merge(o.corr)
	c.disp.Merge(o.disp)
	c.recs = append(c.recs, o.recs...)
}

// judge is classLateness for the class at quantile q with the host's
// share taken out, as judgeLateness does for a whole pass: lateness the
// sends in stalls of the engine's CPUs account for is recorded in the
// pass's stall evidence and rejects nothing.
func (c *lateClass) judge(name string, q float64, w *hostWatch, ev *results.Evidence) []string {
	if c == nil {
		return nil
	}
	why := classLateness(name, c.corr, c.disp, q)
	if len(why) == 0 || w == nil || ev == nil || ev.Stalls == nil {
		return why
	}
	engine, other := w.splitStalls()
	a := attributeAll(c.recs, engine, other, q)
	st := ev.Stalls
	if a.excused() {
		st.Excused = append(st.Excused, fmt.Sprintf("the lateness that moved the %s p%g to %.3f ms was the host's: %d of %d late sends fell in stalls of the engine's CPU (%s); without them the generator's own lateness moves it %.3f ms, within its tolerance",
			name, q, float64(a.corrected)/1e6, a.hostLate, a.late, stallText(st), float64(a.corrected-a.generator)/1e6))
		return nil
	}
	if a.hostLate > 0 {
		why = append(why[:len(why):len(why)], fmt.Sprintf("%d of %d late sends fell in stalls of the engine's CPU (%s), too few to account for it", a.hostLate, a.late, stallText(st)))
	}
	if own := a.late - a.hostLate; own > 0 {
		// Whether the loop was busy reading a burst of answers: far more
		// arrivals than the window's mean rate brings says so.
		why = append(why[:len(why):len(why)], fmt.Sprintf("while the generator's %d late sends of the window waited, %.1f answers arrived per send (%.1f at its mean rate)%s",
			own, a.waitArrivals, a.waitExpected, onGeneratorCPU(a.genCPULate, own)))
	}
	return why
}

// onGeneratorCPU names the late sends that fell in stalls of the
// generator's CPU, "" when none did.
func onGeneratorCPU(n, of int64) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("; %d of them fell in stalls of the generator's CPU", n)
}
