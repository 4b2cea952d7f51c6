package workloads

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/results"
	"github.com/hlsbench/hlsbench/workloads/loadgen"
)

// rateOf is a rate pass's offered rate and the rate it carried; ok is
// false for a pass that offers no rate (a burst, a closed loop, a viewer
// plan).
//
// Carried is loadgen's CarriedRPS: the answers between the first and the
// last to arrive (1 % trimmed at each end from 100 answers on), over the
// time between them. Answers per second from t0 to the last outcome
// (AchievedRPS) would charge a server that keeps up with one latency of
// drain after the last send — a steady 100 ms answer in a 2 s pass at 100
// rps carries 95.2 % by that count, saturated by the 97 % rule — and
// answers over the sending window plus the median latency misses the same
// mark with any spread of latencies. The arrivals' own span has no such
// term, while a server that answers at most 50 a second spreads 100 rps
// worth of answers over twice the time and carries 50.
func rateOf(lr *loadgen.Result) (offered, carried float64, ok bool) {
	if lr == nil || lr.Mode != "rate" || lr.Target <= 0 {
		return 0, 0, false
	}
	return lr.Target, lr.CarriedRPS, true
}

// isSaturated says whether a rate pass was saturated: it carried less than
// results.SaturationShare of its offered rate, or its requests waited for a
// free connection (the pool was limited, or a request was dropped with
// the waiting queue full). Either way its latencies count queueing, not
// the engine's time to first byte.
func isSaturated(lr *loadgen.Result) bool {
	offered, carried, ok := rateOf(lr)
	return ok && (carried < results.SaturationShare*offered || lr.PoolLimited || lr.Dropped > 0)
}

// saturation is why a rate pass was saturated, "" when it was not: what
// it carried of the rate it offered, whether every connection was busy,
// and what each party used of the CPUs it may use over window (the cost
// meter's interval), the busiest first. A party is named only with its
// measured figure; one that was not measured is said to be so.
func saturation(tgt *Target, lr *loadgen.Result, ev *results.Evidence, window time.Duration) string {
	if !isSaturated(lr) {
		return ""
	}
	offered, carried, _ := rateOf(lr)
	parts := []string{fmt.Sprintf("carried %.1f of %s rps", carried, rps(offered))}
	if lr.PoolLimited || lr.Dropped > 0 {
		var waits []string
		if lr.Queued > 0 {
			waits = append(waits, fmt.Sprintf("%d of %d requests waited for one", lr.Queued, lr.Requests))
		}
		if lr.Dropped > 0 {
			waits = append(waits, fmt.Sprintf("%d of %d were dropped, the waiting queue full", lr.Dropped, lr.Requests))
		}
		parts = append(parts, fmt.Sprintf("every one of %s busy (%s)", plural(lr.Connections, "connection"), strings.Join(waits, ", ")))
	}
	if used := usage(tgt, lr, ev, window); used != "" {
		parts = append(parts, used)
	}
	return "saturated: " + strings.Join(parts, "; ")
}

func rps(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

// usage is what each party used of the CPUs it may use over window, the
// busiest first: the engine, the TLS terminator and the origin (pinned to
// the same CPUs, and together when more than one was measured), the
// generator's busiest event loop (and its process, pinned apart), and
// other processes with the hypervisor's steal when they took a share
// worth naming.
func usage(tgt *Target, lr *loadgen.Result, ev *results.Evidence, window time.Duration) string {
	type use struct {
		share float64
		text  string
	}
	var uses []use
	var notes []string
	servers := len(tgt.ServerCPUs)
	if servers == 0 {
		servers = len(startCPUs) // unpinned: the whole machine
	}
	var c *results.Cost
	if ev != nil {
		c = ev.Cost
	}
	secs := window.Seconds()
	share := func(cpu *float64) (float64, bool) {
		if cpu == nil || secs <= 0 {
			return 0, false
		}
		return *cpu / (secs * float64(servers)), true
	}
	of := "of its core"
	if servers > 1 {
		of = fmt.Sprintf("of its %d cores", servers)
	}
	var together float64
	var parties []string
	if c != nil {
		if s, ok := share(c.EngineCPUSeconds); ok {
			uses = append(uses, use{s, fmt.Sprintf("engine CPU %.0f%% %s", 100*s, of)})
			together += s
			parties = append(parties, "engine")
		}
		if s, ok := share(c.TerminatorCPUSeconds); ok {
			name := "terminator"
			if tgt.Engine.Terminator != "" {
				name += " (" + tgt.Engine.Terminator + ")"
			}
			uses = append(uses, use{s, fmt.Sprintf("%s %.0f%% %s", name, 100*s, of)})
			together += s
			parties = append(parties, "terminator")
		}
		// The origin idles in a warm cache's passes: named where it
		// took a share worth naming.
		if s, ok := share(c.OriginCPUSeconds); ok && s >= BusyShare {
			uses = append(uses, use{s, fmt.Sprintf("origin %.0f%% %s", 100*s, of)})
			together += s
			parties = append(parties, "origin")
		}
	}
	if len(parties) > 1 && len(tgt.ServerCPUs) > 0 {
		// They are pinned to the same CPUs: one may wait for another.
		uses = append(uses, use{together, fmt.Sprintf("%s together %.0f%% of %s, which they share",
			joinAnd(parties), 100*together, cpuWord(tgt.ServerCPUs))})
	}
	if c == nil || c.EngineCPUSeconds == nil {
		switch {
		case tgt.Engine.EngineName() == engines.ExternalName:
			notes = append(notes, "the engine's CPU is not measured (an external proxy)")
		case tgt.InProcess:
			notes = append(notes, "the engine's CPU is not measured (it runs inside hlsbench's own process)")
		default:
			notes = append(notes, "the engine's CPU was not measured")
		}
	}
	if len(lr.ShardCPU) > 0 {
		loop := slices.Max(lr.ShardCPU)
		text := fmt.Sprintf("generator loop %.0f%% of its core", 100*loop)
		if len(lr.ShardCPU) > 1 {
			text = "busiest " + text
		}
		s := loop
		if len(tgt.GeneratorCPUs) > 0 && ev != nil && ev.OtherCPU != nil && ev.OtherCPU.GeneratorBusyShare > 0 {
			g := ev.OtherCPU.GeneratorBusyShare
			text = fmt.Sprintf("generator %.0f%% of %s while sending (%s)", 100*g, plural(len(tgt.GeneratorCPUs), "core"), text)
			s = max(s, g)
		}
		uses = append(uses, use{s, text})
	}
	if ev != nil && ev.OtherCPU != nil && ev.OtherCPU.Share >= BusyShare {
		oc := ev.OtherCPU
		uses = append(uses, use{oc.Share, fmt.Sprintf("other processes and steal %.0f%% of the measured CPUs (steal %.2f s)", 100*oc.Share, oc.StealSeconds)})
	}
	slices.SortStableFunc(uses, func(a, b use) int {
		switch {
		case a.share > b.share:
			return -1
		case a.share < b.share:
			return 1
		}
		return 0
	})
	var texts []string
	for _, u := range uses {
		texts = append(texts, u.text)
	}
	return strings.Join(append(texts, notes...), ", ")
}

// joinAnd is "a", "a and b", "a, b and c".
func joinAnd(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

// cpuWord is "CPU 0" or "CPUs 0,2".
func cpuWord(cpus []int) string {
	if len(cpus) == 1 {
		return fmt.Sprintf("CPU %d", cpus[0])
	}
	return "CPUs " + engines.CPUList(cpus)
}
