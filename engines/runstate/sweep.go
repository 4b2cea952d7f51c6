package runstate

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hlsbench/hlsbench/engines/internal/procfs"
)

// How long a sweep gives SIGTERM before SIGKILL, and SIGKILL before it gives
// up. Short: nothing of a dead run has a reason to shut down gracefully.
const (
	DefaultTermWait = 2 * time.Second
	DefaultKillWait = 3 * time.Second
)

// Killed is a process a sweep ended (or, dry, would end).
type Killed struct {
	PID  int
	Name string // its command name (comm): "varnishd", "nginx"
}

// Report is what one dead run left and what became of it.
type Report struct {
	Run    string
	PID    int // hlsbench's
	DryRun bool
	Killed []Killed
	Dirs   []string // scratch directories that existed
	// Hosts are the Docker endpoints of other hosts it started containers
	// on: their daemons' to sweep (the caller's, who can reach them).
	Hosts []string
	Err   error // what could not be removed; the state file is then kept
}

// Empty says the run left nothing but its state file.
func (r Report) Empty() bool { return len(r.Killed) == 0 && len(r.Dirs) == 0 }

// What lists the processes by name and the directories:
// "varnishd pids 123 124, /tmp/hlsbench-…".
func (r Report) What() string {
	var parts []string
	var names []string
	pids := map[string][]string{}
	for _, k := range r.Killed {
		if _, ok := pids[k.Name]; !ok {
			names = append(names, k.Name)
		}
		pids[k.Name] = append(pids[k.Name], strconv.Itoa(k.PID))
	}
	for _, n := range names {
		word := "pids"
		if len(pids[n]) == 1 {
			word = "pid"
		}
		parts = append(parts, n+" "+word+" "+strings.Join(pids[n], " "))
	}
	parts = append(parts, r.Dirs...)
	if len(parts) == 0 {
		return "only its state file"
	}
	return strings.Join(parts, ", ")
}

// Swept is what a sweep found in the runtime directory.
type Swept struct {
	Dead []Report // runs no longer alive: what they left, now removed
	Live []State  // runs still alive: left alone
}

// Sweep finds the state files in dir whose lock is free, ends the processes
// they list (SIGTERM, then SIGKILL), removes their scratch directories, then
// the state files. dryRun only reports. It touches nothing of a live run and
// nothing a state file does not list: results files are never listed.
func Sweep(dir string, dryRun bool) (Swept, error) {
	var sw Swept
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return sw, nil
	}
	if err != nil {
		return sw, err
	}
	ids := map[string]bool{}
	var order []string
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, "run-") {
			continue
		}
		id, _, ok := strings.Cut(strings.TrimPrefix(name, "run-"), ".")
		if ok && !ids[id] {
			ids[id] = true
			order = append(order, id)
		}
	}
	var errs []error
	for _, id := range order {
		rep, live, err := sweepOne(dir, id, dryRun)
		switch {
		case err != nil:
			errs = append(errs, err)
		case live != nil:
			sw.Live = append(sw.Live, *live)
		case rep != nil:
			sw.Dead = append(sw.Dead, *rep)
			if rep.Err != nil {
				errs = append(errs, fmt.Errorf("run %s: %w", id, rep.Err))
			}
		}
	}
	return sw, errors.Join(errs...)
}

