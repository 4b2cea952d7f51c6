package cli

import (
	"context"
	"encoding/json"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hlsbench/hlsbench/workloads/loadgen/agent"
)

// startAgents serves n agents on loopback until the test ends and returns
// their addresses.
func startAgents(t *testing.T, n int) []string {
	t.Helper()
	var addrs []string
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { agent.NewServer().Serve(ctx, ln); close(done) }()
		t.Cleanup(func() { cancel(); <-done })
		addrs = append(addrs, ln.Addr().String())
	}
	return addrs
}

// `hlsbench load --agents` splits the pass over its agents, says what each
// carried and how its clock stood, and merges their results.
func TestLoadAgents(t *testing.T) {
	srv := httptest.NewServer(slowHandler("hello"))
	defer srv.Close()
	agents := startAgents(t, 2)
	code, out, errs := runCLI(t, context.Background(), "load", "--agents", strings.Join(agents, ","), "--rate", "200",
		"--duration", "1s", "--connections", "20", "--json", srv.URL+"/a")
	finishedValid(t, code, errs)
	var rep loadReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Requests != 200 || rep.OK != 200 || len(rep.Agents) != 2 {
		t.Fatalf("requests %d ok %d agents %d, want 200 200 2", rep.Requests, rep.OK, len(rep.Agents))
	}
	for i, a := range rep.Agents {
		if a.Agent != agents[i] || a.Requests != 100 || a.OffsetMs > 1 || a.OffsetMs < -1 {
			t.Errorf("agent %d: %+v, want %s with 100 requests and its clock within 1 ms", i, a, agents[i])
		}
	}
	code, out, _ = runCLI(t, context.Background(), "load", "--agents", strings.Join(agents, ","), "--rate", "200",
		"--duration", "500ms", srv.URL+"/a")
	if code != ExitOK && code != ExitInvalid || !strings.Contains(out, "agent "+agents[1]+": 50 requests (ok 50), clock ") {
		t.Errorf("text: exit %d\n%s", code, out)
	}
}

// An interrupted load over agents keeps what they measured.
func TestLoadAgentsInterrupted(t *testing.T) {
	srv := httptest.NewServer(slowHandler("x"))
	defer srv.Close()
	agents := startAgents(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	code, out, errs := runCLI(t, ctx, "load", "--agents", strings.Join(agents, ","), "--rate", "100", "--duration", "20s", "--json", srv.URL)
	if code != ExitInterrupted {
		t.Fatalf("exit %d, want %d: %s", code, ExitInterrupted, errs)
	}
	var rep loadReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || !rep.Interrupted || rep.Requests < 20 {
		t.Errorf("after interrupt: %v, interrupted %v, %d requests", err, rep.Interrupted, rep.Requests)
	}
}

func TestLoadAgentsUsageErrors(t *testing.T) {
	agents := startAgents(t, 1)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--agents", "nope"}, "--agents \"nope\""},
		{[]string{"--agents", "ftp://x:1"}, "--agents"},
		{[]string{"--agents", agents[0], "--hdr-log", "x"}, "--hdr-log goes without --agents"},
		{[]string{"--agents", agents[0], "--clock-tolerance", "0s"}, "--clock-tolerance"},
		{[]string{"--agents", agents[0] + "," + agents[0], "--burst", "9", "--connections", "4"}, "--burst"},
	} {
		code, _, errs := runCLI(t, context.Background(), append(append([]string{"load"}, tc.args...), "http://127.0.0.1:1/")...)
		if code != ExitUsage || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 naming %q", tc.args, code, errs, tc.want)
		}
	}
}
