package cpuload

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hlsbench/hlsbench/engines/internal/procfs"
)

// A stall sampler is cyclictest's method in-process: one thread per
// measured CPU, pinned there, sleeps to an absolute deadline every Period
// and notes how late it woke. Run at SCHED_FIFO it preempts every normal
// task on its CPU the moment its timer fires, so a late wake-up is time the
// CPU gave to nothing of anyone's choosing: the hypervisor (steal), hard
// and soft interrupts, or a real-time task. Our engine and our generator
// are normal tasks and cannot delay it; at SCHED_OTHER (no CAP_SYS_NICE)
// they can, and a stall then also counts a busy CPU's run queue.
//
// Even at SCHED_FIFO, a task of the cell can delay it: a long system call
// on a kernel that does not preempt one, or the softirqs of its own
// packets, run on its way out of a send with preemption off. Such a
// stall ends with that task preempted, runnable on the CPU: as it wakes
// late, the sampler looks at the cell's threads (StartCellStalls) and
// marks the stall the cell's (Stall.Cell) when one of them is runnable
// there. A stall with none is the host's: the CPU went to the hypervisor,
// to interrupts while it was idle, or to a task not of the cell.

// Default stall sampler settings: a 1 ms period costs about 1000 short
// wake-ups a second per CPU; 500 µs late is well past a timer's own slack
// (tens of µs) and well under the latencies at stake.
const (
	DefaultStallPeriod    = time.Millisecond
	DefaultStallThreshold = 500 * time.Microsecond
)

// Stall is one late wake-up: CPU was unavailable to the sampler from At
// (its deadline) for Duration.
type Stall struct {
	CPU      int
	At       time.Time
	Duration time.Duration
	// Cell says a thread of the cell (StartCellStalls) was runnable on
	// the CPU as the sampler woke from the stall: the CPU was the cell's,
	// kept from the sampler, not taken from it by the host.
	Cell bool
}

// End is when the stall ended.
func (s Stall) End() time.Time { return s.At.Add(s.Duration) }

// Stalls is what a sampler saw.
type Stalls struct {
	CPUs      []int
	Period    time.Duration
	Threshold time.Duration
	// Policy is "fifo" (real-time: only the host can delay it) or "other"
	// (SCHED_FIFO refused: our own busy tasks can delay it too).
	Policy string
	// Wakes counts wake-ups on every CPU; Stalls are those later than
	// Threshold, in order of At.
	Wakes  int64
	Stalls []Stall
	// CPUSeconds is the samplers' own CPU time, every thread; OnCPU is
	// each thread's by the CPU it was pinned to. The threads end when the
	// sampler stops, and their time with them: a count of CPU time taken
	// after Stop finds it in no process (cpuload.BetweenWith credits it).
	CPUSeconds float64
	OnCPU      map[int]float64 `json:"on_cpu,omitempty"`
	// Apart says the threads ran in the sampler's own process, not in
	// hlsbench's: hlsbench's CPU time does not include CPUSeconds.
	Apart bool `json:"apart,omitempty"`
	// Unchecked counts the stalls whose cell was not looked at, the
	// sampler having looked less than cellCheckGap before (a CPU stalled
	// every period, at SCHED_OTHER): they count as the host's.
	Unchecked int
	Err       error `json:"-"`
}

// Sampler runs until Stop.
type Sampler struct {
	stop      atomic.Bool
	wg        sync.WaitGroup
	mu        sync.Mutex
	out       Stalls
	gomax     int
	anchorW   time.Time
	anchorM   int64
	fifoTried bool
	cell      []int
	// apart is the sampler process this sampler runs in (helper.go), nil
	// for one in this process; id is its number there.
	apart *samplerProcess
	id    int
}

// cellCheckGap bounds the cost of looking at the cell's threads, on the
// CPU the sampler holds at real-time priority: at most once in this long
// per CPU, and never more than 1/cellCheckShare of the CPU. A look reads
// one file per thread; a suite's processes (three varnishd with their
// thread pools, frozen cells' origins and terminators, hlsbench's own)
// are over a thousand threads, and on the 2-core PVM guest a look at
// them took milliseconds: once every 10 ms the sampler held the engine's
// CPU 90 % of the time, invisibly (its threads end with the pass), and
// NGINX's hit-path p99 went from 0.16 ms to seconds.
const (
	cellCheckGap   = 10 * time.Millisecond
	cellCheckShare = 100
)

