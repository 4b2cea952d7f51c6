package launch

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/hlsbench/hlsbench/engines/internal/procgroup"
)

// Spec is one thing to start: its command, where its files go, which CPUs
// it may use, and how to tell it is up.
type Spec struct {
	// Name is for messages and the run's state file: "varnish", "origin".
	Name string
	// Command is the binary (a name looked up on PATH, or a path) and its
	// arguments.
	Command []string
	Env     []string // added to the environment
	// Image is the container image (the Docker runtime), and Binds the
	// host directories besides Dir it needs, mounted at the same paths.
	Image string
	Binds []string
	// Labels are added to a container's own (Docker).
	Labels map[string]string
	// Dir is the working directory; Files are written into it (names
	// relative to it) before the command starts.
	Dir   string
	Files map[string][]byte
	// CPUs confine the instance; empty leaves it unpinned. PinFlag, when
	// set, passes them to the command as that flag ("--cpus 0,1": our own
	// commands pin every thread themselves); otherwise taskset does it.
	CPUs    []int
	PinFlag string
	// ReadyLine is the prefix of the stdout line that says the instance is
	// up (its rest is Instance.Ready); ReadyURL, else, an address that
	// answers HTTP once it is. ReadyTimeout bounds the wait (default 30 s).
	ReadyLine string
	ReadyURL  string
	// ReadyTLS, for an https ReadyURL, is the client's TLS configuration
	// (the run's authority).
	ReadyTLS     *tls.Config
	ReadyTimeout time.Duration
	// StopTimeout is how long Stop waits after asking politely
	// (DefaultStopTimeout when 0).
	StopTimeout time.Duration
	// Serve starts the thing inside hlsbench (the Inproc runtime): it
	// returns what a ready line would say and how to stop it.
	Serve func() (ready string, stop func(context.Context) error, err error)
}

// Instance is a started thing.
type Instance interface {
	// Ready is the rest of the ready line ("" without one).
	Ready() string
	// Exec runs a command where the instance runs (its host, its
	// container) to its end: how an engine's counters are read.
	Exec(ctx context.Context, argv ...string) (Output, error)
	// Logs is the end of its output, for error messages.
	Logs() string
	// Done is closed once it has exited.
	Done() <-chan struct{}
	// Stop is idempotent: an instance already gone counts as stopped.
	Stop(ctx context.Context) error
}

// Launcher starts instances in one runtime. Adding a runtime is one file
// with its Launcher and its Runtime, and its entry in Runtimes.
type Launcher interface {
	Name() string
	Start(ctx context.Context, s Spec) (Instance, error)
	// Run runs a spec's command to its end where the runtime runs
	// instances (checking a configuration, reading a version); the ready
	// fields are ignored.
	Run(ctx context.Context, s Spec) (Output, error)
}

// Output is what a finished command wrote, and its exit status. Stderr
// keeps its last 64 KiB.
type Output struct {
	Stdout, Stderr []byte
	ExitCode       int
}

// Text is the output as text, stdout then stderr, trimmed.
func (o Output) Text() string {
	return strings.TrimSpace(strings.TrimSpace(string(o.Stdout)) + "\n" + strings.TrimSpace(string(o.Stderr)))
}

// waitHTTP waits until url answers anything (any status; over https with
// tc), trying every 50 ms: errStopped once stop is closed (the instance is
// gone), ctx's error once it is done. A process and a container wait for
// their engine so.
func waitHTTP(ctx context.Context, url string, tc *tls.Config, stop <-chan struct{}) error {
	// A second per try, no connection kept: each try asks afresh.
	cl := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: tc, DisableKeepAlives: true}}
	defer cl.CloseIdleConnections()
	for {
		req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
		if resp, err := cl.Do(req); err == nil {
			resp.Body.Close()
			return nil
		}
		select {
		case <-stop:
			return errStopped
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// runLocal runs argv on this host in dir.
func runLocal(ctx context.Context, dir string, env []string, argv []string) (Output, error) {
	if len(argv) == 0 {
		return Output{}, errors.New("run: no command")
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	var stdout bytes.Buffer
	stderr := procgroup.NewTail(64 << 10)
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	err := cmd.Run()
	o := Output{Stdout: stdout.Bytes(), Stderr: []byte(stderr.String())}
	if cmd.ProcessState != nil {
		o.ExitCode = cmd.ProcessState.ExitCode()
	}
	return o, err
}

// WriteFiles writes files (names relative to dir) into dir, in name order.
func WriteFiles(dir string, files map[string][]byte) error {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		if dir == "" {
			return errors.New("files without a directory")
		}
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, files[name], 0o644); err != nil {
			return err
		}
	}
	return nil
}
