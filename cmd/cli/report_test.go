package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// reportFixture is package report's suite fixture: a quick suite of three
// engines.
var reportFixture = filepath.Join("..", "..", "report", "testdata", "suite")

func TestReportUsage(t *testing.T) {
	out := filepath.Join(t.TempDir(), "site")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no args", []string{"report", "--out", out}, "want suite directories, a directory of run files, or run files"},
		{"no --out", []string{"report", reportFixture}, "--out"},
		{"--alpha 2", []string{"report", "--alpha", "2", "--out", out, reportFixture}, "--alpha 2"},
		{"--alpha not a number", []string{"report", "--alpha", "x", "--out", out, reportFixture}, "alpha"},
		{"--threshold -1", []string{"report", "--threshold", "-1", "--out", out, reportFixture}, "--threshold -1"},
		{"missing input", []string{"report", "--out", out, filepath.Join(t.TempDir(), "run-none.json")}, "run-none.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, context.Background(), tc.args...)
			if code != ExitUsage {
				t.Errorf("exit %d, want %d; stderr: %s", code, ExitUsage, stderr)
			}
			if !strings.Contains(stderr, tc.want) {
				t.Errorf("stderr %q does not name %q", stderr, tc.want)
			}
			if stdout != "" {
				t.Errorf("stdout %q on a usage error", stdout)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s written on a usage error", out)
			}
		})
	}
}

func TestReportWrites(t *testing.T) {
	out := filepath.Join(t.TempDir(), "site")
	code, stdout, stderr := runCLI(t, context.Background(), "report", "--out", out, reportFixture)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	page := filepath.Join(out, "index.html")
	if _, err := os.Stat(page); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout, page) || !strings.Contains(stdout, "11 tests from 1 result file") {
		t.Errorf("stdout %q does not name %s and what it holds", stdout, page)
	}
	for _, f := range []string{"report.md", "figures.csv", "charts/hit-path-p99-ttfb.png", "charts/hit-path-p99-ttfb.svg", "runs/manifest.json"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	// Again over its own output: replaced, exit 0.
	if code, _, stderr := runCLI(t, context.Background(), "report", "--title", "Again", "--out", out, reportFixture); code != ExitOK {
		t.Fatalf("second run: exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(page)
	if err != nil || !strings.Contains(string(b), "<title>Again</title>") {
		t.Errorf("the second run did not replace the page: %v", err)
	}
}

func TestReportRefusesOtherDir(t *testing.T) {
	out := t.TempDir()
	mine := map[string]string{"index.html": "my page\n", "notes.txt": "keep\n"}
	for name, data := range mine {
		if err := os.WriteFile(filepath.Join(out, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, stdout, stderr := runCLI(t, context.Background(), "report", "--out", out, reportFixture)
	if code != ExitUsage {
		t.Errorf("exit %d, want %d: %s", code, ExitUsage, stderr)
	}
	if !strings.Contains(stderr, "--out "+out+": ") || !strings.Contains(stderr, ".hlsbench-report") {
		t.Errorf("stderr %q does not name --out %s and the marker", stderr, out)
	}
	if stdout != "" {
		t.Errorf("stdout %q", stdout)
	}
	ents, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != len(mine) {
		t.Errorf("%d entries in %s, want %d", len(ents), out, len(mine))
	}
	for name, data := range mine {
		if b, err := os.ReadFile(filepath.Join(out, name)); err != nil || string(b) != data {
			t.Errorf("%s changed: %q, %v", name, b, err)
		}
	}
	// Nothing staged beside it either.
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(out), "."+filepath.Base(out)+".new-*")); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}
