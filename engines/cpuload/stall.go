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
//
// Whether the CPU was idle tells those apart (Stall.Busy). On a kernel
// that does not preempt a system call (PREEMPT_NONE, as this project's
// guests run), a task of the cell can hold the CPU through a long write,
// its packets' softirqs with it, and then sleep inside it (waiting for the
// socket's buffer): the stall ends with no thread of the cell runnable,
// yet the CPU was this machine's all along. And moving the cell's bytes
// makes the kernel late with the sampler's timer (500 × 4 MiB a second
// over loopback: 20–90 ms of every second on the sending CPU, against
// 1 ms with the same CPUs spinning and no network). A stall the CPU spent
// idle, its timer's interrupt not yet delivered, was time it was not this
// machine's: the hypervisor's. The kernel says when the CPU last left idle
// (/proc/timer_list, idle_entrytime, set as idle stops): the stall is the
// host's up to that moment, this machine's from it.

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
	// Busy is the part of the stall this machine's CPU was not idle:
	// its kernel ran a task, interrupts or softirqs the sampler could not
	// preempt. The rest, Duration less Busy, the CPU sat idle past the
	// sampler's deadline: it was not this machine's. Where the kernel
	// does not say when the CPU left idle, Busy is the sampler's run-queue
	// delay (/proc/thread-self/schedstat), the part it spent woken and
	// waiting; zero where neither can be read.
	Busy time.Duration `json:"busy,omitempty"`
	// Together is the part of the stall during which every sampled CPU
	// stalled at once, in stretches of TogetherMin or more: the whole
	// machine stopped, which its own work does not do (under a segment
	// pass's load its CPUs stalled together for 3 ms at most). A paused
	// guest looks busy from inside, the task it stopped still runnable:
	// that part is the host's whatever else the stall was.
	Together time.Duration `json:"together,omitempty"`
	// Estimated says Busy was not read for this stall (the timer list is
	// read at most 1/cellCheckShare of the CPU) but split as the stalls
	// of its CPU that were read in the same run (estimateBusy).
	Estimated bool `json:"estimated,omitempty"`
}

// TogetherMin is the shortest stretch of a stall shared by every sampled
// CPU that counts as the whole machine stopped (Stall.Together).
const TogetherMin = 5 * time.Millisecond

// End is when the stall ended.
func (s Stall) End() time.Time { return s.At.Add(s.Duration) }

// OwnMax is the longest a stall can be this machine's own work: a system
// call the kernel does not preempt, its softirqs (2 ms at a time before
// ksoftirqd takes them), a section with interrupts off. Under a segment
// pass's load the longest busy stall was 5.4 ms; a CPU busy far longer,
// with no task able to run, was most likely a running guest the
// hypervisor took, which looks busy from inside.
const OwnMax = 20 * time.Millisecond

// Host is the part of the stall the host took: the part the whole
// machine stopped (Together), the part its CPU sat idle (Duration less
// Busy) unless the cell's, and whatever of it was longer than OwnMax.
func (s Stall) Host() time.Duration {
	own := s.Duration
	if !s.Cell {
		own = min(s.Busy, s.Duration)
	}
	return min(max(s.Duration-min(own, OwnMax), s.Together), s.Duration)
}

// ByHost says whether the host took most of the stall.
func (s Stall) ByHost() bool { return s.Duration > 0 && 2*s.Host() > s.Duration }

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
	// Unread counts the stalls whose Busy was estimated (Stall.Estimated).
	Unread int   `json:"unread,omitempty"`
	Err    error `json:"-"`
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
	var read, readGap int64
	self := unix.Gettid()
	delays := openRunDelay()
	if delays >= 0 {
		defer unix.Close(delays)
	}
	timers := openTimerList()
	if timers >= 0 {
		defer unix.Close(timers)
	}
	buf, tbuf := make([]byte, 128), make([]byte, 64<<10)
	delay, delayOK := readRunDelay(delays, buf)
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
		d, ok := readRunDelay(delays, buf)
		held := time.Duration(d - delay)
		if !ok || !delayOK || held < 0 {
			held = 0
		}
		delay, delayOK = d, ok
		if late := time.Duration(now - next); late > threshold {
			// The timer list is long to make: it is read at most
			// 1/cellCheckShare of the CPU; a stall not read is busy
			// for its run-queue delay.
			busy, estimated := held, false
			switch {
			case timers < 0:
			case read != 0 && now-read < readGap:
				estimated = true
			default:
				if left, ok := idleLeft(timers, tbuf, cpu); ok && left <= now {
					busy = max(busy, time.Duration(now-max(left, next)))
				}
				_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
				read, readGap = now, cellCheckShare*(ts.Nano()-now)
			}
			st := Stall{CPU: cpu, At: s.wall(next), Duration: late, Busy: min(busy, late), Estimated: estimated}
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
		// The sampler's process stopped its own sampler (serveSampler),
		// which marked and estimated the stalls below.
		return s.stopApart()
	}
	s.wg.Wait()
	if s.gomax > 0 {
		runtime.GOMAXPROCS(s.gomax)
	}
	sort.Slice(s.out.Stalls, func(i, j int) bool { return s.out.Stalls[i].At.Before(s.out.Stalls[j].At) })
	markTogether(s.out.Stalls, s.out.CPUs)
	s.out.Unread = estimateBusy(s.out.Stalls)
	return s.out
}

