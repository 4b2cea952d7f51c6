package cpuload

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

const statFixture = `cpu  10132153 290696 3084719 46828483 16683 0 25195 0 175628 0
cpu0 1393280 32966 572056 13343292 6130 0 17875 0 23933 0
cpu1 1335131 23347 507767 11677634 2543 0 1963 7 1 0
intr 199292 0 0 0
ctxt 1990473
btime 1062191376
`

func TestParseCPUStat(t *testing.T) {
	got, err := parseCPUStat([]byte(statFixture))
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]cpuTimes{
		0: {user: 1393280, nice: 32966, system: 572056, idle: 13343292, iowait: 6130, softirq: 17875},
		1: {user: 1335131, nice: 23347, system: 507767, idle: 11677634, iowait: 2543, softirq: 1963, steal: 7},
	}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if b := got[1].busy(); b != 1335131+23347+507767+7 {
		t.Errorf("busy %d: want user, nice, system and steal", b)
	}
	if i := got[1].interrupts(); i != 1963 {
		t.Errorf("interrupts %d", i)
	}
	// An old kernel's four columns.
	old, err := parseCPUStat([]byte("cpu 1 2 3 4\ncpu0 1 2 3 4\n"))
	if err != nil || old[0] != (cpuTimes{user: 1, nice: 2, system: 3, idle: 4}) {
		t.Errorf("old kernel: %+v %v", old, err)
	}
	for _, bad := range []string{"", "intr 1 2\n", "cpuX 1 2 3 4\n", "cpu0 1 2\n", "cpu0 1 2 x 4\n", "cpu-1 1 2 3 4\n"} {
		if c, err := parseCPUStat([]byte(bad)); err == nil {
			t.Errorf("%q: %+v, want an error", bad, c)
		}
	}
}

func FuzzParseCPUStat(f *testing.F) {
	f.Add([]byte(statFixture))
	f.Add([]byte("cpu0 1 2 3 4\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := parseCPUStat(b)
		if err == nil && len(m) == 0 {
			t.Error("no CPUs and no error")
		}
	})
}

func TestAffinityWeight(t *testing.T) {
	set := func(cpus ...int) unix.CPUSet {
		var s unix.CPUSet
		for _, c := range cpus {
			s.Set(c)
		}
		return s
	}
	for _, tc := range []struct {
		set  unix.CPUSet
		cpus []int
		want float64
	}{
		{set(0), []int{0}, 1},
		{set(1), []int{0}, 0},
		{set(0, 1), []int{0}, 0.5},
		{set(0, 1, 2, 3), []int{0, 1, 2, 3}, 1},
		{set(), []int{0}, 1},
	} {
		if got := affinityWeight(tc.set, tc.cpus); got != tc.want {
			t.Errorf("set %v cpus %v: %v, want %v", tc.set, tc.cpus, got, tc.want)
		}
	}
}

