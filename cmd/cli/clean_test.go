package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/engines/runstate"
	"github.com/hlsbench/hlsbench/results"
)

func init() {
	// No test here touches the machine's runtime directory: the runs these
	// tests start record themselves, and wait for each other, in one of
	// their own. Tests of the state itself each use a private one.
	if os.Getenv(runstate.DirEnv) == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			dir = os.TempDir()
		}
		os.Setenv(runstate.DirEnv, filepath.Join(dir, "hlsbench", "test-run"))
	}
}

// needEngine skips a test whose engine is not installed, except under
// CI=true, where it fails.
func needEngine(t *testing.T, name string) {
	t.Helper()
	e, ok := engines.Lookup(name)
	if !ok {
		return
	}
	if _, err := engines.FindBinary(e, ""); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and %v", err)
		}
		t.Skipf("%s not installed: %v", e.Binary(), err)
	}
}

// needTerminator skips a test whose terminator is not installed, except
// under CI=true, where it fails.
func needTerminator(t *testing.T, name string) {
	t.Helper()
	if name == "" {
		return
	}
	if _, err := engines.FindTerminator(name); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and %v", err)
		}
		t.Skipf("%s not installed: %v", name, err)
	}
}

// A process as /proc/PID/stat shows it: alive is false for a zombie.
type procID struct {
	pid   int
	start uint64
}

func procStat(pid int) (start uint64, alive bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0, false
	}
	start, _ = strconv.ParseUint(f[19], 10, 64) // field 22
	return start, f[0] != "Z" && f[0] != "X"
}

// running says whether the very process p (same PID, same start) runs.
func (p procID) running() bool {
	start, alive := procStat(p.pid)
	return alive && start == p.start
}

// groupOf lists the live processes in process group pgid.
func groupOf(pgid int) []procID {
	var out []procID
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, s := range stats {
		b, err := os.ReadFile(s)
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 20 || f[2] != strconv.Itoa(pgid) || f[0] == "Z" {
			continue
		}
		pid, _ := strconv.Atoi(strings.Fields(string(b))[0])
		start, _ := strconv.ParseUint(f[19], 10, 64)
		out = append(out, procID{pid, start})
	}
	return out
}

// syncBuffer is a bytes.Buffer a child's output can be copied into while
// the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// killedRun is what a SIGKILLed `hlsbench run` left.
type killedRun struct {
	pid   int
	state runstate.State
	procs []procID // alive right after the kill
}

// engineProc is the name StartProcess records an engine under: its own.
func engineProc(engine string) string { return engine }

