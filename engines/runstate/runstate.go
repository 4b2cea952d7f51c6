// Package runstate keeps, for a running `hlsbench run`, a state file that
// lists every process group and scratch directory it made, held under a lock
// for as long as the run lives. A run killed with SIGKILL cannot clean up
// after itself, and the engines' own daemons escape PR_SET_PDEATHSIG
// (varnishd changes its credentials, NGINX's workers are grandchildren), so
// the next run, or `hlsbench clean`, finds state files whose lock is free and
// removes what they list (Sweep).
//
// A process is identified by its PID and its start time (field 22 of
// /proc/PID/stat) on this boot, so a PID the kernel has since given to
// another process is never signalled.
package runstate

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hlsbench/hlsbench/engines/internal/procfs"
)

// DirEnv overrides the runtime directory (tests use a private one).
const DirEnv = "HLSBENCH_RUNTIME_DIR"

// StateVersion is the state file's format.
const StateVersion = 1

// Dir is where state files and the bench lock live: $HLSBENCH_RUNTIME_DIR,
// else $XDG_RUNTIME_DIR/hlsbench, else /run/hlsbench for root, else
// ~/.cache/hlsbench/run.
func Dir() string {
	if d := os.Getenv(DirEnv); d != "" {
		return d
	}
	if x := os.Getenv("XDG_RUNTIME_DIR"); x != "" {
		return filepath.Join(x, "hlsbench")
	}
	if os.Geteuid() == 0 {
		return "/run/hlsbench"
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".cache", "hlsbench", "run")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("hlsbench-run-uid%d", os.Getuid()))
}

// Proc is a process group hlsbench started: the leader it started, its
// group and session, and when it started.
type Proc struct {
	Name    string   `json:"name"`
	PID     int      `json:"pid"`
	PGID    int      `json:"pgid"`
	SID     int      `json:"sid"`
	Start   uint64   `json:"start"` // clock ticks since boot, /proc/PID/stat field 22
	Command []string `json:"command"`
}

// State is a state file: one run of hlsbench and what it made.
type State struct {
	Version int       `json:"version"`
	Run     string    `json:"run"`
	PID     int       `json:"pid"`
	Start   uint64    `json:"start"`
	BootID  string    `json:"boot_id"`
	Started time.Time `json:"started"`
	Command []string  `json:"command"`
	// Lock is the run's --lock: "none" runs beside other benchmarks.
	Lock  string   `json:"lock,omitempty"`
	Procs []Proc   `json:"procs"`
	Dirs  []string `json:"dirs"`
	// Hosts are the Docker endpoints of other hosts the run starts
	// containers on (hlsbench run --place): a sweep of the dead run
	// removes its containers there too.
	Hosts []string `json:"hosts,omitempty"`
}

// Options are a run's.
type Options struct {
	Dir     string   // the runtime directory; "" is Dir()
	Lock    string   // recorded
	Command []string // recorded; nil is os.Args
}

// Run is a live run's record. A nil *Run is valid: it records nothing, so
// code that starts processes works the same without a run (tests, library
// callers).
type Run struct {
	dir  string
	lock *os.File

	mu       sync.Mutex
	st       State
	closed   bool
	observed []int // process groups measured as ours but not in the state file
}