// Between on made-up samples: two CPUs busy 150 of 200 ticks; ours took
// 40 ticks pinned there and 100 pinned elsewhere; a stranger took 60.
func TestBetween(t *testing.T) {
	t0 := time.Unix(1000, 0)
	a := Sample{At: t0, CPUs: []int{0, 1},
		cpu: map[int]cpuTimes{0: {user: 100, idle: 100}, 1: {user: 100, idle: 100}, 2: {user: 5}},
		procs: map[procKey]procTime{
			{pid: 10, start: 1}:               {pid: 10, comm: "varnishd", ticks: 500, weight: 1, set: cpuSet(0), hasSet: true, ours: true},
			{pid: 11, start: 1, thread: true}: {pid: 11, comm: "hlsbench", ticks: 50, weight: 0, set: cpuSet(2), hasSet: true, ours: true},
			{pid: 20, start: 1}:               {pid: 20, comm: "stranger", ticks: 1000, weight: 1, set: cpuSet(0, 1), hasSet: true},
			{pid: 21, start: 1}:               {pid: 21, comm: "elsewhere", ticks: 0, weight: 0, set: cpuSet(2), hasSet: true},
		}}
	b := Sample{At: t0.Add(time.Second), CPUs: []int{0, 1},
		cpu: map[int]cpuTimes{0: {user: 180, system: 10, softirq: 10, idle: 100}, 1: {user: 150, steal: 10, idle: 140}, 2: {user: 500}},
		procs: map[procKey]procTime{
			{pid: 10, start: 1}:               {pid: 10, comm: "varnishd", ticks: 530, weight: 1, set: cpuSet(0), hasSet: true, ours: true},
			{pid: 12, start: 5}:               {pid: 12, comm: "cache-main", ticks: 10, weight: 1, set: cpuSet(1), hasSet: true, ours: true},
			{pid: 11, start: 1, thread: true}: {pid: 11, comm: "hlsbench", ticks: 150, weight: 0, set: cpuSet(2), hasSet: true, ours: true},
			{pid: 20, start: 1}:               {pid: 20, comm: "stranger", ticks: 1050, weight: 1, set: cpuSet(0, 1), hasSet: true},
			{pid: 22, start: 9}:               {pid: 22, comm: "newcomer", ticks: 10, weight: 0.5, set: cpuSet(0, 2), hasSet: true},
			{pid: 21, start: 1}:               {pid: 21, comm: "elsewhere", ticks: 400, weight: 0, set: cpuSet(2), hasSet: true},
			{pid: 23, start: 1}:               {pid: 23, comm: "ksoftirqd/0", ticks: 10, weight: 1, set: cpuSet(0), hasSet: true},
		}}
	a.procs[procKey{pid: 23, start: 1}] = procTime{pid: 23, comm: "ksoftirqd/0", ticks: 0, weight: 1, set: cpuSet(0), hasSet: true}
	d := Between(a, b)
	if d.Err != nil {
		t.Fatal(d.Err)
	}
	near := func(x, y float64) bool { return math.Abs(x-y) < 1e-9 }
	// CPU 0 ran 1 s: varnishd 0.3, ksoftirqd 0.1, stranger 0.25, newcomer
	// 0.05, and 0.3 in no process, 0.1 of it interrupts by the ticks. CPU
	// 1 ran 0.5 s beside 0.1 of steal: cache-main 0.1, stranger 0.25, and
	// 0.15 in no process.
	if !near(d.CapacitySeconds, 2) || !near(d.BusySeconds, 1.6) || !near(d.OursSeconds, 0.4) ||
		!near(d.OtherSeconds, 1.0) || !near(d.OtherShare, 0.5) || !near(d.StealSeconds, 0.1) || !near(d.InterruptSeconds, 0.2) || d.Interval != time.Second {
		t.Errorf("delta %+v", d)
	}
	if c0, c1 := d.PerCPU[0], d.PerCPU[1]; !near(c0.Ours, 0.3) || !near(c0.Interrupts, 0.2) || !near(c0.Other, 0.5) || !near(c0.Unseen, 0.2) ||
		!near(c1.Ours, 0.1) || !near(c1.Interrupts, 0) || !near(c1.Other, 0.4) || !near(c1.Unseen, 0.15) {
		t.Errorf("per CPU %+v", d.PerCPU)
	}
	// CPU 0 never rested (interrupts count); CPU 1 idled 40 of 100 ticks.
	if !near(d.BusyShare[0], 1) || !near(d.BusyShare[1], 0.6) || len(d.BusyShare) != 2 {
		t.Errorf("busy shares %v, want 0: 1, 1: 0.6", d.BusyShare)
	}
	want := []Proc{{20, "stranger", 0.5}, {22, "newcomer", 0.1}}
	if !slices.Equal(d.Busiest, want) {
		t.Errorf("busiest %+v, want %+v", d.Busiest, want)
	}
	if d := Between(a, Sample{CPUs: []int{0}}); d.Err == nil {
		t.Error("compared samples of different CPUs")
	}
}

