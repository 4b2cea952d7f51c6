// Package results is the on-disk record of a benchmark run: versioned,
// self-describing JSON that carries the whole configuration, the machine, the
// tool and engine versions, every pass and the HDR histograms, written
// atomically so a reader never sees half a file.
package results

import (
	"bufio"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
	"golang.org/x/sys/unix"
)

// SchemaVersion is bumped whenever a field changes meaning or disappears.
const SchemaVersion = 1

// Run is one invocation of `hlsbench run`.
type Run struct {
	SchemaVersion int       `json:"schema_version"`
	ID            string    `json:"id"`
	StartedAt     time.Time `json:"started_at"`
	FinishedAt    time.Time `json:"finished_at,omitzero"`
	// Interrupted runs keep every pass that finished.
	Interrupted bool           `json:"interrupted"`
	Tool        Tool           `json:"tool"`
	Host        Host           `json:"host"`
	Config      map[string]any `json:"config"`
	Engines     []Engine       `json:"engines"`
	Results     []Result       `json:"results"`
	Warnings    []string       `json:"warnings,omitempty"`
}

// Tool identifies the hlsbench build.
type Tool struct {
	Name      string `json:"name"`
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	GoVersion string `json:"go_version"`
}

// Host describes the machine.
type Host struct {
	CPUModel string `json:"cpu_model"`
	Cores    int    `json:"cores"`
	Kernel   string `json:"kernel"`
	OS       string `json:"os"`
	Arch     string `json:"arch"`
	Hostname string `json:"hostname"`
	MemBytes uint64 `json:"mem_bytes"`
}

// Engine is one engine as it ran.
type Engine struct {
	Name     string `json:"name"`
	Version  string `json:"version"`
	Runtime  string `json:"runtime"`
	Topology string `json:"topology"`
	// Pinning says which CPUs each party was confined to ("" when unpinned).
	Pinning map[string]string `json:"pinning,omitempty"`
}

// Result is one test of one workload on one engine: the headline value and
// everything needed to check it.
type Result struct {
	ID            string  `json:"id"` // stable: workload/test, e.g. "hit-path/p99-ttfb"
	Workload      string  `json:"workload"`
	Test          string  `json:"test"`
	Title         string  `json:"title"`
	Engine        string  `json:"engine"`
	Runtime       string  `json:"runtime"`
	Topology      string  `json:"topology"`
	Value         float64 `json:"value"`
	Unit          string  `json:"unit"`
	LowerIsBetter bool    `json:"lower_is_better"`
	Valid         bool    `json:"valid"`
	// InvalidReasons explain a false Valid, with the pass they came from.
	InvalidReasons []string `json:"invalid_reasons"`
	// Aggregation says how Value was computed from the passes.
	Aggregation string `json:"aggregation"`
	Passes      []Pass `json:"passes"`
	Spread      Spread `json:"spread"`
	// Histogram is the merged HDR histogram behind a latency Value
	// (base64 of the compressed V2 encoding; nanoseconds).
	Histogram string `json:"histogram,omitempty"`

	OriginFetches *int64   `json:"origin_fetches,omitempty"`
	CoalescingX   *float64 `json:"coalescing_x,omitempty"`
	GraceRatio    *float64 `json:"grace_ratio,omitempty"`
	Fresh         *int64   `json:"fresh,omitempty"`
	Stale         *int64   `json:"stale,omitempty"`
	Errors        *int64   `json:"errors,omitempty"`
}

// Pass is one measured (or warm-up) pass's figures for a test.
type Pass struct {
	Index          int              `json:"index"`
	Warmup         bool             `json:"warmup"`
	Value          float64          `json:"value"`
	Valid          bool             `json:"valid"`
	InvalidReasons []string         `json:"invalid_reasons,omitempty"`
	Requests       int64            `json:"requests"`
	Errors         int64            `json:"errors"`
	ErrorsByKind   map[string]int64 `json:"errors_by_kind,omitempty"`
	PoolLimited    bool             `json:"pool_limited,omitempty"`
	AchievedRPS    float64          `json:"achieved_rps,omitempty"`
	// Extra holds workload evidence: origin fetches, fresh/stale/error
	// counts per phase, the engine's own counters, the proxy's claims.
	Extra map[string]any `json:"extra,omitempty"`
}