// killRunMidway starts `hlsbench run --engine engine` as a child recording
// into dir, waits until the engine runs (its group has members processes
// or more) and the load is on, then kills it with SIGKILL.
func killRunMidway(t *testing.T, dir string, c killCase) killedRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	engine := c.engine
	args := []string{"run", "--engine", engine, "--workload", "hit-path",
		"--passes", "1", "--warmups", "0", "--pass-duration", "30s", "--rate", "200", "--out", t.TempDir()}
	if c.terminator != "" {
		args = append(args, "--topology", "proxyv2", "--terminator", c.terminator)
	}
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), asMain+"=1", runstate.DirEnv+"="+dir)
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	kill := func() {
		cmd.Process.Kill() // our child, not yet reaped: its PID is its own
		cmd.Wait()
	}
	var st runstate.State
	deadline := time.Now().Add(time.Minute)
	for {
		files, _ := filepath.Glob(filepath.Join(dir, "run-*.json"))
		if len(files) == 1 {
			st, _ = runstate.ReadState(files[0])
		}
		if up(st, c) {
			break
		}
		if time.Now().After(deadline) || cmd.ProcessState != nil {
			kill()
			t.Fatalf("%s did not come up within a minute; state %+v\n%s", engine, st, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(time.Second) // the engine answers and the pass is on
	kill()
	// The state as it was when hlsbench died.
	files, _ := filepath.Glob(filepath.Join(dir, "run-*.json"))
	if len(files) != 1 {
		t.Fatalf("%d state files after the kill; want the killed run's", len(files))
	}
	st, err := runstate.ReadState(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if st.PID != cmd.Process.Pid {
		t.Fatalf("state of pid %d, want %d", st.PID, cmd.Process.Pid)
	}
	time.Sleep(200 * time.Millisecond) // let PR_SET_PDEATHSIG do what it can
	k := killedRun{pid: cmd.Process.Pid, state: st}
	for _, p := range st.Procs {
		k.procs = append(k.procs, groupOf(p.PGID)...)
	}
	t.Logf("killed hlsbench (pid %d) left %d processes: %+v, dirs %v", k.pid, len(k.procs), st.Procs, st.Dirs)
	return k
}

// up says whether st shows the engine started with its processes, and its
// terminator, if it has one.
func up(st runstate.State, c killCase) bool {
	if c.engine != "builtin" && len(st.Dirs) < 2 {
		return false
	}
	running := func(name string, members int) bool {
		for _, p := range st.Procs {
			if p.Name == name && len(groupOf(p.PGID)) >= members {
				return true
			}
		}
		return false
	}
	return running(engineProc(c.engine), c.members) && (c.terminator == "" || running(c.terminator, 1))
}

// killCase is an engine a killed run leaves, how many processes it has up,
// and the terminator in front of it (topology proxyv2), if any.
type killCase struct {
	engine     string
	members    int
	left       bool // survives PR_SET_PDEATHSIG: a leftover is expected
	terminator string
}

func (c killCase) name() string {
	if c.terminator == "" {
		return c.engine
	}
	return c.engine + "+" + c.terminator
}

// The engines a killed run leaves, and how many processes each has up.
var killCases = []killCase{
	{engine: "builtin", members: 1},
	{engine: "varnish", members: 2, left: true},
	{engine: "nginx", members: 2, left: true},
	// A terminator is ended with its engine: hitch forks its workers,
	// haproxy runs as one process.
	{engine: "nginx", members: 2, left: true, terminator: "hitch"},
	{engine: "builtin", members: 1, terminator: "haproxy"},
}

// checkLeft checks that the killed run left what it should.
func checkLeft(t *testing.T, k killedRun, left bool) {
	t.Helper()
	if left && len(k.procs) == 0 {
		t.Errorf("no process left running; the test proves nothing")
	}
	for _, d := range k.state.Dirs {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("scratch directory: %v", err)
		}
	}
}

// checkCleaned checks that nothing the killed run left remains, and that
// the message names it.
func checkCleaned(t *testing.T, dir string, k killedRun, msg string) {
	t.Helper()
	for _, p := range k.procs {
		if p.running() {
			t.Errorf("pid %d (started at tick %d) still running", p.pid, p.start)
		}
	}
	for _, d := range k.state.Dirs {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: %v", d, err)
		}
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "run-*")); len(files) != 0 {
		t.Errorf("state left: %v", files)
	}
	want := fmt.Sprintf("hlsbench: removed what a killed run left (run %s, pid %d): ", k.state.Run, k.pid)
	if !strings.Contains(msg, want) {
		t.Errorf("output %q\nwant it to say %q", msg, want)
	}
	for _, p := range k.procs {
		if !strings.Contains(msg, " "+strconv.Itoa(p.pid)) {
			t.Errorf("output does not name pid %d: %q", p.pid, msg)
		}
	}
	for _, d := range k.state.Dirs {
		if !strings.Contains(msg, d) {
			t.Errorf("output does not name %s: %q", d, msg)
		}
	}
}

// kill -9 of hlsbench mid-run; `hlsbench clean` ends what it left.
func TestCleanAfterKilledRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts engines")
	}
	for _, c := range killCases {
		t.Run(c.name(), func(t *testing.T) {
			needEngine(t, c.engine)
			needTerminator(t, c.terminator)
			dir := t.TempDir()
			t.Setenv(runstate.DirEnv, dir)
			k := killRunMidway(t, dir, c)
			checkLeft(t, k, c.left)

			code, _, errs := runCLI(t, context.Background(), "clean", "--dry-run")
			if code != 0 || !strings.Contains(errs, "--dry-run: nothing removed") {
				t.Errorf("clean --dry-run: exit %d: %s", code, errs)
			}
			for _, p := range k.procs {
				if !p.running() {
					t.Errorf("clean --dry-run stopped pid %d", p.pid)
				}
			}
			code, _, errs = runCLI(t, context.Background(), "clean")
			t.Logf("clean: %s", errs)
			if code != 0 {
				t.Fatalf("clean: exit %d: %s", code, errs)
			}
			checkCleaned(t, dir, k, errs)

			code, _, errs = runCLI(t, context.Background(), "clean")
			if code != 0 || !strings.Contains(errs, "nothing to clean") {
				t.Errorf("clean again: exit %d: %s", code, errs)
			}
		})
	}
}

