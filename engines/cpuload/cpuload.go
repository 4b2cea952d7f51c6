// Package cpuload measures how much CPU time processes other than ours took
// on the CPUs a benchmark pass ran on. Two benchmarks on one machine pin to
// the same cores and each reports valid-looking figures several times its
// solo ones; a pass that knows another process took a third of its cores can
// say so.
//
//	ours := cpuload.Self(runstate.From(ctx).PGIDs())
//	s0 := cpuload.Take(cpus, ours)
//	… the pass …
//	d := cpuload.Between(s0, cpuload.Take(cpus, ours))
//	if d.OtherShare > 0.05 { warn(d.OtherSeconds, d.Busiest) }
//
// Busy time comes from /proc/stat per CPU; our share from /proc/PID/stat
// (utime+stime) of every process in our process groups and of every thread
// of our own PIDs. Whatever is busy on the CPUs and not ours is other.
package cpuload

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hlsbench/hlsbench/engines/internal/procfs"
)

// TicksPerSecond is USER_HZ, the unit of /proc/stat and /proc/PID/stat.
const TicksPerSecond = procfs.TicksPerSecond

// DefaultBusiest is how many other processes Between names, and
// BusiestPerCPU how many it names on each measured CPU.
const (
	DefaultBusiest = 5
	BusiestPerCPU  = 3
)

// Ours names our processes.
type Ours struct {
	// PIDs are processes counted thread by thread (hlsbench itself: its
	// threads may be pinned apart, the generator's on its own CPU).
	PIDs []int
	// PGIDs are process groups counted whole: the engines and the origin
	// hlsbench started, with every process they forked.
	PGIDs []int
}

// Self is this process and the process groups given (a run's PGIDs).
func Self(pgids []int) Ours {
	pids := []int{os.Getpid()}
	if pid := samplerPID(); pid != 0 {
		pids = append(pids, pid) // the stall sampler's process
	}
	return Ours{PIDs: pids, PGIDs: pgids}
}

// Sample is one reading. Take two with the same Ours and compare them with
// Between.
type Sample struct {
	At   time.Time
	CPUs []int // as asked; empty is every CPU
	Err  error // the reading failed; Between passes it on

	cpu   map[int]cpuTimes
	procs map[procKey]procTime
	// softirqs are /proc/softirqs' counts on each CPU, nil when it could
	// not be read (then no interrupt time is told to be the network's).
	softirqs map[int]softirqCounts
}

type procKey struct {
	pid    int // a TID for threads
	start  uint64
	thread bool
}

type procTime struct {
	pid    int // the process's, for threads too
	comm   string
	ticks  uint64  // utime+stime
	weight float64 // the share of its allowed CPUs that are measured ones
	set    unix.CPUSet
	hasSet bool // set was read; without it the task is spread over the measured CPUs
	ours   bool
}

// Take reads the CPUs' busy time and every process's CPU time now. Empty
// cpus measures every CPU.
func Take(cpus []int, ours Ours) Sample {
	s := Sample{At: time.Now(), CPUs: slices.Clone(cpus)}
	b, err := os.ReadFile(filepath.Join(procfs.Root, "stat"))
	if err != nil {
		s.Err = err
		return s
	}
	if s.cpu, err = parseCPUStat(b); err != nil {
		s.Err = err
		return s
	}
	if len(cpus) == 0 {
		for c := range s.cpu {
			s.CPUs = append(s.CPUs, c)
		}
		sort.Ints(s.CPUs)
	}
	for _, c := range s.CPUs {
		if _, ok := s.cpu[c]; !ok {
			s.Err = fmt.Errorf("cpu %d: not in /proc/stat", c)
			return s
		}
	}
	if b, err := os.ReadFile(filepath.Join(procfs.Root, "softirqs")); err == nil {
		s.softirqs, _ = parseSoftirqs(b)
	}
	all, err := procfs.All()
	if err != nil {
		s.Err = err
		return s
	}
	s.procs = make(map[procKey]procTime, len(all))
	for _, p := range all {
		if slices.Contains(ours.PIDs, p.PID) {
			continue // thread by thread below
		}
		pt := procTime{pid: p.PID, comm: p.Comm, ticks: p.UTime + p.STime, ours: slices.Contains(ours.PGIDs, p.PGID)}
		pt.affinity(p.PID, s.CPUs)
		s.procs[procKey{pid: p.PID, start: p.Start}] = pt
	}
	for _, pid := range ours.PIDs {
		threads, err := procfs.ReadTaskStats(pid)
		if err != nil {
			continue // gone
		}
		for _, t := range threads {
			pt := procTime{pid: pid, comm: t.Comm, ticks: t.UTime + t.STime, ours: true}
			pt.affinity(t.PID, s.CPUs)
			s.procs[procKey{pid: t.PID, start: t.Start, thread: true}] = pt
		}
	}
	return s
}