// sweepOne handles one run: its report if it was dead, its state if alive.
func sweepOne(dir, id string, dryRun bool) (*Report, *State, error) {
	lf, err := os.OpenFile(lockPath(dir, id), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, nil, err
	}
	defer lf.Close()
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			st, _ := ReadState(statePath(dir, id))
			if st.Run == "" {
				st.Run = id
			}
			if !alive(st) {
				return nil, nil, nil // dead, and another sweep is at it
			}
			return nil, &st, nil
		}
		return nil, nil, fmt.Errorf("lock %s: %w", lockPath(dir, id), err)
	}
	st, err := ReadState(statePath(dir, id))
	if errors.Is(err, os.ErrNotExist) {
		// Killed before its first write, or swept a moment ago by another
		// sweep: only the lock (and perhaps a half-written state) is left.
		if !dryRun {
			removeMissing(tempPath(dir, id))
			removeMissing(lockPath(dir, id))
		}
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("run %s: %w", id, err)
	}
	if st.Run != id {
		return nil, nil, fmt.Errorf("%s names run %q", statePath(dir, id), st.Run)
	}
	// The lock is free, yet hlsbench is still there (the lock file was
	// deleted under it?): alive after all.
	if alive(st) {
		return nil, &st, nil
	}
	rep := cleanup(st, dryRun)
	if !dryRun && rep.Err == nil {
		rep.Err = errors.Join(removeMissing(statePath(dir, id)), removeMissing(tempPath(dir, id)),
			removeMissing(lockPath(dir, id)))
	}
	return &rep, nil, nil
}

// alive says whether the run's hlsbench process is still there.
func alive(st State) bool { return Alive(st.PID, st.Start, st.BootID) }

// Alive says whether the process pid that started at start (clock ticks
// since boot) in the boot bootID is still there: not gone, not a zombie,
// and not another process that took its pid since.
func Alive(pid int, start uint64, bootID string) bool {
	if bootID != procfs.BootID() || pid <= 0 {
		return false
	}
	s, err := procfs.ReadStat(pid)
	return err == nil && s.Start == start && !s.Zombie()
}

// ReadState reads a state file.
func ReadState(path string) (State, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return State{}, err
	}
	var st State
	if err := json.Unmarshal(b, &st); err != nil {
		return State{}, fmt.Errorf("%s: %w", path, err)
	}
	if st.Version != StateVersion {
		return State{}, fmt.Errorf("%s: version %d, want %d", path, st.Version, StateVersion)
	}
	return st, nil
}

// cleanup ends what st lists and removes its directories.
func cleanup(st State, dryRun bool) Report {
	rep := Report{Run: st.Run, PID: st.PID, DryRun: dryRun, Hosts: st.Hosts}
	var errs []error
	// After a reboot nothing of the run runs, and start times mean nothing.
	if st.BootID == procfs.BootID() && len(st.Procs) > 0 {
		killed, err := endGroups(st.Procs, dryRun)
		rep.Killed = killed
		errs = append(errs, err)
	}
	for _, d := range st.Dirs {
		if !safeDir(st.Run, d) {
			errs = append(errs, fmt.Errorf("not removed: %q is not a scratch directory of run %s", d, st.Run))
			continue
		}
		if _, err := os.Lstat(d); err != nil {
			continue
		}
		rep.Dirs = append(rep.Dirs, d)
		if !dryRun {
			errs = append(errs, os.RemoveAll(d))
		}
	}
	rep.Err = errors.Join(errs...)
	return rep
}

// members lists the live processes of p's group that are provably p's: in
// its group and session, started no earlier than its leader, and only while
// the leader's PID is free or still the leader (a PID in use by another
// process means the number may have been given to a new group).
func members(p Proc, all []procfs.Stat) []procfs.Stat {
	if p.PGID <= 1 || p.Start == 0 {
		return nil
	}
	for _, s := range all {
		if s.PID == p.PID && s.Start != p.Start {
			return nil
		}
	}
	var out []procfs.Stat
	for _, s := range all {
		if s.PGID == p.PGID && s.SID == p.SID && s.Start >= p.Start && !s.Zombie() && s.PID != os.Getpid() {
			out = append(out, s)
		}
	}
	return out
}