// Begin creates the run's state file in the runtime directory and holds its
// lock until Close.
func Begin(o Options) (*Run, error) {
	if o.Dir == "" {
		o.Dir = Dir()
	}
	if o.Command == nil {
		o.Command = os.Args
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, err
	}
	self, err := procfs.ReadStat(os.Getpid())
	if err != nil {
		return nil, fmt.Errorf("read this process's start time: %w", err)
	}
	id, err := newID()
	if err != nil {
		return nil, err
	}
	r := &Run{dir: o.Dir, st: State{Version: StateVersion, Run: id, PID: os.Getpid(), Start: self.Start,
		BootID: procfs.BootID(), Started: time.Now().UTC().Truncate(time.Second), Command: o.Command, Lock: o.Lock,
		Procs: []Proc{}, Dirs: []string{}}}
	// The lock exists and is held before the state file does, so a sweep
	// never sees a state file of a live run unlocked. Go opens files
	// close-on-exec: the processes we start do not inherit the lock, and a
	// run is dead when hlsbench is, whatever it left running.
	r.lock, err = os.OpenFile(lockPath(o.Dir, id), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(r.lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		r.lock.Close()
		os.Remove(lockPath(o.Dir, id))
		return nil, fmt.Errorf("lock %s: %w", lockPath(o.Dir, id), err)
	}
	if err := r.write(); err != nil {
		r.release()
		return nil, err
	}
	return r, nil
}

func newID() (string, error) {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

func statePath(dir, id string) string { return filepath.Join(dir, "run-"+id+".json") }
func lockPath(dir, id string) string  { return filepath.Join(dir, "run-"+id+".lock") }
func tempPath(dir, id string) string  { return filepath.Join(dir, "run-"+id+".json.tmp") }

// ID names the run in scratch directory names and messages.
func (r *Run) ID() string {
	if r == nil {
		return ""
	}
	return r.st.Run
}

// StateFile is the path of the run's state file.
func (r *Run) StateFile() string {
	if r == nil {
		return ""
	}
	return statePath(r.dir, r.st.Run)
}

// State is a copy of what the state file says.
func (r *Run) State() State {
	if r == nil {
		return State{}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.st
	st.Procs = slices.Clone(st.Procs)
	st.Dirs = slices.Clone(st.Dirs)
	return st
}

// PGIDs are the process groups the run has started and not yet stopped:
// with hlsbench's own PID, what counts as "ours" when measuring the CPU
// other processes take (package cpuload).
func (r *Run) PGIDs() []int {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]int, 0, len(r.st.Procs)+len(r.observed))
	for _, p := range r.st.Procs {
		if !slices.Contains(out, p.PGID) {
			out = append(out, p.PGID)
		}
	}
	for _, g := range r.observed {
		if !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	return out
}

// Observe counts the process group pgid as the run's in PGIDs until the
// returned function is called, without recording it in the state file:
// for processes something else cleans up after a crash, such as a
// container's (found again by its labels). A nil Run observes nothing.
func (r *Run) Observe(pgid int) (forget func()) {
	if r == nil || pgid <= 0 {
		return func() {}
	}
	r.mu.Lock()
	r.observed = append(r.observed, pgid)
	r.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			r.mu.Lock()
			defer r.mu.Unlock()
			if i := slices.Index(r.observed, pgid); i >= 0 {
				r.observed = slices.Delete(r.observed, i, i+1)
			}
		})
	}
}

// write replaces the state file atomically: written beside it, then renamed.
// No fsync: the file must survive the process being killed, not the
// machine losing power (which ends every process it lists).
func (r *Run) write() error {
	b, err := json.MarshalIndent(r.st, "", "  ")
	if err != nil {
		return err
	}
	tmp := tempPath(r.dir, r.st.Run)
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("write run state: %w", err)
	}
	if err := os.Rename(tmp, statePath(r.dir, r.st.Run)); err != nil {
		return fmt.Errorf("write run state: %w", err)
	}
	return nil
}

// update records something new and writes the state file.
func (r *Run) update(change func(st *State)) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return errors.New("run state: the run has ended")
	}
	change(&r.st)
	return r.write()
}

// drop removes a record; after Close there is none to remove.
func (r *Run) drop(change func(st *State)) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	change(&r.st)
	return r.write()
}

// AddHost records a Docker endpoint of another host before the run starts
// anything there.
func (r *Run) AddHost(endpoint string) error {
	if r == nil {
		return nil
	}
	return r.update(func(st *State) {
		if !slices.Contains(st.Hosts, endpoint) {
			st.Hosts = append(st.Hosts, endpoint)
		}
	})
}

// Tracked is a process group in the state file.
type Tracked struct {
	r *Run
	p Proc
}

// Track records the process group led by pid, which the caller has just
// started in a group of its own (Setpgid). Call it right after the start,
// before anything can fail: once it returns, a killed hlsbench leaves
// nothing the next sweep cannot find. A nil Run tracks nothing.
func (r *Run) Track(name string, pid int, command []string) (*Tracked, error) {
	if r == nil {
		return nil, nil
	}
	s, err := procfs.ReadStat(pid)
	if err != nil {
		return nil, fmt.Errorf("track %s (pid %d): %w", name, pid, err)
	}
	p := Proc{Name: name, PID: pid, PGID: s.PGID, SID: s.SID, Start: s.Start, Command: command}
	if err := r.update(func(st *State) { st.Procs = append(st.Procs, p) }); err != nil {
		return nil, fmt.Errorf("track %s (pid %d): %w", name, pid, err)
	}
	return &Tracked{r: r, p: p}, nil
}

