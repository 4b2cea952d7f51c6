package results

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

func TestSaveLoad(t *testing.T) {
	dir := t.TempDir()
	run := NewRun("v1", "abc123", map[string]any{"passes": 20})
	h := hdr.New(1000, 60e9, 3)
	for i := int64(1); i <= 1000; i++ {
		h.RecordValue(i * 1000)
	}
	enc, err := EncodeHistogram(h)
	if err != nil {
		t.Fatal(err)
	}
	run.Results = []Result{{ID: "hit-path/p99-ttfb", Value: F(0.99), Unit: "ms", Valid: true, Histogram: enc,
		Passes: []Pass{{Index: 1, Value: F(1), Valid: true}, {Index: 2, Value: F(3), Valid: true},
			{Index: 3, Value: F(50)}, {Index: 4, NoValue: "no successful request", Valid: true},
			{Index: 5, Value: F(2), Valid: true, Evidence: &Evidence{Generator: &GeneratorFigures{
				TLS: &GeneratorTLS{Version: "TLS 1.3", Cipher: "TLS_AES_128_GCM_SHA256", Curve: "X25519", Handshakes: 8, Resumed: 7}}}},
			{Index: 1, Warmup: true, Value: F(100), Valid: true}}}}
	run.Status = StatusComplete
	run.FinishedAt = time.Now()
	path, err := run.Save(dir)
	if err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the run file", len(entries))
	}
	back, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.ID != run.ID || back.Tool.Commit != "abc123" || back.Host.Cores == 0 || back.Results[0].ID != "hit-path/p99-ttfb" {
		t.Errorf("round trip lost facts: %+v", back)
	}
	h2, err := DecodeHistogram(back.Results[0].Histogram)
	if err != nil || h2.TotalCount() != 1000 || h2.ValueAtQuantile(99) != h.ValueAtQuantile(99) {
		t.Errorf("histogram round trip: %v", err)
	}
	if g := back.Results[0].Passes[4].Evidence.Generator; g.TLS == nil || *g.TLS != *run.Results[0].Passes[4].Evidence.Generator.TLS {
		t.Errorf("generator TLS round trip: %+v", g.TLS)
	}
	if s := SpreadOf(run.Results[0].Passes); s.N != 3 || s.Min != 1 || s.Median != 2 || s.Max != 3 {
		t.Errorf("spread %+v: warm-ups, invalid passes and passes without a value must not count", s)
	}
	if back.Status != StatusComplete {
		t.Errorf("status %q", back.Status)
	}
}

// A file that never got finished_at was written by a run that died.
func TestLoadKilled(t *testing.T) {
	run := NewRun("v1", "abc", nil)
	path, err := run.Save(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	back, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.Status != StatusKilled {
		t.Errorf("status %q, want %q for a file without finished_at", back.Status, StatusKilled)
	}
}

// Files of schema 1 still load, with what their fields meant then.
func TestLoadSchema1(t *testing.T) {
	p := filepath.Join(t.TempDir(), "run.json")
	os.WriteFile(p, []byte(`{"schema_version": 1, "id": "x", "finished_at": "2026-11-30T04:45:04Z", "interrupted": false,
	 "results": [
	  {"id": "origin-flap/grace-ratio", "value": 100, "valid": true, "errors": 3, "stale": 97,
	   "passes": [{"index": 1, "value": 97, "valid": true, "requests": 2000, "errors": 0,
	     "extra": {"origin_fetches": 2, "origin_failed": 18, "expired_window": {"stale": 97, "errors": 3}}}]},
	  {"id": "segment/full-p50-ttfb", "value": 0, "valid": false,
	   "passes": [{"index": 1, "value": 0, "requests": 2500, "errors": 2500, "errors_by_kind": {"short_body": 2500}}]}]}`), 0o644)
	r, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if r.SchemaVersion != SchemaVersion || r.Status != StatusUnknown {
		t.Errorf("schema %d status %q", r.SchemaVersion, r.Status)
	}
	g := r.Results[0]
	if ge, ok := g.Figure("grace_errors"); !ok || ge != 3 || g.Errors != 0 || g.Requests != 2000 || g.ValidPasses != 1 {
		t.Errorf("grace result %+v: schema 1 errors are grace_errors", g)
	}
	if ev := g.Passes[0].Evidence; ev == nil || ev.Origin == nil || ev.Origin.Failed != 18 || flapStale(ev) != 97 || g.Passes[0].Extra != nil {
		t.Errorf("schema 1 extra not typed: %+v", ev)
	}
	s := r.Results[1]
	if s.Errors != 2500 || s.ErrorsByKind["short_body"] != 2500 || s.Value != nil || s.Passes[0].Value != nil || s.Passes[0].NoValue == "" {
		t.Errorf("segment result %+v: a pass with only failures has no value", s)
	}
}

func TestLoadRejects(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"newer.json":  `{"schema_version": 99, "id": "x"}`,
		"none.json":   `{"id": "x"}`,
		"broken.json": `{"schema_version": 1,`,
	} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o644)
		if _, err := Load(p); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v, want an error naming the file", name, err)
		}
	}
}