// nextCheckGap is how long to wait before the next look at the cell's
// threads after one that took cost: cellCheckGap, or cellCheckShare times
// the look's cost when that is longer.
func nextCheckGap(cost time.Duration) time.Duration {
	return max(cellCheckGap, cellCheckShare*cost)
}

// StartStalls starts one sampler thread per CPU in cpus (empty: none, and
// Stop reports nothing). fifo asks for SCHED_FIFO priority 1: the lowest
// real-time priority, above every normal task and below the kernel's own
// real-time threads.
func StartStalls(cpus []int, period, threshold time.Duration, fifo bool) *Sampler {
	return StartCellStalls(cpus, period, threshold, fifo, nil)
}

// StartCellStalls is StartStalls, telling the stalls that end with a
// thread of the processes cell (the cell's: its engine, origin,
// terminator and hlsbench; the sampler's own threads aside) runnable on
// the stalled CPU.
//
// The sampler runs in a process of its own (helper.go): in this one, the
// Go runtime's other goroutines delay it. When that process cannot be
// started, it runs here, with Policy "other" (our own tasks can delay it)
// and Err saying why.
func StartCellStalls(cpus []int, period, threshold time.Duration, fifo bool, cell []int) *Sampler {
	if len(cpus) == 0 || period <= 0 {
		return startInProcess(cpus, period, threshold, fifo, cell)
	}
	s, err := startApart(cpus, period, threshold, fifo, cell)
	if err == nil {
		return s
	}
	s = startInProcess(cpus, period, threshold, false, cell)
	s.fail(fmt.Errorf("%w: sampled in hlsbench's own process, where its goroutines can delay the sampler", err))
	return s
}

// startInProcess runs the sampler's threads in this process.
func startInProcess(cpus []int, period, threshold time.Duration, fifo bool, cell []int) *Sampler {
	s := &Sampler{out: Stalls{CPUs: append([]int{}, cpus...), Period: period, Threshold: threshold, Policy: "other"},
		cell: slices.Clone(cell)}
	if len(cpus) == 0 || period <= 0 {
		return s
	}
	if fifo {
		s.out.Policy = "fifo"
	}
	// The threads block in clock_nanosleep, a system call: on waking they
	// need a P to go on. Spare Ps, one per thread, keep them from waiting
	// behind the generator's goroutines, which would read as a stall.
	s.gomax = runtime.GOMAXPROCS(0)
	runtime.GOMAXPROCS(s.gomax + len(cpus))
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	s.anchorW, s.anchorM = time.Now(), ts.Nano()
	ready := make(chan struct{}, len(cpus))
	for _, c := range cpus {
		s.wg.Add(1)
		go s.run(c, period, threshold, fifo, ready)
	}
	for range cpus {
		<-ready
	}
	return s
}

func (s *Sampler) wall(mono int64) time.Time { return s.anchorW.Add(time.Duration(mono - s.anchorM)) }

func (s *Sampler) fail(err error) {
	s.mu.Lock()
	s.out.Err = errors.Join(s.out.Err, err)
	s.mu.Unlock()
}

