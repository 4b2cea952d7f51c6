package workloads

import (
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"

	"github.com/hlsbench/hlsbench/engines/cost"
)

// The stall sampler looks only at the cell's own processes — its engine's,
// terminator's and origin's groups — not at hlsbench's threads (the
// generator is the instrument, always busy on its own CPU) nor at any other
// group's: in a suite those looks, at real-time priority on the engine's
// CPU, read every frozen cell's threads and held the CPU for milliseconds.
func TestCellProcessesAreTheGroups(t *testing.T) {
	child := exec.Command("sleep", "10")
	child.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { child.Process.Kill(); child.Wait() }()
	other := exec.Command("sleep", "10")
	other.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { other.Process.Kill(); other.Wait() }()

	tgt := &Target{Groups: []cost.Group{{Name: costEngine, PGID: child.Process.Pid}}}
	got := cellProcesses(tgt)
	if !slices.Contains(got, child.Process.Pid) {
		t.Errorf("cellProcesses = %v, want the engine's %d", got, child.Process.Pid)
	}
	for _, pid := range []int{os.Getpid(), other.Process.Pid} {
		if slices.Contains(got, pid) {
			t.Errorf("cellProcesses = %v holds %d, not of the cell", got, pid)
		}
	}
	if got := cellProcesses(&Target{}); len(got) != 0 {
		t.Errorf("a cell without groups (in-process) looks at %v", got)
	}
}
