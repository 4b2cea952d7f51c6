package srcbuild

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The configure.ac lines of the two trees ../shared/vendor holds.
const (
	varnishAC = `AC_PREREQ([2.69])
AC_INIT([Varnish], [9.0.2], [opensource@varnish-software.com], [varnish])
AC_CONFIG_SRCDIR(include/miniobj.h)
if ! test -f "${srcdir}/bin/vinyltest/vtest2/src/vtc_main.c" ; then
  AC_MSG_ERROR([vtest2 seems to be missing])
fi`
	vinylAC = `AC_INIT([Varnish], [trunk], [varnish-dev@varnish-cache.org])
if ! test -f "${srcdir}/bin/varnishtest/vtest2/src/vtc_main.c" ; then`
)

func TestConfigureAC(t *testing.T) {
	for _, tc := range []struct {
		ac, version, vtest string
	}{
		{varnishAC, "9.0.2", "bin/vinyltest/vtest2"},
		{vinylAC, "trunk", "bin/varnishtest/vtest2"},
		{"AC_INIT([x], [1.0])", "1.0", ""},
	} {
		if v, err := acVersion([]byte(tc.ac)); err != nil || v != tc.version {
			t.Errorf("acVersion: %q, %v; want %q", v, err, tc.version)
		}
		if p := vtestPath([]byte(tc.ac)); p != tc.vtest {
			t.Errorf("vtestPath: %q, want %q", p, tc.vtest)
		}
	}
	for _, bad := range []string{"", "AC_INIT([x])", "AC_INIT([x], [../up])", "AC_INIT([x], [a b])"} {
		if v, err := acVersion([]byte(bad)); err == nil {
			t.Errorf("acVersion(%q) = %q, want an error", bad, v)
		}
	}
	for v, want := range map[string]bool{"9.0.2": true, "7.1": true, "trunk": false, "9.0.0-dev": false, "": false, ".1": false} {
		if isRelease(v) != want {
			t.Errorf("isRelease(%q) = %v", v, !want)
		}
	}
	if p := vtestPath([]byte(`"${srcdir}/../x/src/vtc_main.c"`)); p != "" {
		t.Errorf("vtestPath outside the tree: %q", p)
	}
}

// tarball writes a .tar.gz of files under top/ with a `git archive` pax
// comment (none when commit is "").
func tarball(t *testing.T, top, commit string, files map[string]string) string {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	if commit != "" {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeXGlobalHeader, Name: "pax_global_header",
			PAXRecords: map[string]string{"comment": commit}, Format: tar.FormatPAX}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: top + "/", Mode: 0o755}); err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		mode := int64(0o644)
		if strings.HasSuffix(name, ".sh") || strings.HasPrefix(filepath.Base(name), "configure") && !strings.HasSuffix(name, ".ac") {
			mode = 0o755
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: top + "/" + name, Mode: mode, Size: int64(len(body))}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(body))
	}
	tw.Close()
	zw.Close()
	p := filepath.Join(t.TempDir(), top+".tar.gz")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// tinyTree is an autotools-shaped tree that builds and installs a
// varnishd and varnishstat answering -V, needing VTest2 at
// bin/varnishtest/vtest2 as Vinyl's does. It tests the build machinery
// (cache, staging, errors), not an engine: runs never use it.
func tinyTree(version, configure string) map[string]string {
	return map[string]string{
		"configure.ac": `AC_INIT([Varnish], [` + version + `], [x@example.org])
if ! test -f "${srcdir}/bin/varnishtest/vtest2/src/vtc_main.c" ; then`,
		"autogen.sh": "#!/bin/sh\ncp configure.in configure && chmod +x configure\n",
		"configure.in": "#!/bin/sh\n" + configure + `
test -f bin/varnishtest/vtest2/src/vtc_main.c || { echo "vtest2 missing" >&2; exit 1; }
prefix=${1#--prefix=}
cat > Makefile <<EOF
all:
	printf '#!/bin/sh\necho "varnishd (varnish-` + version + ` revision NOGIT)" >&2\n' > varnishd
	chmod +x varnishd
install:
	mkdir -p \$(DESTDIR)$prefix/sbin \$(DESTDIR)$prefix/bin
	cp varnishd \$(DESTDIR)$prefix/sbin/varnishd
	cp varnishd \$(DESTDIR)$prefix/bin/varnishstat
EOF
`,
	}
}

