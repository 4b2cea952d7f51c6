package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hlsbench/hlsbench/engines/freeport"
	"github.com/hlsbench/hlsbench/engines/launch"
	"github.com/hlsbench/hlsbench/results"
	"github.com/hlsbench/hlsbench/workloads"
)

// The test binary stands in for hlsbench when run uses child processes: with
// this variable set it is the hlsbench command.
const asMain = "HLSBENCH_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asMain) == "1" {
		os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func TestRunUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--workload", "nope"}, "--workload"},
		{[]string{"run", "--engine", "squid"}, "--engine"},
		{[]string{"run", "--passes", "0"}, "--passes"},
		{[]string{"run", "--warmups", "-1"}, "--warmups"},
		{[]string{"run", "--runtime", "podman"}, "--runtime"},
		{[]string{"run", "--place", "nonsense"}, "--place \"nonsense\": \"nonsense\" has no role"},
		{[]string{"run", "--place", "engine=unix:///e.sock@198.18.0.4"}, "--place names no host for generator, origin"},
		{[]string{"run", "--place", "generator=unix:///a.sock,engine=unix:///e.sock@198.18.0.4,origin=unix:///o.sock@198.18.0.5"}, "unix:///a.sock: no address"},
		{[]string{"run", "--place", "generator=unix:///a.sock@198.18.0.2,engine=unix:///e.sock@198.18.0.4,origin=unix:///o.sock@198.18.0.5", "--runtime", "process"}, "--place runs every role in Docker"},
		{[]string{"run", "--place", "generator=unix:///a.sock@198.18.0.2,engine=unix:///e.sock@198.18.0.4,origin=unix:///o.sock@198.18.0.5", "--clock-tolerance", "0s"}, "--clock-tolerance"},
		{[]string{"run", "--memory", "1GiB"}, "--memory goes with --runtime docker"},
		{[]string{"run", "--runtime", "docker", "--memory", "1KiB"}, "6MiB"},
		{[]string{"run", "--runtime", "docker", "--memory", "512MiB"}, "--memory 512MiB cannot hold the run's largest cache store, 512 MiB"},
		{[]string{"run", "--runtime", "docker", "--memory", "lots"}, "--memory"},
		{[]string{"run", "--cpus", "2"}, "--cpus goes with --runtime docker"},
		{[]string{"run", "--runtime", "docker", "--cpus", "-1"}, "--cpus -1"},
		{[]string{"run", "--engine", "varnish", "--image", "varnish=x"}, "--image goes with --runtime docker"},
		{[]string{"run", "--runtime", "docker", "--image", "varnish"}, "NAME=IMAGE"},
		{[]string{"run", "--runtime", "docker", "--engine", "builtin", "--image", "nginx=x"}, "not an engine of this run"},
		{[]string{"run", "--fail-mode", "melt"}, "--fail-mode"},
		{[]string{"run", "--engine", "external"}, "--url"},
		{[]string{"run", "--engine", "external", "--url", "ftp://x", "--origin-listen", "127.0.0.1:1"}, "--url"},
		{[]string{"run", "--engine", "external", "--url", "http://127.0.0.1:1", "--origin-listen", "nowhere"}, "--origin-listen"},
		{[]string{"run", "--url", "http://127.0.0.1:1"}, "external"},
		{[]string{"run", "--pass-duration", "1ms"}, "--pass-duration"},
		{[]string{"run", "extra"}, "no arguments"},
		{[]string{"run", "--engine", "nginx", "--binary", "/nonexistent/nginx"}, "--binary"},
		{[]string{"run", "--engine", "varnish@", "--workload", "hit-path"}, "NAME@VERSION"},
		{[]string{"run", "--runtime", "docker", "--binary", "/usr/sbin/varnishd", "--engine", "varnish"}, "--binary goes with --runtime process"},
		{[]string{"run", "--topology", "quic"}, "--topology"},
		{[]string{"run", "--config", "my.vcl"}, "ENGINE=FILE"},
		{[]string{"run", "--engine", "builtin", "--config", "builtin=my.vcl"}, "takes no configuration file"},
		{[]string{"run", "--engine", "nginx", "--config", "varnish=my.vcl"}, "no varnish in --engine"},
		{[]string{"run", "--engine", "a=varnish,b=varnish", "--config", "a=x.vcl,a=y.vcl"}, "a given twice"},
		{[]string{"run", "--engine", "varnish", "--config", "varnish=/nonexistent/my.vcl"}, "--config varnish=/nonexistent/my.vcl"},
		{[]string{"run", "--runtime", "inproc", "--config", "varnish=my.vcl"}, "--config goes with"},
		{[]string{"engines", "render", "squid"}, "want one of"},
		{[]string{"engines", "render", "varnish", "--workload", "nope"}, "--workload"},
		{[]string{"engines", "render", "nginx", "--origin", "nowhere"}, "--origin"},
		{[]string{"run", "--topology", "proxyv2", "--terminator", "stunnel"}, "--terminator"},
		{[]string{"engines", "build"}, "one engine: varnish or vinyl"},
		{[]string{"engines", "build", "squid", "--source", "x.tar.gz"}, "one engine"},
		{[]string{"engines", "build", "vinyl"}, "--source is required"},
		{[]string{"engines", "build", "vinyl", "--source", "x", "--runtime", "podman"}, "--runtime"},
		{[]string{"serve-cache", "--policy", "{"}, "--policy"},
		{[]string{"serve-cache", "--cpus", "x"}, "--cpus"},
		{[]string{"origin", "--manifest-size", "10"}, "manifest-size"},
		{[]string{"run", "--workload", "live-audience", "--viewers", "0"}, "--viewers"},
		{[]string{"run", "--workload", "live-audience", "--vod-share", "1.5"}, "--vod-share"},
		{[]string{"run", "--workload", "live-audience", "--switch-share", "-0.1"}, "--switch-share"},
		{[]string{"run", "--workload", "live-audience", "--audience-zipf", "11"}, "--audience-zipf"},
		{[]string{"run", "--workload", "live-audience", "--ramp", "-1s"}, "--ramp"},
		{[]string{"run", "--workload", "live-audience", "--watch", "10ms"}, "--watch"},
		{[]string{"run", "--workload", "live-audience", "--channels", "0"}, "--channels"},
		{[]string{"run", "--workload", "live-audience", "--ladder", "600k,300k"}, "--ladder"},
		{[]string{"run", "--workload", "live-audience", "--target-duration", "1500us"}, "--target-duration"},
		{[]string{"run", "--workload", "live-audience", "--store-sizes", "10KiB"}, "--store-sizes"},
		{[]string{"run", "--workload", "live-audience", "--store-sizes", "lots"}, "--store-sizes"},
		{[]string{"run", "--workload", "live-audience", "--audience-passes", "0"}, "--audience-passes"},
		{[]string{"run", "--workload", "capacity", "--slo", "hit-path=p95:10ms"}, "--slo"},
		{[]string{"run", "--workload", "capacity", "--slo", "video=p99:10ms"}, "segment-range"},
		{[]string{"run", "--workload", "capacity", "--slo", "hit-path=p99:10"}, "p999"},
	} {
		code, _, errs := runCLI(t, context.Background(), tc.args...)
		if code != ExitUsage || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 naming %q", tc.args, code, errs, tc.want)
		}
	}
}

