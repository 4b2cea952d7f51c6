package engines

import (
	"context"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/hlsbench/hlsbench/origin"
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
