package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hlsbench/hlsbench/results"
)

// An engine killed during a pass fails the run: the pass it died in is
// invalid with how it ended, its tests keep no figure, the error names the
// signal, and the run's directory keeps its output.
func TestRunEngineKilledMidPass(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	t.Setenv(asMain, "1")
	dir := t.TempDir()
	done := make(chan struct{})
	var code int
	var errs string
	go func() {
		defer close(done)
		code, _, errs = runCLI(t, context.Background(), "run", "--engine", "builtin", "--workload", "hit-path", "--rate", "500",
			"--passes", "40", "--warmups", "0", "--pass-duration", "500ms", "--host-repeats", "0", "--out", dir)
	}()
	deadline := time.Now().Add(60 * time.Second)
	for finishedPasses(dir) < 2 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	pid := childRunning("serve-cache")
	if pid == 0 {
		t.Fatalf("no serve-cache child after %d passes", finishedPasses(dir))
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the run went on for a minute after its engine was killed")
	}
	if code != ExitFailure {
		t.Fatalf("exit %d, want %d: %s", code, ExitFailure, errs)
	}
	if !strings.Contains(errs, "was killed by signal 9") || !strings.Contains(errs, "its output is kept in") {
		t.Errorf("the error does not say how the engine ended and where its output is: %s", errs)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "run-*.json"))
	if len(files) != 1 {
		t.Fatalf("%d run files", len(files))
	}
	run, err := results.Load(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != results.StatusFailed {
		t.Errorf("status %q, want failed", run.Status)
	}
	for _, r := range run.Results {
		if r.Value != nil || !strings.Contains(r.NoValue, "killed by signal 9") {
			t.Errorf("%s: value %v, no_value %q: want null with how the engine ended", r.ID, r.Value, r.NoValue)
		}
		if n := len(r.Passes); n >= 40 {
			t.Errorf("%s: %d passes after the engine was killed", r.ID, n)
		}
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "run-"+run.ID+".logs", "hit-path-builtin.log"))
	if len(logs) != 1 {
		t.Fatalf("no kept output: %v", logs)
	}
	if b, _ := os.ReadFile(logs[0]); !bytes.Contains(b, []byte("--- engine (builtin)")) || !bytes.Contains(b, []byte("--- origin (builtin)")) {
		t.Errorf("kept output lacks the engine's or the origin's section:\n%s", b)
	}
	if kids := children(); len(kids) > 0 {
		t.Errorf("child processes left running: %v", kids)
	}
}

// childRunning is the pid of a live child of this process whose command
// line holds word, or 0.
func childRunning(word string) int {
	for _, k := range children() {
		pid, _, _ := strings.Cut(k, " ")
		n, err := strconv.Atoi(pid)
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + pid + "/cmdline")
		if err == nil && bytes.Contains(b, []byte(word)) {
			return n
		}
	}
	return 0
}
