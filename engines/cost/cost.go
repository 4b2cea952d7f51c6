// Package cost measures what an engine costs in a benchmark pass: the CPU
// time and the peak resident memory of its process groups. Every engine and
// origin hlsbench starts leads a process group of its own (launch.Process),
// so the group is everything the engine forked: varnishd's manager and
// child, nginx's master, workers and cache manager.
//
//	m := cost.Start([]cost.Group{{Name: "nginx", PGID: pg.PGID()}})
//	… the pass …
//	for _, u := range m.Stop() { fmt.Println(u.Name, u.CPUSeconds, u.PeakRSSBytes) }
//
// CPU time is utime+stime from /proc/PID/stat, which covers every thread of
// the process, ended ones included, in clock ticks (10 ms): a reading is
// within a tick or so per process. A process that starts during the pass
// counts whole. One that ends during the pass is counted up to the start
// only, unless a parent in the group reaps it: its time then arrives in the
// parent's cutime and cstime, and the part from before the pass is taken
// off again. What one reaped outside the group (the group's leader, reaped
// by hlsbench) or by no one (its parent ignores SIGCHLD) used after the
// start is lost; Usage.Exited says how many ended. A zombie at the end is
// counted, with no peak.
//
// The peak is each process's VmHWM, reset at the start by writing 5 to
// /proc/PID/clear_refs. A process that ends during the pass takes its peak
// with it. The reset is the process's, not the Meter's: two Meters over
// one group at once spoil each other's peaks.
package cost

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"syscall"
	"time"

	"github.com/hlsbench/hlsbench/engines/internal/procfs"
)

// Group is a process group to measure.
type Group struct {
	Name string // for reports: "nginx", "origin"
	PGID int
}

// Usage is what a group used in a pass.
type Usage struct {
	Name string
	PGID int
	// Interval is the pass's wall time, from Start to Stop.
	Interval time.Duration
	// CPUSeconds is user and system CPU time, every thread of every
	// process in the group, in the pass.
	CPUSeconds float64
	// PeakRSSBytes is the sum of the peak resident sizes of the processes
	// in the group at the end. The processes need not have peaked at once,
	// and pages they share (the binary, shared memory such as NGINX's keys
	// zone) count once in each, so it is an upper bound of the group's true
	// peak. Memory the group holds outside its processes, such as NGINX's
	// cache files in a RAM-backed directory, is not in it.
	PeakRSSBytes int64
	// MaxProcRSSBytes is the largest single process's peak: a lower bound
	// of the group's true peak.
	MaxProcRSSBytes int64
	// Procs is how many processes were in the group at the start or the end.
	Procs int
	// Exited is how many of them were there at the start and gone at the
	// end: their peak is lost, and their CPU time since the start unless a
	// parent in the group reaped them.
	Exited int
	// PeakSinceStart says the peak of a process could not be reset at the
	// start (writing /proc/PID/clear_refs needs root, or the process's own
	// user, and Linux 4.0): its peak is since it started, not the pass's.
	PeakSinceStart bool
	// Err is why the group could not be measured; the figures are then zero.
	Err error
}

// Meter measures a pass. It is not safe for concurrent use.
type Meter struct {
	groups []Group
	start  sample
}

// Start reads the CPU times of the groups' processes and resets their
// peaks; the pass starts once they are reset. Errors are kept for Stop to
// report.
func Start(groups []Group) *Meter {
	m := &Meter{groups: slices.Clone(groups)}
	m.start = take(m.pgids(), true)
	return m
}

// Stop reads the groups again and returns what each used since Start, in
// the order given. It may be called more than once; each call measures
// from Start.
func (m *Meter) Stop() []Usage {
	end := take(m.pgids(), false)
	out := make([]Usage, len(m.groups))
	for i, g := range m.groups {
		out[i] = between(g, m.start, end)
	}
	return out
}

func (m *Meter) pgids() []int {
	p := make([]int, len(m.groups))
	for i, g := range m.groups {
		p[i] = g.PGID
	}
	return p
}

