package launch

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hlsbench/hlsbench/engines/runstate"
)

// A process that ends on its own says how (status, signal, last lines); one
// Stop ended says nothing.
func TestProcessExited(t *testing.T) {
	rs, err := runstate.Begin(runstate.Options{Dir: t.TempDir(), Lock: "none"})
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	ctx := runstate.With(context.Background(), rs)
	for _, tc := range []struct {
		script string
		code   int
		signal syscall.Signal
		want   string
	}{
		{`echo going; echo bad config >&2; exit 3`, 3, 0, "sh exited with status 3"},
		{`echo going; kill -9 $$`, -1, syscall.SIGKILL, "sh was killed by signal 9 (killed)"},
	} {
		inst, err := Local{}.Start(ctx, Spec{Name: "sh", Command: []string{"sh", "-c", tc.script}, Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-inst.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("sh did not end")
		}
		e := inst.(Exiter).Exited()
		if e == nil {
			t.Fatalf("%s: Exited nil after it ended on its own", tc.script)
		}
		if e.Code != tc.code || e.Signal != tc.signal || e.Summary() != tc.want || !strings.Contains(e.Log, "going") {
			t.Errorf("%s: %+v (%q), want status %d signal %d %q and its output", tc.script, e, e.Summary(), tc.code, tc.signal, tc.want)
		}
		inst.Stop(ctx)
	}
	inst, err := Local{}.Start(ctx, Spec{Name: "sleep", Command: []string{"sleep", "60"}, Dir: t.TempDir(), StopTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if e := inst.(Exiter).Exited(); e != nil {
		t.Errorf("running: Exited %v", e)
	}
	inst.Stop(ctx)
	if e := inst.(Exiter).Exited(); e != nil {
		t.Errorf("stopped by Stop: Exited %v, want nil", e)
	}
}

func TestExitSummary(t *testing.T) {
	e := &Exit{Name: "varnish", Code: 137, OOMKilled: true, MemoryLimit: 512 << 20, Log: "Child starts"}
	if got, want := e.Summary(), "varnish exited with status 137; killed: out of memory (limit 512 MiB)"; got != want {
		t.Errorf("Summary %q, want %q", got, want)
	}
	if !strings.HasSuffix(e.Error(), "--- varnish output (last lines) ---\nChild starts") {
		t.Errorf("Error %q lacks the last lines", e.Error())
	}
	for n, want := range map[int64]string{512 << 20: "512 MiB", 1 << 30: "1 GiB", 3 << 29: "1.5 GiB", 2048: "2 KiB", 100: "100 bytes"} {
		if got := SizeName(n); got != want {
			t.Errorf("SizeName(%d) %q, want %q", n, got, want)
		}
	}
}

// oomKills finds the memory cgroup of a process in /proc/PID/cgroup and
// reads its oom_kill count, in cgroup v1's and v2's files.
func TestOOMKills(t *testing.T) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Skip("no /proc/self/cgroup:", err)
	}
	old := cgroupRoot
	defer func() { cgroupRoot = old }()
	cgroupRoot = t.TempDir()
	if _, ok := oomKills(os.Getpid()); ok {
		t.Fatal("a count read from an empty cgroup root")
	}
	var wrote bool
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		var p, body string
		switch {
		case parts[0] == "0" && parts[1] == "":
			p, body = filepath.Join(cgroupRoot, parts[2], "memory.events"), "low 0\nhigh 0\nmax 4\noom 2\noom_kill 2\n"
		case hasController(parts[1], "memory"):
			p, body = filepath.Join(cgroupRoot, "memory", parts[2], "memory.oom_control"), "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n"
		default:
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		wrote = true
	}
	if !wrote {
		t.Skip("no memory cgroup line in /proc/self/cgroup")
	}
	if n, ok := oomKills(os.Getpid()); !ok || n != 2 {
		t.Errorf("oomKills %d, %v; want 2, true", n, ok)
	}
}

// A container the kernel kills for memory says so: the daemon's OOMKilled
// when it was the container's first process, or the cgroup's count when
// another process was killed and the container runs on.
func TestDockerOOMKilled(t *testing.T) {
	cli := needDocker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := "test-" + strings.ToLower(t.Name())
	t.Cleanup(func() { Remove(context.Background(), cli, run) })
	rs, err := runstate.Begin(runstate.Options{Dir: t.TempDir(), Lock: "none"})
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	ctx = runstate.With(ctx, rs)
	d := Docker{Client: cli, RunID: run, Memory: 32 << 20}
	// The shell keeps 200 MB in a variable under a 32 MiB limit.
	inst, err := d.Start(ctx, Spec{Name: "hog", Image: testImage, Dir: t.TempDir(),
		Command:   []string{"sh", "-c", `echo up; x=$(head -c 200000000 /dev/zero | tr '\0' a); echo survived; sleep 60`},
		ReadyLine: "up", StopTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Stop(context.Background())
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if e := inst.(Exiter).Exited(); e != nil {
			if !e.OOMKilled || !strings.Contains(e.Summary(), "killed: out of memory (limit 32 MiB)") {
				t.Errorf("exited: %s; want an out-of-memory kill under 32 MiB", e.Summary())
			}
			return
		}
		if n, limit, ok := inst.(OOMCounter).OOMKills(); ok && n > 0 {
			if limit != 32<<20 {
				t.Errorf("limit %d, want 32 MiB", limit)
			}
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	n, _, ok := inst.(OOMCounter).OOMKills()
	t.Fatalf("no out-of-memory kill seen in a minute (count %d, readable %v); output:\n%s", n, ok, inst.Logs())
}
