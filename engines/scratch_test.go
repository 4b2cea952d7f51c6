package engines

import (
	"context"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hlsbench/hlsbench/origin"
	"github.com/hlsbench/hlsbench/results"
	"golang.org/x/sys/unix"
)

// checkScratchMode fails t unless dir has mode and, when group is not "",
// belongs to group.
func checkScratchMode(t *testing.T, dir string, mode os.FileMode, group string) {
	t.Helper()
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != mode {
		t.Errorf("%s: mode %o, want %o", dir, fi.Mode().Perm(), mode)
	}
	if group == "" {
		return
	}
	g, err := user.LookupGroup(group)
	if err != nil {
		t.Fatal(err)
	}
	if gid := strconv.Itoa(int(fi.Sys().(*syscall.Stat_t).Gid)); gid != g.Gid {
		t.Errorf("%s: gid %s, want %s (%s)", dir, gid, g.Gid, group)
	}
}

func TestScratchDirModes(t *testing.T) {
	parent := t.TempDir()
	use, remove, err := scratchDir(nil, parent, "engine", false, "")
	if err != nil {
		t.Fatal(err)
	}
	if use != remove || filepath.Dir(use) != parent {
		t.Errorf("private: use %s, remove %s", use, remove)
	}
	checkScratchMode(t, use, 0o700, "")

	// In a container: the mounted directory is reachable by the
	// container's users, its parent by no one else here.
	use, remove, err = scratchDir(nil, parent, "engine", true, "")
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(use) != remove || filepath.Base(use) != mountedDir {
		t.Errorf("container: use %s, remove %s", use, remove)
	}
	checkScratchMode(t, remove, 0o700, "")
	checkScratchMode(t, use, 0o755, "")

	if _, _, err := scratchDir(nil, parent, "engine", false, "no-such-group-hlsbench"); err == nil {
		t.Error("an unknown group: no error")
	}
	if os.Geteuid() != 0 {
		t.Log("not root: the shared mode is not tried (chown to another group needs root)")
		return
	}
	group := primaryGroup("nobody")
	if group == "" {
		t.Skip("no user nobody")
	}
	use, _, err = scratchDir(nil, parent, "engine", false, group)
	if err != nil {
		t.Fatal(err)
	}
	checkScratchMode(t, use, 0o750, group)
}

func TestNGINXDropGroup(t *testing.T) {
	def := NGINX{}.DropGroup("", nil)
	if def == "" {
		t.Fatal("no default group")
	}
	if _, err := user.LookupGroup(def); err != nil {
		t.Errorf("default %s: %v", def, err)
	}
	for conf, want := range map[string]string{
		"user www-data;\n":      "www-data",
		"user nginx web;\n":     "web",
		"worker_processes 1;\n": def,
	} {
		uc, err := NGINX{}.ReadOwnConfig([]byte(conf + "events {}\nhttp { server { listen 127.0.0.1:8080; location / { proxy_pass http://127.0.0.1:9000; } } }\n"))
		if err != nil {
			t.Fatalf("%q: %v", conf, err)
		}
		if got := (NGINX{}).DropGroup("", uc); got != want {
			t.Errorf("%q: group %q, want %q", conf, got, want)
		}
	}
}

