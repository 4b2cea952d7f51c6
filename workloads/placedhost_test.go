package workloads

import (
	"strings"
	"testing"

	"github.com/hlsbench/hlsbench/results"
	"github.com/hlsbench/hlsbench/workloads/loadgen/agent"
)

// A placed run's hosts are judged as this host is: a generator host whose
// every CPU was busy makes the pass's latency tests invalid, and steal,
// interrupts and other processes past their thresholds on any host are
// named in an invalid pass's reasons (and the pass repeated). On a
// generator host other processes are all but the agent, the generator; on
// the engine's host they are not told apart, and only steal and
// interrupts are judged. On 9e8fb7e the hosts' figures were evidence only.
func TestPlacedHostsJudged(t *testing.T) {
	sample := func(total, busy, steal, irq, self uint64, cpuBusy ...uint64) hostSample {
		s := agent.HostSample{CPUs: len(cpuBusy), TotalTicks: total, BusyTicks: busy, StealTicks: steal, IRQTicks: irq,
			SelfTicks: self, TicksPerSecond: 100}
		for _, b := range cpuBusy {
			s.CPUBusyTicks, s.CPUTotalTicks = append(s.CPUBusyTicks, b), append(s.CPUTotalTicks, total/uint64(len(cpuBusy)))
		}
		return hostSample{s: s}
	}
	probes := []HostProbe{{Role: "generator", Name: "generator host 1 (a)"}, {Role: "generator", Name: "generator host 2 (b)"},
		{Role: "engine", Name: "engine host (c)"}}
	before := []hostSample{sample(0, 0, 0, 0, 0, 0, 0), sample(0, 0, 0, 0, 0, 0, 0), sample(0, 0, 0, 0, 0, 0, 0)}
	// 2 CPUs, 10 s: 2000 ticks. Host 1: the generator 600 ticks, a
	// compiler 800; host 2 quiet; the engine host busy with the engine
	// (not another's) and stolen from 12 %.
	after := []hostSample{sample(2000, 1960, 0, 100, 600, 980, 980), sample(2000, 500, 0, 40, 400, 250, 250),
		sample(2000, 1500, 240, 100, 0, 750, 750)}
	hosts := hostPasses(probes, before, after)
	h1, h2, eng := hosts[0], hosts[1], hosts[2]
	if h1.OtherShare == nil || *h1.OtherShare != 0.63 || h1.LeastBusyShare == nil || *h1.LeastBusyShare != 0.98 {
		t.Errorf("host 1: other %v, least busy %v; want 0.63 and 0.98", val(h1.OtherShare), val(h1.LeastBusyShare))
	}
	if eng.OtherShare != nil || eng.StealShare == nil || *eng.StealShare != 0.12 {
		t.Errorf("engine host: other %v, steal %v; want none and 0.12", val(eng.OtherShare), val(eng.StealShare))
	}
	ev := &results.Evidence{Hosts: hosts}
	busy := placedBusy(ev)
	if !strings.HasPrefix(busy, "generator host 1 (a): every CPU at least 98% busy during the pass") || strings.Contains(busy, "host 2") {
		t.Errorf("busy %q: want host 1 alone", busy)
	}
	spoil := hostSpoil(ev, 0)
	for _, want := range []string{"generator host 1 (a): steal 0 %, interrupts 5 %, other processes 63 %", "engine host (c): steal 12 %, interrupts 5 %"} {
		if !strings.Contains(spoil, want) {
			t.Errorf("host %q lacks %q", spoil, want)
		}
	}
	if strings.Contains(spoil, "host 2") || strings.Contains(spoil, "engine host (c): steal 12 %, interrupts 5 %, other") {
		t.Errorf("host %q names the quiet host, or another's processes on the engine's", spoil)
	}
	if h2.OtherShare == nil || *h2.OtherShare != 0.03 || placedBusy(&results.Evidence{Hosts: []results.HostPass{h2}}) != "" {
		t.Errorf("host 2: other %v, busy %q; want 0.03 and not busy", val(h2.OtherShare), placedBusy(&results.Evidence{Hosts: []results.HostPass{h2}}))
	}
}