// weight is the share of a task's allowed CPUs that are measured: 1 when it
// is pinned inside them, 0 when pinned elsewhere. In between it is a guess
// (the kernel does not say where a task's time was spent), which assumes
// the task spread evenly.
func (p *procTime) affinity(tid int, cpus []int) {
	p.weight = 1
	if err := unix.SchedGetaffinity(tid, &p.set); err != nil {
		return
	}
	p.hasSet = true
	p.weight = affinityWeight(p.set, cpus)
}

// on is the share of the task's time counted on the measured CPU c, by the
// same guess as weight: its allowed CPUs alike, or the measured ones alike
// when its affinity could not be read.
func (p procTime) on(c int, measured int) float64 {
	if !p.hasSet {
		return 1 / float64(max(measured, 1))
	}
	if n := p.set.Count(); n > 0 && p.set.IsSet(c) {
		return 1 / float64(n)
	}
	return 0
}

func affinityWeight(set unix.CPUSet, cpus []int) float64 {
	n := set.Count()
	if n == 0 {
		return 1
	}
	in := 0
	for _, c := range cpus {
		if set.IsSet(c) {
			in++
		}
	}
	return float64(in) / float64(n)
}

// Proc is another process that used CPU time in the interval.
type Proc struct {
	PID  int
	Name string // its command name (comm)
	// Seconds is all its CPU time in the interval, on any CPU it may use:
	// for a process not pinned to the measured CPUs, more than it took there.
	Seconds float64
}

// Delta is what happened on the CPUs between two samples.
type Delta struct {
	Interval time.Duration
	CPUs     []int
	// CapacitySeconds is the core-seconds the CPUs had: Interval ×
	// len(CPUs) (the ticks' total when the samples carry no times).
	CapacitySeconds float64
	// BusySeconds is the core-seconds they were not idle (steal and
	// interrupts included).
	BusySeconds float64
	// OursSeconds is the part of it our processes took.
	OursSeconds float64
	// OtherSeconds is other processes' time, the time in no process
	// this host lists that was not interrupts, and steal; OtherShare is its
	// share of the capacity: 0.5 on two CPUs is one core's worth taken
	// from us.
	OtherSeconds float64
	OtherShare   float64
	// StealSeconds is the part of the busy time the hypervisor gave to
	// other machines (counted in BusySeconds and OtherSeconds).
	StealSeconds float64
	// InterruptSeconds is hard and soft interrupt time, ksoftirqd's
	// included, in neither other nor ours: on loopback it is mostly the
	// benchmark's own network traffic.
	InterruptSeconds float64
	// Busiest are the other processes allowed on the CPUs that used the
	// most CPU time, most first, at most DefaultBusiest.
	Busiest []Proc
	// BusyShare is each CPU's share of the interval it was not idle
	// (interrupts included): 1 is a core that never rested.
	BusyShare map[int]float64
	// PerCPU is, for each measured CPU in order, how its time was spent.
	PerCPU []CPUTime
	Err    error
}