// Started by root in its default jail, varnishd's work directory is its
// group's (the VCL compiler and the cache process run as varnish and
// vcache), and nobody else's.
func TestVarnishWorkDirPrivate(t *testing.T) {
	needVarnishd(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p := DefaultPolicy()
	_, originURL := varnishTestOrigin(t, p, origin.Config{})
	li := varnishStart(t, ctx, Varnish{}, LocalSpec{Policy: p, OriginURL: originURL})
	wantMode, wantGroup := os.FileMode(0o700), ""
	if g := (Varnish{}).DropGroup(li.bin, nil); os.Geteuid() == 0 && g != "" {
		wantMode, wantGroup = 0o750, g
	}
	checkScratchMode(t, li.cfg.WorkDir, wantMode, wantGroup)
	// The cache process fetches and stores through it.
	for range 2 {
		if a := varnishGet(t, li.URL()+origin.ManifestPath); a.status != 200 {
			t.Errorf("manifest: %d", a.status)
		}
	}
}

// An engine's work directory is in RAM where the host has a tmpfs that
// programs may be loaded from, and on disk, with the reason, where not.
func TestRAMDir(t *testing.T) {
	defer func(c string, f func(string, *unix.Statfs_t) error) { ramCandidate, statfs = c, f }(ramCandidate, statfs)
	ramCandidate = t.TempDir()
	fake := func(typ int64, flags int64, err error) func(string, *unix.Statfs_t) error {
		return func(_ string, st *unix.Statfs_t) error { st.Type, st.Flags = typ, flags; return err }
	}
	for _, c := range []struct {
		name   string
		statfs func(string, *unix.Statfs_t) error
		exec   bool
		ram    bool
		whyHas string
	}{
		{"tmpfs", fake(tmpfsMagic, 0, nil), true, true, ""},
		{"tmpfs noexec, for a cache", fake(tmpfsMagic, unix.ST_NOEXEC, nil), false, true, ""},
		{"tmpfs noexec, for a work directory", fake(tmpfsMagic, unix.ST_NOEXEC, nil), true, false, "noexec"},
		{"a disk", fake(0xef53, 0, nil), true, false, "not a tmpfs"},
		{"none", fake(0, 0, syscall.ENOENT), true, false, "no " + ramCandidate},
	} {
		statfs = c.statfs
		dir, why := ramDir(c.exec)
		if got := dir == ramCandidate; got != c.ram || (c.ram && why != "") || (!c.ram && (dir != os.TempDir() || !strings.Contains(why, c.whyHas))) {
			t.Errorf("%s: ramDir(%v) = %q, %q; want in RAM %v (why with %q)", c.name, c.exec, dir, why, c.ram, c.whyHas)
		}
	}
}

// Varnish's work directory (its shared-memory log, written on every
// request) is on a tmpfs, as its platform notes ask, where this host has
// one; the run says so.
func TestVarnishWorkDirInRAM(t *testing.T) {
	needVarnishd(t)
	if _, why := ramDir(true); why != "" {
		t.Skipf("no tmpfs to put it on: %s", why)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p := DefaultPolicy()
	_, originURL := varnishTestOrigin(t, p, origin.Config{})
	li := varnishStart(t, ctx, Varnish{}, LocalSpec{Policy: p, OriginURL: originURL})
	var st unix.Statfs_t
	if err := unix.Statfs(li.cfg.WorkDir, &st); err != nil {
		t.Fatal(err)
	}
	if st.Type != tmpfsMagic {
		t.Errorf("work directory %s: file system %#x, want a tmpfs (%#x)", li.cfg.WorkDir, st.Type, tmpfsMagic)
	}
	if got := li.Info().WorkDir; got != results.WorkDirRAM {
		t.Errorf("Info().WorkDir = %q, want %q", got, results.WorkDirRAM)
	}
	if why := WorkOnDisk(li.Info()); why != "" {
		t.Errorf("WorkOnDisk = %q, want none", why)
	}
	if a := varnishGet(t, li.URL()+origin.ManifestPath); a.status != 200 {
		t.Errorf("manifest: %d", a.status)
	}
}

func TestWorkOnDisk(t *testing.T) {
	e := results.Engine{Name: "varnish", WorkDir: "/tmp (/dev/shm is mounted noexec)"}
	if got := WorkOnDisk(e); !strings.Contains(got, "varnish: its work directory is on /tmp (/dev/shm is mounted noexec), not a tmpfs") {
		t.Errorf("WorkOnDisk = %q", got)
	}
	for _, wd := range []string{"", results.WorkDirRAM} {
		if got := WorkOnDisk(results.Engine{Name: "nginx", WorkDir: wd}); got != "" {
			t.Errorf("WorkOnDisk(%q) = %q, want none", wd, got)
		}
	}
}
