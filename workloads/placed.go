package workloads

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/engines/freeport"
	"github.com/hlsbench/hlsbench/engines/launch"
	"github.com/hlsbench/hlsbench/origin"
	"github.com/hlsbench/hlsbench/results"
	"github.com/hlsbench/hlsbench/workloads/loadgen"
	"github.com/hlsbench/hlsbench/workloads/loadgen/agent"
)

// Placed is a run whose roles run on other hosts (launch.Placement): each
// role's launcher is a Docker daemon on its host (launch.Docker, Remote)
// that holds the images the role needs. The origin and the engine listen
// at their hosts' addresses; the generators are hlsbench agents, one per
// generator host, that carry each pass's schedule between them.
type Placed struct {
	Placement  launch.Placement
	Origin     launch.Launcher
	Engine     launch.Launcher
	Generators []launch.Launcher
	// ClockTolerance bounds the agents' clocks (agent.ClockTolerance when
	// zero).
	ClockTolerance time.Duration
}

// CheckPlacement says what a placement lacks for a run: every role on a
// host of its own (everything left on this host is the default, not a
// placement), and each host's address.
func CheckPlacement(pl launch.Placement) error {
	var missing []string
	if len(pl.Generators) == 0 {
		missing = append(missing, "generator")
	}
	if pl.Engine.Endpoint == "" {
		missing = append(missing, "engine")
	}
	if pl.Origin.Endpoint == "" {
		missing = append(missing, "origin")
	}
	if len(missing) > 0 {
		return fieldErr("place", "names no host for %s: place every role (generator, engine, origin), or none to run everything here", strings.Join(missing, ", "))
	}
	for _, h := range append([]launch.Host{pl.Engine, pl.Origin}, pl.Generators...) {
		if h.Addr == "" {
			return fieldErr("place", "%s: no address: write it as %s@ADDR, the address the other hosts reach it at", h.Endpoint, h.Endpoint)
		}
	}
	return nil
}

// at is addr's port at host.
func at(host, addr string) string {
	_, port, _ := net.SplitHostPort(addr)
	return net.JoinHostPort(host, port)
}

// AgentHost is a generator host's agent, which a workload opens its
// generator on.
type AgentHost struct {
	Name   string // "generator host 1 (ENDPOINT@ADDR)"
	Client *agent.Client
}

// HostProbe is an agent on a host of a placed run, which tells what the
// host did (agent.HostSample): the generator hosts' agents, and one each
// on the engine's and the origin's hosts.
type HostProbe struct {
	Role, Name string
	Client     *agent.Client
}

// agents are the run's generator agents, one on each generator host, and
// its host probes.
type agents struct {
	hosts  []AgentHost
	probes []HostProbe
	insts  []launch.Instance
}

// startAgents starts an agent (hlsbench's image, `hlsbench agent`) on
// every generator host, listening at its address.
func startAgents(ctx context.Context, spec RunSpec) (*agents, error) {
	p := spec.Placed
	a := &agents{}
	start := func(lch launch.Launcher, host launch.Host, name string) (*agent.Client, error) {
		port, err := freeport.Addr()
		if err != nil {
			return nil, err
		}
		inst, err := lch.Start(ctx, launch.Spec{Name: name, Image: spec.Images["hlsbench"],
			Command: []string{"/hlsbench", "agent", "--listen", at(host.Addr, port)}, ReadyLine: agent.ReadyPrefix,
			ReadyTimeout: 30 * time.Second, StopTimeout: 5 * time.Second})
		if err != nil {
			return nil, fmt.Errorf("%s on %s: %w", name, host, err)
		}
		a.insts = append(a.insts, inst)
		return &agent.Client{URL: "http://" + strings.TrimSpace(inst.Ready())}, nil
	}
	for i, lch := range p.Generators {
		host := p.Placement.Generators[i]
		c, err := start(lch, host, fmt.Sprintf("agent-%d", i+1))
		if err != nil {
			return a, err
		}
		name := fmt.Sprintf("generator host %d (%s)", i+1, host)
		a.hosts = append(a.hosts, AgentHost{Name: name, Client: c})
		a.probes = append(a.probes, HostProbe{Role: "generator", Name: name, Client: c})
	}
	// The engine's and the origin's hosts run no agent of their own: a
	// probe tells what they did.
	for _, r := range []struct {
		role string
		lch  launch.Launcher
		host launch.Host
	}{{"engine", p.Engine, p.Placement.Engine}, {"origin", p.Origin, p.Placement.Origin}} {
		c, err := start(r.lch, r.host, r.role+"-probe")
		if err != nil {
			return a, err
		}
		a.probes = append(a.probes, HostProbe{Role: r.role, Name: r.role + " host (" + r.host.String() + ")", Client: c})
	}
	return a, nil
}

