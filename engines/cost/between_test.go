package cost

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// between on made-up samples of an engine's group (10) beside another (20).
func TestBetween(t *testing.T) {
	t0 := time.Unix(1000, 0)
	const mb = 1 << 20
	a := sample{at: t0, procs: map[key]proc{
		{10, 1}: {ppid: 1, pgid: 10, ticks: 100, reset: true},              // the leader, hlsbench's child
		{11, 2}: {ppid: 10, pgid: 10, ticks: 50, reset: true},              // a worker
		{12, 2}: {ppid: 10, pgid: 10, ticks: 30, children: 5, reset: true}, // ends, reaped by 10
		{14, 3}: {ppid: 10, pgid: 10, ticks: 7, reset: true},               // ends, reaped by 10…
		{15, 3}: {ppid: 14, pgid: 10, ticks: 3, reset: true},               // …after it reaped this one
		{16, 3}: {ppid: 1, pgid: 10, ticks: 9, reset: true},                // ends, reaped outside: lost
		{20, 1}: {ppid: 1, pgid: 20, ticks: 1000, reset: true},
	}}
	b := sample{at: t0.Add(2 * time.Second), procs: map[key]proc{
		// 12 ended at 55 ticks (its reaped children's 5 included), 14 at
		// 9, 15 at 4: all 68 came to 10 when it reaped them.
		{10, 1}: {ppid: 1, pgid: 10, ticks: 110, children: 68, hwm: 4 * mb},
		{11, 2}: {ppid: 10, pgid: 10, ticks: 80, hwm: 8 * mb},
		{17, 9}: {ppid: 11, pgid: 10, ticks: 4, children: 2, hwm: 1 * mb}, // new in the pass
		{12, 9}: {ppid: 10, pgid: 10, ticks: 1},                           // new, in a reused PID
		{20, 1}: {ppid: 1, pgid: 20, ticks: 2000, hwm: 100 * mb},
	}}
	u := between(Group{Name: "engine", PGID: 10}, a, b)
	// 10 + 30 by the two still there, 6 + 1 by the new ones, and of the
	// 68 reaped, 68 - (35 + 7 + 3) in the pass.
	want := Usage{Name: "engine", PGID: 10, Interval: 2 * time.Second, CPUSeconds: 0.70,
		PeakRSSBytes: 13 * mb, MaxProcRSSBytes: 8 * mb, Procs: 8, Exited: 4}
	if math.Abs(u.CPUSeconds-want.CPUSeconds) > 1e-9 {
		t.Errorf("cpu %.3f s, want %.3f", u.CPUSeconds, want.CPUSeconds)
	}
	u.CPUSeconds = want.CPUSeconds
	if u != want {
		t.Errorf("usage\n got %+v\nwant %+v", u, want)
	}
	other := between(Group{Name: "other", PGID: 20}, a, b)
	if other.CPUSeconds != 10 || other.Procs != 1 || other.PeakRSSBytes != 100*mb || other.Err != nil {
		t.Errorf("other group: %+v", other)
	}

	// A parent that ignores SIGCHLD gains nothing when its children end:
	// nothing is taken off.
	ignoring := b
	ignoring.procs = map[key]proc{{10, 1}: {ppid: 1, pgid: 10, ticks: 100}, {11, 2}: {ppid: 10, pgid: 10, ticks: 60}}
	if u := between(Group{Name: "engine", PGID: 10}, a, ignoring); math.Abs(u.CPUSeconds-0.1) > 1e-9 || u.Exited != 4 {
		t.Errorf("children not reaped: %+v, want 0.1 s and 4 exited", u)
	}

	// A peak not reset at the start is since the process started.
	unreset := a
	unreset.procs = map[key]proc{{11, 2}: {ppid: 10, pgid: 10, ticks: 50}}
	if u := between(Group{Name: "engine", PGID: 10}, unreset, b); !u.PeakSinceStart {
		t.Errorf("reset failed, yet %+v", u)
	}
	if u.PeakSinceStart {
		t.Errorf("every peak reset, yet %+v", u)
	}

	if u := between(Group{Name: "gone", PGID: 30}, a, b); u.Err == nil || !strings.Contains(u.Err.Error(), "no process in group 30") {
		t.Errorf("empty group: %+v", u)
	}
	broken := b
	broken.err = errors.New("read processes: boom")
	if u := between(Group{Name: "engine", PGID: 10}, a, broken); u.Err == nil || u.CPUSeconds != 0 {
		t.Errorf("failed reading: %+v", u)
	}
}
