package agent

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// HostSample is a host's CPU, memory and network counters at one instant,
// as the agent on it reads them from /proc: the whole host's, whatever ran
// there (an agent runs with the host's network, and /proc/stat and
// /proc/meminfo are the host's). Two samples give what a pass cost it.
type HostSample struct {
	At   time.Time `json:"at"`
	CPUs int       `json:"cpus"`
	// TotalTicks and BusyTicks are the CPUs' time in USER_HZ ticks
	// (TicksPerSecond): busy is every state but idle and iowait.
	TotalTicks     uint64 `json:"total_ticks"`
	BusyTicks      uint64 `json:"busy_ticks"`
	TicksPerSecond int    `json:"ticks_per_second"`
	MemTotal       int64  `json:"mem_total_bytes"`
	MemAvailable   int64  `json:"mem_available_bytes"`
	// NetRx and NetTx are the bytes every interface but loopback received
	// and sent.
	NetRx int64 `json:"net_rx_bytes"`
	NetTx int64 `json:"net_tx_bytes"`
	// StealTicks and IRQTicks are the CPUs' steal and hard and soft
	// interrupt time, in BusyTicks; CPUBusyTicks and CPUTotalTicks each
	// CPU's busy and total time, in /proc/stat's order: whether any CPU
	// rested. SelfTicks is the agent's own process's CPU time (user and
	// system): on a generator host, the generator's, so that the rest of
	// the busy time is another's. /proc/stat is the host's inside a
	// container too; the agent's process is the only one it sees.
	StealTicks    uint64   `json:"steal_ticks"`
	IRQTicks      uint64   `json:"irq_ticks"`
	CPUBusyTicks  []uint64 `json:"cpu_busy_ticks,omitempty"`
	CPUTotalTicks []uint64 `json:"cpu_total_ticks,omitempty"`
	SelfTicks     uint64   `json:"self_ticks"`
}

// userHZ is the kernel's USER_HZ, the unit of /proc/stat: 100 on every
// Linux architecture hlsbench runs on.
const userHZ = 100

// ReadHost samples this host.
func ReadHost() (HostSample, error) {
	s := HostSample{At: time.Now(), TicksPerSecond: userHZ}
	var errs []error
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		s.CPUs, s.TotalTicks, s.BusyTicks, err = parseStat(b)
		errs = append(errs, err)
		s.StealTicks, s.IRQTicks, s.CPUBusyTicks, s.CPUTotalTicks = parseStatSplit(b)
	} else {
		errs = append(errs, err)
	}
	if b, err := os.ReadFile("/proc/self/stat"); err == nil {
		s.SelfTicks, err = parseSelfStat(b)
		errs = append(errs, err)
	} else {
		errs = append(errs, err)
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		s.MemTotal, s.MemAvailable, err = parseMeminfo(b)
		errs = append(errs, err)
	} else {
		errs = append(errs, err)
	}
	if b, err := os.ReadFile("/proc/net/dev"); err == nil {
		s.NetRx, s.NetTx, err = parseNetDev(b)
		errs = append(errs, err)
	} else {
		errs = append(errs, err)
	}
	return s, errors.Join(errs...)
}

// parseStat reads /proc/stat's cpu lines: the CPUs, and the aggregate's
// total and busy ticks.
func parseStat(b []byte) (cpus int, total, busy uint64, err error) {
	found := false
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], "cpu") {
			continue
		}
		if f[0] != "cpu" {
			cpus++
			continue
		}
		if len(f) < 5 {
			return 0, 0, 0, fmt.Errorf("/proc/stat: short cpu line %q", line)
		}
		// user nice system idle iowait irq softirq steal (guest and
		// guest_nice are counted in user and nice already).
		for i, v := range f[1:min(len(f), 9)] {
			n, perr := strconv.ParseUint(v, 10, 64)
			if perr != nil {
				return 0, 0, 0, fmt.Errorf("/proc/stat: %q: %w", line, perr)
			}
			total += n
			if i != 3 && i != 4 {
				busy += n
			}
		}
		found = true
	}
	if !found || cpus == 0 {
		return 0, 0, 0, errors.New("/proc/stat: no cpu lines")
	}
	return cpus, total, busy, nil
}

// parseStatSplit reads /proc/stat's cpu lines again (parseStat judged
// them): the aggregate's steal and interrupt ticks, and each CPU's busy
// and total ticks, busy counted as parseStat does.
func parseStatSplit(b []byte) (steal, irq uint64, busy, total []uint64) {
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 9 || !strings.HasPrefix(f[0], "cpu") {
			continue
		}
		var v [8]uint64
		for i := range v {
			v[i], _ = strconv.ParseUint(f[i+1], 10, 64)
		}
		if f[0] == "cpu" {
			steal, irq = v[7], v[5]+v[6]
			continue
		}
		var t, b uint64
		for i, n := range v {
			t += n
			if i != 3 && i != 4 {
				b += n
			}
		}
		busy, total = append(busy, b), append(total, t)
	}
	return steal, irq, busy, total
}

// parseSelfStat reads a /proc/PID/stat's utime and stime (fields 14 and
// 15), after the command name, which may hold spaces and parentheses.
func parseSelfStat(b []byte) (uint64, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("/proc/self/stat: no command name")
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state): utime and stime are f[11] and f[12].
	if len(f) < 13 {
		return 0, errors.New("/proc/self/stat: short")
	}
	u, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/self/stat: utime %q, stime %q", f[11], f[12])
	}
	return u + st, nil
}

// parseMeminfo reads MemTotal and MemAvailable, in bytes.
func parseMeminfo(b []byte) (total, avail int64, err error) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	seen := 0
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || (f[0] != "MemTotal:" && f[0] != "MemAvailable:") {
			continue
		}
		kb, perr := strconv.ParseInt(f[1], 10, 64)
		if perr != nil {
			return 0, 0, fmt.Errorf("/proc/meminfo: %q: %w", sc.Text(), perr)
		}
		if f[0] == "MemTotal:" {
			total = kb << 10
		} else {
			avail = kb << 10
		}
		seen++
	}
	if seen != 2 {
		return 0, 0, errors.New("/proc/meminfo: no MemTotal or MemAvailable")
	}
	return total, avail, nil
}

// parseNetDev sums the received and sent bytes of every interface but lo.
func parseNetDev(b []byte) (rx, tx int64, err error) {
	for _, line := range strings.Split(string(b), "\n") {
		name, rest, ok := strings.Cut(line, ":")
		name = strings.TrimSpace(name)
		if !ok || name == "lo" || strings.Contains(name, "|") {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 9 {
			return 0, 0, fmt.Errorf("/proc/net/dev: short line %q", line)
		}
		r, err1 := strconv.ParseInt(f[0], 10, 64)
		t, err2 := strconv.ParseInt(f[8], 10, 64)
		if err1 != nil || err2 != nil {
			return 0, 0, fmt.Errorf("/proc/net/dev: %q", line)
		}
		rx += r
		tx += t
	}
	return rx, tx, nil
}

func (s *Server) host(w http.ResponseWriter, _ *http.Request) {
	h, err := ReadHost()
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, h)
}

// Host samples the agent's host.
func (c *Client) Host(ctx context.Context) (HostSample, error) {
	var h HostSample
	err := c.do(ctx, http.MethodGet, "/v1/host", nil, &h, nil)
	return h, err
}