func TestMakeCachesAndNames(t *testing.T) {
	if _, err := os.Stat("/usr/bin/make"); err != nil {
		t.Skip("no make")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cache := t.TempDir()
	commit := "27d2ce15b20b94d0a5e452b0d5c29c3145d00b6a"
	src := tarball(t, "vinyl-cache-trunk", commit, tinyTree("trunk", ""))
	vt := tarball(t, "vtest2", "11ee91098c7a1f0a1f8afab9a7356609bfd3cb2d", map[string]string{"src/vtc_main.c": "int main(void){return 0;}\n"})

	_, err := Make(ctx, Options{Engine: "vinyl", Source: src, Dir: cache})
	var ie *InputError
	if !errors.As(err, &ie) || ie.Field != "vtest" || !strings.Contains(err.Error(), "bin/varnishtest/vtest2") {
		t.Errorf("without VTest2: %v; want the path it lacks, refused for vtest", err)
	}
	var progress bytes.Buffer
	b, err := Make(ctx, Options{Engine: "vinyl", Source: src, VTest: vt, Dir: cache, Progress: &progress})
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	if b.Version != "trunk-27d2ce15b" || b.Commit != commit || b.Ref() != "vinyl@trunk-27d2ce15b" || b.UpToDate {
		t.Errorf("build %+v", b)
	}
	if b.DaemonVersion != "varnishd (varnish-trunk revision NOGIT)" || !strings.HasPrefix(b.Daemon, b.Dir+"/prefix/") || !strings.HasSuffix(b.Stat, "/bin/varnishstat") {
		t.Errorf("build %+v", b)
	}
	if _, err := os.Stat(filepath.Join(b.Dir, "build.log")); err != nil {
		t.Errorf("no build log: %v", err)
	}
	again, err := Make(ctx, Options{Engine: "vinyl", Source: src, VTest: vt, Dir: cache})
	if err != nil || !again.UpToDate || again.Dir != b.Dir {
		t.Errorf("the same inputs again: %+v, %v; want the cached build", again, err)
	}
	if f, ok := Find(cache, "vinyl", ""); !ok || f.Dir != b.Dir {
		t.Errorf("Find any vinyl: %+v %v", f, ok)
	}
	if _, ok := Find(cache, "vinyl", "9.0.2"); ok {
		t.Error("Find of a version never built found one")
	}
	if f, ok := ForBinary(cache, b.Daemon); !ok || f.Version != b.Version {
		t.Errorf("ForBinary: %+v %v", f, ok)
	}
	if f, ok := ForPrefixBinary(b.Daemon); !ok || f.Commit != commit {
		t.Errorf("ForPrefixBinary: %+v %v", f, ok)
	}
	// The work directory is gone; only the build and the lock remain.
	ents, _ := os.ReadDir(cache)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if len(ents) != 2 || names[0] != ".lock" || names[1] != filepath.Base(b.Dir) {
		t.Errorf("cache holds %v", names)
	}
}

// A failing step fails the build with its last lines, and the cache gains
// nothing.
func TestMakeFails(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cache := t.TempDir()
	src := tarball(t, "varnish-9.9.9", "", tinyTree("9.9.9", `echo "checking for libfoo... no" >&2; exit 3`))
	vt := t.TempDir()
	os.MkdirAll(filepath.Join(vt, "src"), 0o755)
	os.WriteFile(filepath.Join(vt, "src", "vtc_main.c"), []byte("x"), 0o644)
	_, err := Make(ctx, Options{Engine: "varnish", Source: src, VTest: vt, Dir: cache})
	var se *StepError
	if !errors.As(err, &se) || se.Step != "configure" || !strings.Contains(err.Error(), "checking for libfoo... no") {
		t.Errorf("err %v; want the step and its last lines", err)
	}
	if bs, _ := List(cache); len(bs) != 0 {
		t.Errorf("a failed build is in the cache: %+v", bs)
	}
	ents, _ := os.ReadDir(cache)
	if len(ents) != 1 {
		t.Errorf("left in the cache: %v", ents)
	}
}

func TestMakeBadInput(t *testing.T) {
	ctx := context.Background()
	cache := t.TempDir()
	notTree := tarball(t, "x", "", map[string]string{"README": "hi"})
	for _, tc := range []struct {
		o     Options
		field string
		want  string
	}{
		{Options{Engine: "squid", Source: notTree}, "engine", `engine "squid"`},
		{Options{Engine: "varnish", Source: filepath.Join(cache, "nope.tar.gz")}, "source", "source " + filepath.Join(cache, "nope.tar.gz")},
		{Options{Engine: "varnish", Source: "/etc/hostname"}, "source", "want a .tar.gz"},
		{Options{Engine: "varnish", Source: notTree}, "source", "no configure.ac"},
		{Options{Engine: "varnish", Source: notTree, VTest: "/etc/hostname"}, "vtest", "vtest /etc/hostname"},
	} {
		tc.o.Dir = cache
		_, err := Make(ctx, tc.o)
		var ie *InputError
		if !errors.As(err, &ie) || ie.Field != tc.field || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q refused for %s", tc.o, err, tc.want, tc.field)
		}
		// A library names what it was given, not a command line's flags.
		if err != nil && strings.Contains(err.Error(), "--") {
			t.Errorf("%+v: %v names a flag", tc.o, err)
		}
	}
}

func TestSourceDir(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "configure.ac"), []byte(vinylAC), 0o644)
	os.MkdirAll(filepath.Join(dir, ".git"), 0o755)
	os.WriteFile(filepath.Join(dir, ".git", "HEAD"), []byte("junk"), 0o644)
	a, err := openSource(dir)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, ".git", "HEAD"), []byte("other"), 0o644)
	b, _ := openSource(dir)
	if a.hash != b.hash {
		t.Error(".git changed the tree's hash")
	}
	os.WriteFile(filepath.Join(dir, "configure.ac"), []byte(vinylAC+"\n"), 0o644)
	c, _ := openSource(dir)
	if c.hash == a.hash {
		t.Error("a changed file kept the tree's hash")
	}
	out := t.TempDir()
	if err := c.unpack(out); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, ".git")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf(".git copied: %v", err)
	}
}

func TestMissing(t *testing.T) {
	m, err := Missing(context.Background(), []string{"hlsbench-no-such-package"})
	if err != nil {
		t.Skip(err)
	}
	if len(m) != 1 {
		t.Errorf("Missing = %v", m)
	}
	e := &MissingError{Packages: []string{"libpcre2-dev", "python3-sphinx"}}
	if !strings.Contains(e.Error(), "apt-get install libpcre2-dev python3-sphinx") {
		t.Error(e)
	}
}