// CPUTime is how one CPU's time was spent over an interval, in seconds
// (see BetweenWith): Steal went to other machines, Ours to our processes,
// Interrupts to ksoftirqd and to interrupts outside any task (inside one,
// on loopback the sender's, they are that task's time), Other to other
// processes and to the rest of the time in no process, Idle to nothing.
// Ours and Other share a process's time evenly over the CPUs it may use
// (the kernel does not say where it ran), so a process pinned to one CPU
// is exact and an unpinned one is a guess.
type CPUTime struct {
	CPU                                            int
	Capacity, Steal, Interrupts, Ours, Other, Idle float64
	// NetInterrupts is the part of Interrupts that was network softirqs
	// (NET_RX and NET_TX): on loopback, the cost of moving the cell's own
	// bytes, run on the CPU of the task that sent them. The kernel times
	// softirqs as a whole, so the time is split by /proc/softirqs' counts
	// of each kind on the CPU over the interval: a guess that gives a
	// timer's short softirq as much time as a network one's batch of
	// packets, so it errs towards the part that is not the network's.
	// Hard interrupts are never counted in it.
	NetInterrupts float64
	// Busiest are the other processes that took the most of Other on this
	// CPU, most first, at most BusiestPerCPU: each one's CPU time over the
	// interval, spread evenly over the CPUs it may use, as Other is. The
	// kernel keeps no per-CPU time of a task: /proc/PID/stat's processor
	// field is the CPU it last ran on, one instant, not where its time
	// went; the affinity spread is exact for a pinned process, and adds up
	// to Other for the rest.
	Busiest []Proc
	// Unseen is the part of Other no process this host shows took: the
	// time of processes in another PID namespace (a container or a sandbox
	// beside this one, whose CPUs /proc/stat counts and whose processes
	// /proc does not list), or of processes that ended during the
	// interval, whose time left with them.
	Unseen float64
}

// Share is seconds as a share of the CPU's capacity (0 without one).
func (t CPUTime) Share(seconds float64) float64 {
	if t.Capacity <= 0 {
		return 0
	}
	return seconds / t.Capacity
}

// Between compares two samples, a before b.
func Between(a, b Sample) Delta { return BetweenWith(a, b, nil) }