func TestRunInprocJSON(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a workload")
	}
	dir := t.TempDir()
	code, out, errs := runCLI(t, context.Background(), "run", "--runtime", "inproc", "--workload", "miss-storm",
		"--passes", "2", "--warmups", "0", "--json", "--out", dir)
	var rep runJSON
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("stdout: %v\n%s", err, out)
	}
	// In-process the generator shares a Go runtime with the cache and may
	// be late: exit 3 is allowed, but only with an invalid result.
	invalid := false
	for _, r := range rep.Results {
		invalid = invalid || !r.Valid || r.Value == nil
	}
	if code != ExitOK && !(code == ExitInvalid && invalid) {
		t.Fatalf("exit %d (invalid results: %v): %s", code, invalid, errs)
	}
	if rep.Status != results.StatusComplete {
		t.Errorf("status %q", rep.Status)
	}
	// The keys scripts read: the saved document plus file and run_id.
	var raw map[string]any
	json.Unmarshal([]byte(out), &raw)
	for _, k := range []string{"file", "run_id", "status", "results", "schema_version", "workloads"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("--json lacks %q", k)
		}
	}
	for _, e := range raw["results"].([]any) {
		m := e.(map[string]any)
		for _, k := range []string{"id", "workload", "test", "engine", "runtime", "topology", "value", "unit", "valid",
			"passes", "requests", "errors", "errors_by_kind"} {
			if _, ok := m[k]; !ok {
				t.Errorf("results entry %v lacks %q", m["id"], k)
			}
		}
		if _, ok := m["passes"].(float64); !ok {
			t.Errorf("results entry %v: passes %v is not a count", m["id"], m["passes"])
		}
		if m["test"] == "coalescing" && m["coalescing_x"] == nil {
			t.Errorf("coalescing entry lacks coalescing_x")
		}
	}
	if len(rep.Results) != 3 {
		t.Fatalf("%d results, want p50, p99 and coalescing", len(rep.Results))
	}
	for _, r := range rep.Results {
		if r.Workload != "miss-storm" || r.Engine != "builtin" || r.Runtime != "inproc" || r.Topology != "plaintext" || r.Unit == "" || r.MeasuredPasses != 2 {
			t.Errorf("result %+v", r)
		}
		if r.Requests != 400 || r.ErrorsByKind == nil {
			t.Errorf("%s: requests %d errors_by_kind %v, want 2 bursts of 200 counted", r.ID, r.Requests, r.ErrorsByKind)
		}
		if r.Test == "coalescing" && r.Valid && (r.Figures["coalescing_x"] != 200 || r.Figures["origin_fetches"] != 2) {
			t.Errorf("coalescing %+v", r)
		}
	}
	run, err := results.Load(rep.File)
	if err != nil {
		t.Fatal(err)
	}
	if run.SchemaVersion != results.SchemaVersion || run.Host.Cores == 0 || run.Tool.GoVersion == "" || run.Config["passes"] == nil {
		t.Errorf("run file lacks its facts: %+v", run)
	}
	if filepath.Dir(rep.File) != dir {
		t.Errorf("saved to %s, want under %s", rep.File, dir)
	}
}