// sampleHosts samples every probe's host, and with clock its clock; a
// host that did not answer has its error instead.
func sampleHosts(ctx context.Context, probes []HostProbe, clock bool) []hostSample {
	out := make([]hostSample, len(probes))
	for i, p := range probes {
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		out[i].s, out[i].err = p.Client.Host(sctx)
		if clock && out[i].err == nil {
			var c agent.Clock
			if c, out[i].clockErr = p.Client.Clock(sctx); out[i].clockErr == nil {
				out[i].clock = &c
			}
		}
		cancel()
	}
	return out
}

type hostSample struct {
	s        agent.HostSample
	err      error
	clock    *agent.Clock // taken before a pass
	clockErr error
}

// hostPasses are what each probe's host did between two samplings.
func hostPasses(probes []HostProbe, a, b []hostSample) []results.HostPass {
	if len(probes) == 0 || len(a) != len(probes) || len(b) != len(probes) {
		return nil
	}
	out := make([]results.HostPass, len(probes))
	for i, p := range probes {
		c := results.HostPass{Role: p.Role, Name: p.Name}
		x, y := a[i], b[i]
		if x.clock != nil {
			c.ClockOffsetMs, c.ClockUncertaintyMs = ptr(round3(ms(x.clock.Offset))), ptr(round3(ms(x.clock.Uncertainty)))
		}
		switch {
		case x.clockErr != nil:
			c.Error = "its clock before the pass: " + x.clockErr.Error()
		case x.err != nil:
			c.Error = "before the pass: " + x.err.Error()
		case y.err != nil:
			c.Error = "after the pass: " + y.err.Error()
		case y.s.TotalTicks <= x.s.TotalTicks || y.s.TicksPerSecond <= 0:
			c.Error = "no CPU time passed between the samples"
		default:
			busy := float64(y.s.BusyTicks-x.s.BusyTicks) / float64(y.s.TicksPerSecond)
			share := float64(y.s.BusyTicks-x.s.BusyTicks) / float64(y.s.TotalTicks-x.s.TotalTicks)
			c.CPUs, c.CPUSeconds, c.CPUShare = y.s.CPUs, ptr(round3(busy)), ptr(round3(share))
			c.MemUsedBytes, c.MemTotalBytes = ptr(y.s.MemTotal-y.s.MemAvailable), y.s.MemTotal
			c.NetRxBytes, c.NetTxBytes = ptr(y.s.NetRx-x.s.NetRx), ptr(y.s.NetTx-x.s.NetTx)
			judgeable(&c, x.s, y.s)
		}
		out[i] = c
	}
	return out
}

