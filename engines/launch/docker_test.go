package launch

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/client"

	"github.com/hlsbench/hlsbench/engines/internal/procfs"
	"github.com/hlsbench/hlsbench/engines/runstate"
)

// testImage is the bookworm root filesystem `hlsbench images build` imports.
const testImage = "hlsbench/base:bookworm"

// needDocker connects to the daemon and checks for testImage: skipped when
// either is missing, except under CI=true.
func needDocker(t *testing.T) *client.Client {
	t.Helper()
	miss := func(why string) {
		if os.Getenv("CI") == "true" {
			t.Fatal(why)
		}
		t.Skip(why)
	}
	cli, err := Connect(context.Background(), 2*time.Second)
	if err != nil {
		miss(err.Error())
	}
	t.Cleanup(func() { cli.Close() })
	if _, err := cli.ImageInspect(context.Background(), testImage); err != nil {
		miss("image " + testImage + " missing (hlsbench images build): " + err.Error())
	}
	return cli
}

func TestDockerStartExecStop(t *testing.T) {
	cli := needDocker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := "test-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	d := Docker{Client: cli, RunID: run}
	t.Cleanup(func() { Remove(context.Background(), cli, run) })
	rs, err := runstate.Begin(runstate.Options{Dir: t.TempDir(), Lock: "none"})
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	ctx = runstate.With(ctx, rs)
	dir := t.TempDir()
	inst, err := d.Start(ctx, Spec{Name: "sh", Image: testImage, Dir: dir, Files: map[string][]byte{"conf/a.txt": []byte("hello")},
		Command: []string{"sh", "-c", `cat conf/a.txt; echo; echo "up: $*"; exec sleep 60`, "sh"}, CPUs: []int{0}, PinFlag: "--cpus",
		ReadyLine: "up: ", StopTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if inst.Ready() != "--cpus 0" {
		t.Errorf("Ready() = %q, want the pin flag passed", inst.Ready())
	}
	if !strings.Contains(inst.Logs(), "hello") {
		t.Errorf("logs %q: want the bind-mounted file's content", inst.Logs())
	}
	out, err := inst.Exec(ctx, "sh", "-c", "cat "+filepath.Join(dir, "conf/a.txt")+"; echo oops >&2")
	if err != nil || string(out.Stdout) != "hello" || strings.TrimSpace(string(out.Stderr)) != "oops" {
		t.Errorf("Exec: %+v, %v", out, err)
	}
	if _, err := inst.Exec(ctx, "sh", "-c", "exit 4"); err == nil || !strings.Contains(err.Error(), "exit status 4") {
		t.Errorf("Exec of a failing command: %v", err)
	}
	// Its processes are a process group on this host, measurable as a
	// local engine's.
	pg := inst.(interface{ PGID() int }).PGID()
	if st, err := procfs.ReadStat(pg); pg <= 0 || err != nil || st.PGID != pg || (st.Comm != "sleep" && st.Comm != "sh") {
		t.Errorf("PGID %d: %+v, %v; want the container's sleep leading its group", pg, st, err)
	}
	if g := rs.PGIDs(); !slices.Contains(g, pg) {
		t.Errorf("run's PGIDs %v lack the container's group %d: its CPU would count as another process's", g, pg)
	}
	runs, err := Runs(ctx, cli)
	if err != nil || len(runs[run]) != 1 {
		t.Errorf("Runs: %v, %v; want one container of %s", runs, err, run)
	}
	if err := inst.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := inst.Stop(ctx); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	if runs, _ := Runs(ctx, cli); len(runs[run]) != 0 {
		t.Errorf("stopped, still there: %v", runs[run])
	}
	if g := rs.PGIDs(); slices.Contains(g, pg) {
		t.Errorf("run's PGIDs %v still hold the stopped container's group %d", g, pg)
	}
}

// A container that exits before it is ready fails the start with its log
// and is removed; Run gives a command's output and exit.
func TestDockerFailsAndRun(t *testing.T) {
	cli := needDocker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := "test-fails"
	d := Docker{Client: cli, RunID: run}
	t.Cleanup(func() { Remove(context.Background(), cli, run) })
	_, err := d.Start(ctx, Spec{Name: "quitter", Image: testImage, Command: []string{"sh", "-c", "echo bad config >&2; exit 3"}, ReadyLine: "up: "})
	if err == nil || !strings.Contains(err.Error(), "bad config") {
		t.Fatalf("err = %v, want the container's log", err)
	}
	out, err := d.Run(ctx, Spec{Name: "once", Image: testImage, Command: []string{"sh", "-c", "echo out; echo err >&2; exit 3"}})
	if err == nil || string(out.Stdout) != "out\n" || string(out.Stderr) != "err\n" {
		t.Errorf("Run: %+v, %v; want out, err and exit status 3", out, err)
	}
	if runs, _ := Runs(ctx, cli); len(runs[run]) != 0 {
		t.Errorf("left behind: %v", runs[run])
	}
	if _, err := (Docker{Client: cli}).Start(ctx, Spec{Name: "noimage", Command: []string{"true"}}); err == nil {
		t.Error("a spec without an image started")
	}
}

// A container frozen with ContainerPause is paused until Thaw; Stop
// unpauses a paused one before it stops it (its trap answers SIGTERM), and
// Remove, the sweep of a killed run's containers, unpauses and removes a
// paused orphan.
func TestDockerFreezeThaw(t *testing.T) {
	cli := needDocker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := "test-freeze"
	d := Docker{Client: cli, RunID: run}
	t.Cleanup(func() { Remove(context.Background(), cli, run) })
	start := func(name string) Instance {
		inst, err := d.Start(ctx, Spec{Name: name, Image: testImage, Dir: t.TempDir(),
			Command: []string{"sh", "-c", `trap 'exit 0' TERM; echo up; sleep 60 & wait`}, ReadyLine: "up", StopTimeout: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return inst
	}
	paused := func(inst Instance) bool {
		in, err := cli.ContainerInspect(ctx, inst.(*containerInstance).ID())
		if err != nil {
			t.Fatal(err)
		}
		return in.State.Paused
	}
	inst := start("frozen")
	if err := Freeze(ctx, inst); err != nil || !paused(inst) {
		t.Fatalf("freeze: %v; want the container paused", err)
	}
	if err := Freeze(ctx, inst); err != nil {
		t.Errorf("second freeze: %v", err)
	}
	if err := Thaw(ctx, inst); err != nil || paused(inst) {
		t.Fatalf("thaw: %v; want the container running", err)
	}
	if err := Freeze(ctx, inst); err != nil {
		t.Fatal(err)
	}
	if err := inst.Stop(ctx); err != nil {
		t.Fatalf("stop of a paused container: %v", err)
	}
	if runs, _ := Runs(ctx, cli); len(runs[run]) != 0 {
		t.Errorf("stopped, still there: %v", runs[run])
	}
	orphan := start("orphan")
	if err := Freeze(ctx, orphan); err != nil {
		t.Fatal(err)
	}
	removed, err := Remove(ctx, cli, run)
	if err != nil || len(removed) != 1 {
		t.Errorf("Remove of a paused orphan: %v, %v", removed, err)
	}
	if runs, _ := Runs(ctx, cli); len(runs[run]) != 0 {
		t.Errorf("swept, still there: %v", runs[run])
	}
}

func TestOrphanScratchDirs(t *testing.T) {
	o := Orphan{Run: "abc123", Dirs: []string{
		"/tmp/hlsbench-abc123-varnish-0011/d",
		"/dev/shm/hlsbench-abc123-varnish-cache-22/d",
		"/tmp/hlsbench-abc123-varnish-0011/d", // twice
		"/tmp/hlsbench-other-varnish-33/d",    // another run's
		"/etc/ssl",                            // not a scratch directory
	}}
	got := o.ScratchDirs()
	want := []string{"/tmp/hlsbench-abc123-varnish-0011", "/dev/shm/hlsbench-abc123-varnish-cache-22"}
	if !slices.Equal(got, want) {
		t.Errorf("ScratchDirs %q, want %q", got, want)
	}
	if d := (Orphan{Dirs: []string{"/tmp/hlsbench--x/d"}}).ScratchDirs(); d != nil {
		t.Errorf("without a run: %q", d)
	}
}

// What a container wrote as root in a directory it mounts is given to
// another user: hlsbench not run by root can then remove it. (The test
// runs as root, so it gives the files to nobody.)
func TestDockerGiveBack(t *testing.T) {
	cli := needDocker(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run := "test-giveback"
	t.Cleanup(func() { Remove(context.Background(), cli, run) })
	d := Docker{Client: cli, RunID: run}
	dir := t.TempDir()
	if _, err := d.run(ctx, Spec{Name: "write", Image: testImage, Dir: dir,
		Command: []string{"sh", "-c", "mkdir -p sub && echo x > sub/f && chmod 700 sub && chown -R 0:0 ."}}); err != nil {
		t.Fatal(err)
	}
	const uid, gid = 65534, 65534
	if !foreignFiles(dir, uid) {
		t.Fatal("root's files are not seen as another user's")
	}
	if err := d.giveTo(ctx, testImage, []string{dir}, uid, gid); err != nil {
		t.Fatal(err)
	}
	if foreignFiles(dir, uid) {
		t.Error("files left that are not the user's")
	}
	if foreignFiles(filepath.Join(dir, "missing"), uid) {
		t.Error("a directory that is gone holds foreign files")
	}
	if err := d.giveTo(ctx, testImage, []string{dir}, uid, gid); err != nil {
		t.Errorf("nothing to give: %v", err)
	}
	if runs, _ := Runs(ctx, cli); len(runs[run]) != 0 {
		t.Errorf("containers left: %v", runs[run])
	}
}

// A daemon on another host mounts nothing of this one's: the directories
// a spec would mount are copied into its container, and what it writes
// there stays there.
func TestDockerRemoteCopiesFiles(t *testing.T) {
	cli := needDocker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := "test-remote"
	d := Docker{Client: cli, RunID: run, Remote: true}
	t.Cleanup(func() { Remove(context.Background(), cli, run) })
	dir, extra := filepath.Join(t.TempDir(), "conf"), t.TempDir()
	if err := os.WriteFile(filepath.Join(extra, "e.txt"), []byte("ex\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := d.Run(ctx, Spec{Name: "cat", Image: testImage, Dir: dir, Files: map[string][]byte{"a/b.txt": []byte("hi\n"), "c.txt": []byte("yo\n")},
		Binds: []string{extra}, Command: []string{"sh", "-c", "cat " + dir + "/a/b.txt " + dir + "/c.txt " + extra + "/e.txt; echo new > " + dir +
			"/d.txt; grep -c -e ' " + dir + " ' -e ' " + extra + " ' /proc/mounts || true"}})
	if string(out.Stdout) != "hi\nyo\nex\n0\n" {
		t.Errorf("the container read %q (%v), want the files and no mount of %s or %s", out.Stdout, err, dir, extra)
	}
	if _, err := os.Stat(filepath.Join(dir, "d.txt")); err == nil {
		t.Error("a file the container wrote is on this host")
	}
}
