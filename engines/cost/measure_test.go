package cost_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/engines/cost"
	"github.com/hlsbench/hlsbench/engines/cpuload"
	"github.com/hlsbench/hlsbench/origin"
)

// measureEnv names the hlsbench binary TestMeasureEngines runs: its serve-cache
// is the built-in engine, its load the generator. Unset, the test is skipped.
const measureEnv = "HLSBENCH_COST_LOAD"

// TestMeasureEngines is a measurement, not a check: what each engine costs
// on a hit-path load (one manifest, cached for a day), pass by pass. Pinned
// as `hlsbench run` pins on two CPUs: the engine on CPU 0, the generator on
// the last. Figures go to the test log:
//
//	go build -o /tmp/hbc ./cmd/hlsbench
//	HLSBENCH_COST_LOAD=/tmp/hbc go test -run TestMeasureEngines -v ./engines/cost/
//
// HLSBENCH_COST_RATE, _DURATION and _PASSES change the load (2000 rps, 5s, 3).
func TestMeasureEngines(t *testing.T) {
	bin := os.Getenv(measureEnv)
	if bin == "" {
		t.Skip(measureEnv + " unset: set it to an hlsbench binary to measure the engines")
	}
	rate, duration, passes := envOr("HLSBENCH_COST_RATE", "2000"), envOr("HLSBENCH_COST_DURATION", "5s"), envOr("HLSBENCH_COST_PASSES", "3")
	n, err := strconv.Atoi(passes)
	if err != nil || n < 1 {
		t.Fatalf("HLSBENCH_COST_PASSES=%q: want a count", passes)
	}
	o, err := origin.New(origin.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := origin.Start(o, "127.0.0.1:0", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx := context.Background()
	originURL := "http://" + srv.DataAddr()
	policy := engines.DefaultPolicy()
	policy.ManifestTTL = 24 * time.Hour // the hit-path workload's
	engineCPUs, genCPU := []int{0}, strconv.Itoa(max(1, runtime.NumCPU()-1))
	starts := []struct {
		name  string
		start func() (engines.Instance, error)
	}{
		{"builtin", func() (engines.Instance, error) {
			return engines.StartBuiltin(ctx, engines.StartSpec{Policy: policy, OriginURL: originURL,
				Runtime: engines.RuntimeProcess, CPUs: engineCPUs, Self: bin, Version: "dev"})
		}},
		{"varnish", func() (engines.Instance, error) {
			return engines.StartLocal(ctx, engines.Varnish{}, engines.LocalSpec{Policy: policy, OriginURL: originURL, CPUs: engineCPUs})
		}},
		{"nginx", func() (engines.Instance, error) {
			return engines.StartLocal(ctx, engines.NGINX{}, engines.LocalSpec{Policy: policy, OriginURL: originURL, CPUs: engineCPUs})
		}},
	}
	t.Logf("load: --rate %s --duration %s --connections 50, generator on CPU %s, engine on CPU 0", rate, duration, genCPU)
	t.Logf("%-8s %4s %7s %8s %9s %10s %9s %9s %5s %8s %7s", "engine", "pass", "ok", "cpu s", "ms/1000", "peak MB", "max MB",
		"gen cpu s", "procs", "other", "p99 ms")
	t.Logf("(gen cpu s: the generator's group as measured here / as it reports itself)")
	for _, s := range starts {
		inst, err := s.start()
		if inst != nil {
			defer inst.Stop(context.WithoutCancel(ctx))
		}
		if errors.Is(err, engines.ErrNotFound) {
			t.Logf("%s: %v", s.name, err)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		pg, ok := inst.(engines.ProcessGroup)
		if !ok {
			t.Fatalf("%s: %T has no process group", s.name, inst)
		}
		url := inst.URL() + origin.ManifestPath
		if resp, err := http.Get(url); err != nil {
			t.Fatal(err)
		} else {
			resp.Body.Close()
		}
		for pass := 1; pass <= n; pass++ {
			gen := exec.Command("taskset", "-c", genCPU, bin, "load", "--rate", rate, "--duration", duration,
				"--connections", "50", "--json", url)
			gen.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
			var out, errs bytes.Buffer
			gen.Stdout, gen.Stderr = &out, &errs
			if err := gen.Start(); err != nil {
				t.Fatal(err)
			}
			// Measured from the generator's start: it opens its connections
			// first, which the engine pays for too.
			m := cost.Start([]cost.Group{{Name: s.name, PGID: pg.PGID()}, {Name: "load", PGID: gen.Process.Pid}})
			busy := cpuload.Take(nil, cpuload.Self([]int{pg.PGID(), gen.Process.Pid}))
			// Read once it has ended and before it is reaped: a zombie
			// still shows its CPU time.
			var info unix.Siginfo
			for {
				err := unix.Waitid(unix.P_PID, gen.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
				if !errors.Is(err, unix.EINTR) {
					break
				}
			}
			u := m.Stop()
			d := cpuload.Between(busy, cpuload.Take(nil, cpuload.Self([]int{pg.PGID(), gen.Process.Pid})))
			werr := gen.Wait()
			var rep struct {
				OK         int64   `json:"ok"`
				Errors     int64   `json:"errors"`
				CPUSeconds float64 `json:"cpu_seconds"`
				TTFB       struct {
					P99 float64 `json:"p99_ms"`
				} `json:"ttfb"`
			}
			if jerr := json.Unmarshal(out.Bytes(), &rep); jerr != nil {
				t.Fatalf("%s load: %v, %v\n%s", s.name, werr, jerr, errs.String())
			}
			e, g := u[0], u[1]
			if e.Err != nil || g.Err != nil {
				t.Fatal(e.Err, g.Err)
			}
			t.Logf("%-8s %4d %7d %8.2f %9.1f %10.1f %9.1f %4.2f/%4.2f %5d %7.0f%% %7.2f", s.name, pass, rep.OK, e.CPUSeconds,
				1e6*e.CPUSeconds/float64(max(rep.OK, 1)), mb(e.PeakRSSBytes), mb(e.MaxProcRSSBytes),
				g.CPUSeconds, rep.CPUSeconds, e.Procs, 100*d.OtherShare, rep.TTFB.P99)
			if rep.Errors > 0 || e.PeakSinceStart {
				t.Logf("  errors %d, peak since start %v", rep.Errors, e.PeakSinceStart)
			}
		}
		if err := inst.Stop(ctx); err != nil {
			t.Error(err)
		}
	}
}

func mb(b int64) float64 { return float64(b) / (1 << 20) }

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
