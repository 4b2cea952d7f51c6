package cli

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/hlsbench/hlsbench/results"
	"github.com/hlsbench/hlsbench/workloads"
)

// A suite writes a manifest of its cells; --resume runs only the cells it
// does not list as complete, with the suite's own settings, and drops the
// unfinished cells' passes from the earlier file.
func TestSuiteResume(t *testing.T) {
	if testing.Short() {
		t.Skip("runs workloads")
	}
	dir := filepath.Join(t.TempDir(), "suite")
	code, _, errs := runCLI(t, context.Background(), "suite", "--runtime", "inproc", "--engine", "builtin",
		"--workload", "hit-path,miss-storm", "--passes", "1", "--warmups", "0", "--pass-duration", "300ms", "--rate", "200",
		"--quiet", "--out", dir)
	if code != ExitOK && code != ExitInvalid {
		t.Fatalf("suite: exit %d: %s", code, errs)
	}
	m, err := results.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Cells) != 2 || !m.Cells[0].Complete || !m.Cells[1].Complete || len(m.Runs) != 1 {
		t.Fatalf("manifest %+v", m)
	}
	// As if the suite had been stopped during miss-storm.
	m.Cells[1].Complete, m.Cells[1].File = false, ""
	b, _ := json.Marshal(m)
	os.WriteFile(filepath.Join(dir, results.ManifestName), b, 0o644)

	code, _, errs = runCLI(t, context.Background(), "suite", "--resume", dir, "--quiet")
	if code != ExitOK && code != ExitInvalid {
		t.Fatalf("resume: exit %d: %s", code, errs)
	}
	t.Logf("resume: %s", errs)
	if !strings.Contains(errs, "1 of 2 cells to run") {
		t.Errorf("resume said: %s", errs)
	}
	m, _ = results.ReadManifest(dir)
	if len(m.Runs) != 2 || !m.Cells[1].Complete || m.Cells[1].File != m.Runs[1] {
		t.Fatalf("manifest after resume %+v", m)
	}
	first, err := results.Load(filepath.Join(dir, m.Runs[0]))
	if err != nil {
		t.Fatal(err)
	}
	second, err := results.Load(filepath.Join(dir, m.Runs[1]))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range first.Results {
		if r.Workload != "hit-path" {
			t.Errorf("first file still holds %s", r.ID)
		}
	}
	for _, r := range second.Results {
		if r.Workload != "miss-storm" || r.MeasuredPasses != 1 {
			t.Errorf("second file holds %s with %d passes: want miss-storm only, as the suite was set up", r.ID, r.MeasuredPasses)
		}
	}
	code, _, errs = runCLI(t, context.Background(), "suite", "--resume", dir, "--quiet")
	if code != ExitUsage || !strings.Contains(errs, "complete") {
		t.Errorf("resuming a complete suite: exit %d: %s", code, errs)
	}
	code, _, errs = runCLI(t, context.Background(), "suite", "--quiet", "--out", dir)
	if code != ExitUsage || !strings.Contains(errs, "--resume") {
		t.Errorf("a second suite into the same directory: exit %d: %s", code, errs)
	}
}

// A suite's audience flags are saved for --resume as their flags write
// them, and read back to the same values.
func TestSuiteAudienceArgs(t *testing.T) {
	cmd := newSuiteCmd(io.Discard, io.Discard)
	given := []string{"--viewers", "70", "--ladder", "100k,1.5M", "--store-sizes", "64MiB,none", "--vod-share", "0"}
	if err := cmd.ParseFlags(given); err == nil {
		t.Fatal("--store-sizes 64MiB,none: want an error (none stands alone)")
	}
	cmd = newSuiteCmd(io.Discard, io.Discard)
	given = []string{"--viewers", "70", "--ladder", "100k,1.5M", "--store-sizes", "64MiB", "--vod-share", "0", "--ramp", "3s"}
	if err := cmd.ParseFlags(given); err != nil {
		t.Fatal(err)
	}
	o := SuiteOptions{}
	set := map[string]bool{}
	cmd.Flags().Visit(func(f *pflag.Flag) { set[f.Name] = true })
	o.Settings = workloads.Defaults()
	if err := readSettings(cmd.Flags(), set, &o.Settings); err != nil {
		t.Fatal(err)
	}
	args := suiteArgs(set, &o, "builtin")
	back := newSuiteCmd(io.Discard, io.Discard)
	if err := back.ParseFlags(args); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	backSet := map[string]bool{}
	back.Flags().Visit(func(f *pflag.Flag) { backSet[f.Name] = true })
	again := workloads.Defaults()
	if err := readSettings(back.Flags(), backSet, &again); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"viewers": "70", "ladder": "100k,1.5M", "store-sizes": "64MiB", "vod-share": "0", "ramp": "3s"} {
		s, _ := workloads.LookupSetting(name)
		if got := s.Text(again); got != want {
			t.Errorf("args %v: --%s read back as %q, want %q", args, name, got, want)
		}
	}
}

// A placed suite resumes placed: --place and --clock-tolerance are in its
// manifest's arguments.
func TestSuiteArgsKeepPlace(t *testing.T) {
	place := "generator=unix:///a.sock@198.18.0.2,engine=unix:///e.sock@198.18.0.4,origin=unix:///o.sock@198.18.0.5"
	cmd := newSuiteCmd(io.Discard, io.Discard)
	if err := cmd.ParseFlags([]string{"--place", place, "--clock-tolerance", "2ms"}); err != nil {
		t.Fatal(err)
	}
	o := SuiteOptions{}
	set := map[string]bool{}
	cmd.Flags().Visit(func(f *pflag.Flag) { set[f.Name] = true })
	readSuiteFlags(cmd.Flags(), &o)
	back := newSuiteCmd(io.Discard, io.Discard)
	if err := back.ParseFlags(suiteArgs(set, &o, "varnish")); err != nil {
		t.Fatal(err)
	}
	again := SuiteOptions{}
	readSuiteFlags(back.Flags(), &again)
	if again.Place != place || again.ClockTolerance != 2*time.Millisecond {
		t.Errorf("read back: --place %q --clock-tolerance %v", again.Place, again.ClockTolerance)
	}
}
