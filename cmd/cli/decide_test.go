package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hlsbench/hlsbench/results"
	"github.com/hlsbench/hlsbench/results/compare"
	"github.com/hlsbench/hlsbench/results/stats"
)

// --decide names two different rows of --engine, with workloads that can
// run more passes, and --max-passes no fewer than --passes: else exit 2,
// naming the flag and what it accepts, and nothing is written.
func TestDecideFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--decide", "a,c"}, "--decide a,c: c is not a row of --engine: want two of a, b"},
		{[]string{"--decide", "a"}, `--decide "a": want BASE,NEW, two rows of --engine (a, b)`},
		{[]string{"--decide", "a,b,a"}, "want BASE,NEW"},
		{[]string{"--decide", "a,a"}, "--decide a,a: the same row twice: want two different rows of --engine (a, b)"},
		{[]string{"--decide", "a,b", "--passes", "5", "--max-passes", "4"}, "--max-passes 4: want at least --passes (5)"},
		{[]string{"--decide", "a,b", "--max-passes", "-1"}, "--max-passes -1: want at least --passes"},
		{[]string{"--max-passes", "30"}, "--max-passes goes with --decide BASE,NEW"},
		{[]string{"--decide", "a,b", "--workload", "hit-path,miss-storm"}, "--decide: workload miss-storm cannot run passes beyond its planned ones: want --workload hit-path or segment"},
	} {
		dir := filepath.Join(t.TempDir(), "out")
		args := append([]string{"run", "--runtime", "inproc", "--engine", "a=builtin,b=builtin", "--workload", "hit-path",
			"--out", dir, "--lock", "none", "--quiet"}, tc.args...)
		code, _, errs := runCLI(t, context.Background(), args...)
		if code != ExitUsage || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 naming %q", tc.args, code, errs, tc.want)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%v: %s written (%v)", tc.args, dir, err)
		}
	}
}

// scriptJudge stands in for compare's judge: compare.Variants as it is,
// each row's verdict then replaced by verdicts[call] (the last one for
// every call after), so that what the loop does is the test's, not the
// machine's.
func scriptJudge(t *testing.T, verdicts ...stats.Verdict) *[]int {
	var calls []int // the measured passes of each row at each call
	old := decideJudge
	t.Cleanup(func() { decideJudge = old })
	decideJudge = func(files []compare.File, base, new []string, o compare.Options) (*compare.Comparison, error) {
		c, err := compare.Variants(files, base, new, o)
		if err != nil {
			return nil, err
		}
		n := 0
		for _, r := range files[0].Run.Results {
			if r.Engine == base[0] && r.ID == "hit-path/p50-ttfb" {
				n = r.MeasuredPasses
			}
		}
		calls = append(calls, n)
		v := verdicts[min(len(calls), len(verdicts))-1]
		for i := range c.Rows {
			c.Rows[i].Status, c.Rows[i].Verdict, c.Rows[i].Reason = compare.Compared, v, "scripted: "+string(v)
		}
		return c, nil
	}
	return &calls
}

// The loop, with the verdicts scripted: decided at once runs no more
// pass; undecided, then decided, runs one round of --passes more of both
// rows and stops; never decided stops at --max-passes, exit 2, saying
// inconclusive at the bound. Every pass is in the file, and the decision.
func TestDecideLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("runs hit-path on two built-in caches")
	}
	for _, tc := range []struct {
		name     string
		verdicts []stats.Verdict
		code     int
		passes   int   // each row's measured passes in the end
		judged   []int // each row's passes at each judgement, the final one included
		says     string
	}{
		{"decided at once", []stats.Verdict{stats.Regression}, ExitFailure, 2, []int{2, 2}, "regression, decided after 2 passes of each"},
		{"decided after a round", []stats.Verdict{compare.Inconclusive, stats.NoChange}, ExitOK, 4, []int{2, 4, 4}, "~, decided after 4 passes of each"},
		{"never decided", []stats.Verdict{compare.Inconclusive}, ExitUsage, 5, []int{2, 4, 5, 5}, "inconclusive at the bound of 5 passes of each: scripted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := scriptJudge(t, tc.verdicts...)
			dir := t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			code, out, errs := runCLI(t, ctx, "run", "--runtime", "inproc", "--engine", "a=builtin,b=builtin", "--workload", "hit-path",
				"--passes", "2", "--warmups", "0", "--pass-duration", "100ms", "--rate", "100", "--host-repeats", "0",
				"--decide", "a,b", "--max-passes", "5", "--out", dir, "--lock", "none", "--quiet")
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, tc.code, out, errs)
			}
			if !strings.Contains(errs, "up to 5 each (--max-passes)") {
				t.Errorf("the bound is not stated: %s", errs)
			}
			if !strings.Contains(out, "hit-path/p50-ttfb: "+tc.says) {
				t.Errorf("output does not say %q:\n%s", tc.says, out)
			}
			if got := *calls; !equalInts(got, tc.judged) {
				t.Errorf("judged at %v passes, want %v", got, tc.judged)
			}
			files, _ := filepath.Glob(filepath.Join(dir, "run-*.json"))
			if len(files) != 1 {
				t.Fatalf("files %v", files)
			}
			run, err := results.Load(files[0])
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range run.Results {
				if r.MeasuredPasses != tc.passes || len(r.Passes) != tc.passes {
					t.Errorf("%s on %s: %d measured passes (%d kept), want %d", r.ID, r.Engine, r.MeasuredPasses, len(r.Passes), tc.passes)
				}
				for i, p := range r.Passes {
					if p.Index != i+1 || p.Warmup {
						t.Errorf("%s on %s: pass %d recorded as %d (warm-up %v)", r.ID, r.Engine, i+1, p.Index, p.Warmup)
					}
				}
			}
			d := run.Decision
			if d == nil || d.Base != "a" || d.New != "b" || d.PlannedPasses != 2 || d.MaxPasses != 5 || len(d.Tests) != 2 {
				t.Fatalf("decision in the file: %+v", d)
			}
			for _, dt := range d.Tests {
				if dt.Passes != tc.passes || dt.Decided != (tc.code != ExitUsage) || dt.Verdict != string(tc.verdicts[len(tc.verdicts)-1]) {
					t.Errorf("decided test in the file: %+v", dt)
				}
			}
		})
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
