package cli

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/client"

	"github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/engines/launch"
	"github.com/hlsbench/hlsbench/engines/runstate"
	"github.com/hlsbench/hlsbench/results"
)

// needDocker connects to the daemon, and checks the images a docker run
// of varnish needs: skipped when any is missing, except under CI=true.
func needDocker(t *testing.T) *client.Client {
	t.Helper()
	miss := func(why string) {
		if os.Getenv("CI") == "true" {
			t.Fatal(why)
		}
		t.Skip(why)
	}
	cli, err := launch.Connect(context.Background(), 2*time.Second)
	if err != nil {
		miss(err.Error())
	}
	t.Cleanup(func() { cli.Close() })
	if _, _, err := runImages(context.Background(), launch.Docker{Client: cli}, "docker", []engines.Selection{{Name: "varnish"}}, nil, Version); err != nil {
		miss(err.Error())
	}
	return cli
}

// containersOf counts run's containers.
func containersOf(t *testing.T, cli *client.Client, run string) int {
	t.Helper()
	runs, err := launch.Runs(context.Background(), cli)
	if err != nil {
		t.Fatal(err)
	}
	return len(runs[run])
}

// killDockerRunMidway starts `hlsbench run --runtime docker --engine
// varnish` recording into dir, waits until its origin and engine
// containers run and the load is on (its pass's progress line), and kills
// it with SIGKILL. It returns
// the killed run's id.
func killDockerRunMidway(t *testing.T, cli *client.Client, dir string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "run", "--runtime", "docker", "--engine", "varnish", "--workload", "hit-path",
		"--passes", "1", "--warmups", "0", "--pass-duration", "30s", "--rate", "200", "--out", t.TempDir())
	cmd.Env = append(os.Environ(), asMain+"=1", runstate.DirEnv+"="+dir)
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	kill := func() {
		cmd.Process.Kill() // our child, not yet reaped
		cmd.Wait()
	}
	var run string
	for deadline := time.Now().Add(time.Minute); ; {
		if files, _ := filepath.Glob(filepath.Join(dir, "run-*.json")); len(files) == 1 {
			if st, err := runstate.ReadState(files[0]); err == nil {
				run = st.Run
			}
		}
		// The pass's progress line: the engine answered its readiness
		// check (the containers counted before it may be the throwaway
		// ones that read varnishd's version and check its VCL).
		if run != "" && strings.Contains(out.String(), "pass 1/1") && containersOf(t, cli, run) >= 2 {
			break
		}
		if time.Now().After(deadline) {
			kill()
			t.Fatalf("the origin and varnish containers did not come up within a minute\n%s", out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second) // varnish answers and the pass is on
	kill()
	t.Cleanup(func() { launch.Remove(context.Background(), cli, run) })
	if n := containersOf(t, cli, run); n < 2 {
		t.Fatalf("after kill -9, %d containers of run %s; want the origin's and varnish's left (the test proves nothing)", n, run)
	}
	return run
}

// kill -9 of hlsbench mid-run in docker: `hlsbench clean`, or the next
// run, removes the containers it left, and nothing else.
func TestDockerKilledRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts containers")
	}
	cli := needDocker(t)
	// clean, the next run, and clean after the state directory was removed
	// by hand (or cleared by a reboot): the containers name the process
	// that created them, and it is gone.
	for _, next := range []string{"clean", "run", "clean-without-state"} {
		t.Run(next, func(t *testing.T) {
			dir := t.TempDir()
			t.Setenv(runstate.DirEnv, dir)
			// Another run's container, alive as far as this runtime
			// directory knows nothing of it: it must survive.
			other := launch.Docker{Client: cli, RunID: "test-bystander"}
			by, err := other.Start(context.Background(), launch.Spec{Name: "bystander", Image: "hlsbench/base:bookworm",
				Command: []string{"sleep", "120"}, StopTimeout: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer by.Stop(context.Background())
			run := killDockerRunMidway(t, cli, dir)
			if next == "clean-without-state" {
				if err := os.RemoveAll(dir); err != nil {
					t.Fatal(err)
				}
				// Its state gone, nothing can find the killed run's
				// scratch directories (a reboot clears them too): the
				// test removes them itself.
				t.Cleanup(func() {
					for _, pat := range []string{filepath.Join(os.TempDir(), "hlsbench-"+run+"-*"), "/dev/shm/hlsbench-" + run + "-*"} {
						left, _ := filepath.Glob(pat)
						for _, p := range left {
							os.RemoveAll(p)
						}
					}
				})
			}
			args := []string{"clean"}
			if next == "run" {
				args = []string{"run", "--runtime", "inproc", "--workload", "hit-path", "--passes", "1", "--warmups", "0",
					"--pass-duration", "200ms", "--rate", "100", "--no-save"}
			}
			code, _, errs := runCLI(t, context.Background(), args...)
			t.Logf("%s: %s", next, errs)
			if code != ExitOK && !(next == "run" && code == ExitInvalid) {
				t.Fatalf("%s: exit %d: %s", next, code, errs)
			}
			if n := containersOf(t, cli, run); n != 0 {
				t.Errorf("%d containers of the killed run %s left after %s", n, run, next)
			}
			if !strings.Contains(errs, "removed the containers of runs that are gone ("+run+")") {
				t.Errorf("%s does not say it removed run %s's containers: %s", next, run, errs)
			}
			if containersOf(t, cli, "test-bystander") != 1 {
				t.Errorf("%s removed another run's container", next)
			}
		})
	}
}

// Varnish under a memory limit it cannot live in: the kernel kills its
// child during the miss-storm's first bursts, and the run says so — the
// pass invalid with the limit named, no figure, exit 1 — rather than
// measuring a restarted, empty cache.
func TestDockerRunOutOfMemory(t *testing.T) {
	if raceEnabled {
		t.Skip("end to end: runs once, in the run without the race detector")
	}
	cli := needDocker(t)
	t.Setenv(asMain, "1")
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	before, err := launch.Runs(ctx, cli)
	if err != nil {
		t.Fatal(err)
	}
	code, _, errs := runCLI(t, ctx, "run", "--runtime", "docker", "--engine", "varnish", "--workload", "miss-storm",
		"--memory", "64MiB", "--allow-oom", "--passes", "3", "--warmups", "1", "--out", dir)
	if code != ExitFailure {
		t.Fatalf("exit %d, want %d: %s", code, ExitFailure, errs)
	}
	if !strings.Contains(errs, "out of memory (limit 64 MiB)") || !strings.Contains(errs, "its output is kept in") {
		t.Errorf("the error does not say the engine ran out of memory under 64 MiB: %s", errs)
	}
	if !strings.Contains(errs, "--- varnish output (last lines) ---") || !strings.Contains(errs, "Child") {
		t.Errorf("the error does not show Varnish's last lines: %s", errs)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "run-*.json"))
	if len(files) != 1 {
		t.Fatalf("%d run files", len(files))
	}
	run, err := results.Load(files[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range run.Results {
		if r.Value != nil || !strings.Contains(r.NoValue, "out of memory") {
			t.Errorf("%s: value %v, no_value %q: want null with the out-of-memory kill", r.ID, r.Value, r.NoValue)
		}
	}
	after, err := launch.Runs(ctx, cli)
	if err != nil {
		t.Fatal(err)
	}
	for id, cs := range after {
		if _, ok := before[id]; !ok {
			t.Errorf("run %s left %d containers", id, len(cs))
		}
	}
}