func FuzzLoad(f *testing.F) {
	f.Add([]byte(`{"schema_version": 1, "results": [{"id": "a", "passes": [{"index": 1}]}]}`))
	f.Add([]byte(`{"schema_version": 2}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p := filepath.Join(t.TempDir(), "run.json")
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if r, err := Load(p); err == nil {
			for _, res := range r.Results {
				SpreadOf(res.Passes)
				if res.Histogram != "" {
					DecodeHistogram(res.Histogram)
				}
			}
		}
	})
}

// A file written by schema 2 (a whole `make run` of the built-in cache,
// histograms left out) loads with its evidence typed.
func TestLoadSchema2File(t *testing.T) {
	r, err := Load("testdata/run-schema2.json")
	if err != nil {
		t.Fatal(err)
	}
	if r.SchemaVersion != SchemaVersion || r.Status != StatusComplete || len(r.Results) != 11 {
		t.Fatalf("schema %d status %q results %d", r.SchemaVersion, r.Status, len(r.Results))
	}
	figures := map[string]map[string]float64{}
	for _, res := range r.Results {
		if len(res.Figures) > 0 {
			figures[res.ID] = res.Figures
		}
		if len(res.Passes) == 0 || res.MeasuredPasses == 0 {
			t.Errorf("%s: %d pass records, %d measured", res.ID, len(res.Passes), res.MeasuredPasses)
			continue
		}
		p := res.Passes[len(res.Passes)-1]
		if p.Extra != nil || p.Evidence == nil || p.Evidence.Origin == nil {
			t.Errorf("%s: evidence %+v extra %v", res.ID, p.Evidence, p.Extra)
			continue
		}
		switch res.Workload {
		case "miss-storm":
			if b := Part[testBurst](p.Evidence, "burst"); b == nil || b.Clients != 200 || b.ObjectFetches != 1 {
				t.Errorf("%s: burst %+v", res.ID, b)
			}
		case "origin-flap":
			if f := Part[testFlap](p.Evidence, "flap"); f == nil || f.Window.Stale == 0 || f.FailStart.IsZero() || f.GraceRatio == nil {
				t.Errorf("%s: flap %+v", res.ID, f)
			}
		default:
			if g := p.Evidence.Generator; g == nil || g.TotalP50Ms == nil || len(g.LagEffect) == 0 || g.TLS != nil || p.Evidence.Claims == nil {
				t.Errorf("%s: generator %+v claims %+v", res.ID, g, p.Evidence.Claims)
			}
		}
	}
	// The tests' own figures, as the file wrote them; its count of
	// measured passes is none of them.
	want := map[string]map[string]float64{
		"miss-storm/coalescing":   {"origin_fetches": 20, "coalescing_x": 200},
		"origin-flap/grace-ratio": {"grace_ratio": 100, "fresh": 0, "stale": 8869, "grace_errors": 0},
	}
	if !reflect.DeepEqual(figures, want) {
		t.Errorf("figures %v, want %v", figures, want)
	}
}

// spread is null where no valid measured pass has a value, as value is
// (issue 23, item 17), and survives a round trip; a file written before
// that, with {"n":0,...}, reads as null too.
func TestSpreadNull(t *testing.T) {
	none := Result{ID: "purge-stampede/recovery", Unit: "ms", Passes: []Pass{
		{Index: 1, Warmup: true, Value: F(5), Valid: true},
		{Index: 1, NoValue: "no successful request", InvalidReasons: []string{"no successful request"}},
		{Index: 2, Value: F(7), InvalidReasons: []string{"the generator was late"}}}}
	none.Recount()
	some := Result{ID: "hit-path/p99-ttfb", Unit: "ms", Value: F(2), Passes: []Pass{
		{Index: 1, Value: F(3), Valid: true}, {Index: 2, Value: F(1), Valid: true}, {Index: 3, Value: F(2), Valid: true}}}
	some.Recount()
	run := NewRun("v1", "abc123", nil)
	run.Results = []Result{none, some}
	run.Status, run.FinishedAt = StatusComplete, time.Now()
	const (
		null    = `"spread":null`
		figures = `"spread":{"n":3,"min":1,"median":2,"max":3}`
	)
	compact := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got := compact(none); !strings.Contains(got, null) {
		t.Errorf("no valid pass with a value: %s, want %s", got, null)
	}
	if got := compact(some); !strings.Contains(got, figures) {
		t.Errorf("three valid passes: %s, want %s", got, figures)
	}
	dir := t.TempDir()
	path, err := run.Save(dir)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := compact(back.Results[0]); !strings.Contains(got, null) {
		t.Errorf("after a round trip: %s, want %s", got, null)
	}
	if got := compact(back.Results[1]); !strings.Contains(got, figures) {
		t.Errorf("after a round trip: %s, want %s", got, figures)
	}
	// Today's files wrote the empty spread as zeros.
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["results"].([]any)[0].(map[string]any)["spread"] = map[string]any{"n": 0, "min": 0, "median": 0, "max": 0}
	old := filepath.Join(dir, "run-old.json")
	if err := os.WriteFile(old, []byte(compact(m)), 0o644); err != nil {
		t.Fatal(err)
	}
	back, err = Load(old)
	if err != nil {
		t.Fatal(err)
	}
	if got := compact(back.Results[0]); !strings.Contains(got, null) {
		t.Errorf("a file with a zero spread: %s, want %s", got, null)
	}
	if got := compact(back.Results[1]); !strings.Contains(got, figures) {
		t.Errorf("a file with a zero spread, the other result: %s, want %s", got, figures)
	}
}

// Recount derives a rate test's offered and carried rate and its saturated
// passes from the measured passes alone: the warm-up's are left out, the
// carried rate is the median of every measured pass's (saturated or not),
// and a test that offers no rate has neither figure.
func TestRecountSaturation(t *testing.T) {
	r := Result{Passes: []Pass{
		{Index: 1, Warmup: true, Value: F(90), OfferedRPS: 400, AchievedRPS: 10, Saturated: "saturated: warm-up"},
		{Index: 1, Value: F(1), Valid: true, OfferedRPS: 500, AchievedRPS: 499.5},
		{Index: 2, Value: F(3000), OfferedRPS: 500, AchievedRPS: 199.6, InvalidReasons: []string{"saturated: carried 199.6 of 500 rps"},
			Saturated: "saturated: carried 199.6 of 500 rps"},
		{Index: 3, Value: F(2900), OfferedRPS: 500, AchievedRPS: 210, InvalidReasons: []string{"saturated: carried 210 of 500 rps"},
			Saturated: "saturated: carried 210 of 500 rps"},
	}}
	r.Recount()
	if r.OfferedRPS == nil || *r.OfferedRPS != 500 || r.AchievedRPS == nil || *r.AchievedRPS != 210 {
		t.Errorf("offered %v achieved %v: want 500 and 210, the measured passes' median", r.OfferedRPS, r.AchievedRPS)
	}
	if r.SaturatedPasses != 2 || !r.Saturated() {
		t.Errorf("%d saturated passes (Saturated %v): want 2, the warm-up left out", r.SaturatedPasses, r.Saturated())
	}
	burst := Result{Passes: []Pass{{Index: 1, Value: F(1), Valid: true, AchievedRPS: 30000}}}
	burst.Recount()
	if burst.OfferedRPS != nil || burst.AchievedRPS != nil || burst.Saturated() {
		t.Errorf("a test offering no rate: offered %v achieved %v saturated %v, want none", burst.OfferedRPS, burst.AchievedRPS, burst.Saturated())
	}
	b, err := json.Marshal(burst)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"offered_rps", "achieved_rps\":", "saturated"} {
		if strings.Contains(strings.SplitN(string(b), "pass_records", 2)[0], key) {
			t.Errorf("%s written for a test offering no rate: %s", key, b)
		}
	}
}

// testBurst and testFlap read the parts of miss-storm's and origin-flap's
// evidence that the upgrade of schema 1 and 2 files fills, as their
// workloads' types do (the results package knows no workload's type).
type testBurst struct {
	ObjectFetches int64 `json:"object_fetches"`
	Clients       int   `json:"clients"`
}

type testFlap struct {
	Window struct {
		Stale int64 `json:"stale"`
	} `json:"expired_window"`
	FailStart  time.Time `json:"fail_start"`
	GraceRatio *float64  `json:"grace_ratio"`
}

func flapStale(ev *Evidence) int64 {
	if f := Part[testFlap](ev, "flap"); f != nil {
		return f.Window.Stale
	}
	return -1
}

// A workload's part of the evidence is written beside the common parts
// and read back as its own type.
func TestEvidenceParts(t *testing.T) {
	e := &Evidence{Cost: &Cost{}}
	e.SetPart("burst", &testBurst{ObjectFetches: 2, Clients: 200})
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"burst":{"object_fetches":2,"clients":200}`) || !strings.Contains(string(b), `"cost":{`) {
		t.Fatalf("evidence JSON %s", b)
	}
	var back Evidence
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if got := Part[testBurst](&back, "burst"); got == nil || got.ObjectFetches != 2 || back.Cost == nil || back.Parts["cost"] != nil {
		t.Errorf("read back %+v: burst %+v", back, got)
	}
	e.SetPart("cost", 1)
	if _, err := json.Marshal(e); err == nil {
		t.Error("a part named as a common part: want an error")
	}
	empty, err := json.Marshal(&Evidence{Parts: map[string]any{"x": 1}})
	if err != nil || string(empty) != `{"x":1}` {
		t.Errorf("parts alone: %s, %v", empty, err)
	}
}

// A test's own figures are top-level keys of its result, after the common
// ones, and come back as figures; a key of the common fields never does.
func TestResultFigures(t *testing.T) {
	v := 200.0
	r := Result{ID: "miss-storm/coalescing", Value: &v}
	r.SetFigure("coalescing_x", 200)
	r.SetFigure("origin_fetches", 2)
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	if raw["coalescing_x"] != 200.0 || raw["origin_fetches"] != 2.0 || raw["value"] != 200.0 {
		t.Errorf("JSON %s: want coalescing_x 200 and origin_fetches 2 beside value", b)
	}
	if !strings.HasSuffix(string(b), `"coalescing_x":200,"origin_fetches":2}`) {
		t.Errorf("JSON %s: want the figures after the common fields, sorted", b)
	}
	var back Result
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if x, ok := back.Figure("coalescing_x"); !ok || x != 200 || len(back.Figures) != 2 || back.ID != r.ID || *back.Value != 200 {
		t.Errorf("read back %+v", back)
	}
	if _, ok := back.Figure("value"); ok {
		t.Error("a common field read as a figure")
	}
	// No figure: no key, and nothing read where a file has none; a key
	// that is not a number is not a figure.
	b, _ = json.Marshal(Result{ID: "hit-path/p50-ttfb"})
	if strings.Contains(string(b), "coalescing_x") {
		t.Errorf("JSON %s has a figure nothing set", b)
	}
	if err := json.Unmarshal([]byte(`{"id":"x","note":"text","stale":3}`), &back); err != nil || len(back.Figures) != 1 || back.Figures["stale"] != 3 {
		t.Errorf("read %+v %v: want stale 3 alone", back.Figures, err)
	}
}

// A cell is saturated when its median measured pass is (of an even count,
// the worse of the middle two); otherwise it is valid on its valid passes,
// counts the saturated ones, and lists no reason for them. A pass invalid
// for anything besides its saturation still makes the cell invalid. On
// 9e8fb7e one saturated pass of twenty made the cell saturated and
// invalid.
func TestSaturatedByMedianPass(t *testing.T) {
	const sat = "saturated: carried 4998.9 of 5000 rps; the waits for a free connection moved TTFB p99"
	cell := func(n, saturated int, other string) Result {
		var r Result
		for i := range n {
			p := Pass{Index: i + 1, Value: F(1), Valid: true, OfferedRPS: 5000, AchievedRPS: 4999}
			if i < saturated {
				p.Valid, p.Saturated, p.InvalidReasons = false, sat, []string{sat}
				if other != "" {
					p.InvalidReasons = append(p.InvalidReasons, other)
				}
			}
			r.Passes = append(r.Passes, p)
		}
		r.Recount()
		return r
	}
	for _, c := range []struct {
		name                string
		r                   Result
		saturated, valid    bool
		reasons, validCount int
	}{
		{"1 of 20", cell(20, 1, ""), false, true, 0, 19},
		{"9 of 20", cell(20, 9, ""), false, true, 0, 11},
		{"10 of 20", cell(20, 10, ""), true, false, 10, 10},
		{"1 of 3", cell(3, 1, ""), false, true, 0, 2},
		{"2 of 3", cell(3, 2, ""), true, false, 2, 1},
		{"1 of 1", cell(1, 1, ""), true, false, 1, 0},
		{"1 of 3, also late", cell(3, 1, "the generator's own lateness moved TTFB p99"), false, false, 2, 2},
	} {
		r := c.r
		if r.Saturated() != c.saturated || r.Valid != c.valid || len(r.InvalidReasons) != c.reasons || r.ValidPasses != c.validCount {
			t.Errorf("%s: saturated %v, valid %v, reasons %q, %d valid passes; want %v, %v, %d reasons, %d", c.name,
				r.Saturated(), r.Valid, r.InvalidReasons, r.ValidPasses, c.saturated, c.valid, c.reasons, c.validCount)
		}
	}
}
