package runstate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/hlsbench/hlsbench/engines/internal/procfs"
)

// LockMode is what a run does when another benchmark holds the bench lock.
type LockMode string

// Lock modes.
const (
	LockWait LockMode = "wait" // wait for it to finish
	LockFail LockMode = "fail" // refuse to start
	LockNone LockMode = "none" // run beside it, recorded in the state file
)

// DefaultLockMode is --lock's default.
const DefaultLockMode = LockWait

// ParseLockMode reads wait, fail or none; "" is the default.
func ParseLockMode(s string) (LockMode, error) {
	switch m := LockMode(s); m {
	case "":
		return DefaultLockMode, nil
	case LockWait, LockFail, LockNone:
		return m, nil
	}
	return "", fmt.Errorf("lock mode %q: want wait, fail or none", s)
}

// BenchLockFile is the bench lock's name in the runtime directory.
const BenchLockFile = "bench.lock"

// DefaultPoll is how often a waiting run tries the bench lock.
const DefaultPoll = 200 * time.Millisecond

// Holder is the run holding the bench lock, as it wrote into the lock file.
type Holder struct {
	Run   string `json:"run"`
	PID   int    `json:"pid"`
	Start uint64 `json:"start"`
}

// Holder is r's entry for the bench lock.
func (r *Run) Holder() Holder {
	if r == nil {
		return Holder{PID: os.Getpid()}
	}
	return Holder{Run: r.st.Run, PID: r.st.PID, Start: r.st.Start}
}

// BusyError is a refusal: another benchmark runs.
type BusyError struct{ Holder Holder }

func (e *BusyError) Error() string {
	if e.Holder.PID == 0 {
		return "another benchmark is running"
	}
	return fmt.Sprintf("another benchmark is running: run %s (pid %d)", e.Holder.Run, e.Holder.PID)
}

// BenchLock is the machine's one-benchmark-at-a-time lock, held.
type BenchLock struct{ f *os.File }

// LockBench takes the bench lock in dir. Held by another run, LockFail
// returns a *BusyError and LockWait tries again every DefaultPoll until ctx
// ends, calling waiting with the holder whenever it changes. LockNone takes
// nothing and returns nil.
func LockBench(ctx context.Context, dir string, mode LockMode, me Holder, waiting func(Holder)) (*BenchLock, error) {
	if mode == LockNone {
		return nil, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, BenchLockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	seen := Holder{Run: "-"}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		h, _ := readHolder(path)
		if mode == LockFail {
			f.Close()
			return nil, &BusyError{Holder: h}
		}
		if h != seen && waiting != nil {
			waiting(h)
		}
		seen = h
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(DefaultPoll):
		}
	}
	b, _ := json.Marshal(me)
	if err := f.Truncate(0); err == nil {
		_, err = f.WriteAt(append(b, '\n'), 0)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	return &BenchLock{f: f}, nil
}

// Unlock releases the lock; it is idempotent and nil does nothing.
func (l *BenchLock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	f := l.f
	l.f = nil
	// Emptied first, so nobody reads us as the holder after we let go.
	return errors.Join(f.Truncate(0), f.Close())
}

// BenchHolder is the run holding dir's bench lock, if one is alive: what a
// run with LockNone warns about.
func BenchHolder(dir string) (Holder, bool) {
	h, err := readHolder(filepath.Join(dir, BenchLockFile))
	if err != nil || h.PID == 0 {
		return Holder{}, false
	}
	s, err := procfs.ReadStat(h.PID)
	if err != nil || s.Start != h.Start || s.Zombie() {
		return Holder{}, false
	}
	return h, true
}

func readHolder(path string) (Holder, error) {
	var h Holder
	b, err := os.ReadFile(path)
	if err != nil {
		return h, err
	}
	if len(b) == 0 {
		return h, nil
	}
	return h, json.Unmarshal(b, &h)
}
