package report_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hlsbench/hlsbench/report"
	"github.com/hlsbench/hlsbench/report/browser"
	"github.com/hlsbench/hlsbench/workloads"
)

// needChromium skips without a browser, except under CI, where a missing
// browser is a broken setup and must fail.
func needChromium(t *testing.T) {
	t.Helper()
	if _, err := browser.FindChromium(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true: %v", err)
		}
		t.Skipf("skipping the page check: %v", err)
	}
}

// readWidth is the width the page must read at: a laptop's screen.
const readWidth = 1280

// TestPage opens the page of each fixture in headless Chromium: every chart
// loads, nothing is logged, nothing is fetched, every link leads to a file.
// HLSBENCH_SCREENSHOT_DIR keeps the screenshots (fixture.png) for a look.
func TestPage(t *testing.T) {
	needChromium(t)
	shots := os.Getenv("HLSBENCH_SCREENSHOT_DIR")
	if shots == "" {
		shots = t.TempDir()
	}
	// The committed page's runs too: their tables are the widest.
	dirs := map[string]string{"suite": "testdata/suite", "failing": "testdata/failing", "saturated": "testdata/saturated", "site": "../site/runs"}
	for _, fx := range []string{"suite", "failing", "saturated", "site"} {
		if _, err := os.Stat(dirs[fx]); err != nil {
			continue
		}
		t.Run(fx, func(t *testing.T) {
			in, err := report.Read([]string{filepath.FromSlash(dirs[fx])})
			if err != nil {
				t.Fatal(err)
			}
			o := report.DefaultOptions()
			o.Catalog = workloads.Catalog()
			rep, err := report.Build(in, o)
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(t.TempDir(), "site")
			if err := report.WriteDir(dir, rep); err != nil {
				t.Fatal(err)
			}
			tests := 0
			for _, w := range rep.Workloads {
				tests += len(w.Tests) + len(w.Curves)
			}

			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			shot := filepath.Join(shots, fx+".png")
			start := time.Now()
			r, err := browser.Check(ctx, filepath.Join(dir, "index.html"), browser.Options{Screenshot: shot, Width: readWidth, Timeout: 2 * time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("checked in %v; screenshot %s", time.Since(start).Round(time.Millisecond), shot)

			if p := r.Problems(); len(p) > 0 {
				t.Errorf("%d problems:\n%s", len(p), strings.Join(p, "\n"))
			}
			if len(r.Images) != tests {
				t.Errorf("%d images, want one per test and curve (%d)", len(r.Images), tests)
			}
			for _, img := range r.Images {
				if !img.Loaded || img.NaturalWidth <= 0 {
					t.Errorf("image %+v not loaded", img)
				}
			}
			if len(r.Requests) > 0 {
				t.Errorf("the page asked the network for %q", r.Requests)
			}
			// At a laptop's width the page never scrolls sideways: a wide
			// table scrolls in its own box.
			if r.ScrollWidth > readWidth {
				t.Errorf("the page is %d px wide at %d px: it scrolls sideways", r.ScrollWidth, readWidth)
			}
			if r.Title != rep.Title {
				t.Errorf("title %q, want %q", r.Title, rep.Title)
			}
			if st, err := os.Stat(shot); err != nil || st.Size() == 0 {
				t.Errorf("screenshot: %v", err)
			}
		})
	}
}
