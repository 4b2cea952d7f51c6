package cost_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/engines/cost"
	"github.com/hlsbench/hlsbench/engines/internal/procfs"
	"github.com/hlsbench/hlsbench/engines/launch"
	"github.com/hlsbench/hlsbench/origin"
)

// With helperEnv set to "ROLE,MB,MS" the test binary is a helper process:
// it says it is ready, waits for the file go in helperDir, touches MB
// megabytes and burns MS milliseconds of CPU (both counted by its own
// rusage), gives the memory back and says it is done. Role "exit" then
// exits; "stay" sleeps until killed.
const (
	helperEnv = "HLSBENCH_COST_HELPER"
	helperDir = "HLSBENCH_COST_DIR"
)

func TestMain(m *testing.M) {
	if spec := os.Getenv(helperEnv); spec != "" {
		os.Exit(helper(spec, os.Getenv(helperDir)))
	}
	if path := os.Getenv(shareEnv); path != "" {
		os.Exit(share(path))
	}
	os.Exit(m.Run())
}

func helper(spec, dir string) int {
	f := strings.Split(spec, ",")
	if len(f) != 3 {
		fmt.Fprintf(os.Stderr, "%s=%q: want ROLE,MB,MS\n", helperEnv, spec)
		return 2
	}
	role := f[0]
	mb, err1 := strconv.Atoi(f[1])
	ms, err2 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil {
		fmt.Fprintf(os.Stderr, "%s=%q: want ROLE,MB,MS\n", helperEnv, spec)
		return 2
	}
	mark := func(name string) { os.WriteFile(filepath.Join(dir, role+"."+name), nil, 0o644) }
	mark("ready")
	for {
		if _, err := os.Stat(filepath.Join(dir, "go")); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	t0 := cpuTime()
	buf, err := syscall.Mmap(-1, 0, mb<<20, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for i := 0; i < len(buf); i += 4096 {
		buf[i] = 1
	}
	x := uint64(1)
	for cpuTime()-t0 < time.Duration(ms)*time.Millisecond {
		for i := 0; i < 100000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	sink = x
	syscall.Munmap(buf)
	mark("done")
	if role == "exit" {
		return 0
	}
	for {
		time.Sleep(time.Hour)
	}
}

var sink uint64 // keeps the burn loop's work

// cpuTime is this process's user and system time, all threads'.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// waitFiles waits for files in dir, while p runs.
func waitFiles(t *testing.T, p *launch.Process, dir string, names ...string) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for _, n := range names {
		for {
			if _, err := os.Stat(filepath.Join(dir, n)); err == nil {
				break
			}
			select {
			case <-p.Done():
				t.Fatalf("helpers exited before %s: %s", n, p.Tail())
			case <-deadline:
				t.Fatalf("no %s after 60 s: %s", n, p.Tail())
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
}

// startHelpers starts a group of three: sh and two helpers, "stay" (it
// touches stayMB and stays) and "exit" (exitMB, ends after its burn and sh
// reaps it, then writes dir/reaped); each burns burnMS of CPU once dir/go
// exists. The group is stopped when the test ends.
func startHelpers(t *testing.T, stayMB, exitMB, burnMS int) (*launch.Process, string) {
	t.Helper()
	dir := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf(`%[1]s=stay,%[2]d,%[4]d "$0" & %[1]s=exit,%[3]d,%[4]d "$0"; : >"$%[5]s/reaped"; wait`,
		helperEnv, stayMB, exitMB, burnMS, helperDir)
	ctx := context.Background()
	p, err := launch.StartProcess(ctx, launch.ProcessSpec{Name: "helpers", Path: "sh", Args: []string{"-c", script, self},
		Env: []string{helperDir + "=" + dir}, StopTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop(context.WithoutCancel(ctx)) })
	return p, dir
}

// A group of three, sh and two helpers: one stays, one ends in the pass and
// sh reaps it. Each burns 300 ms of CPU; the one that stays touches 48 MB,
// the other 32 MB. A second pass, where nothing happens, has a lower peak.
func TestMeterLive(t *testing.T) {
	if testing.Short() {
		t.Skip("burns 0.6 s of CPU")
	}
	const stayMB, exitMB, burnMS = 48, 32, 300
	p, dir := startHelpers(t, stayMB, exitMB, burnMS)
	waitFiles(t, p, dir, "stay.ready", "exit.ready")
	canReset := procfs.ResetPeakRSS(p.PID()) == nil

	groups := []cost.Group{{Name: "helpers", PGID: p.PGID()}}
	m := cost.Start(groups)
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFiles(t, p, dir, "stay.done", "reaped")
	u := m.Stop()[0]
	t.Logf("pass 1: %+v", u)
	if u.Err != nil {
		t.Fatal(u.Err)
	}
	if want := 2 * burnMS / 1000.0; u.CPUSeconds < want-0.05 || u.CPUSeconds > want+0.2 {
		t.Errorf("cpu %.2f s, want about %.2f (two helpers' %d ms, one reaped in the pass)", u.CPUSeconds, want, burnMS)
	}
	if u.MaxProcRSSBytes < stayMB<<20 || u.PeakRSSBytes <= u.MaxProcRSSBytes {
		t.Errorf("peak %d (largest %d), want %d MB or more in one and more in all", u.PeakRSSBytes, u.MaxProcRSSBytes, stayMB)
	}
	if u.Procs != 3 || u.Exited != 1 || u.Name != "helpers" || u.PGID != p.PGID() || u.Interval <= 0 {
		t.Errorf("usage %+v: want 3 processes, 1 exited", u)
	}
	if u.PeakSinceStart == canReset {
		t.Errorf("peak since start %v; resetting it here works: %v", u.PeakSinceStart, canReset)
	}

	m = cost.Start(groups)
	time.Sleep(200 * time.Millisecond)
	u2 := m.Stop()[0]
	t.Logf("pass 2: %+v", u2)
	if u2.Err != nil || u2.Procs != 2 || u2.Exited != 0 || u2.CPUSeconds > 0.1 {
		t.Errorf("idle pass: %+v", u2)
	}
	if canReset && (u2.MaxProcRSSBytes > u.MaxProcRSSBytes-(stayMB-8)<<20 || u2.PeakRSSBytes >= u.PeakRSSBytes) {
		t.Errorf("idle pass after a reset: peak %d (largest %d), was %d (%d)", u2.PeakRSSBytes, u2.MaxProcRSSBytes,
			u.PeakRSSBytes, u.MaxProcRSSBytes)
	}
}

// needNGINX finds nginx, or skips (fails under CI=true).
func needNGINX(t *testing.T) {
	t.Helper()
	if _, err := engines.FindBinary(engines.NGINX{}, ""); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and %v", err)
		}
		t.Skip("nginx not installed (apt-get install nginx-light)")
	}
}

// NGINX found through engines.ProcessGroup: a few hundred requests, each
// on a new connection, cost its group some CPU.
func TestMeterNGINX(t *testing.T) {
	needNGINX(t)
	o, err := origin.New(origin.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := origin.Start(o, "127.0.0.1:0", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	inst, err := engines.StartLocal(ctx, engines.NGINX{}, engines.LocalSpec{Policy: engines.DefaultPolicy(),
		OriginURL: "http://" + srv.DataAddr()})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Stop(context.WithoutCancel(ctx))
	pg, ok := inst.(engines.ProcessGroup)
	if !ok {
		t.Fatalf("%T: no process group", inst)
	}
	cl := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	get := func() {
		resp, err := cl.Get(inst.URL() + origin.ManifestPath)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %s", origin.ManifestPath, resp.Status)
		}
	}
	get() // a miss; the rest are hits
	m := cost.Start([]cost.Group{{Name: "nginx", PGID: pg.PGID()}})
	// /proc counts CPU in clock ticks (10 ms), per process: 600 small hits
	// spread over the workers once read 0 ticks (CI, 2026-12-04). 3000
	// hold a worker well past a tick.
	const requests = 3000
	for range requests {
		get()
	}
	u := m.Stop()[0]
	t.Logf("%d requests: %+v", requests, u)
	if u.Err != nil || u.CPUSeconds <= 0 || u.Procs < 2 || u.PeakRSSBytes <= 0 || u.Exited != 0 {
		t.Errorf("nginx: %+v; want CPU time, a master and a worker, a peak", u)
	}
}

// CPUReader counts what CPUNow counts: two helpers' burns, one of them
// reaped by sh in between. It walks every process once, reads only the
// group's own while they live, and walks again when one has ended.
func TestCPUReaderLive(t *testing.T) {
	if testing.Short() {
		t.Skip("burns 0.6 s of CPU")
	}
	const burnMS = 300
	p, dir := startHelpers(t, 1, 1, burnMS)
	waitFiles(t, p, dir, "stay.ready", "exit.ready")
	g := cost.Group{Name: "helpers", PGID: p.PGID()}
	r := cost.NewCPUReader(g)
	v0, err := r.Now()
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if _, err := r.Now(); err != nil {
			t.Fatal(err)
		}
	}
	if r.Walks() != 1 {
		t.Errorf("%d walks of every process for 6 readings of a group whose processes all live, want 1", r.Walks())
	}
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFiles(t, p, dir, "stay.done", "reaped")
	v1, err := r.Now()
	if err != nil {
		t.Fatal(err)
	}
	if r.Walks() != 2 {
		t.Errorf("%d walks after a helper ended, want 2 (one more, to find who is left)", r.Walks())
	}
	all, err := cost.CPUNow(g)
	if err != nil {
		t.Fatal(err)
	}
	if want := 2 * burnMS / 1000.0; v1-v0 < want-0.05 || v1-v0 > want+0.2 {
		t.Errorf("CPU read %.2f s, want about %.2f (two helpers' %d ms, one reaped by sh)", v1-v0, want, burnMS)
	}
	if d := all - v1; d < -0.02 || d > 0.05 {
		t.Errorf("CPUReader %.3f s, CPUNow %.3f s: want the same count", v1, all)
	}
}
