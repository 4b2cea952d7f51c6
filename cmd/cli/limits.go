package cli

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"

	"github.com/hlsbench/hlsbench/engines/launch"
	"github.com/hlsbench/hlsbench/workloads"
)

// The reference capped each engine's container at 4 CPUs and 512 MB and
// gave Varnish malloc,256m: half its memory for the store. A Docker run
// does the same by default: --cpus 4 (at most the host's), and --memory
// twice the run's largest cache store.
const (
	defaultContainerCPUs = 4.0
	// storeShare: the default limit is the largest store over this share.
	storeShare = 2
	// engineHeadroom is the least a limit must hold beyond the store: the
	// engine's own memory (a Varnish manager and child with their thread
	// stacks and per-object overhead, about 110 MB here with an empty
	// store; NGINX's workers and keys zone; a Go runtime's heap).
	engineHeadroom = 128 << 20
)

// memoryFlag is --memory: auto (the zero value), none, or a size.
type memoryFlag struct {
	none bool
	n    byteSize
}

func (m *memoryFlag) String() string {
	switch {
	case m.none:
		return "none"
	case m.n == 0:
		return "auto"
	}
	return m.n.String()
}

func (m *memoryFlag) Set(s string) error {
	switch strings.TrimSpace(s) {
	case "auto", "":
		*m = memoryFlag{}
		return nil
	case "none", "0":
		*m = memoryFlag{none: true}
		return nil
	}
	var b byteSize
	if err := b.Set(s); err != nil {
		return err
	}
	if b < 0 {
		return fmt.Errorf("%q: want a size, auto or none", s)
	}
	*m = memoryFlag{n: b}
	return nil
}

func (m *memoryFlag) Type() string { return "size" }

// limits are a Docker run's container limits, as run and recorded.
type limits struct {
	Memory   int64   // bytes; 0: none
	CPUs     float64 // the quota applied (at most the host's CPUs); 0: none
	AskedCPU float64 // what --cpus asked for
	// Short says the memory limit cannot hold the store (--allow-oom).
	Short string
}

// containerLimits resolves --memory and --cpus for a run of specs under
// cfg. A limit that cannot hold the run's largest cache store and the
// engine's own memory is refused before anything starts: the engine would
// be killed for memory mid-run (Varnish's malloc,512M under 512 MiB). The
// flags go with a runtime that limits its instances (docker).
func containerLimits(o RunOptions, rt launch.Runtime, specs []workloads.Spec, cfg workloads.Config) (limits, error) {
	switch {
	case !rt.Limits && o.set["memory"]:
		return limits{}, usagef("--memory goes with --runtime %s", runtimesWhere(limited))
	case !rt.Limits && o.set["cpus"]:
		return limits{}, usagef("--cpus goes with --runtime %s", runtimesWhere(limited))
	case o.AllowOOM && o.Memory.n == 0:
		return limits{}, usagef("--allow-oom goes with --memory SIZE")
	case !rt.Limits:
		return limits{}, nil
	case o.CPUs < 0 || o.CPUs > 1024:
		return limits{}, usagef("--cpus %g: want a number of CPUs above 0 (1.5 is a CPU and a half), or 0 for no quota", o.CPUs)
	}
	l := limits{AskedCPU: o.CPUs, CPUs: min(o.CPUs, float64(runtime.NumCPU()))}
	store := workloads.LargestStore(specs, cfg)
	switch m := o.Memory; {
	case m.none:
	case m.n == 0:
		l.Memory = max(storeShare*store, store+engineHeadroom)
	case m.n < 6<<20:
		return limits{}, usagef("--memory %s: Docker wants 6MiB at least", m.n.String())
	case int64(m.n) < store+engineHeadroom && o.AllowOOM:
		l.Memory, l.Short = int64(m.n), fmt.Sprintf("--memory %s cannot hold the run's largest cache store, %s, and the engine's own memory: run as asked (--allow-oom); an engine killed for memory fails the pass it happens in",
			m.n.String(), launch.SizeName(store))
	case int64(m.n) < store+engineHeadroom:
		return limits{}, usagef("--memory %s cannot hold the run's largest cache store, %s, and the engine's own memory (%s at least): "+
			"the engine would be killed for memory mid-run; give --memory %s or more, auto (%s), or none",
			m.n.String(), launch.SizeName(store), launch.SizeName(engineHeadroom), flagSize(store+engineHeadroom), flagSize(storeShare*store))
	default:
		l.Memory = int64(m.n)
	}
	return l, nil
}

// flagSize is n as a size flag takes it: 1152MiB.
func flagSize(n int64) string {
	b := byteSize(n)
	return b.String()
}

// cpusText is a CPU count as docker run --cpus writes it.
func cpusText(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// What a flag that goes with some runtimes asks of them.
var (
	onHost        = func(rt launch.Runtime) bool { return rt.Binaries == launch.OnHost }
	inImage       = func(rt launch.Runtime) bool { return rt.Binaries == launch.InImage }
	notInHlsbench = func(rt launch.Runtime) bool { return rt.Binaries != launch.InHlsbench }
	limited       = func(rt launch.Runtime) bool { return rt.Limits }
)

// runtimesWhere names the runtimes keep accepts, for a flag's help or
// error: "docker", "process or docker".
func runtimesWhere(keep func(launch.Runtime) bool) string {
	return strings.Join(launch.RuntimeNames(keep), " or ")
}