// A busy loop pinned to a CPU shows up as other; counted as ours (its
// process group given), it does not.
func TestTakeSeesBusyLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("burns a CPU for a second")
	}
	cpu := runtime.NumCPU() - 1
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	burn := exec.CommandContext(ctx, "sh", "-c", "while :; do :; done")
	burn.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := burn.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		burn.Process.Kill() // by its PID, which Wait below has not yet released
		burn.Wait()
	}()
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(burn.Process.Pid, &set); err != nil {
		t.Fatal(err)
	}
	cpus := []int{cpu}
	self, withBurner := Self(nil), Self([]int{burn.Process.Pid})
	a0, b0 := Take(cpus, self), Take(cpus, withBurner)
	time.Sleep(time.Second)
	a1, b1 := Take(cpus, self), Take(cpus, withBurner)
	other, ours := Between(a0, a1), Between(b0, b1)
	if other.Err != nil || ours.Err != nil {
		t.Fatal(other.Err, ours.Err)
	}
	t.Logf("not ours: %+v", other)
	t.Logf("ours: %+v", ours)
	// The machine is shared: the loop gets most of its CPU, not all.
	if other.OtherSeconds < 0.3 || other.OtherShare < 0.3 {
		t.Errorf("a busy loop on cpu %d: other %.2f s (%.0f %%)", cpu, other.OtherSeconds, 100*other.OtherShare)
	}
	if len(other.Busiest) == 0 || other.Busiest[0].PID != burn.Process.Pid || other.Busiest[0].Seconds < 0.3 {
		t.Errorf("busiest %+v, want the loop (pid %d) first", other.Busiest, burn.Process.Pid)
	}
	if ours.OursSeconds < 0.3 || slices.ContainsFunc(ours.Busiest, func(p Proc) bool { return p.PID == burn.Process.Pid }) {
		t.Errorf("counted as ours: ours %.2f s, busiest %+v", ours.OursSeconds, ours.Busiest)
	}
	if ours.OtherSeconds > other.OtherSeconds-0.3 {
		t.Errorf("other %.2f s with the loop ours, %.2f s without", ours.OtherSeconds, other.OtherSeconds)
	}
}

