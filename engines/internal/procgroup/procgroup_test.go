package procgroup

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A failing command's error ends with the last of its output, no more than
// TailBytes of it; the log gets all of it.
func TestRunFailsWithTail(t *testing.T) {
	var log strings.Builder
	cmd := exec.Command("/bin/sh", "-c", `echo first; echo "checking for libfoo... no" >&2; exit 3`)
	err := Run(context.Background(), cmd, Options{Grace: time.Second, TailBytes: 26, Log: &log})
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Fatalf("err %v; want exit status 3", err)
	}
	if !strings.HasSuffix(err.Error(), "; its last lines:\nchecking for libfoo... no") {
		t.Errorf("err %q; want the last 26 bytes of the output after it", err)
	}
	if log.String() != "first\nchecking for libfoo... no\n" {
		t.Errorf("log %q", log.String())
	}
}

// Cancelling the context ends the whole group, a child the command forked
// included, and Run says it was cancelled.
func TestRunCancelEndsGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child")
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.Command("/bin/sh", "-c", `sleep 60 & echo $! > `+pidFile+`; wait`)
	errc := make(chan error, 1)
	go func() { errc <- Run(ctx, cmd, Options{Grace: 10 * time.Second, TailBytes: 100}) }()
	var child int
	for child == 0 {
		data, _ := os.ReadFile(pidFile)
		if s := strings.TrimSpace(string(data)); s != "" {
			child, _ = strconv.Atoi(s)
		} else {
			time.Sleep(10 * time.Millisecond)
		}
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("err %v; want context.Canceled", err)
	}
	// Run killed what was left of the group before it returned: the child
	// is gone, or a zombie until whoever inherited it reaps it, once the
	// kernel has delivered the signal.
	for deadline := time.Now().Add(10 * time.Second); running(child) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if running(child) {
		syscall.Kill(child, syscall.SIGKILL)
		t.Errorf("the command's child %d still runs", child)
	}
}

// running says whether pid is a process that has not exited: a zombie
// has, and is signalled as well as a live one.
func running(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command's closing parenthesis.
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// A group that ignores SIGTERM gets SIGKILL after the grace period; one
// that exits on SIGTERM does not.
func TestTerminate(t *testing.T) {
	for _, c := range []struct {
		script string
		grace  time.Duration
		killed bool
	}{
		{`trap "" TERM; echo up; while :; do sleep 1; done`, 200 * time.Millisecond, true},
		{`echo up; exec sleep 60`, time.Minute, false},
	} {
		cmd := exec.Command("/bin/sh", "-c", c.script)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Once it printed, the shell's trap is set.
		if _, err := out.Read(make([]byte, 3)); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		if killed := Terminate(cmd.Process.Pid, c.grace, exited, nil); killed != c.killed {
			t.Errorf("%s: killed %v, want %v", c.script, killed, c.killed)
		}
		<-exited
	}
}

// A tail keeps the last bytes written, across writes.
func TestTail(t *testing.T) {
	tail := NewTail(5)
	for _, s := range []string{"abc", "defg", "h"} {
		tail.Write([]byte(s))
	}
	if tail.String() != "defgh" {
		t.Errorf("tail %q, want defgh", tail.String())
	}
}
