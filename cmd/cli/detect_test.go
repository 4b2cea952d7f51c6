package cli

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/engines/builtin"
	"github.com/hlsbench/hlsbench/workloads"
)

// delayProxy forwards to target, adding d to every answer before its
// first byte (spinning, for a delay the timer's granularity cannot blur).
func delayProxy(t *testing.T, target string, d time.Duration) string {
	u, _ := url.Parse(target)
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for start := time.Now(); time.Since(start) < d; {
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// Detection: a proxy in front of the built-in cache that adds 0.2 ms to
// every answer makes compare exit 1 and name the hit-path tests, against
// the same proxy adding nothing, measured back to back.
func TestCompareDetectsDelay(t *testing.T) {
	if testing.Short() {
		t.Skip("two runs of 11 passes")
	}
	if raceEnabled {
		// Its verdict is a 0.2 ms latency: the race detector's stalls of
		// tens of milliseconds would decide it (it runs once, without).
		t.Skip("a latency verdict: run without -race")
	}
	specs, err := workloads.Specs(workloads.HitPath)
	if err != nil {
		t.Fatal(err)
	}
	originAddr := freeAddr(t)
	cache, err := builtin.New(builtin.Config{Origin: "http://" + originAddr, Policy: engines.BuiltinPolicy(specs[0].Policy)})
	if err != nil {
		t.Fatal(err)
	}
	defer cache.Close()
	cacheSrv := httptest.NewServer(cache)
	defer cacheSrv.Close()

	dir := t.TempDir()
	measure := func(name string, d time.Duration) string {
		out := filepath.Join(dir, name)
		code, _, errs := runCLI(t, context.Background(), "run", "--runtime", "inproc", "--engine", "external",
			"--url", delayProxy(t, cacheSrv.URL, d), "--origin-listen", originAddr, "--workload", "hit-path",
			"--passes", "10", "--warmups", "1", "--pass-duration", "1s", "--rate", "500", "--quiet", "--out", out)
		if code != ExitOK && code != ExitInvalid {
			t.Fatalf("%s: exit %d: %s", name, code, errs)
		}
		return out
	}
	// The generator shares this process with the cache and the proxy: on a
	// busy machine its own lateness and the host spoil passes, and compare
	// counts them both ways: when they could hide the delay or invent one,
	// it says "inconclusive" (exit 2), no decision. Up to three pairs are
	// measured while it decides nothing; a decision is then judged, and
	// only a wrong one fails: "no regression" (exit 0), or a regression
	// that is not hit-path's p50.
	var code int
	var out, errs string
	for attempt := 1; attempt <= 3; attempt++ {
		base := measure(fmt.Sprintf("base-%d", attempt), 0)
		slow := measure(fmt.Sprintf("new-%d", attempt), 200*time.Microsecond)
		code, out, errs = runCLI(t, context.Background(), "compare", base, slow)
		t.Logf("compare, pair %d:\n%s%s", attempt, out, errs)
		if code != ExitUsage && !p50Undecided(out) {
			break
		}
	}
	switch {
	case code == ExitUsage:
		// The product said it could not decide on this machine now: a true
		// answer, not a wrong one.
		t.Skipf("compare decided nothing in three pairs (exit 2: %s): the machine spoiled the passes that would", strings.TrimSpace(errs))
	case p50Undecided(out):
		t.Skipf("compare could not decide hit-path p50 in three pairs (exit %d): the machine spoiled the passes that would", code)
	case code != 1:
		t.Fatalf("compare exit %d, want 1 for a 0.2 ms slower proxy", code)
	}
	if !strings.Contains(p50Row(out), "regression") || !strings.Contains(errs, "hit-path/p50-ttfb") {
		t.Errorf("compare does not name hit-path p50-ttfb as a regression")
	}
}

// p50Row is the hit-path p50 row of compare's table.
func p50Row(table string) string {
	for _, line := range strings.Split(table, "\n") {
		if strings.Contains(line, "p50-ttfb") {
			return line
		}
	}
	return ""
}

// p50Undecided says compare reached no decision on the hit-path p50 row:
// passes the instrument spoiled leave it inconclusive, or a side has no
// pass it could compare ("invalid in both", "not comparable").
func p50Undecided(table string) bool {
	row := p50Row(table)
	for _, s := range []string{"inconclusive", " in base", " in new", " in both", "not comparable"} {
		if strings.Contains(row, s) {
			return true
		}
	}
	return row == ""
}
