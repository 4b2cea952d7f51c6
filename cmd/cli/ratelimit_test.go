package cli

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/engines/builtin"
	"github.com/hlsbench/hlsbench/workloads"
)

// bucket lets one request through every every, no burst: a proxy limited
// to 1/every answers a second.
type bucket struct {
	mu    sync.Mutex
	next  time.Time
	every time.Duration
}

func (b *bucket) wait(ctx context.Context) {
	b.mu.Lock()
	now := time.Now()
	if b.next.Before(now) {
		b.next = now
	}
	at := b.next
	b.next = b.next.Add(b.every)
	b.mu.Unlock()
	t := time.NewTimer(time.Until(at))
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// Issue 44's done-when: a suite of two named external proxies where b
// answers at most 300 requests a second. hit-path's passes on b are
// saturated, its figures null: compare --base a --new b exits 1 and names
// the saturated test, where it once listed it "invalid in new" and exited
// 2 (or 0, beside any row that compared).
func TestCompareRateLimitedProxyIsRegression(t *testing.T) {
	if raceEnabled {
		t.Skip("an end-to-end suite: run once, without -race")
	}
	if testing.Short() {
		t.Skip("runs a quick hit-path suite on two proxies")
	}
	listens := [2]string{freeAddr(t), freeAddr(t)}
	hit, err := workloads.Specs("hit-path")
	if err != nil {
		t.Fatal(err)
	}
	var urls [2]string
	for i, limit := range []*bucket{nil, {every: time.Second / 300}} {
		cache, err := builtin.New(builtin.Config{Origin: "http://" + listens[i], Policy: engines.BuiltinPolicy(hit[0].Policy)})
		if err != nil {
			t.Fatal(err)
		}
		defer cache.Close()
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if limit != nil {
				limit.wait(r.Context())
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
	start := time.Now()
	code, _, errs := runCLI(t, ctx, "suite", "--quick", "--runtime", "inproc", "--engine", "external@a,external@b",
		"--url", "a="+urls[0]+",b="+urls[1], "--origin-listen", "a="+listens[0]+",b="+listens[1],
		"--workload", "hit-path", "--rate", "1000", "--out", dir, "--quiet", "--lock", "none")
	t.Logf("suite: exit %d in %s", code, time.Since(start).Round(time.Second))
	if code != ExitOK && code != ExitInvalid {
		t.Fatalf("suite: exit %d: %s", code, errs)
	}
	code, out, errs := runCLI(t, ctx, "compare", dir, "--base", "external@a", "--new", "external@b")
	t.Logf("compare: exit %d\n%s%s", code, out, errs)
	if code != ExitFailure {
		t.Fatalf("compare: exit %d, want 1 (b saturated)", code)
	}
	if !strings.Contains(errs, "hit-path/p50-ttfb") || !strings.Contains(errs, "saturated: carried") {
		t.Errorf("compare's stderr %q: want hit-path/p50-ttfb named, and saturated", errs)
	}
}