// Between's per-CPU split on made-up samples: CPU 0 runs our engine pinned
// there and ksoftirqd/0, CPU 1 is partly stolen and runs a stranger pinned
// there; a process of ours allowed on both is split evenly.
func TestBetweenPerCPU(t *testing.T) {
	set := func(cpus ...int) unix.CPUSet {
		var s unix.CPUSet
		for _, c := range cpus {
			s.Set(c)
		}
		return s
	}
	t0 := time.Unix(1000, 0)
	a := Sample{At: t0, CPUs: []int{0, 1},
		cpu: map[int]cpuTimes{0: {user: 100, idle: 100}, 1: {user: 100, idle: 100}},
		procs: map[procKey]procTime{
			{pid: 10, start: 1}: {pid: 10, comm: "nginx", ticks: 0, set: set(0), hasSet: true, ours: true},
			{pid: 11, start: 1}: {pid: 11, comm: "origin", ticks: 0, set: set(0, 1), hasSet: true, ours: true},
			{pid: 20, start: 1}: {pid: 20, comm: "stranger", ticks: 0, set: set(1), hasSet: true},
			{pid: 23, start: 1}: {pid: 23, comm: "ksoftirqd/0", ticks: 0, set: set(0), hasSet: true},
		}}
	// CPU 0: 60 user+system, 10 softirq, 30 idle; CPU 1: 50 user, 20 steal, 30 idle.
	b := Sample{At: t0.Add(time.Second), CPUs: []int{0, 1},
		cpu: map[int]cpuTimes{0: {user: 150, system: 10, softirq: 10, idle: 130}, 1: {user: 150, steal: 20, idle: 130}},
		procs: map[procKey]procTime{
			{pid: 10, start: 1}: {pid: 10, comm: "nginx", ticks: 40, set: set(0), hasSet: true, ours: true},
			{pid: 11, start: 1}: {pid: 11, comm: "origin", ticks: 20, set: set(0, 1), hasSet: true, ours: true},
			{pid: 20, start: 1}: {pid: 20, comm: "stranger", ticks: 40, set: set(1), hasSet: true},
			{pid: 23, start: 1}: {pid: 23, comm: "ksoftirqd/0", ticks: 5, set: set(0), hasSet: true},
		}}
	d := Between(a, b)
	if d.Err != nil {
		t.Fatal(d.Err)
	}
	if len(d.PerCPU) != 2 {
		t.Fatalf("per CPU %+v, want 2", d.PerCPU)
	}
	near := func(x, y float64) bool { return math.Abs(x-y) < 1e-9 }
	c0, c1 := d.PerCPU[0], d.PerCPU[1]
	// CPU 0: busy 60 = ours 40+10 + ksoftirqd 5 + other 5; interrupts 10+5.
	if c0.CPU != 0 || !near(c0.Capacity, 1) || !near(c0.Ours, 0.5) || !near(c0.Interrupts, 0.15) || !near(c0.Other, 0.05) ||
		!near(c0.Steal, 0) || !near(c0.Idle, 0.3) {
		t.Errorf("CPU 0 %+v", c0)
	}
	// CPU 1: busy 70 = steal 20 + ours 10 + other 40.
	if c1.CPU != 1 || !near(c1.Steal, 0.2) || !near(c1.Ours, 0.1) || !near(c1.Other, 0.4) || !near(c1.Interrupts, 0) ||
		!near(c1.Share(c1.Steal), 0.2) {
		t.Errorf("CPU 1 %+v", c1)
	}
}

// The stall sampler wakes about once a period on each CPU and, asked for
// SCHED_FIFO as root, runs at it; its cost is printed, not asserted.
func TestStallSampler(t *testing.T) {
	s := StartStalls([]int{0}, time.Millisecond, DefaultStallThreshold, true)
	time.Sleep(300 * time.Millisecond)
	st := s.Stop()
	if st.Err != nil {
		t.Fatal(st.Err)
	}
	if st.Wakes < 30 || st.Wakes > 400 {
		t.Errorf("%d wake-ups in 300 ms at a 1 ms period", st.Wakes)
	}
	if os.Geteuid() == 0 && st.Policy != "fifo" {
		t.Errorf("policy %q as root, want fifo", st.Policy)
	}
	t.Logf("%d wakes, %d stalls, policy %s, %.4f CPU-s (%.2f%% of a core)", st.Wakes, len(st.Stalls), st.Policy, st.CPUSeconds, 100*st.CPUSeconds/0.3)
	for _, x := range st.Stalls {
		if x.Duration <= DefaultStallThreshold {
			t.Errorf("stall %v under the threshold", x)
		}
	}
}