// Spread summarises the measured passes' values.
type Spread struct {
	N      int     `json:"n"`
	Min    float64 `json:"min"`
	Median float64 `json:"median"`
	Max    float64 `json:"max"`
}

// SpreadOf computes the spread of the measured (non-warm-up) passes.
func SpreadOf(ps []Pass) Spread {
	var v []float64
	for _, p := range ps {
		if !p.Warmup {
			v = append(v, p.Value)
		}
	}
	if len(v) == 0 {
		return Spread{}
	}
	sort.Float64s(v)
	med := v[len(v)/2]
	if len(v)%2 == 0 {
		med = (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return Spread{N: len(v), Min: v[0], Median: med, Max: v[len(v)-1]}
}

// EncodeHistogram is the compressed V2 encoding, base64.
func EncodeHistogram(h *hdr.Histogram) (string, error) {
	b, err := h.Encode(hdr.V2CompressedEncodingCookieBase)
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(b), nil
}

// DecodeHistogram reverses EncodeHistogram.
func DecodeHistogram(s string) (*hdr.Histogram, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, err
	}
	return hdr.Decode(b)
}

// NewRun starts a run record with the tool's and the machine's facts.
// commit may be empty: the build's VCS stamp is used when it has one.
func NewRun(version, commit string, config map[string]any) *Run {
	t := toolInfo(version)
	if commit != "" {
		t.Commit = commit
	}
	return &Run{SchemaVersion: SchemaVersion, ID: newID(), StartedAt: time.Now().UTC(),
		Tool: t, Host: hostInfo(), Config: config}
}

func newID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return time.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

func toolInfo(version string) Tool {
	t := Tool{Name: "hlsbench", Version: version, Commit: "unknown", GoVersion: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				t.Commit = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					t.Commit += "+dirty"
				}
			}
		}
		if version == "" || version == "dev" {
			if v := bi.Main.Version; v != "" && v != "(devel)" {
				t.Version = v
			}
		}
	}
	return t
}

func hostInfo() Host {
	h := Host{Cores: runtime.NumCPU(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	h.Hostname, _ = os.Hostname()
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		h.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				h.CPUModel = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) == nil {
		h.MemBytes = uint64(si.Totalram) * uint64(si.Unit)
	}
	return h
}

// Path is where the run is saved under dir.
func (r *Run) Path(dir string) string {
	return filepath.Join(dir, "run-"+r.ID+".json")
}

// Save writes the run to dir atomically: a temporary file in the same
// directory, synced, then renamed over the final name.
func (r *Run) Save(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("results directory: %w", err)
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", err
	}
	final := r.Path(dir)
	tmp, err := os.CreateTemp(dir, ".run-*.tmp")
	if err != nil {
		return "", fmt.Errorf("results directory: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	return final, os.Rename(tmp.Name(), final)
}

// Load reads a run file, refusing schema versions it does not know.
func Load(path string) (*Run, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Run
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: not a run file: %w", path, err)
	}
	if r.SchemaVersion == 0 {
		return nil, fmt.Errorf("%s: no schema_version: not a run file", path)
	}
	if r.SchemaVersion > SchemaVersion {
		return nil, fmt.Errorf("%s: schema_version %d is newer than this hlsbench reads (%d)", path, r.SchemaVersion, SchemaVersion)
	}
	return &r, nil
}

// DefaultDir is where runs go without --out: $XDG_DATA_HOME/hlsbench/runs,
// else ~/.local/share/hlsbench/runs.
func DefaultDir() string {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "hlsbench", "runs")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "share", "hlsbench", "runs")
	}
	return filepath.Join(os.TempDir(), "hlsbench", "runs")
}
