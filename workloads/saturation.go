package workloads

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/engines/cpuload"
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

// shortfallQuantiles are the quantiles whose move by the waits for a
// connection saturates a pass: the ones the cells publish.
var shortfallQuantiles = []float64{50, 99}

// Shortfall is a rate pass's shortfall judged by what it moved.
type Shortfall struct {
	// Saturated is set when the shortfall matters: the pass carried less
	// than results.SaturationShare of its offered rate, dropped requests
	// (the waiting queue full), or its requests' waits for a free
	// connection moved a published quantile past the generator's lateness
	// tolerance or grew through the pass (a queue that does not drain).
	Saturated bool
	// Reasons say why, each with its figures; empty when not saturated.
	Reasons []string
	// Waits counts the requests that waited for a connection and what
	// they moved ("18 of 10000 requests waited for a connection, up to
	// 0.400 ms; TTFB p50 unchanged, p99 +0.020 ms"); "" when none did. A
	// pass whose few waits moved nothing stays valid with them in its
	// evidence: its latencies count from the intended send time, so they
	// already include each wait.
	Waits string
	// waitsAlone says the waits' move of a quantile is the only cause:
	// the rate was carried, nothing dropped, the queue did not grow (the
	// host may have queued them: see excuseHostWaits).
	waitsAlone bool
}

// JudgeShortfall judges a rate pass's shortfall; a pass that offers no
// rate (a burst, a closed loop, a viewer plan) falls short of nothing.
//
// Any wait at all used to saturate a pass, and with it a host's blip of a
// millisecond that kept 18 of 10000 requests from a connection threw away
// a pass that carried 99.98 % of its rate. The waits are judged as the
// generator's own lateness is: by how far they moved the figure. With the
// waits counts from the dispatch instant, without them from the moment the
// request was written; the tolerance is lateness's, max(5 % of the figure,
// 50 µs) (loadgen.WaitEffect). A queue that grows through the pass is
// saturation whatever it has moved yet: a longer pass would move more.
func JudgeShortfall(lr *loadgen.Result) Shortfall { return judgeShortfallAt(lr, shortfallQuantiles...) }

// judgeShortfallAt is JudgeShortfall for the tests of the quantiles given:
// waits that moved another quantile only (a host's blip of 10 ms moves a
// p99, not a p50) leave them valid.
func judgeShortfallAt(lr *loadgen.Result, quantiles ...float64) Shortfall {
	offered, carried, ok := rateOf(lr)
	if !ok {
		return Shortfall{}
	}
	s := judgeWaits(lr, quantiles...)
	if carried < results.SaturationShare*offered {
		s.Reasons = append([]string{fmt.Sprintf("carried %.1f of %s rps, under %.0f%%", carried, rps(offered), 100*results.SaturationShare)}, s.Reasons...)
		s.Saturated, s.waitsAlone = true, false
	}
	return s
}

// judgeWaits is JudgeShortfall's judgement of the waits alone, on the
// quantiles given: dropped requests, waits that moved one of them past
// the tolerance, or waits growing through the pass. The capacity search
// judges its probes' waits by it, on its SLO's quantile, beside its own
// carried criterion.
func judgeWaits(lr *loadgen.Result, quantiles ...float64) Shortfall {
	var s Shortfall
	if lr.Dropped > 0 {
		s.Reasons = append(s.Reasons, fmt.Sprintf("every one of %s busy (%d of %d were dropped, the waiting queue full)",
			plural(lr.Connections, "connection"), lr.Dropped, lr.Requests))
	}
	if lr.Queued > 0 {
		effects := lr.WaitEffects(quantiles...)
		s.Waits = waitsText(lr, effects)
		var moved []string
		for _, e := range effects {
			if e.Exceeded() {
				moved = append(moved, fmt.Sprintf("%s %s from %.3f ms to %.3f ms (tolerance %.3f ms)",
					figureName(e.Figure), quantileWord(e.Quantile), ms(e.Without), ms(e.With), ms(e.Tolerance())))
			}
		}
		switch {
		case len(effects) == 0 && lr.PoolLimited:
			// Without the figures nothing says the waits moved nothing.
			s.Reasons = append(s.Reasons, fmt.Sprintf("every one of %s busy (%d of %d requests waited for one), and what the waits moved was not measured",
				plural(lr.Connections, "connection"), lr.Queued, lr.Requests))
		case len(moved) > 0:
			s.Reasons = append(s.Reasons, fmt.Sprintf("the waits for a free connection moved %s", strings.Join(moved, ", ")))
			s.waitsAlone = lr.Dropped == 0
		}
		if q := lr.WaitsByQuarter(); growing(q, lr.Requests) {
			s.Reasons = append(s.Reasons, fmt.Sprintf("the waits for a free connection grew through the pass (%s in its quarters): a queue that does not drain",
				joinInts(q)))
			s.waitsAlone = false
		}
	}
	s.Saturated = len(s.Reasons) > 0
	return s
}

// hostWaits counts the pass's waits for a free connection that began in a
// stall of the engine's CPUs that the host took (its CPU idle, no thread of the cell
// runnable as it ended), or in the drain after it, taken as long again: a
// stall of 15 ms at 5000 rps leaves 75 requests to send, and the 50
// connections are busy with the ones before them. all is every wait the
// pass counted.
func hostWaits(lr *loadgen.Result, stalls []cpuload.Stall) (host, all int64) {
	if lr == nil || lr.QueuedAt == nil || lr.Start.IsZero() {
		return 0, 0
	}
	for _, b := range lr.QueuedAt.Distribution() {
		if b.Count == 0 {
			continue
		}
		all += b.Count
		// A bucket's middle, as WaitsByQuarter takes it.
		at := lr.Start.Add(time.Duration((b.From+b.To)/2) * time.Microsecond)
		for _, st := range stalls {
			if st.ByHost() && !at.Before(st.At) && !at.After(st.End().Add(st.Duration)) {
				host += b.Count
				break
			}
		}
	}
	return host, all
}

