package launch

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Runtimes are the runtimes hlsbench knows, in the order --runtime lists
// them; the first is the default. A runtime is its file in this package —
// its Launcher and its Runtime — and its entry here.
var Runtimes = []Runtime{LocalRuntime, DockerRuntime, InprocRuntime}

// Runtime is a runtime as the rest of hlsbench knows it: what it can do,
// which the run's checks, plan and conditions follow, and how a run opens
// it. Nothing outside this package names a runtime to decide anything.
type Runtime struct {
	// Name is what --runtime takes and the results record.
	Name string
	// Help is its part of --runtime's help: "docker (a container each,
	// host networking)".
	Help string
	// Binaries is where an engine's binary comes from.
	Binaries Binaries
	// Pins says its instances run on the CPUs a spec names (Spec.CPUs),
	// so a run can keep the generator's CPUs apart from theirs.
	Pins bool
	// Limits says it holds each instance to Session's memory limit and CPU
	// quota (--memory, --cpus).
	Limits bool
	// Freezes says its instances can be held still (Freezer) while
	// another cell is measured; Isolation says how, or why not, for the
	// run's conditions.
	Freezes   bool
	Isolation string
	// Open readies the runtime for one run. A launcher that holds
	// something open (a connection to a daemon) is an io.Closer.
	Open func(ctx context.Context, s Session) (Launcher, error)
	// Leftovers, when set, opens what finds and removes the instances a
	// run that is gone left in the runtime besides its processes (the
	// run's state file ends those): a run's start and hlsbench clean call
	// it. An error means the runtime is not there to ask (no daemon).
	Leftovers func(ctx context.Context, limit time.Duration) (Sweeper, error)
}

// Binaries says where a runtime finds an engine's binary.
type Binaries int

const (
	// OnHost: installed on this host (on PATH, a source build, or
	// --binary); an engine's configuration is checked with it before the
	// run starts.
	OnHost Binaries = iota
	// InImage: in each engine's image (--image, else the newest one
	// hlsbench built), found before the run starts.
	InImage
	// InHlsbench: only what hlsbench serves itself, in its own process
	// (the built-in cache and the origin); no other engine runs there.
	InHlsbench
)

// Session is what a run gives a runtime when it opens it.
type Session struct {
	// RunID is the run's id, which every instance records (so the next
	// start can remove what a killed run left).
	RunID string
	// Memory limits each instance, in bytes (0: none), and CPUs is each
	// one's CPU quota (0: none): for a runtime with Limits.
	Memory int64
	CPUs   float64
	// Limit bounds the wait for the runtime to answer (a daemon's ping);
	// 0 waits 2 s.
	Limit time.Duration
}

// ImageStore is implemented by the launchers of runtimes whose engines run
// from images (Binaries InImage): the images a run may pick from.
type ImageStore interface {
	// Images lists the images that carry label, with their labels.
	Images(ctx context.Context, label string) ([]ImageSummary, error)
	// ImageID is the id of the image ref names, or an error saying why
	// there is none.
	ImageID(ctx context.Context, ref string) (string, error)
}

// ImageSummary is one image an ImageStore holds.
type ImageSummary struct {
	ID      string
	Tags    []string // without "<none>:<none>"
	Size    int64
	Created time.Time
	Labels  map[string]string
}

// MemoryLimiter is implemented by launchers that hold their instances to
// a memory limit: the engine's record keeps it.
type MemoryLimiter interface {
	MemoryLimit() int64
}

// Sweeper finds and removes what runs left in a runtime besides their
// processes (containers).
type Sweeper interface {
	// Orphans are the instances of runs whose hlsbench is gone. An
	// instance that names the process that created it is judged by that
	// process; one that does not, by dead (the runs a sweep of the state
	// files found dead).
	Orphans(ctx context.Context, dead func(run string) bool) ([]Orphan, error)
	// RemoveOrphans removes them (one already gone is no error) and says
	// which it removed.
	RemoveOrphans(ctx context.Context, orphans []Orphan) ([]string, error)
	// RemoveRun removes every instance run still has, and says which.
	RemoveRun(ctx context.Context, run string) ([]string, error)
	// Kind names what it removes, for messages: "containers".
	Kind() string
	io.Closer
}

// RuntimeNamed is the runtime of that name ("" is the default); the error
// lists the names accepted.
func RuntimeNamed(name string) (Runtime, error) {
	if name == "" {
		return Runtimes[0], nil
	}
	if i := slices.IndexFunc(Runtimes, func(r Runtime) bool { return r.Name == name }); i >= 0 {
		return Runtimes[i], nil
	}
	return Runtime{}, fmt.Errorf("runtime %q: want one of %s", name, strings.Join(RuntimeNames(nil), ", "))
}

// RuntimeOf is lch's runtime; a launcher no entry names has an OnHost
// runtime that neither pins nor freezes.
func RuntimeOf(lch Launcher) Runtime {
	if rt, err := RuntimeNamed(lch.Name()); err == nil {
		return rt
	}
	return Runtime{Name: lch.Name()}
}

// RuntimeNames are the names of the runtimes keep accepts (all with nil),
// in Runtimes' order.
func RuntimeNames(keep func(Runtime) bool) []string {
	var names []string
	for _, r := range Runtimes {
		if keep == nil || keep(r) {
			names = append(names, r.Name)
		}
	}
	return names
}

// RuntimeHelp is --runtime's help: each runtime's name and what it is.
func RuntimeHelp() string {
	var parts []string
	for _, r := range Runtimes {
		parts = append(parts, r.Help)
	}
	return strings.Join(parts, ", ")
}

// Close closes lch when it holds something open.
func Close(lch Launcher) error {
	if c, ok := lch.(io.Closer); ok {
		return c.Close()
	}
	return nil
}