// kill -9 of hlsbench mid-run; the next `hlsbench run` ends what it left
// before it starts.
func TestRunSweepsKilledRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts engines")
	}
	for _, c := range killCases {
		t.Run(c.name(), func(t *testing.T) {
			needEngine(t, c.engine)
			needTerminator(t, c.terminator)
			dir := t.TempDir()
			t.Setenv(runstate.DirEnv, dir)
			k := killRunMidway(t, dir, c)
			checkLeft(t, k, c.left)

			code, _, errs := runCLI(t, context.Background(), "run", "--runtime", "inproc", "--workload", "hit-path",
				"--passes", "1", "--warmups", "0", "--pass-duration", "200ms", "--rate", "100", "--no-save")
			t.Logf("run: %s", errs)
			// A short in-process run may be invalid on a busy machine (exit
			// 3); what matters here is that it ran after the sweep.
			if code != ExitOK && code != ExitInvalid {
				t.Fatalf("run: exit %d: %s", code, errs)
			}
			checkCleaned(t, dir, k, errs)
		})
	}
}

func TestCleanNothing(t *testing.T) {
	t.Setenv(runstate.DirEnv, filepath.Join(t.TempDir(), "none-yet"))
	code, out, errs := runCLI(t, context.Background(), "clean")
	if code != 0 || out != "" || errs != "hlsbench: nothing to clean\n" {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if code, _, errs := runCLI(t, context.Background(), "clean", "extra"); code != ExitUsage {
		t.Errorf("clean extra: exit %d: %s", code, errs)
	}
}

// A live run is left alone by clean, and makes the next run wait, refuse,
// or run beside it, as --lock says.
func TestRunLock(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(runstate.DirEnv, dir)
	ctx := context.Background()
	first, err := runstate.Begin(runstate.Options{Dir: dir, Lock: "wait"})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	l, err := runstate.LockBench(ctx, dir, runstate.LockWait, first.Holder(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	holder := fmt.Sprintf("run %s (pid %d)", first.ID(), os.Getpid())
	quick := []string{"run", "--runtime", "inproc", "--workload", "hit-path", "--passes", "1", "--warmups", "0",
		"--pass-duration", "200ms", "--rate", "100"}

	code, _, errs := runCLI(t, ctx, "clean")
	if code != 0 || !strings.Contains(errs, holder+" is running: left alone") || !strings.Contains(errs, "nothing to clean") {
		t.Errorf("clean beside a live run: exit %d: %s", code, errs)
	}
	if _, err := os.Stat(first.StateFile()); err != nil {
		t.Errorf("clean touched a live run: %v", err)
	}

	code, _, errs = runCLI(t, ctx, append(quick, "--lock", "fail", "--no-save")...)
	if code != ExitFailure || !strings.Contains(errs, "another benchmark is running: "+holder) {
		t.Errorf("--lock fail: exit %d: %s", code, errs)
	}

	wctx, cancel := context.WithTimeout(ctx, time.Second)
	code, _, errs = runCLI(t, wctx, append(quick, "--no-save")...)
	cancel()
	if code != ExitInterrupted || !strings.Contains(errs, "hlsbench: waiting for "+holder+" to finish; --lock fail to refuse\n") {
		t.Errorf("--lock wait: exit %d: %s", code, errs)
	}

	out := t.TempDir()
	code, _, errs = runCLI(t, ctx, append(quick, "--lock", "none", "--out", out)...)
	if (code != ExitOK && code != ExitInvalid) || !strings.Contains(errs, "--lock none: "+holder+" is running too") {
		t.Errorf("--lock none: exit %d: %s", code, errs)
	}
	files, _ := filepath.Glob(filepath.Join(out, "run-*.json"))
	if len(files) != 1 {
		t.Fatalf("%d results files", len(files))
	}
	run, err := results.Load(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if run.Config["lock"] != "none" {
		t.Errorf("results config lock = %v, want none", run.Config["lock"])
	}

	code, _, errs = runCLI(t, ctx, "run", "--lock", "sometimes")
	if code != ExitUsage || !strings.Contains(errs, "--lock") {
		t.Errorf("--lock sometimes: exit %d: %s", code, errs)
	}

	// Every run ended cleanly: only the live one's state remains.
	files, _ = filepath.Glob(filepath.Join(dir, "run-*.json"))
	if len(files) != 1 || files[0] != first.StateFile() {
		t.Errorf("state files: %v", files)
	}
}
