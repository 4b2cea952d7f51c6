package cpuload

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A frozen cell's process is passed over by its own state, without a read
// of each of its threads (a suite's frozen varnishd have hundreds): a
// stopped process whose task list still held a thread running on the CPU
// would be counted only if its threads were read.
func TestCellRunnableSkipsStopped(t *testing.T) {
	root := t.TempDir()
	write := func(path, state string, cpu int) {
		fields := make([]string, 0, 50)
		fields = append(fields, state)
		for i := 4; i <= 52; i++ {
			fields = append(fields, "0")
		}
		fields[39-3] = strconv.Itoa(cpu)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("7 (varnishd) "+strings.Join(fields, " ")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(root, "7", "stat"), "T", 0)
	write(filepath.Join(root, "7", "task", "8", "stat"), "R", 0)
	old := procRoot
	procRoot = root
	defer func() { procRoot = old }()
	if cellRunnable([]int{7}, 0, 1) {
		t.Error("a stopped process's threads were read")
	}
	write(filepath.Join(root, "7", "stat"), "S", 0)
	if !cellRunnable([]int{7}, 0, 1) {
		t.Error("a running process's runnable thread was not found")
	}
}

// A look at the cell's threads costs at most a hundredth of the CPU the
// sampler holds: a slow look spaces the next one out.
func TestNextCheckGap(t *testing.T) {
	for _, c := range []struct{ cost, want time.Duration }{
		{0, cellCheckGap},
		{50 * time.Microsecond, cellCheckGap},
		{time.Millisecond, 100 * time.Millisecond},
		{20 * time.Millisecond, 2 * time.Second},
	} {
		if got := nextCheckGap(c.cost); got != c.want {
			t.Errorf("nextCheckGap(%v) = %v, want %v", c.cost, got, c.want)
		}
	}
}

// The time a CPU last left idle is its section's idle_entrytime, not
// another CPU's, and a line not read to its end is no answer.
func TestParseIdleLeft(t *testing.T) {
	list := `Timer List Version: v0.10
HRTIMER_MAX_CLOCK_BASES: 8
now at 11827413854433 nsecs

cpu: 0
 clock 0:
  .base:               pK-error
  .idle_jiffies   : 4298024705
  .idle_entrytime : 11827409826856 nsecs
  .idle_exittime  : 11827371606314 nsecs

cpu: 1
 clock 0:
  .idle_entrytime : 11827397315107 nsecs
  .idle_sleeptime : 6919810641251 nsecs
`
	for cpu, want := range map[int]int64{0: 11827409826856, 1: 11827397315107} {
		if v, ok := parseIdleLeft([]byte(list), cpu); !ok || v != want {
			t.Errorf("CPU %d: %d %v, want %d", cpu, v, ok, want)
		}
	}
	if v, ok := parseIdleLeft([]byte(list), 2); ok {
		t.Errorf("CPU 2, not listed: %d", v)
	}
	cut := list[:strings.Index(list, "11827397315107")+5]
	if v, ok := parseIdleLeft([]byte(cut), 1); ok {
		t.Errorf("CPU 1 cut mid-line: %d", v)
	}
	// CPU 1's section has no idle_entrytime: CPU 0's after it is not its.
	if v, ok := parseIdleLeft([]byte("cpu: 1\n .x : 1\ncpu: 0\n  .idle_entrytime : 5 nsecs\n"), 1); ok {
		t.Errorf("CPU 1 read from CPU 0's section: %d", v)
	}
}

func TestParseRunDelay(t *testing.T) {
	if v, ok := parseRunDelay([]byte("4246700 453345 3\n")); !ok || v != 453345 {
		t.Errorf("%d %v, want 453345", v, ok)
	}
	for _, bad := range []string{"", "12", "1 x 3", "1 -5 3"} {
		if v, ok := parseRunDelay([]byte(bad)); ok {
			t.Errorf("%q: %d", bad, v)
		}
	}
}

// The host's part of a stall: its idle part, unless the cell's; and
// wherever every CPU stopped together for TogetherMin or more, whoever's.
func TestStallHost(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := time.Millisecond
	for _, c := range []struct {
		s    Stall
		host time.Duration
		by   bool
	}{
		{Stall{Duration: 4 * ms}, 4 * ms, true},
		{Stall{Duration: 4 * ms, Busy: 3 * ms}, ms, false},
		{Stall{Duration: 4 * ms, Busy: 9 * ms}, 0, false},
		{Stall{Duration: 4 * ms, Cell: true}, 0, false},
		{Stall{Duration: 40 * ms, Cell: true, Together: 30 * ms}, 30 * ms, true},
		{Stall{Duration: 16 * ms, Busy: 16 * ms, Together: 10 * ms}, 10 * ms, true},
		{Stall{Duration: 16 * ms, Busy: 16 * ms, Together: 6 * ms}, 6 * ms, false},
		// Longer than OwnMax: no work of this machine's holds a CPU so long.
		{Stall{Duration: time.Second, Busy: time.Second}, time.Second - OwnMax, true},
		{Stall{Duration: 30 * ms, Cell: true}, 10 * ms, false},
	} {
		if h, by := c.s.Host(), c.s.ByHost(); h != c.host || by != c.by {
			t.Errorf("%+v: host %v (%v), want %v (%v)", c.s, h, by, c.host, c.by)
		}
	}
	// CPU 0 and 1 stall together for 20 ms, then for 2 ms (too short to be
	// the whole machine), and CPU 0 alone.
	stalls := []Stall{
		{CPU: 0, At: t0, Duration: 25 * ms},
		{CPU: 1, At: t0.Add(5 * ms), Duration: 30 * ms},
		{CPU: 0, At: t0.Add(100 * ms), Duration: 3 * ms},
		{CPU: 1, At: t0.Add(101 * ms), Duration: 2 * ms},
		{CPU: 0, At: t0.Add(200 * ms), Duration: 50 * ms},
	}
	markTogether(stalls, []int{0, 1})
	for i, want := range []time.Duration{20 * ms, 20 * ms, 0, 0, 0} {
		if stalls[i].Together != want {
			t.Errorf("stall %d: together %v, want %v", i, stalls[i].Together, want)
		}
	}
	// Three CPUs: only what all three share.
	stalls = []Stall{
		{CPU: 0, At: t0, Duration: 40 * ms},
		{CPU: 1, At: t0, Duration: 40 * ms},
		{CPU: 2, At: t0.Add(30 * ms), Duration: 40 * ms},
	}
	markTogether(stalls, []int{0, 1, 2})
	for i, want := range []time.Duration{10 * ms, 10 * ms, 10 * ms} {
		if stalls[i].Together != want {
			t.Errorf("3 CPUs, stall %d: together %v, want %v", i, stalls[i].Together, want)
		}
	}
	markTogether(stalls, []int{0})
	if stalls[0].Together != 0 {
		t.Errorf("one CPU: together %v", stalls[0].Together)
	}
}

// A sampler kept off its CPU by busy threads there sees the CPU busy, not
// idle: at SCHED_OTHER the threads delay it, and the stalls they make are
// this machine's own work, none of them the host's.
func TestStallsOfABusyCPUAreBusy(t *testing.T) {
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread() // pinned for good: the thread exits with the goroutine
			var set unix.CPUSet
			set.Set(0)
			if err := unix.SchedSetaffinity(0, &set); err != nil {
				t.Error(err)
				return
			}
			spin(&stop)
		}()
	}
	st := sampleBeside(t, []int{0}, false, &stop, &wg)
	var total, busy time.Duration
	for _, x := range st.Stalls {
		total += x.Duration
		busy += x.Busy
		if x.Busy > x.Duration {
			t.Errorf("stall %+v: busy longer than the stall", x)
		}
	}
	t.Logf("%d stalls, %v, %v of it busy", len(st.Stalls), total, busy)
	if len(st.Stalls) == 0 {
		t.Fatal("three busy threads on CPU 0 never delayed a SCHED_OTHER sampler there")
	}
	if busy < total*8/10 {
		t.Errorf("%v of %v of stalls behind busy threads counted busy, want 80 %% or more", busy, total)
	}
}