// BetweenWith is Between with credit: CPU seconds, by CPU, of our threads
// that ended between the samples (the stall sampler's, whose process
// reports them), which no process's count still holds. They are counted as
// ours, taken from the time in no process, never from another's.
//
// Each CPU's time is judged by precise clocks where the kernel keeps them.
// /proc/stat's user, system and interrupt columns are ticks: a sample, at
// each timer tick, of what the CPU was doing. On a virtual machine whose
// ticks arrive in bursts (a Firecracker guest at 250 Hz here) two seconds
// of them missed the CPU's busy time by up to 40 % of a core either way,
// and a tick's lot between system and softirq swung from 0 to 90 % with
// the phase of the generator's sends: a pass whose engine worked as in
// every other read as another process's or as interrupts. The idle column
// (with a tickless kernel), a task's CPU time and the wall clock are
// precise: the time a CPU was not idle is the interval less its idle and
// steal, our tasks' and the others' are their own counts, and what is
// left is the time in no process this host lists: interrupts outside any
// task (inside one they are the task's time), and processes of another
// PID namespace or that ended. The ticks only split that rest: as much of
// it as they call interrupts is interrupts, the remainder another's.
func BetweenWith(a, b Sample, credit map[int]float64) Delta {
	d := Delta{Interval: b.At.Sub(a.At), CPUs: b.CPUs}
	if d.Err = errors.Join(a.Err, b.Err); d.Err != nil {
		return d
	}
	if !slices.Equal(a.CPUs, b.CPUs) {
		d.Err = fmt.Errorf("samples of different CPUs: %v and %v", a.CPUs, b.CPUs)
		return d
	}
	var others []Proc
	perOurs := make([]float64, len(b.CPUs))
	perSoftirqd := make([]float64, len(b.CPUs))
	perOthers := make([][]Proc, len(b.CPUs))
	spread := func(pt procTime, ticks uint64, into []float64) {
		for i, c := range b.CPUs {
			into[i] += float64(ticks) * pt.on(c, len(b.CPUs))
		}
	}
	for k, pb := range b.procs {
		pa, seen := a.procs[k]
		ticks := pb.ticks // new since a: all of it is in the interval
		if seen {
			ticks = sub(pb.ticks, pa.ticks)
		}
		switch {
		case ticks == 0:
		case pb.ours || (seen && pa.ours):
			spread(pb, ticks, perOurs)
		case !k.thread && isSoftirqd(pb.comm):
			spread(pb, ticks, perSoftirqd)
		case pb.weight > 0 && !k.thread:
			others = append(others, Proc{PID: k.pid, Name: pb.comm, Seconds: seconds(ticks)})
			for i, c := range b.CPUs {
				if on := pb.on(c, len(b.CPUs)); on > 0 {
					perOthers[i] = append(perOthers[i], Proc{PID: k.pid, Name: pb.comm, Seconds: float64(ticks) * on / TicksPerSecond})
				}
			}
		}
	}
	d.Busiest = busiest(others, DefaultBusiest)
	d.BusyShare = make(map[int]float64, len(b.CPUs))
	wall := d.Interval.Seconds()
	for i, c := range b.CPUs {
		ca, cb := a.cpu[c], b.cpu[c]
		ticked := seconds(sub(cb.total(), ca.total()))
		t := CPUTime{CPU: c, Capacity: ticked, Steal: seconds(sub(cb.steal, ca.steal)),
			Idle: seconds(sub(cb.idle+cb.iowait, ca.idle+ca.iowait))}
		if wall > 0 {
			// The wall clock is the capacity; the ticks' total is not.
			t.Capacity = wall
		}
		t.Idle = min(t.Idle, t.Capacity)
		notIdle := t.Capacity - t.Idle
		if t.Capacity > 0 {
			d.BusyShare[c] = notIdle / t.Capacity
		}
		t.Steal = min(t.Steal, notIdle)
		ran := notIdle - t.Steal // the time tasks or interrupts ran here
		softirqd := perSoftirqd[i] / TicksPerSecond
		t.Ours = min(perOurs[i]/TicksPerSecond, ran)
		seen := 0.0
		for _, p := range perOthers[i] {
			seen += p.Seconds
		}
		rest := max(ran-t.Ours-softirqd-seen, 0)
		if cr := min(credit[c], rest); cr > 0 {
			t.Ours += cr
			rest -= cr
		}
		ticks := sub(cb.interrupts(), ca.interrupts())
		irq := min(seconds(ticks), rest)
		t.Interrupts = softirqd + irq
		t.Unseen = rest - irq
		t.Other = min(seen, max(ran-t.Ours-softirqd, 0)) + t.Unseen
		if a.softirqs != nil && b.softirqs != nil {
			sa, sb := a.softirqs[c], b.softirqs[c]
			net, all := sub(sb.net, sa.net), sub(sb.net, sa.net)+sub(sb.other, sa.other)
			soft := softirqd // softirqs alone: hard interrupts are never the network's
			if ticks > 0 {
				soft += irq * float64(sub(cb.softirq, ca.softirq)) / float64(ticks)
			}
			if all > 0 {
				t.NetInterrupts = soft * float64(net) / float64(all)
			}
		}
		t.Busiest = busiest(perOthers[i], BusiestPerCPU)
		d.PerCPU = append(d.PerCPU, t)
		d.CapacitySeconds += t.Capacity
		d.BusySeconds += notIdle
		d.StealSeconds += t.Steal
		d.InterruptSeconds += t.Interrupts
		d.OursSeconds += t.Ours
		d.OtherSeconds += t.Other + t.Steal
	}
	if d.CapacitySeconds > 0 {
		d.OtherShare = d.OtherSeconds / d.CapacitySeconds
	}
	return d
}

func busiest(ps []Proc, n int) []Proc {
	sort.Slice(ps, func(i, j int) bool {
		if ps[i].Seconds != ps[j].Seconds {
			return ps[i].Seconds > ps[j].Seconds
		}
		return ps[i].PID < ps[j].PID
	})
	return ps[:min(len(ps), n)]
}

// isSoftirqd is the kernel thread that runs the softirqs a CPU could not
// run at once: on loopback, mostly the benchmark's own packets. Its time is
// counted with interrupts, not as another's.
func isSoftirqd(comm string) bool { return strings.HasPrefix(comm, "ksoftirqd/") }

