package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func runCLI(t *testing.T, ctx context.Context, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(ctx, args, &out, &errb)
	return code, out.String(), errb.String()
}

// slowHandler answers after 50 ms: the generator's lateness on a busy
// machine (a millisecond, say) stays far within the 5% tolerance, so passes
// that must be valid are.
func slowHandler(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(50 * time.Millisecond)
		w.Header().Set("X-Cache", "HIT")
		w.Write([]byte(body))
	}
}

// finishedValid fails the test unless the command exited 0, or 3 for the
// generator's own lateness only: under the race detector, or on a busy
// machine, the loop can be late by milliseconds, and the verdict rightly
// says so; that is not what these tests are about.
func finishedValid(t *testing.T, code int, errs string) {
	t.Helper()
	if code == ExitOK {
		return
	}
	if code == ExitInvalid && strings.Contains(errs, "lateness") {
		for _, other := range []string{"no successful", "dropped", "saturated", "interrupted"} {
			if strings.Contains(errs, other) {
				t.Fatalf("exit %d: %s", code, errs)
			}
		}
		t.Logf("invalid for the generator's lateness only: %s", errs)
		return
	}
	t.Fatalf("exit %d: %s", code, errs)
}

func TestLoadJSONKeys(t *testing.T) {
	srv := httptest.NewServer(slowHandler("hello"))
	defer srv.Close()
	code, out, errs := runCLI(t, context.Background(), "load", "--rate", "200", "--duration", "500ms", "--connections", "20", "--json", srv.URL+"/a")
	finishedValid(t, code, errs)
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, out)
	}
	for _, k := range []string{"requests", "errors", "errors_by_kind", "target_rps", "achieved_rps", "duration_s",
		"connections", "sockets_opened", "valid", "invalid_reasons", "pool_limited", "cpu_seconds", "ttfb",
		"ttfb_uncorrected", "total", "total_uncorrected", "schedule_lag", "connection_wait", "cache",
		"ok", "warnings", "dropped", "unsolicited", "error_samples", "lag_effect", "ttfb_from_dispatch", "total_from_dispatch"} {
		if _, ok := m[k]; !ok {
			t.Errorf("key %q missing", k)
		}
	}
	for _, k := range []string{"ttfb", "ttfb_uncorrected", "total", "total_uncorrected", "ttfb_from_dispatch", "total_from_dispatch"} {
		l := m[k].(map[string]any)
		for _, p := range []string{"p50_ms", "p90_ms", "p95_ms", "p99_ms", "p999_ms", "max_ms"} {
			if v, ok := l[p].(float64); !ok || v < 50 {
				t.Errorf("%s.%s = %v, want the server's 50 ms or more", k, p, l[p])
			}
		}
	}
	if le := m["lag_effect"].([]any); len(le) != 12 {
		t.Errorf("lag_effect has %d entries, want 6 quantiles of ttfb and total", len(le))
	} else if e := le[0].(map[string]any); e["figure"] != "ttfb" || e["quantile"] != 50.0 || e["corrected_ms"] == nil || e["exceeded"] != false {
		t.Errorf("lag_effect[0] = %v", e)
	}
	for _, k := range []string{"schedule_lag", "connection_wait"} {
		l := m[k].(map[string]any)
		for _, p := range []string{"p50_ms", "p99_ms", "max_ms"} {
			if _, ok := l[p]; !ok {
				t.Errorf("%s.%s missing", k, p)
			}
		}
	}
	if m["requests"].(float64) != 100 || m["cache"].(map[string]any)["hit"].(float64) != 100 {
		t.Errorf("requests %v cache %v, want 100 hits", m["requests"], m["cache"])
	}
}