// judgeable fills what the run judges a placed host by, as it judges its
// own: steal, interrupts, other processes (a generator host's: all but
// the agent, which is the generator) and whether any CPU rested. Samples
// from an agent without these counters leave them null.
func judgeable(c *results.HostPass, x, y agent.HostSample) {
	total := float64(y.TotalTicks - x.TotalTicks)
	if total <= 0 || y.StealTicks < x.StealTicks || y.IRQTicks < x.IRQTicks {
		return
	}
	steal, irq := float64(y.StealTicks-x.StealTicks), float64(y.IRQTicks-x.IRQTicks)
	c.StealShare, c.IRQShare = ptr(round3(steal/total)), ptr(round3(irq/total))
	if c.Role == "generator" && y.SelfTicks >= x.SelfTicks {
		busy := float64(y.BusyTicks - x.BusyTicks)
		c.OtherShare = ptr(round3(max(busy-steal-irq-float64(y.SelfTicks-x.SelfTicks), 0) / total))
	}
	if n := len(y.CPUBusyTicks); n > 0 && n == len(x.CPUBusyTicks) && n == len(y.CPUTotalTicks) && n == len(x.CPUTotalTicks) {
		least := 1.0
		for i := range n {
			if t := float64(y.CPUTotalTicks[i] - x.CPUTotalTicks[i]); t > 0 {
				least = min(least, float64(y.CPUBusyTicks[i]-x.CPUBusyTicks[i])/t)
			}
		}
		c.LeastBusyShare = ptr(round3(least))
	}
}

// placedBusy is why a placed pass's latency tests are invalid for a busy
// host, "" when none was: a generator host whose every CPU was at least
// loadgen.CPULimit busy, as generatorBusy judges this host's CPUs when the
// generator shares them. Answers then waited for the generator to read
// them, and the latencies are the generator host's, not the engine's.
func placedBusy(ev *results.Evidence) string {
	if ev == nil {
		return ""
	}
	var busy []string
	for _, h := range ev.Hosts {
		if h.Role == "generator" && h.LeastBusyShare != nil && *h.LeastBusyShare >= loadgen.CPULimit {
			busy = append(busy, fmt.Sprintf("%s: every CPU at least %.0f%% busy", h.Name, 100**h.LeastBusyShare))
		}
	}
	if len(busy) == 0 {
		return ""
	}
	return strings.Join(busy, "; ") + " during the pass: answers may have waited for the generator to read them, so the figures may be the generator host's, not the engine's: lower the rate, add generator hosts or quiet them"
}

// placedSpoil names what of each placed host passed the thresholds this
// host is judged by (HostStealShare, HostIRQShare, HostOtherShare), ""
// when nothing did: for hostSpoil.
func placedSpoil(hosts []results.HostPass) []string {
	var parts []string
	for _, h := range hosts {
		if h.StealShare == nil || h.IRQShare == nil {
			continue
		}
		other := 0.0
		if h.OtherShare != nil {
			other = *h.OtherShare
		}
		if *h.StealShare < HostStealShare && *h.IRQShare < HostIRQShare && other < HostOtherShare {
			continue
		}
		s := fmt.Sprintf("%s: steal %.0f %%, interrupts %.0f %%", h.Name, 100**h.StealShare, 100**h.IRQShare)
		if h.OtherShare != nil {
			s += fmt.Sprintf(", other processes %.0f %%", 100*other)
		}
		parts = append(parts, s)
	}
	return parts
}

// stop stops every agent.
func (a *agents) stop(ctx context.Context) error {
	var errs []error
	for _, inst := range a.insts {
		errs = append(errs, inst.Stop(ctx))
	}
	return errors.Join(errs...)
}

// loader is what a workload's passes run on: a generator in this process,
// or agents on other hosts that split each pass between them.
type loader interface {
	Run(ctx context.Context, p loadgen.Pass) (*loadgen.Result, error)
	Shards() int
	Close() error
}

// agentLoader is a generator on each agent, each pass one schedule split
// over them (agent.Shared) and merged exactly. With onRecord, each pass's
// records come back and are handed to it once the pass is over, as a
// generator here hands them during the pass: their times moved onto this
// host's clock by each agent's offset, and the origin's stamps by the
// origin host's (origin).
type agentLoader struct {
	parts     []agent.Part
	tolerance time.Duration
	onRecord  func(int, *loadgen.Record, loadgen.BodyCheck)
	origin    *agent.Client // the origin host's probe
}

