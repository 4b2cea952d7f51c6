package cpuload

import (
	"errors"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// A stall sampler is cyclictest's method in-process: one thread per
// measured CPU, pinned there, sleeps to an absolute deadline every Period
// and notes how late it woke. Run at SCHED_FIFO it preempts every normal
// task on its CPU the moment its timer fires, so a late wake-up is time the
// CPU gave to nothing of anyone's choosing: the hypervisor (steal), hard
// and soft interrupts, or a real-time task. Our engine and our generator
// are normal tasks and cannot delay it; at SCHED_OTHER (no CAP_SYS_NICE)
// they can, and a stall then also counts a busy CPU's run queue.

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
	// CPUSeconds is the samplers' own CPU time, every thread.
	CPUSeconds float64
	Err        error
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
}

// StartStalls starts one sampler thread per CPU in cpus (empty: none, and
// Stop reports nothing). fifo asks for SCHED_FIFO priority 1: the lowest
// real-time priority, above every normal task and below the kernel's own
// real-time threads.
func StartStalls(cpus []int, period, threshold time.Duration, fifo bool) *Sampler {
	s := &Sampler{out: Stalls{CPUs: append([]int{}, cpus...), Period: period, Threshold: threshold, Policy: "other"}}
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
			stalls = append(stalls, Stall{CPU: cpu, At: s.wall(next), Duration: late})
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
	s.mu.Unlock()
}

// Stop ends the threads and returns what they saw.
func (s *Sampler) Stop() Stalls {
	if s.stop.Swap(true) {
		return s.out
	}
	s.wg.Wait()
	if s.gomax > 0 {
		runtime.GOMAXPROCS(s.gomax)
	}
	sort.Slice(s.out.Stalls, func(i, j int) bool { return s.out.Stalls[i].At.Before(s.out.Stalls[j].At) })
	return s.out
}