func TestLoadTextAndBurstTemplate(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	slow := slowHandler("x")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.URL.Path]++ // the requests of one burst arrive together
		mu.Unlock()
		slow(w, r)
	}))
	defer srv.Close()
	code, out, errs := runCLI(t, context.Background(), "load", "--burst", "5", "--repeat", "3", srv.URL+"/seg-{rep}.ts")
	finishedValid(t, code, errs)
	valid := "Valid: yes"
	if code == ExitInvalid {
		valid = "Valid: NO"
	}
	for _, want := range []string{"burst 1/3 /seg-0.ts", "burst 3/3 /seg-2.ts", "All 3 bursts", "TTFB uncorrected", valid} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestLoadUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"load"}, "one URL"},
		{[]string{"load", "--rate", "-5", "http://127.0.0.1:1/"}, "--rate"},
		{[]string{"load", "--rate", "abc", "http://127.0.0.1:1/"}, "rate"},
		{[]string{"load", "--arrival", "bursty", "http://127.0.0.1:1/"}, "--arrival"},
		{[]string{"load", "--header", "NoColon", "http://127.0.0.1:1/"}, "--header"},
		{[]string{"load", "--header", "Range: pages=1", "http://127.0.0.1:1/"}, "--header"},
		{[]string{"load", "--repeat", "3", "http://127.0.0.1:1/"}, "--repeat"},
		{[]string{"load", "--burst", "10", "--connections", "5", "http://127.0.0.1:1/"}, "--burst"},
		{[]string{"load", "--connections", "0", "--rate", "1", "http://127.0.0.1:1/"}, "--connections"},
		{[]string{"load", "ftp://127.0.0.1/"}, "URL"},
		{[]string{"load", "http://127.0.0.1:70000/"}, "URL"},
		{[]string{"load", "--ca", "/nonexistent.pem", "https://127.0.0.1:1/"}, "--ca"},
		{[]string{"load", "--nope", "http://127.0.0.1:1/"}, "unknown flag"},
	} {
		code, _, errs := runCLI(t, context.Background(), tc.args...)
		if code != ExitUsage || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 naming %q", tc.args, code, errs, tc.want)
		}
	}
	code, _, errs := runCLI(t, context.Background(), "load", "--rate", "10", "--duration", "1s", "http://127.0.0.1:1/")
	if code != ExitFailure || !strings.Contains(errs, "connect") {
		t.Errorf("refused connection: exit %d %q, want 1 and a connect error", code, errs)
	}
}

func TestLoadInterruptKeepsResults(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("x")) }))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	log := filepath.Join(t.TempDir(), "run.hlog")
	code, out, errs := runCLI(t, ctx, "load", "--rate", "100", "--duration", "20s", "--json", "--hdr-log", log, srv.URL)
	if code != ExitInterrupted {
		t.Fatalf("exit %d, want %d: %s", code, ExitInterrupted, errs)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("no JSON after interrupt: %v", err)
	}
	if m["interrupted"] != true || m["valid"] != false || m["requests"].(float64) < 10 {
		t.Errorf("interrupted %v valid %v requests %v", m["interrupted"], m["valid"], m["requests"])
	}
	if b, err := os.ReadFile(log); err != nil || !bytes.Contains(b, []byte("Tag=ttfb")) {
		t.Errorf("hdr log after interrupt: %v", err)
	}
}

func TestHDRLogNotHalfWritten(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "run.hlog")
	code, _, _ := runCLI(t, context.Background(), "load", "--hdr-log", log, "--rate", "10", "--duration", "1s", "http://127.0.0.1:1/")
	if code == 0 {
		t.Fatal("refused connection succeeded")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 0 {
		t.Errorf("failed run left files: %v", entries)
	}
}

// A pass that finishes without a successful request prints what it can,
// null or "—" where nothing was measured, the errors' messages, and exits 3
// with one line on stderr.
func TestLoadInvalidExitsThree(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	want := "no successful request: 20 of 20 failed (status 20)"
	code, out, errs := runCLI(t, context.Background(), "load", "--rate", "100", "--duration", "200ms", "--connections", "2", srv.URL+"/missing")
	if code != ExitInvalid {
		t.Fatalf("exit %d, want %d: %s", code, ExitInvalid, errs)
	}
	if errs != "hlsbench: finished, but some results are invalid: "+want+"\n" {
		t.Errorf("stderr %q, want one line with the reason", errs)
	}
	for _, s := range []string{"Valid: NO", want, "status 404 (want 200)", "—"} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}

	code, out, _ = runCLI(t, context.Background(), "load", "--rate", "100", "--duration", "200ms", "--connections", "2", "--json", srv.URL+"/missing")
	var m struct {
		Valid        bool                             `json:"valid"`
		TTFB         map[string]*float64              `json:"ttfb"`
		ErrorSamples []struct{ Kind, Message string } `json:"error_samples"`
	}
	if err := json.Unmarshal([]byte(out), &m); err != nil || code != ExitInvalid {
		t.Fatalf("exit %d, JSON %v:\n%s", code, err, out)
	}
	if p, ok := m.TTFB["p50_ms"]; !ok || p != nil || m.Valid {
		t.Errorf("ttfb %v valid %v, want a null p50 and invalid", m.TTFB, m.Valid)
	}
	if len(m.ErrorSamples) != 1 || m.ErrorSamples[0].Message != "status 404 (want 200)" {
		t.Errorf("error_samples %+v", m.ErrorSamples)
	}
}