// captured are the headers a loader with onRecord has its agents keep:
// what evidence reads of the origin's stamps.
var captured = []string{origin.GeneratedHeader, origin.VersionHeader}

func (l *agentLoader) Run(ctx context.Context, p loadgen.Pass) (*loadgen.Result, error) {
	spec, err := agent.SpecOf(p)
	if err != nil {
		return nil, err
	}
	var originClock agent.Clock
	if l.onRecord != nil {
		spec.Records = true
		if l.origin == nil {
			return nil, errors.New("records from agents: no probe on the origin's host to read its stamps' clock")
		}
		if originClock, err = l.origin.Clock(ctx); err != nil {
			return nil, fmt.Errorf("the origin host's clock: %w", err)
		}
	}
	r, reps, err := agent.Shared(ctx, l.parts, spec, l.tolerance)
	if err != nil || l.onRecord == nil {
		return r, err
	}
	l.replay(reps, originClock.Offset)
	return r, nil
}

// replay hands every part's records to onRecord, their event loops
// numbered after the parts before them.
func (l *agentLoader) replay(reps []agent.PartReport, originOffset time.Duration) {
	base := 0
	for i, rep := range reps {
		for _, rc := range rep.Records {
			rec := loadgen.Record{Intended: time.Unix(0, rc.Intended).Add(-rep.Before.Offset), Lag: time.Duration(rc.Lag),
				Object: rc.Object, Tag: rc.Tag, TTFB: time.Duration(rc.TTFB), Total: time.Duration(rc.Total), Status: rc.Status,
				Err: rc.Err, Cache: loadgen.CacheClaim(rc.Cache), BodyBytes: rc.BodyBytes}
			ev := &evidence{edge: -1}
			if len(rc.Captured) == len(captured) {
				if rc.Captured[0] != 0 {
					ev.stamp = rc.Captured[0] - int64(originOffset)
				}
				ev.version = rc.Captured[1]
			}
			l.onRecord(base+rc.Shard, &rec, ev)
		}
		base += l.parts[i].Remote.Shards()
	}
}

func (l *agentLoader) Shards() int {
	n := 0
	for _, p := range l.parts {
		n += p.Remote.Shards()
	}
	return n
}

func (l *agentLoader) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var errs []error
	for _, p := range l.parts {
		errs = append(errs, p.Remote.Close(ctx))
	}
	return errors.Join(errs...)
}

// newLoader is the generator of a workload that can run on agents: on the
// target's agents when it has some (conns split between them), else
// newGenerator's. The agents check answers by their checksums; ev's
// byte-for-byte checks of ranged segments are this process's alone. With
// onRecord, the agents keep each request's record and the origin's stamps
// on it, handed to onRecord after each pass (agentLoader).
func newLoader(ctx context.Context, tgt *Target, cfg *Config, conns int, ev *evidenceSet, onRecord func(int, *loadgen.Record, loadgen.BodyCheck)) (loader, error) {
	if len(tgt.Agents) == 0 {
		return newGenerator(ctx, tgt, cfg, conns, ev, onRecord)
	}
	n := len(tgt.Agents)
	spec := agent.GeneratorSpec{URL: tgt.URL, Connections: (conns + n - 1) / n, Timeout: cfg.Timeout,
		ChecksumHeader: origin.ChecksumHeader, CAPEM: tgt.CAPEM}
	l := &agentLoader{tolerance: tgt.ClockTolerance, onRecord: onRecord}
	if onRecord != nil {
		spec.Capture = captured
		for _, p := range tgt.Probes {
			if p.Role == "origin" {
				l.origin = p.Client
			}
		}
	}
	for _, a := range tgt.Agents {
		r, err := a.Client.Open(ctx, spec)
		if err != nil {
			l.Close()
			return nil, fmt.Errorf("%s: %w", a.Name, err)
		}
		l.parts = append(l.parts, agent.Part{Name: a.Name, Remote: r})
	}
	return l, nil
}

