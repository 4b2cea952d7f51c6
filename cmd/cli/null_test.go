package cli

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/hlsbench/hlsbench/engines"
)

// TestRunNull runs the null engine through the runner as `hlsbench run`
// does, a child process pinned where an engine would be: hit-path and
// segment are measured with every answer passing the workloads' checks
// (checksums, segment bytes), a workload that measures a cache is not
// applicable with its reason, topology tls reaches its own TLS listener
// (the ceiling of the engines' TLS capacities), and topology proxyv2
// reaches it through the terminator.
func TestRunNull(t *testing.T) {
	if testing.Short() {
		t.Skip("runs workloads")
	}
	t.Setenv(asMain, "1")
	topologies := "plaintext,tls,proxyv2"
	if _, err := exec.LookPath("hitch"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("hitch: %v (CI must run topology proxyv2)", err)
		}
		t.Logf("hitch not installed: topology proxyv2 not tried")
		topologies = "plaintext,tls"
	}
	code, out, errs := runCLI(t, context.Background(), "run", "--engine", "null", "--workload", "hit-path,segment,miss-storm",
		"--topology", topologies, "--rate", "200", "--passes", "1", "--warmups", "0", "--pass-duration", "1s",
		"--json", "--out", t.TempDir())
	if code != ExitOK && code != ExitInvalid {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rep runJSON
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("stdout: %v\n%s", err, out)
	}
	measured, na := map[string]int{}, 0
	for _, r := range rep.Results {
		switch {
		case r.Workload == "miss-storm":
			if r.NotApplicable != engines.NullNeedsCache || r.Value != nil {
				t.Errorf("%s: not applicable %q, value %v: want no value, because %q", r.ID, r.NotApplicable, r.Value, engines.NullNeedsCache)
			}
			na++
		default:
			if r.NotApplicable != "" || r.Requests == 0 || r.Errors != 0 {
				t.Errorf("%s: %d requests, %d errors %v, not applicable %q: want every answer accepted", r.ID, r.Requests, r.Errors, r.ErrorsByKind, r.NotApplicable)
			}
			measured[r.Workload+" "+r.Topology]++
		}
	}
	if na != 3 {
		t.Errorf("%d miss-storm results, want its 3 tests, each not applicable", na)
	}
	for _, want := range []string{"hit-path plaintext", "segment plaintext", "hit-path tls", "segment tls"} {
		if measured[want] == 0 {
			t.Errorf("no %s result measured: %v", want, measured)
		}
	}
	if strings.Contains(topologies, "proxyv2") && (measured["hit-path proxyv2"] == 0 || measured["segment proxyv2"] == 0) {
		t.Errorf("topology proxyv2 not measured: %v", measured)
	}
	found := false
	for _, e := range rep.Engines {
		if e.Name == engines.NullName {
			found = true
			if len(e.Differences) == 0 || !strings.Contains(e.Differences[0], "no cache") {
				t.Errorf("null's differences %q do not say it has no cache", e.Differences)
			}
			if e.Pinning["engine"] == "" {
				t.Errorf("null not pinned: %v", e.Pinning)
			}
		}
	}
	if !found {
		t.Errorf("engines %v lack null", rep.Engines)
	}
}