// endGroups thaws every provable member of procs (SIGCONT: a frozen
// cell's), sends each SIGTERM, waits, then SIGKILL to those left, and reports every process it signalled. A member
// forked while its group was ending (a master replacing a worker that the
// SIGTERM ended) was not among the first targets: the groups are listed
// again until none has a member left, or sweepRounds times.
func endGroups(procs []Proc, dryRun bool) ([]Killed, error) {
	targets, err := groupMembers(procs)
	if err != nil {
		return nil, err
	}
	killed := make([]Killed, len(targets))
	for i, s := range targets {
		killed[i] = Killed{PID: s.PID, Name: s.Comm}
	}
	if dryRun || len(targets) == 0 {
		return killed, nil
	}
	var errs []error
	// A run killed mid-suite leaves the cells it had frozen stopped
	// (SIGSTOP): thawed first, so that SIGTERM ends them cleanly rather
	// than waiting for SIGKILL.
	for _, s := range targets {
		if err := signal(s, syscall.SIGCONT); err != nil {
			errs = append(errs, err)
		}
	}
	for _, sig := range []struct {
		sig  syscall.Signal
		wait time.Duration
	}{{syscall.SIGTERM, DefaultTermWait}, {syscall.SIGKILL, DefaultKillWait}} {
		for _, s := range targets {
			if err := signal(s, sig.sig); err != nil {
				errs = append(errs, err)
			}
		}
		if targets = waitGone(targets, sig.wait); len(targets) == 0 {
			break
		}
	}
	for round := 0; len(targets) == 0 && round < sweepRounds; round++ {
		more, err := groupMembers(procs)
		if err != nil {
			errs = append(errs, err)
			break
		}
		if len(more) == 0 {
			break
		}
		for _, s := range more {
			if !slices.ContainsFunc(killed, func(k Killed) bool { return k.PID == s.PID }) {
				killed = append(killed, Killed{PID: s.PID, Name: s.Comm})
			}
			if err := signal(s, syscall.SIGKILL); err != nil {
				errs = append(errs, err)
			}
		}
		targets = waitGone(more, DefaultKillWait)
	}
	if len(targets) > 0 {
		var left []string
		for _, s := range targets {
			left = append(left, fmt.Sprintf("%s pid %d", s.Comm, s.PID))
		}
		errs = append(errs, fmt.Errorf("still running after SIGKILL: %s", strings.Join(left, ", ")))
	}
	return killed, errors.Join(errs...)
}

// sweepRounds bounds how often endGroups lists the groups again for
// members forked while they were ending.
const sweepRounds = 3

// groupMembers lists the live, provable members of procs' groups, each once.
func groupMembers(procs []Proc) ([]procfs.Stat, error) {
	all, err := procfs.All()
	if err != nil {
		return nil, err
	}
	var targets []procfs.Stat
	for _, p := range procs {
		for _, s := range members(p, all) {
			if !slices.ContainsFunc(targets, func(t procfs.Stat) bool { return t.PID == s.PID }) {
				targets = append(targets, s)
			}
		}
	}
	return targets, nil
}

// same says whether s is still the process it was: same PID, same start.
func same(s procfs.Stat) bool {
	cur, err := procfs.ReadStat(s.PID)
	return err == nil && cur.Start == s.Start && cur.PGID == s.PGID && !cur.Zombie()
}

// signal sends sig to s if it is still s. A pidfd pins the process while we
// check its start time, so the check and the signal are about one process.
func signal(s procfs.Stat, sig syscall.Signal) error {
	fd, err := unix.PidfdOpen(s.PID, 0)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	if err != nil { // kernels before 5.3: check, then signal
		if !same(s) {
			return nil
		}
		if err := syscall.Kill(s.PID, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("%v %s pid %d: %w", sig, s.Comm, s.PID, err)
		}
		return nil
	}
	defer unix.Close(fd)
	if !same(s) {
		return nil
	}
	if err := unix.PidfdSendSignal(fd, sig, nil, 0); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("%v %s pid %d: %w", sig, s.Comm, s.PID, err)
	}
	return nil
}

// waitGone waits up to d for the processes to end and returns those left.
func waitGone(procs []procfs.Stat, d time.Duration) []procfs.Stat {
	deadline := time.Now().Add(d)
	for {
		procs = slices.DeleteFunc(procs, func(s procfs.Stat) bool { return !same(s) })
		if len(procs) == 0 || time.Now().After(deadline) {
			return procs
		}
		time.Sleep(20 * time.Millisecond)
	}
}
