package workloads

import (
	"strings"
	"testing"
	"time"

	"github.com/hlsbench/hlsbench/engines/cpuload"
	"github.com/hlsbench/hlsbench/results"
	"github.com/hlsbench/hlsbench/workloads/loadgen"
)

// cpuSnapshots are two readings of CPU 0 far enough apart that the kernel
// counted ticks between them.
func cpuSnapshots(t *testing.T) (snapshot, snapshot) {
	t.Helper()
	a := cpuload.Take([]int{0}, cpuload.Ours{})
	time.Sleep(60 * time.Millisecond)
	b := cpuload.Take([]int{0}, cpuload.Ours{})
	if d := cpuload.Between(a, b); d.Err != nil || len(d.BusyShare) == 0 {
		t.Skipf("no CPU reading on this machine: %v", d.Err)
	}
	return snapshot{cpu: &a}, snapshot{cpu: &b}
}

// A pinned generator is judged on its sending window, as its event loops
// are: CPU spent draining slow answers after the last send does not make
// the sending window busy, and a busy sending window is not hidden by a
// long, idle drain after it.
func TestGeneratorBusyJudgesTheSendingWindow(t *testing.T) {
	a, b := cpuSnapshots(t)
	tgt := &Target{GeneratorCPUs: []int{1}}
	for _, c := range []struct {
		name string
		lr   loadgen.Result
		busy bool
	}{
		{"cpu spent draining", loadgen.Result{OK: 100, Elapsed: 10 * time.Second, CPUSeconds: 9.6,
			SendWindow: 5 * time.Second, SendCPUSeconds: 1}, false},
		{"busy while sending, idle drain", loadgen.Result{OK: 100, Elapsed: 10 * time.Second, CPUSeconds: 2,
			SendWindow: time.Second, SendCPUSeconds: 0.98}, true},
		{"polling is rest", loadgen.Result{OK: 100, Elapsed: time.Second, CPUSeconds: 0.99, SpinSeconds: 0.5,
			SendWindow: time.Second, SendCPUSeconds: 0.99, SendSpinSeconds: 0.5}, false},
	} {
		p := &passInfo{lr: &c.lr, ev: &results.Evidence{OtherCPU: &results.OtherCPU{}}}
		generatorBusy(tgt, p, a, b)
		if got := p.busy != ""; got != c.busy {
			t.Errorf("%s: busy %v (%q, share %v), want %v", c.name, got, p.busy, p.ev.OtherCPU.GeneratorBusyShare, c.busy)
		}
		if c.busy && !strings.Contains(p.busy, "while sending") {
			t.Errorf("%s: the reason does not say the window: %q", c.name, p.busy)
		}
	}
}
