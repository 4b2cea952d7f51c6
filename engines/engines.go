package engines

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hlsbench/hlsbench/engines/builtin"
	"github.com/hlsbench/hlsbench/engines/launch"
	"github.com/hlsbench/hlsbench/results"
)

// The names of launch's runtimes, for those who name one (a default, a
// test). What a runtime can do is its launch.Runtime's to say: nothing
// decides by these names.
const (
	RuntimeInproc  = "inproc"  // inside the hlsbench process (tests)
	RuntimeProcess = "process" // a local child process
	RuntimeDocker  = "docker"  // a container, through the Docker Engine API
)

// Instance is a running engine.
type Instance interface {
	// URL is the engine's base URL, http://127.0.0.1:PORT.
	URL() string
	Info() results.Engine
	// Stop is idempotent; an engine already gone counts as stopped.
	Stop(ctx context.Context) error
}

// Counters is implemented by instances that expose their own counters.
type Counters interface {
	Counters(ctx context.Context) (map[string]float64, error)
}

// UpstreamCounter is implemented by engines (and instances) that count
// their own requests to the origin: it names that counter in Counters,
// health probes excluded, so a workload can compare it with the origin's
// count without knowing the engine.
type UpstreamCounter interface {
	UpstreamCounter() string
}

// ProcessGroup is implemented by instances that run as local processes:
// the process group holds the engine's every process (varnishd's manager
// and child; nginx's master, workers and cache manager), so measuring it
// (engines/cost) measures the engine. The in-process built-in cache has
// none: it shares hlsbench's process, and its cost cannot be told from
// the generator's. The origin, when it is a child process (started by
// launch.Local), is a *Process, which has one too.
type ProcessGroup interface {
	PGID() int
}

// StartSpec is what every engine start needs.
type StartSpec struct {
	Policy    Policy
	OriginURL string // http://127.0.0.1:PORT of our origin
	Listen    string // the engine's listen address, 127.0.0.1:0 by default
	Runtime   string
	CPUs      []int  // the engine's CPUs; empty: unpinned
	Self      string // the hlsbench binary, for child processes
	Version   string // hlsbench's version, the built-in cache's own
	// Launcher, when set, runs it (else Runtime's, opened for this start),
	// from Image (hlsbench's own) in a runtime of images.
	Launcher launch.Launcher
	Image    string
}

// BuiltinPolicy renders a Policy for the built-in cache.
func BuiltinPolicy(p Policy) builtin.Policy {
	return builtin.Policy{
		ManifestTTL:   p.ManifestTTL,
		SegmentTTL:    p.SegmentTTL,
		DefaultTTL:    p.SegmentTTL,
		Grace:         p.Grace,
		HealthyGrace:  p.HealthyGrace,
		ProbePath:     p.ProbePath,
		ProbeInterval: p.ProbeInterval,
		ProbeTimeout:  p.ProbeTimeout,
		FetchTimeout:  p.FirstByteTimeout,
		MaxBytes:      p.StoreBytes,
		Coalesce:      p.Coalesce,
	}
}

// StartBuiltin runs the built-in cache like any engine (StartLocal), with
// s.Launcher or s.Runtime's: `hlsbench serve-cache` here or in hlsbench's
// image, or the cache in-process.
func StartBuiltin(ctx context.Context, s StartSpec) (Instance, error) {
	lch := s.Launcher
	if lch == nil {
		rt, err := launch.RuntimeNamed(s.Runtime)
		if err != nil {
			return nil, err
		}
		if lch, err = rt.Open(ctx, launch.Session{}); err != nil {
			return nil, err
		}
		if _, holds := lch.(io.Closer); holds {
			// Its instance would outlive the connection it needs.
			launch.Close(lch)
			return nil, fmt.Errorf("start builtin in runtime %s: give StartSpec.Launcher, the run's own (it holds a connection)", rt.Name)
		}
	}
	ls := LocalSpec{Policy: s.Policy, OriginURL: s.OriginURL, Binary: s.Self, CPUs: s.CPUs, Launcher: lch, Image: s.Image, Version: s.Version}
	if s.Image != "" {
		ls.Binary = "/hlsbench"
	}
	return StartLocal(ctx, Builtin{}, ls)
}

// builtinUpstream is the built-in cache's count of its origin requests.
const builtinUpstream = "origin_fetches"

func fetchCounters(ctx context.Context, url string) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	m := map[string]float64{}
	return m, json.NewDecoder(resp.Body).Decode(&m)
}

func structCounters(v any) (map[string]float64, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	m := map[string]float64{}
	return m, json.Unmarshal(b, &m)
}

// External is a proxy hlsbench did not start: it only knows its URL.
type External struct {
	BaseURL string
	// Name is its row (external, external@TAG or a label), Kind
	// "external" when Name is a label.
	Name, Kind string
}

func (e *External) URL() string { return strings.TrimRight(e.BaseURL, "/") }
func (e *External) Info() results.Engine {
	name := e.Name
	if name == "" {
		name = ExternalName
	}
	return results.Engine{Name: name, Kind: e.Kind, Version: "unknown", Runtime: "external", Topology: "plaintext"}
}
func (e *External) Stop(context.Context) error { return nil }

// PinProcess confines every thread of this process to cpus: the threads it
// has now, one by one, and through them every thread and child it starts
// later (both inherit the affinity of the thread that creates them).
func PinProcess(cpus []int) error {
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	tasks, err := filepath.Glob("/proc/self/task/*")
	if err != nil || len(tasks) == 0 {
		return unix.SchedSetaffinity(0, &set)
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(filepath.Base(t))
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, &set); err != nil && !errors.Is(err, unix.ESRCH) {
			return err
		}
	}
	return nil
}

// CPUList renders CPUs as "0,1" (launch.CPUList).
func CPUList(cpus []int) string { return launch.CPUList(cpus) }

// ParseCPUList reads "0,2-3" (launch.ParseCPUList).
func ParseCPUList(s string) ([]int, error) { return launch.ParseCPUList(s) }

var (
	_ Instance = (*External)(nil)
)

// ErrNotFound is returned when an engine's binary is not installed.
var ErrNotFound = errors.New("not found")

var _ ProcessGroup = (*launch.Process)(nil)

// BuiltinDifferences are the built-in cache's: what no configuration
// makes equal between it and the other engines.
func BuiltinDifferences() []string {
	return []string{
		"The built-in cache is hlsbench's own Go cache, written for this benchmark: it has none of a production proxy's features (VCL, disk storage, access control: its PURGE and BAN are open to any client) and no production history.",
		"The built-in cache releases coalesced waiters when the origin's headers arrive and streams the body to them, as Varnish does.",
		"The built-in cache's hit and origin counters are its own, in-process; the origin's count is the evidence.",
	}
}