// startPlaced checks the placement, records its hosts in the run and
// starts the generator agents, which Execute stops at its end.
func startPlaced(ctx context.Context, spec *RunSpec, run *results.Run) (*agents, error) {
	p := spec.Placed
	if err := CheckPlacement(p.Placement); err != nil {
		return nil, err
	}
	pl := p.Placement
	for _, h := range pl.Generators {
		run.Placement = append(run.Placement, results.PlacedHost{Role: "generator", Endpoint: h.Endpoint, Addr: h.Addr})
	}
	run.Placement = append(run.Placement, results.PlacedHost{Role: "engine", Endpoint: pl.Engine.Endpoint, Addr: pl.Engine.Addr},
		results.PlacedHost{Role: "origin", Endpoint: pl.Origin.Endpoint, Addr: pl.Origin.Addr})
	if len(p.Generators) != len(pl.Generators) || p.Origin == nil || p.Engine == nil {
		return nil, errors.New("placement: a role's host is not open")
	}
	a, err := startAgents(ctx, *spec)
	spec.agents = a
	return a, err
}

// placedOrigin is where a placed run's origin listens: its data and
// control listeners at its host's address.
func placedOrigin(p *Placed) (listen, control string, err error) {
	var a, b string
	if a, err = freeport.Addr(); err != nil {
		return "", "", err
	}
	if b, err = freeport.Addr(); err != nil {
		return "", "", err
	}
	return at(p.Placement.Origin.Addr, a), at(p.Placement.Origin.Addr, b), nil
}

// placedNA is why a cell cannot run placed ("" when it can).
func placedNA(w Spec, c *cell) string {
	switch {
	case !w.Spreads():
		return "its load is not a schedule agents on other hosts can carry (it follows each answer, or purges from this host): run it with everything on one host"
	case c.sel.Name == engines.ExternalName:
		return "an external proxy is not started by hlsbench, so it cannot be placed"
	}
	return ""
}

// shiftedOrigin is a placed run's origin: the instants its stats report
// (when its mode changed, when it generated an object's last copy) are on
// its host's clock, and are read on this host's, moved by the offset its
// probe measures at each read.
type shiftedOrigin struct {
	OriginControl
	probe *agent.Client

	mu          sync.Mutex
	uncertainty time.Duration // of the last read's offset
}

func (o *shiftedOrigin) Stats(ctx context.Context) (origin.Stats, error) {
	c, err := o.probe.Clock(ctx)
	if err != nil {
		return origin.Stats{}, fmt.Errorf("the origin host's clock: %w", err)
	}
	st, err := o.OriginControl.Stats(ctx)
	if err != nil {
		return st, err
	}
	o.mu.Lock()
	o.uncertainty = c.Uncertainty
	o.mu.Unlock()
	shift := func(ns int64) int64 {
		if ns == 0 {
			return 0
		}
		return ns - int64(c.Offset)
	}
	st.ModeSince = shift(st.ModeSince)
	objs := make(map[string]origin.ObjectStats, len(st.Objects))
	for k, v := range st.Objects {
		v.LastGenerated = shift(v.LastGenerated)
		objs[k] = v
	}
	st.Objects = objs
	return st, nil
}

// ClockUncertainty is how far the instants of the last Stats may be from
// where they were put on this host's clock.
func (o *shiftedOrigin) ClockUncertainty() time.Duration {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.uncertainty
}

// clockUncertainty is how far an origin's reported instants may be off
// this host's clock: 0 for an origin on this host.
func clockUncertainty(o OriginControl) time.Duration {
	if u, ok := o.(interface{ ClockUncertainty() time.Duration }); ok {
		return u.ClockUncertainty()
	}
	return 0
}
