package cli

import (
	"context"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/engines/builtin"
	"github.com/hlsbench/hlsbench/workloads"
)

// An A/B in one run that must find a regression: two external proxies side
// by side, the same cache (the built-in one, in this process) in front of
// an origin of its own each, one of them holding every answer 0.2 ms more. hit-path's p50 TTFB is a
// regression of a→b (exit 1); the proxies' figures are otherwise the same.
// It is what the nightly's verdict is for: a change of 0.2 ms on a path of
// tens of microseconds.
func TestCompareExternalDelayIsRegression(t *testing.T) {
	if raceEnabled {
		t.Skip("an end-to-end latency verdict: run without -race")
	}
	if testing.Short() {
		t.Skip("runs hit-path on two proxies for about 30 s")
	}
	listens := [2]string{freeAddr(t), freeAddr(t)}
	hit, err := workloads.Specs("hit-path")
	if err != nil {
		t.Fatal(err)
	}
	var urls [2]string
	for i, delay := range []time.Duration{0, 200 * time.Microsecond} {
		cache, err := builtin.New(builtin.Config{Origin: "http://" + listens[i], Policy: engines.BuiltinPolicy(hit[0].Policy)})
		if err != nil {
			t.Fatal(err)
		}
		defer cache.Close()
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// Held by spinning: time.Sleep rounds a sleep this short up to
			// about a millisecond here.
			for start := time.Now(); time.Since(start) < delay; {
			}
			cache.ServeHTTP(w, r)
		})}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go srv.Serve(ln)
		defer srv.Close()
		urls[i] = "http://" + ln.Addr().String()
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	code, _, errs := runCLI(t, ctx, "run", "--runtime", "inproc", "--engine", "external@a,external@b",
		"--url", "a="+urls[0]+",b="+urls[1], "--origin-listen", "a="+listens[0]+",b="+listens[1],
		"--workload", "hit-path", "--rate", "500", "--passes", "8", "--warmups", "1", "--pass-duration", "1s",
		"--out", dir, "--quiet", "--lock", "none")
	if code != ExitOK && code != ExitInvalid {
		t.Fatalf("run: exit %d: %s", code, errs)
	}
	code, out, errs := runCLI(t, ctx, "compare", dir, "--base", "external@a", "--new", "external@b")
	if p50Undecided(out) {
		// Passes the generator's lateness spoiled leave p50 undecided, and
		// compare says so: a true answer about this machine now.
		t.Skipf("compare could not decide hit-path p50 (exit %d): %s\n%s", code, strings.TrimSpace(errs), out)
	}
	if code != ExitFailure {
		t.Fatalf("compare: exit %d, want 1 (a regression)\n%s\n%s", code, out, errs)
	}
	var p50 string
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "p50") && strings.Contains(line, "external@a→external@b") {
			p50 = line
		}
	}
	if !strings.Contains(p50, "regression") {
		t.Errorf("hit-path p50: %q, want a regression\n%s", p50, out)
	}
	if os.Getenv("HLSBENCH_SHOW") != "" {
		t.Log(out)
	}
}
