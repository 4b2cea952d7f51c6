package results

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// lateReason is a generator-lateness reason as workloads words it.
const lateReason = "the generator's own lateness moved TTFB p99 from 0.127 ms to 0.179 ms (tolerance 0.050 ms)"

// spoiledCell is a cell of valid passes, then late ones the instrument
// spoiled (by: their recorded class), then engine-failed ones.
func spoiledCell(valid, late, failed int, by string) Result {
	r := Result{Unit: "ms", LowerIsBetter: true, Value: F(0.12)}
	i := 0
	for range valid {
		i++
		r.Passes = append(r.Passes, Pass{Index: i, Value: F(0.12), Valid: true, Requests: 1000})
	}
	for range late {
		i++
		r.Passes = append(r.Passes, Pass{Index: i, Value: F(0.18), Requests: 1000, InvalidReasons: []string{lateReason}, InvalidBy: by})
	}
	for range failed {
		i++
		r.Passes = append(r.Passes, Pass{Index: i, Value: F(0.12), Requests: 1000, Errors: 3,
			InvalidReasons: []string{"3 of 1000 requests failed (timeout 3)"}, InvalidBy: InvalidByEngine})
	}
	// A warm-up the host spoiled counts for nothing.
	r.Passes = append([]Pass{{Index: 1, Warmup: true, Value: F(9), InvalidReasons: []string{lateReason}, InvalidBy: by}}, r.Passes...)
	return r
}

// A cell is judged on its passes, not failed by a few the instrument or
// the host spoiled (issue 50): valid when the valid passes are at least
// half of the measured ones and no pass is invalid by the engine's doing,
// with the spoiled passes counted; invalid, every reason listed, when
// fewer are valid or the engine made a pass invalid.
func TestRecountSpoiledMajority(t *testing.T) {
	for _, c := range []struct {
		name                 string
		valid, late, failed  int
		wantValid            bool
		wantSpoiled, reasons int
	}{
		{"7 valid, 3 late", 7, 3, 0, true, 3, 0},
		{"5 valid, 5 late: half", 5, 5, 0, true, 5, 0},
		{"4 valid, 6 late", 4, 6, 0, false, 6, 6},
		{"9 valid, 1 failed", 9, 0, 1, false, 0, 1},
		{"8 valid, 1 late, 1 failed", 8, 1, 1, false, 1, 2},
		{"0 valid, 1 late", 0, 1, 0, false, 1, 1},
	} {
		r := spoiledCell(c.valid, c.late, c.failed, InvalidByInstrument)
		r.Recount()
		if r.Valid != c.wantValid || r.SpoiledPasses != c.wantSpoiled || len(r.InvalidReasons) != c.reasons ||
			r.MeasuredPasses != c.valid+c.late+c.failed || r.ValidPasses != c.valid {
			t.Errorf("%s: valid %v, %d spoiled, %d of %d passes valid, reasons %q; want valid %v, %d spoiled, %d reasons",
				c.name, r.Valid, r.SpoiledPasses, r.ValidPasses, r.MeasuredPasses, r.InvalidReasons, c.wantValid, c.wantSpoiled, c.reasons)
		}
		for _, why := range r.InvalidReasons {
			if !strings.HasPrefix(why, "pass ") {
				t.Errorf("%s: reason %q does not name its pass", c.name, why)
			}
		}
	}
}

// A pass whose class was not recorded (a file written before invalid_by)
// is the engine's: the cell recounts as it did, every late pass a reason
// it is invalid. The same file with the class recorded is valid.
func TestRecountUnclassifiedIsEngine(t *testing.T) {
	dir := t.TempDir()
	load := func(by string) Result {
		t.Helper()
		run := &Run{SchemaVersion: SchemaVersion, ID: "r" + by, Status: StatusComplete, Results: []Result{spoiledCell(7, 3, 0, by)}}
		b, err := json.Marshal(run)
		if err != nil {
			t.Fatal(err)
		}
		if by == "" && strings.Contains(string(b), "invalid_by") {
			t.Fatalf("a pass with no class wrote invalid_by: %s", b)
		}
		path := filepath.Join(dir, fmt.Sprintf("run-%s.json", by))
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		back, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		r := back.Results[0]
		r.Recount()
		return r
	}
	if r := load(""); r.Valid || r.SpoiledPasses != 0 || len(r.InvalidReasons) != 3 || !strings.Contains(r.InvalidReasons[0], "pass 8: the generator's own lateness") {
		t.Errorf("no class recorded: valid %v, %d spoiled, reasons %q; want invalid for the 3 late passes, none counted spoiled", r.Valid, r.SpoiledPasses, r.InvalidReasons)
	}
	if r := load(InvalidByInstrument); !r.Valid || r.SpoiledPasses != 3 || len(r.InvalidReasons) != 0 {
		t.Errorf("the instrument's class recorded: valid %v, %d spoiled, reasons %q; want valid, 3 spoiled", r.Valid, r.SpoiledPasses, r.InvalidReasons)
	}
	if r := load(InvalidByEngine); r.Valid || r.SpoiledPasses != 0 {
		t.Errorf("the engine's class recorded: valid %v, %d spoiled; want invalid, none spoiled", r.Valid, r.SpoiledPasses)
	}
}

// Saturation still decides by the median pass: a saturated cell is
// invalid whatever its spoiled passes, and a pass both saturated and late
// in a cell that is not saturated is the instrument's, counted in both.
func TestRecountSpoiledAndSaturated(t *testing.T) {
	sat := "saturated: carried 400 of 500 rps"
	r := spoiledCell(6, 0, 0, "")
	r.Passes = append(r.Passes,
		Pass{Index: 7, Value: F(2), Saturated: sat, InvalidReasons: []string{sat}, InvalidBy: InvalidBySaturation},
		Pass{Index: 8, Value: F(2), Saturated: sat, InvalidReasons: []string{lateReason, sat}, InvalidBy: InvalidByInstrument})
	r.Recount()
	if !r.Valid || r.SaturatedPasses != 2 || r.SpoiledPasses != 1 {
		t.Errorf("6 valid, 1 saturated, 1 saturated and late: valid %v, %d saturated, %d spoiled, reasons %q; want valid, 2 and 1",
			r.Valid, r.SaturatedPasses, r.SpoiledPasses, r.InvalidReasons)
	}
	r = spoiledCell(2, 0, 0, "")
	for i := range 3 {
		r.Passes = append(r.Passes, Pass{Index: 3 + i, Value: F(2), Saturated: sat, InvalidReasons: []string{lateReason, sat}, InvalidBy: InvalidByInstrument})
	}
	r.Recount()
	if r.Valid || !r.Saturated() || len(r.InvalidReasons) != 6 {
		t.Errorf("a saturated cell: valid %v, saturated %v, reasons %q; want invalid, every reason listed", r.Valid, r.Saturated(), r.InvalidReasons)
	}
}