func sub(b, a uint64) uint64 {
	if b < a {
		return 0
	}
	return b - a
}

func seconds(ticks uint64) float64 { return float64(ticks) / TicksPerSecond }

// cpuTimes is one "cpuN" line of /proc/stat, in ticks.
type cpuTimes struct {
	user, nice, system, idle, iowait, irq, softirq, steal uint64
}

// busy leaves out idle and iowait (a CPU waiting for I/O runs nothing),
// and interrupts: on loopback, softirq time is mostly the benchmark's own
// packets, charged to no process, and would read as another's. Guest time
// is already in user.
func (c cpuTimes) busy() uint64 {
	return c.user + c.nice + c.system + c.steal
}

func (c cpuTimes) interrupts() uint64 { return c.irq + c.softirq }

func (c cpuTimes) total() uint64 { return c.busy() + c.interrupts() + c.idle + c.iowait }

// parseCPUStat reads the per-CPU lines of /proc/stat:
// "cpu3 user nice system idle iowait irq softirq steal guest guest_nice".
// Kernels before 2.6.11 had fewer columns; missing ones count as zero.
func parseCPUStat(b []byte) (map[int]cpuTimes, error) {
	out := map[int]cpuTimes{}
	for line := range bytes.Lines(b) {
		f := strings.Fields(string(line))
		if len(f) == 0 || !strings.HasPrefix(f[0], "cpu") || f[0] == "cpu" {
			continue
		}
		n, err := strconv.Atoi(f[0][3:])
		if err != nil || n < 0 {
			return nil, fmt.Errorf("/proc/stat: %q", f[0])
		}
		if len(f) < 5 {
			return nil, fmt.Errorf("/proc/stat: %s: %d columns, want 4 or more", f[0], len(f)-1)
		}
		var v [8]uint64
		for i := 0; i < len(v) && i+1 < len(f); i++ {
			if v[i], err = strconv.ParseUint(f[i+1], 10, 64); err != nil {
				return nil, fmt.Errorf("/proc/stat: %s: %w", f[0], err)
			}
		}
		out[n] = cpuTimes{user: v[0], nice: v[1], system: v[2], idle: v[3], iowait: v[4], irq: v[5], softirq: v[6], steal: v[7]}
	}
	if len(out) == 0 {
		return nil, errors.New("/proc/stat: no cpuN lines")
	}
	return out, nil
}

// softirqCounts are one CPU's softirqs since boot: the network's (NET_RX,
// NET_TX) and every other kind's (TIMER, SCHED, RCU, BLOCK, …).
type softirqCounts struct {
	net, other uint64
}

// parseSoftirqs reads /proc/softirqs: a header "CPU0 CPU1 …", then one
// line a kind, "NET_RX: 29838163 26270776", a count a CPU in the header's
// order.
func parseSoftirqs(b []byte) (map[int]softirqCounts, error) {
	var cpus []int
	out := map[int]softirqCounts{}
	for line := range bytes.Lines(b) {
		f := strings.Fields(string(line))
		if len(f) == 0 {
			continue
		}
		if cpus == nil {
			for _, h := range f {
				n, err := strconv.Atoi(strings.TrimPrefix(h, "CPU"))
				if !strings.HasPrefix(h, "CPU") || err != nil || n < 0 {
					return nil, fmt.Errorf("/proc/softirqs: header %q", h)
				}
				cpus = append(cpus, n)
			}
			continue
		}
		kind, ok := strings.CutSuffix(f[0], ":")
		if !ok || len(f)-1 > len(cpus) {
			return nil, fmt.Errorf("/proc/softirqs: %q", strings.TrimSpace(string(line)))
		}
		for i, v := range f[1:] {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("/proc/softirqs: %s: %w", kind, err)
			}
			c := out[cpus[i]]
			if kind == "NET_RX" || kind == "NET_TX" {
				c.net += n
			} else {
				c.other += n
			}
			out[cpus[i]] = c
		}
	}
	if len(out) == 0 {
		return nil, errors.New("/proc/softirqs: no counts")
	}
	return out, nil
}