// key identifies a process: a reused PID has a later start.
type key struct {
	pid   int
	start uint64
}

// proc is one process as read at one end of the pass.
type proc struct {
	ppid     int
	pgid     int
	ticks    uint64 // utime+stime
	children uint64 // cutime+cstime: reaped children's
	hwm      int64  // peak RSS, bytes; read at the end only
	reset    bool   // at the start: its peak was reset
}

type sample struct {
	at    time.Time
	procs map[key]proc
	err   error
}

// take reads the processes of pgids: at the start resetting their peaks,
// at the end reading them.
func take(pgids []int, start bool) sample {
	s := sample{at: time.Now()}
	all, err := procfs.All()
	if err != nil {
		s.err = fmt.Errorf("read processes: %w", err)
		return s
	}
	s.procs = map[key]proc{}
	for _, st := range all {
		if !slices.Contains(pgids, st.PGID) {
			continue
		}
		p := proc{ppid: st.PPID, pgid: st.PGID, ticks: st.UTime + st.STime, children: st.CUTime + st.CSTime}
		if start {
			p.reset = procfs.ResetPeakRSS(st.PID) == nil
		} else if status, err := procfs.ReadStatus(st.PID); err == nil {
			p.hwm = status.HWM
		} // else it ended just now, and took its peak with it
		s.procs[key{st.PID, st.Start}] = p
	}
	if start {
		s.at = time.Now() // the pass starts once the peaks are reset
	}
	return s
}

// between is what group g used from sample a to sample b.
func between(g Group, a, b sample) Usage {
	u := Usage{Name: g.Name, PGID: g.PGID, Interval: b.at.Sub(a.at)}
	if u.Err = errors.Join(a.err, b.err); u.Err != nil {
		return u
	}
	byPID := make(map[int]key, len(a.procs))
	for k := range a.procs {
		byPID[k.pid] = k
	}
	// reaped[k] is what processes gone by the end had used by the start,
	// by the nearest ancestor still there: reaped, their time goes up the
	// chain of parents into its cutime and cstime.
	reaped := map[key]uint64{}
	for k, pa := range a.procs {
		if pa.pgid != g.PGID {
			continue
		}
		u.Procs++
		if _, ok := b.procs[k]; ok {
			continue
		}
		u.Exited++
		up, ok := byPID[pa.ppid]
		for steps := 0; ok && steps < len(a.procs); steps++ {
			if _, alive := b.procs[up]; alive {
				reaped[up] += pa.ticks + pa.children
				break
			}
			up, ok = byPID[a.procs[up].ppid]
		}
	}
	var ticks uint64
	for k, pb := range b.procs {
		if pb.pgid != g.PGID {
			continue
		}
		u.PeakRSSBytes += pb.hwm
		u.MaxProcRSSBytes = max(u.MaxProcRSSBytes, pb.hwm)
		pa, seen := a.procs[k]
		if !seen || pa.pgid != g.PGID {
			u.Procs++
		}
		if !seen {
			// New in the pass: all its time is the pass's, and so is that
			// of children it reaped, which started after it.
			ticks += pb.ticks + pb.children
			continue
		}
		u.PeakSinceStart = u.PeakSinceStart || !pa.reset
		ticks += sub(pb.ticks, pa.ticks)
		// Children reaped in the pass brought all their time, some of it
		// from before the start. A parent that ignores SIGCHLD gains
		// nothing when they end, hence the bound.
		got := sub(pb.children, pa.children)
		ticks += got - min(got, reaped[k])
	}
	if u.Procs == 0 {
		u.Err = fmt.Errorf("%s: no process in group %d", g.Name, g.PGID)
		return u
	}
	u.CPUSeconds = float64(ticks) / procfs.TicksPerSecond
	return u
}

func sub(b, a uint64) uint64 {
	if b < a {
		return 0
	}
	return b - a
}