// estimateBusy gives each stall whose timer list was not read (Estimated)
// the busy share of its CPU's stalls that were read, by their length, or
// its own run-queue delay when that is more, and counts them. Under a
// segment pass's load a read takes 50–200 µs and the stalls come 100 a
// second: the budget reads a fraction of them, taken as they come.
func estimateBusy(stalls []Stall) int {
	type sum struct{ busy, all time.Duration }
	read := map[int]*sum{}
	n := 0
	for _, x := range stalls {
		if x.Estimated {
			n++
			continue
		}
		if read[x.CPU] == nil {
			read[x.CPU] = &sum{}
		}
		read[x.CPU].busy += x.Busy
		read[x.CPU].all += x.Duration
	}
	for i := range stalls {
		x := &stalls[i]
		if r := read[x.CPU]; x.Estimated && r != nil && r.all > 0 {
			x.Busy = max(x.Busy, time.Duration(float64(x.Duration)*float64(r.busy)/float64(r.all)))
		}
	}
	return n
}

// markTogether sets each stall's Together: the stretches of it, TogetherMin
// or longer, during which a stall of every other CPU of cpus overlapped it.
func markTogether(stalls []Stall, cpus []int) {
	for i := range stalls {
		stalls[i].Together = 0
	}
	if len(cpus) < 2 {
		return
	}
	type span struct{ lo, hi time.Time }
	for i := range stalls {
		x := &stalls[i]
		shared := []span{{x.At, x.End()}}
		for _, c := range cpus {
			if c == x.CPU {
				continue
			}
			var next []span
			for _, sp := range shared {
				for _, y := range stalls {
					if y.CPU != c {
						continue
					}
					lo, hi := maxTime(sp.lo, y.At), minTime(sp.hi, y.End())
					if hi.After(lo) {
						next = append(next, span{lo, hi})
					}
				}
			}
			shared = next
		}
		for _, sp := range shared {
			if d := sp.hi.Sub(sp.lo); d >= TogetherMin {
				x.Together += d
			}
		}
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
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

// openRunDelay opens this thread's schedstat, -1 when it cannot: the
// thread is locked, and the file stays its own.
func openRunDelay() int {
	fd, err := unix.Open(filepath.Join(procRoot, "thread-self", "schedstat"), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	return fd
}

// readRunDelay is the thread's run-queue delay so far (ns), read from its
// schedstat at fd (sched_info: time on the CPU, time waiting for it,
// timeslices).
func readRunDelay(fd int, buf []byte) (int64, bool) {
	if fd < 0 {
		return 0, false
	}
	n, err := unix.Pread(fd, buf, 0)
	if err != nil || n <= 0 {
		return 0, false
	}
	return parseRunDelay(buf[:n])
}

// openTimerList opens /proc/timer_list, -1 when it cannot.
func openTimerList() int {
	fd, err := unix.Open(filepath.Join(procRoot, "timer_list"), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	return fd
}

// idleLeft reads from the timer list at fd when cpu last left idle
// (CLOCK_MONOTONIC ns): its tick's idle_entrytime, which the kernel sets
// as an idle period starts and again as it stops. Read while the CPU runs
// the reader, it is the stop.
func idleLeft(fd int, buf []byte, cpu int) (int64, bool) {
	if fd < 0 {
		return 0, false
	}
	if _, err := unix.Seek(fd, 0, 0); err != nil {
		return 0, false
	}
	n := 0
	for n < len(buf) {
		k, err := unix.Read(fd, buf[n:])
		if err != nil || k <= 0 {
			break
		}
		n += k
		if v, ok := parseIdleLeft(buf[:n], cpu); ok {
			return v, true
		}
	}
	return 0, false
}

// parseIdleLeft finds cpu's idle_entrytime in a timer list.
func parseIdleLeft(b []byte, cpu int) (int64, bool) {
	sec := bytes.Index(b, []byte("\ncpu: "+strconv.Itoa(cpu)+"\n"))
	if sec < 0 {
		return 0, false
	}
	b = b[sec+1:]
	// The next CPU's section ends this one.
	if next := bytes.Index(b, []byte("\ncpu: ")); next >= 0 {
		b = b[:next]
	}
	i := bytes.Index(b, []byte(".idle_entrytime"))
	if i < 0 {
		return 0, false
	}
	line := b[i:]
	if j := bytes.IndexByte(line, '\n'); j >= 0 {
		line = line[:j]
	} else {
		return 0, false // not read to its end yet
	}
	f := bytes.Fields(line)
	// ".idle_entrytime : 11827409826856 nsecs"
	if len(f) != 4 || string(f[1]) != ":" || string(f[3]) != "nsecs" {
		return 0, false
	}
	v, err := strconv.ParseInt(string(f[2]), 10, 64)
	return v, err == nil && v > 0
}

// parseRunDelay reads the second field of a schedstat line.
func parseRunDelay(b []byte) (int64, bool) {
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0, false
	}
	v, err := strconv.ParseInt(string(f[1]), 10, 64)
	return v, err == nil && v >= 0
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