// Between names the three other processes that took the most of each
// measured CPU, each with its time there: a process pinned to one CPU all
// of it on that CPU, one allowed on two half on each. Ours and ksoftirqd
// are never named.
func TestBetweenBusiestPerCPU(t *testing.T) {
	set := func(cpus ...int) unix.CPUSet {
		var s unix.CPUSet
		for _, c := range cpus {
			s.Set(c)
		}
		return s
	}
	t0 := time.Unix(1000, 0)
	procs := func(ticks ...uint64) map[procKey]procTime {
		return map[procKey]procTime{
			{pid: 10, start: 1}: {pid: 10, comm: "nginx", ticks: ticks[0], set: set(0), hasSet: true, weight: 1, ours: true},
			{pid: 20, start: 1}: {pid: 20, comm: "cc1", ticks: ticks[1], set: set(0), hasSet: true, weight: 1},
			{pid: 21, start: 1}: {pid: 21, comm: "dockerd", ticks: ticks[2], set: set(0, 1), hasSet: true, weight: 1},
			{pid: 22, start: 1}: {pid: 22, comm: "containerd", ticks: ticks[3], set: set(1), hasSet: true, weight: 1},
			{pid: 23, start: 1}: {pid: 23, comm: "sshd", ticks: ticks[4], set: set(0), hasSet: true, weight: 1},
			{pid: 24, start: 1}: {pid: 24, comm: "cron", ticks: ticks[5], set: set(0), hasSet: true, weight: 1},
			{pid: 25, start: 1}: {pid: 25, comm: "ksoftirqd/0", ticks: ticks[6], set: set(0), hasSet: true, weight: 1},
		}
	}
	a := Sample{At: t0, CPUs: []int{0, 1}, cpu: map[int]cpuTimes{0: {idle: 100}, 1: {idle: 100}}, procs: procs(0, 0, 0, 0, 0, 0, 0)}
	b := Sample{At: t0.Add(time.Second), CPUs: []int{0, 1}, cpu: map[int]cpuTimes{0: {user: 80, idle: 120}, 1: {user: 20, idle: 180}},
		procs: procs(30, 30, 20, 10, 2, 1, 40)}
	d := Between(a, b)
	if d.Err != nil {
		t.Fatal(d.Err)
	}
	want0 := []Proc{{20, "cc1", 0.3}, {21, "dockerd", 0.1}, {23, "sshd", 0.02}}
	want1 := []Proc{{21, "dockerd", 0.1}, {22, "containerd", 0.1}} // a tie: by PID
	if !slices.Equal(d.PerCPU[0].Busiest, want0) || !slices.Equal(d.PerCPU[1].Busiest, want1) {
		t.Errorf("busiest per CPU %+v and %+v, want %+v and %+v", d.PerCPU[0].Busiest, d.PerCPU[1].Busiest, want0, want1)
	}
	if u := d.PerCPU[1].Unseen; math.Abs(u) > 1e-9 {
		t.Errorf("CPU 1: unseen %v s, want 0: dockerd and containerd took all its other 0.2 s", u)
	}
	// CPU 1 busy 0.6 s of which the processes listed took 0.2: 0.4 s ran
	// in processes this host does not list.
	b.cpu[1] = cpuTimes{user: 60, idle: 140}
	if d := Between(a, b); math.Abs(d.PerCPU[1].Other-0.6) > 1e-9 || math.Abs(d.PerCPU[1].Unseen-0.4) > 1e-9 {
		t.Errorf("CPU 1: other %v s, unseen %v s; want 0.6 and 0.4", d.PerCPU[1].Other, d.PerCPU[1].Unseen)
	}
}

const softirqsFixture = `                    CPU0       CPU1
          HI:          0          0
       TIMER:    1071414    1049646
      NET_TX:        148         97
      NET_RX:   29838163   26270776
       BLOCK:          0    1149325
    IRQ_POLL:          0          0
     TASKLET:        463         28
       SCHED:    1299133    1602185
     HRTIMER:    1349897    1547042
         RCU:     802223    1022773
`

func TestParseSoftirqs(t *testing.T) {
	got, err := parseSoftirqs([]byte(softirqsFixture))
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]softirqCounts{
		0: {net: 148 + 29838163, other: 1071414 + 463 + 1299133 + 1349897 + 802223},
		1: {net: 97 + 26270776, other: 1049646 + 1149325 + 28 + 1602185 + 1547042 + 1022773},
	}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	for _, bad := range []string{"", "CPU0\n", "CPUx\nTIMER: 1\n", "CPU0\nTIMER 1\n", "CPU0\nTIMER: x\n", "CPU0\nTIMER: 1 2\n"} {
		if c, err := parseSoftirqs([]byte(bad)); err == nil {
			t.Errorf("%q: %+v, want an error", bad, c)
		}
	}
}