// excuseHostWaits judges the pass's saturation again once its stalls are
// known: waits for a connection that moved a quantile and did nothing
// else (the rate carried, nothing dropped, no growing queue), most of which
// began in the host's stalls of the engine's CPUs (hostWaits, at least
// HostLateShare of them), were the host's queue, not the engine's: the
// pass is not saturated for that quantile, and hostWaitsAt says why it is
// invalid instead, a reason of the host's. On this project's machines the
// guest's two CPUs stall together for 10–25 ms every few seconds with no
// task of ours runnable, and each such stall moved Varnish's hit-path p99
// by 1–10 ms through the waits it queued.
func (p *passInfo) excuseHostWaits(w *hostWatch) {
	if p.saturated == "" || w == nil || p.ev == nil || p.ev.Stalls == nil {
		return
	}
	host, all := hostWaits(p.lr, w.engineStalls())
	if all == 0 || float64(host) < HostLateShare*float64(all) {
		return
	}
	excuse := func(sf Shortfall) string {
		return fmt.Sprintf("the host queued the requests: %s; %d of %d requests that waited for a connection began waiting in a stall the host took on the engine's CPU (its CPU idle, no thread of the cell runnable), or as long after it (%s)",
			strings.Join(sf.Reasons, "; "), host, all, stallText(p.ev.Stalls))
	}
	for _, q := range shortfallQuantiles {
		if sf := judgeShortfallAt(p.lr, q); sf.Saturated && sf.waitsAlone {
			if p.hostWaitsAt == nil {
				p.hostWaitsAt = map[float64]string{}
			}
			p.saturatedAt[q], p.hostWaitsAt[q] = "", excuse(sf)
		}
	}
	if sf := JudgeShortfall(p.lr); sf.Saturated && sf.waitsAlone {
		p.saturated = ""
	}
}

// growing says the waits in each quarter of a pass were at least as many
// as in the one before, every quarter but the first had some, there were
// more in the last than in the first, and more in the last than
// loadgen.PoolLimitedShare of its requests: a queue that builds up, not
// one blip (0, 0, 0, 36 is a stall in the last quarter), nor a waiting
// request now and then.
func growing(q []int64, requests int64) bool {
	if len(q) < 2 {
		return false
	}
	for i := 1; i < len(q); i++ {
		if q[i] < q[i-1] || q[i] == 0 {
			return false
		}
	}
	last := q[len(q)-1]
	return last > q[0] && float64(last) > loadgen.PoolLimitedShare*float64(requests)/float64(len(q))
}

// waitsText is the waits' evidence: how many requests waited, the longest
// wait, and what the waits moved of each published quantile.
func waitsText(lr *loadgen.Result, effects []loadgen.WaitEffect) string {
	s := fmt.Sprintf("%d of %d requests waited for a connection", lr.Queued, lr.Requests)
	if lr.ConnectionWait != nil && lr.ConnectionWait.TotalCount() > 0 {
		s += fmt.Sprintf(", up to %.3f ms", ms(time.Duration(lr.ConnectionWait.Max())))
	}
	var figs []string
	for i := 0; i < len(effects); {
		f := effects[i].Figure
		var qs []string
		for ; i < len(effects) && effects[i].Figure == f; i++ {
			e := effects[i]
			d := ms(e.With - e.Without)
			if math.Round(d*1000) <= 0 {
				qs = append(qs, quantileWord(e.Quantile)+" unchanged")
			} else {
				qs = append(qs, fmt.Sprintf("%s +%.3f ms", quantileWord(e.Quantile), d))
			}
		}
		figs = append(figs, figureName(f)+" "+strings.Join(qs, ", "))
	}
	if len(figs) > 0 {
		s += "; " + strings.Join(figs, "; ")
	}
	return s
}

func figureName(f string) string {
	if f == "ttfb" {
		return "TTFB"
	}
	return f
}

// quantileWord is "p50", "p99", "p99.9".
func quantileWord(q float64) string { return "p" + strconv.FormatFloat(q, 'f', -1, 64) }

func joinInts(v []int64) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.FormatInt(n, 10)
	}
	return strings.Join(s, ", ")
}

// isSaturated says whether a rate pass was saturated: see JudgeShortfall.
func isSaturated(lr *loadgen.Result) bool { return JudgeShortfall(lr).Saturated }

// saturation is why a rate pass was saturated, "" when it was not: why its
// shortfall matters (JudgeShortfall), and what each party used of the
// CPUs it may use over window (the cost meter's interval), the busiest
// first. A party is named only with its measured figure; one that was not
// measured is said to be so.
//
// Judged for the tests of the quantiles given (none: every published one).
func saturation(tgt *Target, lr *loadgen.Result, ev *results.Evidence, window time.Duration, quantiles ...float64) string {
	if len(quantiles) == 0 {
		quantiles = shortfallQuantiles
	}
	sf := judgeShortfallAt(lr, quantiles...)
	if !sf.Saturated {
		return ""
	}
	offered, carried, _ := rateOf(lr)
	parts := []string{fmt.Sprintf("carried %.1f of %s rps", carried, rps(offered))}
	for _, r := range sf.Reasons {
		if !strings.HasPrefix(r, "carried ") {
			parts = append(parts, r)
		}
	}
	if sf.Waits != "" && !slices.ContainsFunc(sf.Reasons, func(r string) bool { return strings.Contains(r, "waited for one") }) {
		parts = append(parts, sf.Waits)
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