// CPUNow is the CPU time the group's processes have used so far, their
// own and that of children they reaped: readings within a pass, apart
// from the Meter that measures the whole pass (it resets no peak).
func CPUNow(g Group) (float64, error) { return NewCPUReader(g).Now() }

// CPUReader reads a group's CPU time again and again within a pass, as
// CPUNow does, but cheaply: a walk of every process (CPUNow's way) holds the
// CPU it runs on for most of a millisecond on a 2-core VM, in the kernel
// where a real-time thread cannot preempt it, and the purge workloads read
// ten times a second beside the generator's event loop. The reader walks
// once, then reads only the processes it found; it walks again when one of
// them has ended (its time has moved to the parent that reaped it). A
// process the group starts after a walk is counted from the next one.
type CPUReader struct {
	g     Group
	procs []key
	walks int
}

// NewCPUReader reads g; it walks on its first Now.
func NewCPUReader(g Group) *CPUReader { return &CPUReader{g: g} }

// Now is the CPU time the group's processes have used so far, their own and
// that of children they reaped.
func (r *CPUReader) Now() (float64, error) {
	if len(r.procs) > 0 {
		var ticks uint64
		ok := true
		for _, k := range r.procs {
			st, err := procfs.ReadStat(k.pid)
			if err != nil || st.Start != k.start || st.PGID != r.g.PGID {
				ok = false
				break
			}
			ticks += st.UTime + st.STime + st.CUTime + st.CSTime
		}
		if ok {
			return float64(ticks) / procfs.TicksPerSecond, nil
		}
	}
	r.walks++
	r.procs = r.procs[:0]
	all, err := procfs.All()
	if err != nil {
		return 0, fmt.Errorf("read processes: %w", err)
	}
	var ticks uint64
	for _, st := range all {
		if st.PGID == r.g.PGID {
			ticks += st.UTime + st.STime + st.CUTime + st.CSTime
			r.procs = append(r.procs, key{st.PID, st.Start})
		}
	}
	if len(r.procs) == 0 {
		return 0, fmt.Errorf("%s: no process in group %d", r.g.Name, r.g.PGID)
	}
	return float64(ticks) / procfs.TicksPerSecond, nil
}

// Walks is how many times Now read every process.
func (r *CPUReader) Walks() int { return r.walks }

// PSSNow is the proportional set size of the group's processes now,
// summed: a page that n processes map counts 1/n in each, so pages shared
// between the group's processes (the binary, NGINX's keys zone, Varnish's
// shared-memory log) count once in the sum, where RSSNow counts them once
// per process. Pages the group shares with processes outside it count in
// part. A process that ended while it was read is left out; one whose
// memory map cannot be read (another user's) is an error, not a smaller
// sum.
func PSSNow(g Group) (int64, error) {
	all, err := procfs.All()
	if err != nil {
		return 0, fmt.Errorf("read processes: %w", err)
	}
	var pss int64
	n := 0
	for _, st := range all {
		if st.PGID != g.PGID {
			continue
		}
		v, err := procfs.ReadPSS(st.PID)
		switch {
		case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH):
			continue
		case err != nil:
			return 0, fmt.Errorf("%s: %w", g.Name, err)
		}
		pss += v
		n++
	}
	if n == 0 {
		return 0, fmt.Errorf("%s: no process in group %d", g.Name, g.PGID)
	}
	return pss, nil
}

// RSSNow is the resident memory of the group's processes now, summed
// (pages they share count in each, as for PeakRSSBytes).
func RSSNow(g Group) (int64, error) {
	all, err := procfs.All()
	if err != nil {
		return 0, fmt.Errorf("read processes: %w", err)
	}
	var rss int64
	n := 0
	for _, st := range all {
		if st.PGID != g.PGID {
			continue
		}
		if status, err := procfs.ReadStatus(st.PID); err == nil {
			rss += status.RSS
			n++
		}
	}
	if n == 0 {
		return 0, fmt.Errorf("%s: no process in group %d", g.Name, g.PGID)
	}
	return rss, nil
}