// The softirq time of a CPU is the network's in the share of its softirqs
// that were NET_RX or NET_TX over the interval, ksoftirqd's included; hard
// interrupts never are.
func TestBetweenNetInterrupts(t *testing.T) {
	t0 := time.Unix(1000, 0)
	a := Sample{At: t0, CPUs: []int{0, 1},
		cpu: map[int]cpuTimes{0: {idle: 100}, 1: {idle: 100}},
		procs: map[procKey]procTime{
			{pid: 23, start: 1}: {pid: 23, comm: "ksoftirqd/0", ticks: 0, weight: 1},
		},
		softirqs: map[int]softirqCounts{0: {net: 1000, other: 500}, 1: {net: 10, other: 10}}}
	// CPU 0: 30 ticks of softirq, 10 of hard interrupts, 10 of ksoftirqd;
	// 9000 network softirqs and 1000 others (TIMER, RCU). CPU 1: 20 ticks
	// of softirq, all of them timers'.
	b := Sample{At: t0.Add(time.Second), CPUs: []int{0, 1},
		cpu: map[int]cpuTimes{0: {system: 10, irq: 10, softirq: 30, idle: 150}, 1: {softirq: 20, idle: 180}},
		procs: map[procKey]procTime{
			{pid: 23, start: 1}: {pid: 23, comm: "ksoftirqd/0", ticks: 10, weight: 1, set: cpuSet(0), hasSet: true},
		},
		softirqs: map[int]softirqCounts{0: {net: 10000, other: 1500}, 1: {net: 10, other: 400}}}
	d := Between(a, b)
	if d.Err != nil {
		t.Fatal(d.Err)
	}
	near := func(x, y float64) bool { return math.Abs(x-y) < 1e-9 }
	if c0 := d.PerCPU[0]; !near(c0.Interrupts, 0.5) || !near(c0.NetInterrupts, 0.36) {
		t.Errorf("CPU 0 interrupts %.3f s, network's %.3f s: want 0.5 and 0.9 × (0.3 + 0.1) = 0.36", c0.Interrupts, c0.NetInterrupts)
	}
	if c1 := d.PerCPU[1]; !near(c1.Interrupts, 0.2) || c1.NetInterrupts != 0 {
		t.Errorf("CPU 1 interrupts %.3f s, network's %.3f s: want 0.2 and none", c1.Interrupts, c1.NetInterrupts)
	}
	// Without /proc/softirqs, none of it is told to be the network's.
	a.softirqs = nil
	if d := Between(a, b); d.PerCPU[0].NetInterrupts != 0 {
		t.Errorf("no softirq counts, network's %.3f s, want none", d.PerCPU[0].NetInterrupts)
	}
}