func (s *Sampler) run(cpu int, period, threshold time.Duration, fifo bool, ready chan<- struct{}) {
	defer s.wg.Done()
	// The thread is changed for good (pinned, maybe real-time): it is
	// never unlocked, so it exits with the goroutine instead of going back
	// to the runtime's pool.
	runtime.LockOSThread()
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		s.fail(fmt.Errorf("stall sampler: pinning to CPU %d: %w", cpu, err))
		ready <- struct{}{}
		return
	}
	if fifo {
		if err := unix.SchedSetAttr(0, &unix.SchedAttr{Policy: 1 /* SCHED_FIFO */, Priority: 1}, 0); err != nil {
			s.mu.Lock()
			s.out.Policy = "other"
			s.mu.Unlock()
		}
	}
	ready <- struct{}{}
	var stalls []Stall
	var wakes int64
	var unchecked int
	var checked, gap int64
	self := unix.Gettid()
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	next := ts.Nano() + int64(period)
	for !s.stop.Load() {
		dl := unix.NsecToTimespec(next)
		if err := unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &dl, nil); err != nil && err != unix.EINTR {
			s.fail(fmt.Errorf("stall sampler: CPU %d: %w", cpu, err))
			break
		}
		_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
		now := ts.Nano()
		wakes++
		if late := time.Duration(now - next); late > threshold {
			st := Stall{CPU: cpu, At: s.wall(next), Duration: late}
			switch {
			case len(s.cell) == 0:
			case checked != 0 && now-checked < gap:
				unchecked++
			default:
				st.Cell = cellRunnable(s.cell, cpu, self)
				_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
				checked, gap = now, int64(nextCheckGap(time.Duration(ts.Nano()-now)))
			}
			stalls = append(stalls, st)
		}
		// Deadlines missed during a stall are one stall, not many.
		next += int64(period)
		if next <= now {
			next = now + int64(period)
		}
	}
	var ru unix.Rusage
	cpuSec := 0.0
	if unix.Getrusage(unix.RUSAGE_THREAD, &ru) == nil {
		cpuSec = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	}
	s.mu.Lock()
	s.out.Stalls = append(s.out.Stalls, stalls...)
	s.out.Wakes += wakes
	s.out.CPUSeconds += cpuSec
	if s.out.OnCPU == nil {
		s.out.OnCPU = map[int]float64{}
	}
	s.out.OnCPU[cpu] += cpuSec
	s.out.Unchecked += unchecked
	s.mu.Unlock()
}

// Stop ends the threads and returns what they saw.
func (s *Sampler) Stop() Stalls {
	if s.stop.Swap(true) {
		return s.out
	}
	if s.apart != nil {
		return s.stopApart()
	}
	s.wg.Wait()
	if s.gomax > 0 {
		runtime.GOMAXPROCS(s.gomax)
	}
	sort.Slice(s.out.Stalls, func(i, j int) bool { return s.out.Stalls[i].At.Before(s.out.Stalls[j].At) })
	return s.out
}

// cellRunnable says whether a thread of the processes pids, other than
// self, is runnable (state R) and was last on cpu: the task the sampler
// just preempted, or one waiting behind it.
//
// A stopped process (a frozen cell's, state T) has no runnable thread: its
// threads are not read, one file for the process instead of one a thread.
func cellRunnable(pids []int, cpu, self int) bool {
	for _, pid := range pids {
		if b, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "stat")); err != nil {
			continue // gone
		} else if state, _, ok := stateOn(b); ok && (state == 'T' || state == 't') {
			continue
		}
		dir := filepath.Join(procRoot, strconv.Itoa(pid), "task")
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue // gone
		}
		for _, e := range ents {
			if e.Name() == strconv.Itoa(self) {
				continue
			}
			b, err := os.ReadFile(filepath.Join(dir, e.Name(), "stat"))
			if err != nil {
				continue
			}
			if state, on, ok := stateOn(b); ok && state == 'R' && on == cpu {
				return true
			}
		}
	}
	return false
}

// procRoot is where cellRunnable reads proc: procfs.Root, or a test's
// tree.
var procRoot = procfs.Root

// stateOn reads a task's state and the CPU it last ran on (fields 3 and
// 39 of its stat, proc(5)), after the command name, which may hold
// anything.
func stateOn(b []byte) (state byte, cpu int, ok bool) {
	end := bytes.LastIndexByte(b, ')')
	if end < 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(b[end+1:]))
	if len(f) < 39-2 || len(f[0]) != 1 {
		return 0, 0, false
	}
	cpu, err := strconv.Atoi(f[39-3])
	if err != nil {
		return 0, 0, false
	}
	return f[0][0], cpu, true
}

// GroupProcesses are the processes in the process groups pgids now.
func GroupProcesses(pgids []int) []int {
	if len(pgids) == 0 {
		return nil
	}
	all, err := procfs.All()
	if err != nil {
		return nil
	}
	var out []int
	for _, p := range all {
		if slices.Contains(pgids, p.PGID) {
			out = append(out, p.PID)
		}
	}
	return out
}
