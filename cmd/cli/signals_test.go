package cli

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hlsbench/hlsbench/engines/runstate"
	"github.com/hlsbench/hlsbench/results"
)

// The first signal of any kind cancels; a second SIGINT or SIGTERM exits;
// SIGPIPE and SIGHUP never do (a closed pipe raises one per write).
func TestWatchSignals(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sigs    []os.Signal
		exits   bool
		cancels int
		socket  bool // the SIGPIPEs are a socket's: stdout and stderr are there
	}{
		{"one interrupt", []os.Signal{os.Interrupt}, false, 1, false},
		{"two interrupts", []os.Signal{os.Interrupt, os.Interrupt}, true, 1, false},
		{"pipe then pipes", []os.Signal{syscall.SIGPIPE, syscall.SIGPIPE, syscall.SIGPIPE}, false, 3, false},
		{"pipe then interrupt", []os.Signal{syscall.SIGPIPE, os.Interrupt}, true, 1, false},
		{"hangup then term", []os.Signal{syscall.SIGHUP, syscall.SIGTERM}, true, 1, false},
		{"a socket's pipes", []os.Signal{syscall.SIGPIPE, syscall.SIGPIPE}, false, 0, true},
		{"a socket's pipe then interrupt", []os.Signal{syscall.SIGPIPE, os.Interrupt}, false, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sigs := make(chan os.Signal, len(tc.sigs))
			for _, s := range tc.sigs {
				sigs <- s
			}
			close(sigs)
			cancels, exited := 0, false
			var errb bytes.Buffer
			watchSignals(sigs, func() { cancels++ }, &errb, func() { exited = true }, func() bool { return !tc.socket })
			if exited != tc.exits || cancels != tc.cancels {
				t.Errorf("exited %v after %d cancels, want %v after %d", exited, cancels, tc.exits, tc.cancels)
			}
			if exited != strings.Contains(errb.String(), "interrupted again") {
				t.Errorf("stderr %q", errb.String())
			}
		})
	}
}

// `hlsbench run … 2>&1 | head -1`: once the reader is gone, hlsbench stops
// as for Ctrl-C — its children torn down, the finished passes kept, the
// file interrupted, exit 130 — instead of dying of SIGPIPE with its
// children left running.
func TestRunClosedPipe(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	state, out := t.TempDir(), t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "run", "--workload", "hit-path", "--rate", "500", "--passes", "50",
		"--warmups", "0", "--pass-duration", "500ms", "--out", out, "--lock", "none")
	cmd.Env = append(os.Environ(), asMain+"=1", runstate.DirEnv+"="+state)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	// Read until a pass has finished, then quit reading, as head does.
	var seen bytes.Buffer
	var mu sync.Mutex
	sc := bufio.NewScanner(r)
	deadline := time.Now().Add(time.Minute)
	for sc.Scan() && time.Now().Before(deadline) {
		mu.Lock()
		seen.WriteString(sc.Text() + "\n")
		mu.Unlock()
		if finishedPasses(out) >= 2 {
			break
		}
	}
	r.Close()
	err = cmd.Wait()
	code := cmd.ProcessState.ExitCode()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		t.Fatalf("hlsbench died of %v after its reader quit (%v); it printed:\n%s", ws.Signal(), err, seen.String())
	}
	if code != ExitInterrupted {
		t.Fatalf("exit %d, want %d; it printed:\n%s", code, ExitInterrupted, seen.String())
	}
	files, _ := filepath.Glob(filepath.Join(out, "run-*.json"))
	if len(files) != 1 {
		t.Fatalf("%d run files", len(files))
	}
	run, err := results.Load(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if !run.Interrupted || run.Status != results.StatusInterrupted {
		t.Errorf("interrupted %v, status %q: want interrupted", run.Interrupted, run.Status)
	}
	// Its state file is gone with everything it recorded: nothing to clean.
	left, _ := filepath.Glob(filepath.Join(state, "run-*.json"))
	for _, f := range left {
		st, err := runstate.ReadState(f)
		if err == nil && (len(st.Procs) > 0 || len(st.Dirs) > 0) {
			t.Errorf("left behind: %+v", st)
		}
		for _, p := range st.Procs {
			if len(groupOf(p.PGID)) > 0 {
				t.Errorf("process group %d (%s) still running", p.PGID, p.Name)
			}
		}
	}
}
