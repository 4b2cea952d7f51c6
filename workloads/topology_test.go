package workloads

import (
	"net/http"
	"net/http/httputil"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/engines/certs"
	"github.com/hlsbench/hlsbench/results"
)

// findTopo is the result id of engine in topology.
func findTopo(t *testing.T, run *results.Run, engine, topology, id string) *results.Result {
	t.Helper()
	for i := range run.Results {
		if r := &run.Results[i]; r.Engine == engine && r.Topology == topology && r.ID == id {
			return r
		}
	}
	t.Fatalf("no result %s for %s in %s", id, engine, topology)
	return nil
}

// Over topologies plaintext and tls, hit-path runs per engine and
// topology: the built-in cache answers over https with the run's
// certificate (the passes record what TLS was negotiated), Debian's
// Varnish 7.1 has no TLS listener and its tls cell is not applicable, with
// the reason; miss-storm runs in plaintext alone.
func TestTopologies(t *testing.T) {
	set, err := certs.New([]string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.Warmups, cfg.Passes, cfg.PassDuration = 0, 2, 500*time.Millisecond
	cfg.Rate = 200
	clientsSetting.In(&cfg, 20)
	run := execute(t, RunSpec{Engines: []string{"builtin"}, Workloads: mustSpecs(t, "hit-path,miss-storm"), Config: cfg,
		Topologies: []string{engines.TopologyPlaintext, engines.TopologyTLS}, TLS: set})

	// Measured means every pass has its figure. Whether a pass is valid
	// depends on how late this busy machine made the generator (the engine
	// runs in the test's own process): not what is tested here.
	measured := func(r *results.Result) bool {
		n := 0
		for _, p := range r.Passes {
			if !p.Warmup && p.Value != nil {
				n++
			}
		}
		return n == 2 && r.MeasuredPasses == 2 && r.NotApplicable == ""
	}
	r := findTopo(t, run, "builtin", engines.TopologyTLS, "hit-path/p50-ttfb")
	if !measured(r) {
		t.Fatalf("builtin over tls: %+v", r)
	}
	tlsSeen := false
	for _, p := range r.Passes {
		if p.Evidence == nil {
			continue
		}
		if g := p.Evidence.Generator; g != nil && g.TLS != nil && strings.HasPrefix(g.TLS.Version, "TLS 1.") && g.TLS.Cipher != "" {
			tlsSeen = true
		}
	}
	if !tlsSeen {
		t.Errorf("no pass of builtin over tls records the negotiated TLS: %+v", r.Passes)
	}
	if r := findTopo(t, run, "builtin", engines.TopologyPlaintext, "hit-path/p50-ttfb"); !measured(r) {
		t.Errorf("builtin plaintext: %+v", r)
	}
	for i := range run.Results {
		if r := &run.Results[i]; r.Workload == "miss-storm" && r.Topology != engines.TopologyPlaintext {
			t.Errorf("miss-storm ran in %s: it is measured in plaintext alone", r.Topology)
		}
	}
}

// A cell that cannot be measured by its nature is recorded, every test
// with no value, not valid, and the reason; the others run.
func TestTopologyNotApplicable(t *testing.T) {
	set, err := certs.New([]string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.Warmups, cfg.Passes, cfg.PassDuration, cfg.Rate = 0, 1, 500*time.Millisecond, 100
	addr := freeAddr(t)
	run := execute(t, RunSpec{Engines: []string{"external"}, Workloads: mustSpecs(t, "segment"), Config: cfg,
		ExternalURLs: map[string]string{"external": proxy(t, addr, func(rp *httputil.ReverseProxy) http.Handler { return rp })}, OriginListens: map[string]string{"external": addr},
		Topologies: []string{engines.TopologyPlaintext, engines.TopologyTLS}, TLS: set})
	for _, id := range []string{"segment/full-p50-ttfb", "segment/full-p99-ttfb", "segment/range-p50-ttfb", "segment/range-p99-ttfb"} {
		na := findTopo(t, run, "external", engines.TopologyTLS, id)
		if na.Value != nil || na.Valid || na.MeasuredPasses != 0 || !strings.Contains(na.NotApplicable, "external proxy") ||
			!strings.HasPrefix(na.NoValue, "not applicable: ") {
			t.Errorf("%s over tls: %+v; want not applicable with the reason", id, na)
		}
		if r := findTopo(t, run, "external", engines.TopologyPlaintext, id); r.MeasuredPasses != 1 {
			t.Errorf("%s in plaintext: %+v", id, r)
		}
	}
}

// A pass during which the generator's cores never rest is invalid, saying
// so: answers may have waited for the generator, not the engine. Unpinned
// (in-process), that is every CPU.
func TestGeneratorCoreBusyInvalidates(t *testing.T) {
	taskset, err := exec.LookPath("taskset")
	if err != nil {
		t.Skip("no taskset (util-linux)")
	}
	var burns []*exec.Cmd
	for c := 0; c < runtime.NumCPU(); c++ {
		burn := exec.Command(taskset, "-c", strconv.Itoa(c), "sh", "-c", "while :; do :; done")
		if err := burn.Start(); err != nil {
			t.Fatal(err)
		}
		burns = append(burns, burn)
		time.AfterFunc(30*time.Second, func() { burn.Process.Kill() }) // bounded
	}
	defer func() {
		for _, b := range burns {
			b.Process.Kill()
			b.Wait()
		}
	}()
	cfg := testConfig()
	cfg.Warmups, cfg.Passes, cfg.Rate = 0, 2, 100
	clientsSetting.In(&cfg, 20)
	run := execute(t, RunSpec{Engines: []string{"builtin"}, Workloads: mustSpecs(t, HitPath+","+MissStorm), Config: cfg})
	// A count at the origin does not depend on how fast the generator read.
	co := find(t, run, "builtin", "miss-storm/coalescing")
	if !co.Valid || co.Value == nil {
		t.Errorf("coalescing %+v: want valid, whatever the generator's cores did", co)
	}
	r := find(t, run, "builtin", "hit-path/p50-ttfb")
	for _, p := range r.Passes {
		if p.Valid || !strings.Contains(strings.Join(p.InvalidReasons, " "), "busy during the pass") {
			t.Errorf("pass %d: valid %v, reasons %v; want invalid: the generator's cores were busy", p.Index, p.Valid, p.InvalidReasons)
		}
		if p.Evidence == nil || p.Evidence.OtherCPU == nil || p.Evidence.OtherCPU.GeneratorBusyShare < 0.95 {
			t.Errorf("pass %d: other_cpu %+v, want generator_busy_share near 1", p.Index, p.Evidence.OtherCPU)
		}
	}
}
