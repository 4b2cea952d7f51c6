package agent

import (
	"context"
	"testing"
)

func TestParseHostFiles(t *testing.T) {
	cpus, total, busy, err := parseStat([]byte("cpu  100 5 50 800 20 3 2 1 0 0\ncpu0 50 2 25 400 10 1 1 0 0 0\ncpu1 50 3 25 400 10 2 1 1 0 0\nintr 1 2\n"))
	if err != nil || cpus != 2 || total != 981 || busy != 161 {
		t.Errorf("stat: %d CPUs, %d total, %d busy, %v; want 2, 981, 161", cpus, total, busy, err)
	}
	steal, irq, pb, pt := parseStatSplit([]byte("cpu  100 5 50 800 20 3 2 1 0 0\ncpu0 50 2 25 400 10 1 1 0 0 0\ncpu1 50 3 25 400 10 2 1 1 0 0\nintr 1 2\n"))
	if steal != 1 || irq != 5 || len(pb) != 2 || pb[0] != 79 || pb[1] != 82 || pt[0] != 489 || pt[1] != 492 {
		t.Errorf("stat split: steal %d, irq %d, per CPU busy %v of %v; want 1, 5, [79 82] of [489 492]", steal, irq, pb, pt)
	}
	if n, err := parseSelfStat([]byte("42 (a (b) c) R 1 42 42 0 -1 4194304 100 0 0 0 731 269 0 0 20 0 9 0 1000 0 0")); err != nil || n != 1000 {
		t.Errorf("self stat: %d ticks, %v; want 731+269", n, err)
	}
	if _, _, _, err := parseStat([]byte("intr 1\n")); err == nil {
		t.Error("a /proc/stat without cpu lines parsed")
	}
	tot, avail, err := parseMeminfo([]byte("MemTotal:       24576000 kB\nMemFree:  1 kB\nMemAvailable:   20480000 kB\n"))
	if err != nil || tot != 24576000<<10 || avail != 20480000<<10 {
		t.Errorf("meminfo: %d %d %v", tot, avail, err)
	}
	rx, tx, err := parseNetDev([]byte(`Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo: 9999 10 0 0 0 0 0 0 9999 10 0 0 0 0 0 0
  eth0: 1000 10 0 0 0 0 0 0 2000 20 0 0 0 0 0 0
  eth1: 5 1 0 0 0 0 0 0 7 1 0 0 0 0 0 0
`))
	if err != nil || rx != 1005 || tx != 2007 {
		t.Errorf("net/dev: rx %d tx %d %v; want 1005 2007 without lo", rx, tx, err)
	}
}

// An agent tells its host's counters.
func TestAgentHost(t *testing.T) {
	c := startAgent(t, 0)
	h, err := c.Host(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if h.CPUs < 1 || h.TotalTicks == 0 || h.BusyTicks > h.TotalTicks || h.MemTotal <= 0 || h.MemAvailable <= 0 || h.TicksPerSecond != userHZ ||
		len(h.CPUBusyTicks) != h.CPUs || h.StealTicks+h.IRQTicks > h.BusyTicks {
		t.Errorf("host sample %+v", h)
	}
}
