package cpuload

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
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
