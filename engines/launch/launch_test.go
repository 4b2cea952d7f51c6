package launch

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Local writes the files, pins through the flag, waits for the ready line
// and returns its rest; Exec runs where the instance runs.
func TestLocalStartReadyLine(t *testing.T) {
	dir := t.TempDir()
	script := `cat conf/a.txt; echo; echo "args: $*"; echo "up: listening"; exec sleep 60`
	inst, err := Local{}.Start(context.Background(), Spec{Name: "sh", Command: []string{"sh", "-c", script, "sh"},
		Dir: dir, Files: map[string][]byte{"conf/a.txt": []byte("hello")}, CPUs: []int{0}, PinFlag: "--cpus",
		ReadyLine: "up: ", ReadyTimeout: 10 * time.Second, StopTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Stop(context.Background())
	if inst.Ready() != "listening" {
		t.Errorf("Ready() = %q, want %q", inst.Ready(), "listening")
	}
	if b, err := os.ReadFile(filepath.Join(dir, "conf/a.txt")); err != nil || string(b) != "hello" {
		t.Errorf("file: %q, %v", b, err)
	}
	if logs := inst.Logs(); !strings.Contains(logs, "hello") || !strings.Contains(logs, "args: --cpus 0") {
		t.Errorf("logs %q: want the file and the pin flag", logs)
	}
	out, err := inst.Exec(context.Background(), "sh", "-c", "cat conf/a.txt; echo oops >&2")
	if err != nil || string(out.Stdout) != "hello" || string(out.Stderr) != "oops\n" || out.Text() != "hello\noops" {
		t.Errorf("Exec: %+v, %v", out, err)
	}
	if err := inst.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-inst.Done():
	default:
		t.Error("stopped, not done")
	}
}

// A command that exits before it is ready fails the start with its output.
func TestLocalStartExitsEarly(t *testing.T) {
	_, err := Local{}.Start(context.Background(), Spec{Name: "quitter", Command: []string{"sh", "-c", "echo bad config >&2; exit 3"},
		ReadyLine: "up: ", ReadyTimeout: 10 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "quitter exited") || !strings.Contains(err.Error(), "bad config") {
		t.Fatalf("err = %v, want the exit and the output", err)
	}
	if _, err := (Local{}).Start(context.Background(), Spec{Name: "none"}); err == nil {
		t.Error("a spec without a command started")
	}
}

// Inproc serves through the spec's Serve and stops once.
func TestInproc(t *testing.T) {
	stops := 0
	inst, err := Inproc{}.Start(context.Background(), Spec{Name: "thing", Serve: func() (string, func(context.Context) error, error) {
		return "http://127.0.0.1:1", func(context.Context) error { stops++; return nil }, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if inst.Ready() != "http://127.0.0.1:1" {
		t.Errorf("Ready() = %q", inst.Ready())
	}
	for range 2 {
		if err := inst.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if stops != 1 {
		t.Errorf("stopped %d times, want once", stops)
	}
	<-inst.Done()
	if _, err := (Inproc{}).Start(context.Background(), Spec{Name: "nothing"}); err == nil {
		t.Error("a spec without Serve started in-process")
	}
}

// A socket that refuses the user is not a missing daemon: the error says
// how to get the permission, not to start one.
func TestNoDaemonErrorDenied(t *testing.T) {
	denied := &NoDaemonError{Host: "unix:///var/run/docker.sock", Err: fmt.Errorf("dial unix /var/run/docker.sock: connect: %w", syscall.EACCES)}
	if msg := denied.Error(); !strings.Contains(msg, "docker group") || strings.Contains(msg, "start dockerd") {
		t.Errorf("permission denied: %s", msg)
	}
	absent := &NoDaemonError{Host: "unix:///var/run/docker.sock", Err: fmt.Errorf("dial unix /var/run/docker.sock: connect: %w", syscall.ENOENT)}
	if msg := absent.Error(); !strings.Contains(msg, "start dockerd") {
		t.Errorf("no socket: %s", msg)
	}
}

// waitHTTP returns once the URL answers, whatever the status; it gives up
// with errStopped once the instance is gone, and with ctx's error.
func TestWaitHTTP(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	if err := waitHTTP(context.Background(), srv.URL, nil, nil); err != nil {
		t.Errorf("answering: %v", err)
	}
	// Nothing listens on a closed server's address.
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	stop := make(chan struct{})
	close(stop)
	if err := waitHTTP(context.Background(), gone.URL, nil, stop); !errors.Is(err, errStopped) {
		t.Errorf("stopped: %v, want errStopped", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := waitHTTP(ctx, gone.URL, nil, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v, want context.Canceled", err)
	}
}