// Ctrl-C during a run with child processes: exit 130, the finished passes
// saved and marked interrupted, and no child left behind.
func TestRunProcessInterrupt(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	t.Setenv(asMain, "1")
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	var code int
	var errs string
	go func() {
		defer close(done)
		code, _, errs = runCLI(t, ctx, "run", "--workload", "hit-path", "--rate", "500", "--passes", "50",
			"--warmups", "0", "--pass-duration", "500ms", "--out", dir)
	}()
	// Let a few passes finish, then interrupt.
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if n := finishedPasses(dir); n >= 2 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("run did not stop within 30 s of the interrupt")
	}
	if code != ExitInterrupted {
		t.Fatalf("exit %d, want %d: %s", code, ExitInterrupted, errs)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "run-*.json"))
	if len(files) != 1 {
		t.Fatalf("%d run files", len(files))
	}
	run, err := results.Load(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if !run.Interrupted || run.Status != results.StatusInterrupted || len(run.Results) == 0 || len(run.Results[0].Passes) < 2 {
		t.Errorf("interrupted %v status %q, results %d: want the finished passes kept", run.Interrupted, run.Status, len(run.Results))
	}
	if kids := children(); len(kids) > 0 {
		t.Errorf("child processes left running: %v", kids)
	}
}

func finishedPasses(dir string) int {
	files, _ := filepath.Glob(filepath.Join(dir, "run-*.json"))
	if len(files) == 0 {
		return 0
	}
	run, err := results.Load(files[0])
	if err != nil || len(run.Results) == 0 {
		return 0
	}
	return len(run.Results[0].Passes)
}

// children lists live processes whose parent is this one.
func children() []string {
	var out []string
	me := strconv.Itoa(os.Getpid())
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, s := range stats {
		b, err := os.ReadFile(s)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 1 && f[1] == me && f[0] != "Z" {
			out = append(out, string(b[:i+1]))
		}
	}
	return out
}

// A proxy that answers 404 to everything finishes with exit 3, and no
// figure of it is a number: every value is null with its reason.
func TestRunNothingMeasuredExits3(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a workload")
	}
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	dir := t.TempDir()
	code, out, errs := runCLI(t, context.Background(), "run", "--runtime", "inproc", "--engine", "external", "--url", srv.URL,
		"--origin-listen", freeAddr(t), "--workload", "hit-path,miss-storm", "--passes", "1", "--warmups", "0",
		"--pass-duration", "300ms", "--rate", "100", "--json", "--quiet", "--out", dir)
	if code != ExitInvalid || !strings.Contains(errs, "invalid or have no value") {
		t.Fatalf("exit %d, want %d: %s", code, ExitInvalid, errs)
	}
	var rep runJSON
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("stdout: %v\n%s", err, out)
	}
	if len(rep.Results) == 0 {
		t.Fatal("no results")
	}
	for _, r := range rep.Results {
		if r.Value != nil || r.NoValue == "" || r.Valid || r.Errors == 0 || r.ErrorsByKind["status"] == 0 {
			t.Errorf("%s: value %v no_value %q valid %v errors %d %v: want null with a reason", r.ID, r.Value, r.NoValue, r.Valid, r.Errors, r.ErrorsByKind)
		}
	}
	// The table shows no number either.
	if strings.Contains(errs, "0.000") || !strings.Contains(errs, "—") {
		t.Errorf("table:\n%s", errs)
	}
	raw, _ := os.ReadFile(rep.File)
	if !strings.Contains(string(raw), `"value": null`) {
		t.Errorf("file has no null value")
	}
}