// A virtual machine's ticks arrive in bursts: over a second, /proc/stat's
// ticks say CPU 0 was 10 % in system and 80 % in softirq, while its precise
// idle says it ran half the second, our engine pinned there 0.45 s of it.
// The engine's time is ours, the 0.05 s in no process interrupts: no other
// process, no host's interrupts. The stall sampler's thread, ended before
// the second sample, is credited as ours from that rest.
func TestBetweenPreciseOverTicks(t *testing.T) {
	t0 := time.Unix(1000, 0)
	engine := procTime{pid: 10, comm: "nginx", set: cpuSet(0), hasSet: true, weight: 1, ours: true}
	a := Sample{At: t0, CPUs: []int{0}, cpu: map[int]cpuTimes{0: {idle: 100}},
		procs: map[procKey]procTime{{pid: 10, start: 1}: engine}}
	engine.ticks = 45
	b := Sample{At: t0.Add(time.Second), CPUs: []int{0}, cpu: map[int]cpuTimes{0: {system: 10, softirq: 80, idle: 150}},
		procs: map[procKey]procTime{{pid: 10, start: 1}: engine}}
	near := func(x, y float64) bool { return math.Abs(x-y) < 1e-9 }
	d := Between(a, b)
	c := d.PerCPU[0]
	if d.Err != nil || !near(c.Capacity, 1) || !near(c.Ours, 0.45) || !near(c.Interrupts, 0.05) || c.Other != 0 || c.Unseen != 0 ||
		!near(d.BusyShare[0], 0.5) || d.OtherShare != 0 {
		t.Errorf("CPU 0 %+v, busy %v, other share %v: want ours 0.45, interrupts 0.05, no other", c, d.BusyShare, d.OtherShare)
	}
	d = BetweenWith(a, b, map[int]float64{0: 0.03, 1: 0.5})
	if c := d.PerCPU[0]; !near(c.Ours, 0.48) || !near(c.Interrupts, 0.02) || c.Other != 0 {
		t.Errorf("credited: CPU 0 %+v, want ours 0.48, interrupts 0.02", c)
	}
	// Without ticks of interrupts, the time in no process is another's.
	b.cpu[0] = cpuTimes{system: 90, idle: 150}
	engine.ticks = 20
	b.procs[procKey{pid: 10, start: 1}] = engine
	if c := Between(a, b).PerCPU[0]; !near(c.Ours, 0.2) || !near(c.Other, 0.3) || !near(c.Unseen, 0.3) || c.Interrupts != 0 {
		t.Errorf("CPU 0 %+v, want ours 0.2, 0.3 other and unseen", c)
	}
}

func cpuSet(cpus ...int) unix.CPUSet {
	var s unix.CPUSet
	for _, c := range cpus {
		s.Set(c)
	}
	return s
}

func TestStateOn(t *testing.T) {
	line := "4242 (a (b) c) R 1 4242 4242 0 -1 4194560 100 0 0 0 50 7 0 0 20 0 3 0 12345 1000 100 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n"
	if state, cpu, ok := stateOn([]byte(line)); !ok || state != 'R' || cpu != 1 {
		t.Errorf("state %c, CPU %d, %v: want R on CPU 1", state, cpu, ok)
	}
	for _, bad := range []string{"", "1 (x) R 1 2", "1 (x) RR" + strings.Repeat(" 0", 40)} {
		if _, _, ok := stateOn([]byte(bad)); ok {
			t.Errorf("%q read", bad)
		}
	}
}