// Proc is what was recorded.
func (t *Tracked) Proc() Proc {
	if t == nil {
		return Proc{}
	}
	return t.p
}

// Forget removes the group from the state file once it has stopped. While
// any process of the group still runs it stays recorded, for Close or the
// next sweep to end.
func (t *Tracked) Forget() error {
	if t == nil {
		return nil
	}
	all, err := procfs.All()
	if err != nil {
		return err
	}
	if left := members(t.p, all); len(left) > 0 {
		return fmt.Errorf("%s: %d processes of its group still run", t.p.Name, len(left))
	}
	return t.r.drop(func(st *State) {
		st.Procs = slices.DeleteFunc(st.Procs, func(p Proc) bool { return p.PID == t.p.PID && p.Start == t.p.Start })
	})
}

// DirPrefix is how the names of a run's scratch directories begin.
func DirPrefix(run string) string { return "hlsbench-" + run + "-" }

// MkdirTemp makes a scratch directory parent/hlsbench-RUN-name-RANDOM,
// recorded in the state file before it exists. A nil Run makes
// parent/hlsbench-name-RANDOM and records nothing.
func (r *Run) MkdirTemp(parent, name string) (string, error) {
	if r == nil {
		return os.MkdirTemp(parent, "hlsbench-"+name+"-")
	}
	for range 100 {
		suffix, err := newID()
		if err != nil {
			return "", err
		}
		dir := filepath.Join(parent, DirPrefix(r.st.Run)+name+"-"+suffix)
		if err := r.update(func(st *State) { st.Dirs = append(st.Dirs, dir) }); err != nil {
			return "", err
		}
		err = os.Mkdir(dir, 0o700)
		if err == nil {
			return dir, nil
		}
		r.forgetDir(dir)
		if !errors.Is(err, os.ErrExist) {
			return "", err
		}
	}
	return "", fmt.Errorf("make a scratch directory in %s: no free name", parent)
}

// RemoveAll removes a scratch directory and its record.
func (r *Run) RemoveAll(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if r == nil {
		return nil
	}
	return r.forgetDir(dir)
}

func (r *Run) forgetDir(dir string) error {
	return r.drop(func(st *State) {
		st.Dirs = slices.DeleteFunc(st.Dirs, func(d string) bool { return d == dir })
	})
}

// Close ends the run: whatever is still recorded (a process group that did
// not stop, a directory not removed) is ended and removed as a sweep would,
// then the state file and its lock. The report says what that was; it is
// empty when the run's owners cleaned up themselves.
func (r *Run) Close() (Report, error) {
	if r == nil {
		return Report{}, nil
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return Report{}, nil
	}
	r.closed = true
	st := r.st
	r.mu.Unlock()
	rep := cleanup(st, false)
	if rep.Err != nil {
		// Keep the record for the next sweep.
		r.lock.Close()
		return rep, rep.Err
	}
	return rep, r.release()
}

func (r *Run) release() error {
	err := errors.Join(removeMissing(statePath(r.dir, r.st.Run)), removeMissing(tempPath(r.dir, r.st.Run)),
		removeMissing(lockPath(r.dir, r.st.Run)))
	return errors.Join(err, r.lock.Close())
}

func removeMissing(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

type ctxKey struct{}

// With carries r in ctx: engines record what they start in it.
func With(ctx context.Context, r *Run) context.Context {
	return context.WithValue(ctx, ctxKey{}, r)
}

// From is the run in ctx, or nil (which records nothing).
func From(ctx context.Context) *Run {
	r, _ := ctx.Value(ctxKey{}).(*Run)
	return r
}

// safeDir says whether a recorded directory may be removed: an absolute,
// clean path whose name is one of run's scratch directories. A state file
// is ours, but a mistake in one must not cost anyone their files.
func safeDir(run, dir string) bool {
	return run != "" && filepath.IsAbs(dir) && filepath.Clean(dir) == dir &&
		strings.HasPrefix(filepath.Base(dir), DirPrefix(run)) && filepath.Dir(dir) != dir
}
