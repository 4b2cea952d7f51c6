package results

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	run.Results = []Result{{ID: "hit-path/p99-ttfb", Value: 0.99, Unit: "ms", Valid: true, Histogram: enc,
		Passes: []Pass{{Index: 1, Value: 1}, {Index: 2, Value: 3}, {Index: 1, Warmup: true, Value: 100}}}}
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
	if s := SpreadOf(run.Results[0].Passes); s.N != 2 || s.Min != 1 || s.Median != 2 || s.Max != 3 {
		t.Errorf("spread %+v: warm-ups must not count", s)
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