// A stall is the cell's when a thread of the cell is runnable on its CPU
// as the sampler wakes: a busy process pinned to CPU 0 is, on CPU 0 only;
// a sleeping one is nowhere.
func TestCellRunnable(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("needs two CPUs")
	}
	start := func(script string) *exec.Cmd {
		c := exec.Command("sh", "-c", script)
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
		return c
	}
	busy, sleeping := start("while :; do :; done"), start("sleep 10")
	if err := unix.SchedSetaffinity(busy.Process.Pid, ptrSet(cpuSet(0))); err != nil {
		t.Fatal(err)
	}
	self := unix.Gettid()
	// The busy loop moves to CPU 0 at its next tick; give it a second.
	deadline := time.Now().Add(time.Second)
	for !cellRunnable([]int{busy.Process.Pid}, 0, self) {
		if time.Now().After(deadline) {
			t.Fatal("a busy loop pinned to CPU 0 is not runnable there")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if cellRunnable([]int{busy.Process.Pid}, 1, self) {
		t.Error("a busy loop pinned to CPU 0 is runnable on CPU 1")
	}
	// Until sleep has started, the shell is runnable.
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", sleeping.Process.Pid)); err == nil {
			if state, _, ok := stateOn(b); ok && state == 'S' {
				break
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, c := range []int{0, 1} {
		if cellRunnable([]int{sleeping.Process.Pid, 999999999}, c, self) {
			t.Errorf("a sleeping process is runnable on CPU %d", c)
		}
	}
	// The sampler's own thread is never the cell's.
	if cellRunnable([]int{os.Getpid()}, -1, self) {
		t.Error("a thread of this process runnable on CPU -1")
	}
}

func ptrSet(s unix.CPUSet) *unix.CPUSet { return &s }

// The sampler runs in a process of its own: hlsbench's goroutines, busy
// on every CPU beside it, do not read as stalls. In this process, with 8
// busy goroutines, a SCHED_FIFO sampler on both CPUs of the 2-core host
// saw 2.8 s of stalls in 2 s (2.1 s here in 1 s with 2×NumCPU): the time a
// woken sampler thread waited for one of the runtime's Ps.
func TestStallsApartFromBusyGoroutines(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SCHED_FIFO needs root: at SCHED_OTHER busy tasks delay the sampler by design")
	}
	cpus := []int{0}
	if runtime.NumCPU() > 1 {
		cpus = []int{0, 1}
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 4 * runtime.NumCPU() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			spin(&stop)
		}()
	}
	st := sampleBeside(t, cpus, true, &stop, &wg)
	var total time.Duration
	for _, x := range st.Stalls {
		total += x.Duration
	}
	t.Logf("%d wakes, %d stalls, %v in all, policy %s", st.Wakes, len(st.Stalls), total, st.Policy)
	if st.Policy != "fifo" {
		t.Errorf("policy %q, want fifo", st.Policy)
	}
	// The host's own stalls (steal, interrupts) are a few ms a second;
	// the runtime's were the whole second.
	if limit := time.Duration(len(cpus)) * 100 * time.Millisecond; total > limit {
		t.Errorf("%v of stalls in 1 s on %d CPUs beside busy goroutines, want under %v: the sampler waits for our own runtime", total, len(cpus), limit)
	}
	pid := samplerPID()
	if pid == 0 || pid == os.Getpid() {
		t.Fatalf("sampler process %d: want one apart from this one (%d)", pid, os.Getpid())
	}
	if ours := Self(nil); !slices.Contains(ours.PIDs, pid) {
		t.Errorf("Self %v: want the sampler process %d counted ours", ours.PIDs, pid)
	}
}

// CloseSampler ends the sampler's process (a run leaves nothing behind),
// and a sampler started after it starts another.
func TestCloseSampler(t *testing.T) {
	s := StartStalls([]int{0}, time.Millisecond, DefaultStallThreshold, true)
	pid := samplerPID()
	if pid == 0 {
		t.Fatal("no sampler process")
	}
	s.Stop()
	CloseSampler()
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("sampler process %d still runs after CloseSampler", pid)
	}
	if samplerPID() != 0 {
		t.Errorf("sampler PID %d after CloseSampler, want 0", samplerPID())
	}
	s = StartStalls([]int{0}, time.Millisecond, DefaultStallThreshold, true)
	time.Sleep(20 * time.Millisecond)
	if st := s.Stop(); st.Err != nil || st.Wakes == 0 {
		t.Errorf("after a close: %d wakes, err %v", st.Wakes, st.Err)
	}
	if p := samplerPID(); p == 0 || p == pid {
		t.Errorf("sampler process %d after a close (was %d): want a new one", p, pid)
	}
	CloseSampler()
}

// spin keeps its thread busy until stop.
func spin(stop *atomic.Bool) {
	x := 0
	for !stop.Load() {
		for i := range 1000 {
			x += i
		}
	}
	_ = x
}

// sampleBeside samples stalls on cpus for a second while the busy
// goroutines of wg run, then stops them.
func sampleBeside(t *testing.T, cpus []int, fifo bool, stop *atomic.Bool, wg *sync.WaitGroup) Stalls {
	t.Helper()
	s := StartStalls(cpus, time.Millisecond, DefaultStallThreshold, fifo)
	time.Sleep(time.Second)
	st := s.Stop()
	stop.Store(true)
	wg.Wait()
	if st.Err != nil {
		t.Fatal(st.Err)
	}
	return st
}
