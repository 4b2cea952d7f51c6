package cli

import (
	"context"
	"encoding/json"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/hlsbench/hlsbench/engines/launch"
	"github.com/hlsbench/hlsbench/results"
)

// elsewhere is a runtime no file of hlsbench names: local processes under
// another name, with their own isolation line.
type elsewhere struct{ launch.Local }

func (elsewhere) Name() string { return "elsewhere" }

// A runtime is its entry in launch.Runtimes: one added there (and nowhere
// else) is a --runtime the help lists, runs the origin, the built-in cache
// and NGINX-free workloads, and is what the results and the conditions say.
func TestRuntimeIsItsEntry(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a workload")
	}
	saved := launch.Runtimes
	t.Cleanup(func() { launch.Runtimes = saved })
	const isolation = "other cells stopped where they run elsewhere"
	launch.Runtimes = append(slices.Clone(saved), launch.Runtime{
		Name: "elsewhere", Help: "elsewhere (local processes under another name)", Binaries: launch.OnHost,
		Pins: true, Freezes: true, Isolation: isolation,
		Open: func(context.Context, launch.Session) (launch.Launcher, error) { return elsewhere{}, nil },
	})

	_, out, _ := runCLI(t, context.Background(), "run", "--help")
	if !strings.Contains(out, "elsewhere (local processes under another name)") {
		t.Errorf("run --help does not list the runtime:\n%s", out)
	}
	code, _, errs := runCLI(t, context.Background(), "run", "--runtime", "elsewhere", "--memory", "1GiB")
	if code != ExitUsage || !strings.Contains(errs, "--memory goes with --runtime docker") {
		t.Errorf("--memory with a runtime without limits: exit %d, %q", code, errs)
	}

	t.Setenv(asMain, "1") // the test binary is the origin's and the cache's hlsbench
	dir := t.TempDir()
	code, out, errs = runCLI(t, context.Background(), "run", "--runtime", "elsewhere", "--engine", "builtin",
		"--workload", "miss-storm", "--passes", "1", "--warmups", "0", "--json", "--out", dir)
	var rep runJSON
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("exit %d, stdout: %v\n%s\n%s", code, err, out, errs)
	}
	if rep.Status != results.StatusComplete || len(rep.Results) == 0 {
		t.Fatalf("exit %d, status %q, %d results: %s", code, rep.Status, len(rep.Results), errs)
	}
	for _, r := range rep.Results {
		if r.Runtime != "elsewhere" {
			t.Errorf("%s: runtime %q, want elsewhere", r.ID, r.Runtime)
		}
	}
	if len(rep.Engines) != 1 || rep.Engines[0].Runtime != "elsewhere" || runtime.NumCPU() > 1 && rep.Engines[0].Pinning["generator"] == "" {
		t.Errorf("engines %+v: want builtin in runtime elsewhere, pinned apart from the generator", rep.Engines)
	}
}

// The runtimes hlsbench ships: each is named by its entry, and a name no
// entry has is refused with those it has.
func TestRuntimesNamed(t *testing.T) {
	for _, rt := range launch.Runtimes {
		got, err := launch.RuntimeNamed(rt.Name)
		if err != nil || got.Name != rt.Name || rt.Open == nil || !strings.HasPrefix(rt.Help, rt.Name+" ") || rt.Isolation == "" {
			t.Errorf("runtime %q: %+v %v", rt.Name, got, err)
		}
	}
	if rt, err := launch.RuntimeNamed(""); err != nil || rt.Name != "process" {
		t.Errorf("default runtime %q %v, want process", rt.Name, err)
	}
	if _, err := launch.RuntimeNamed("podman"); err == nil || !strings.Contains(err.Error(), "process, docker, inproc") {
		t.Errorf("podman: %v; want refused, naming process, docker, inproc", err)
	}
	for _, l := range []launch.Launcher{launch.Local{}, launch.Docker{}, launch.Inproc{}} {
		if rt := launch.RuntimeOf(l); rt.Name != l.Name() || rt.Open == nil {
			t.Errorf("RuntimeOf(%T) = %+v", l, rt)
		}
	}
}
