package launch

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Exit is how an instance ended on its own, not by Stop: an engine that
// crashed, one the kernel killed for memory, a terminator that exited.
type Exit struct {
	Name string // "varnishd", "varnish", "origin"
	// Code is the exit status; -1 when a signal ended it (Signal).
	Code   int
	Signal syscall.Signal
	// OOMKilled: the kernel killed it for memory (a container's limit,
	// MemoryLimit bytes; 0 without one).
	OOMKilled   bool
	MemoryLimit int64
	// Log is the last lines of its output.
	Log string
}

// Error says how it ended: "varnish exited with status 137; killed: out
// of memory (limit 512 MiB)", then its last lines.
func (e *Exit) Error() string {
	var b strings.Builder
	b.WriteString(e.Summary())
	if e.Log != "" {
		b.WriteString("\n--- " + e.Name + " output (last lines) ---\n" + e.Log)
	}
	return b.String()
}

// Summary is Error's first line.
func (e *Exit) Summary() string {
	s := fmt.Sprintf("%s exited with status %d", e.Name, e.Code)
	if e.Signal != 0 {
		s = fmt.Sprintf("%s was killed by signal %d (%s)", e.Name, int(e.Signal), e.Signal)
	}
	if e.OOMKilled {
		s += "; " + OOMNote(e.MemoryLimit)
	}
	return s
}

// OOMNote says a process was killed for memory, and under which limit.
func OOMNote(limit int64) string {
	if limit > 0 {
		return "killed: out of memory (limit " + SizeName(limit) + ")"
	}
	return "killed: out of memory"
}

// SizeName is a byte count as a person writes it: 512 MiB, 1.5 GiB.
func SizeName(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return strconv.FormatInt(n>>30, 10) + " GiB"
	case n >= 1<<30:
		return strconv.FormatFloat(float64(n)/(1<<30), 'f', 1, 64) + " GiB"
	case n >= 1<<20:
		return strconv.FormatInt(n>>20, 10) + " MiB"
	case n >= 1<<10:
		return strconv.FormatInt(n>>10, 10) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// Exiter is an instance that can tell whether it ended on its own: nil
// while it runs, and once Stop was asked for (that ending is ours).
type Exiter interface {
	Exited() *Exit
}

// OOMCounter is an instance whose processes live in a memory cgroup of
// their own (a container): the kernel's count of its out-of-memory kills
// there, and the group's limit (0: none). A Varnish manager restarts a
// child the kernel killed, so the container runs on with an empty cache:
// only this count tells. ok is false when the count cannot be read.
type OOMCounter interface {
	OOMKills() (kills, limit int64, ok bool)
}

// cgroupRoot is where the cgroup file systems are mounted (a test moves
// it).
var cgroupRoot = "/sys/fs/cgroup"

// oomKills reads the oom_kill count of pid's memory cgroup: cgroup v2's
// memory.events, or v1's memory.oom_control (Linux 4.13 and later).
func oomKills(pid int) (int64, bool) {
	if pid <= 0 {
		return 0, false
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return 0, false
	}
	defer f.Close()
	var candidates []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// hierarchy-ID:controllers:path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[1] == "" && parts[0] == "0":
			candidates = append(candidates, filepath.Join(cgroupRoot, parts[2], "memory.events"))
		case hasController(parts[1], "memory"):
			candidates = append(candidates, filepath.Join(cgroupRoot, "memory", parts[2], "memory.oom_control"))
		}
	}
	for _, p := range candidates {
		if n, ok := oomKillIn(p); ok {
			return n, true
		}
	}
	return 0, false
}

func hasController(list, name string) bool {
	for _, c := range strings.Split(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// oomKillIn is the "oom_kill N" line of a cgroup file.
func oomKillIn(path string) (int64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}