// A run that cannot start says so in its file: status failed, the error,
// an empty result list, and exit 1.
func TestRunFailureIsRecorded(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close() // the origin's port is taken
	dir := t.TempDir()
	code, _, errs := runCLI(t, context.Background(), "run", "--runtime", "inproc", "--engine", "external", "--url", "http://127.0.0.1:1",
		"--origin-listen", ln.Addr().String(), "--workload", "hit-path", "--passes", "1", "--quiet", "--out", dir)
	if code != ExitFailure {
		t.Fatalf("exit %d, want 1: %s", code, errs)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "run-*.json"))
	if len(files) != 1 {
		t.Fatalf("%d run files", len(files))
	}
	run, err := results.Load(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != results.StatusFailed || run.Error == "" || run.Results == nil || run.FinishedAt.IsZero() {
		t.Errorf("status %q error %q results %v: want failed with the error", run.Status, run.Error, run.Results)
	}
}

// freeAddr is an address for an origin that starts later (freeport.Addr).
func freeAddr(t *testing.T) string {
	a, err := freeport.Addr()
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// Exit 3 comes from any invalid result or any result without a value, and
// only from those.
func TestVerdict(t *testing.T) {
	v := 1.0
	good := results.Result{ID: "hit-path/p50-ttfb", Engine: "builtin", Valid: true, Value: &v}
	if err := verdict(&results.Run{Results: []results.Result{good, good}}); err != nil {
		t.Errorf("all valid: %v", err)
	}
	invalid := good
	invalid.Valid = false
	null := good
	null.ID, null.Value = "miss-storm/coalescing", nil
	for name, rs := range map[string][]results.Result{"invalid": {good, invalid}, "null": {null, good}} {
		err := verdict(&results.Run{Results: rs})
		if !errors.Is(err, errInvalid) || !strings.Contains(err.Error(), "1 of 2 are invalid") {
			t.Errorf("%s: %v, want errInvalid counting 1 of 2", name, err)
		}
	}
	na := good
	na.Topology, na.Value, na.Valid, na.NotApplicable = "tls", nil, false, "this varnishd has no TLS listener of its own"
	if err := verdict(&results.Run{Results: []results.Result{good, na}}); err != nil {
		t.Errorf("a not-applicable cell makes the run fail: %v", err)
	}
	code := Run(context.Background(), []string{"--help"}, io.Discard, io.Discard)
	if code != ExitOK {
		t.Errorf("--help exit %d", code)
	}
}

func TestContainerLimits(t *testing.T) {
	specs, err := workloads.Specs("hit-path,live-audience")
	if err != nil {
		t.Fatal(err)
	}
	cfg := workloads.Defaults()
	docker := func(mem string, cpus float64) RunOptions {
		o := RunOptions{Runtime: "docker", CPUs: cpus, set: map[string]bool{}}
		if mem != "" {
			if err := o.Memory.Set(mem); err != nil {
				t.Fatal(err)
			}
			o.set["memory"] = true
		}
		return o
	}
	for _, tc := range []struct {
		o    RunOptions
		mem  int64
		cpus float64
	}{
		{docker("", 4), 1 << 30, min(4, float64(runtime.NumCPU()))},
		{docker("auto", 0.5), 1 << 30, 0.5},
		{docker("none", 0), 0, 0},
		{docker("640MiB", 1), 640 << 20, 1},
		{RunOptions{Runtime: "process", CPUs: 4}, 0, 0},
	} {
		l, err := containerLimits(tc.o, runtimeOf(t, tc.o), specs, cfg)
		if err != nil || l.Memory != tc.mem || l.CPUs != tc.cpus {
			t.Errorf("--memory %s --cpus %g: %+v, %v; want memory %d, cpus %g", tc.o.Memory.String(), tc.o.CPUs, l, err, tc.mem, tc.cpus)
		}
	}
	// live-audience's curve at 1GiB needs more than the default's 1GiB.
	if s, _ := workloads.LookupSetting("store-sizes"); s.Set(&cfg, "1GiB") != nil {
		t.Fatal("store-sizes 1GiB refused")
	}
	if l, err := containerLimits(docker("", 4), launch.DockerRuntime, specs, cfg); err != nil || l.Memory != 2<<30 {
		t.Errorf("auto with a 1GiB store: %+v, %v; want 2GiB", l, err)
	}
	if _, err := containerLimits(docker("1GiB", 4), launch.DockerRuntime, specs, cfg); err == nil || !strings.Contains(err.Error(), "give --memory 1152MiB or more") {
		t.Errorf("1GiB limit for a 1GiB store: %v; want refused with the least that fits", err)
	}
}

func runtimeOf(t *testing.T, o RunOptions) launch.Runtime {
	rt, err := launch.RuntimeNamed(o.Runtime)
	if err != nil {
		t.Fatal(err)
	}
	return rt
}
