package images

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestTag(t *testing.T) {
	for _, c := range []struct{ deb, want string }{
		{"7.1.1-2+deb12u1", "7.1.1"},    // varnish in bookworm
		{"1.22.1-9+deb12u11", "1.22.1"}, // nginx
		{"1.7.2-1+b1", "1.7.2"},         // hitch: a binNMU
		{"2.6.12-1+deb12u4", "2.6.12"},  // haproxy
		{"1:2.3.4-5", "2.3.4"},          // an epoch
		{"6.0.11-1~bpo11+1", "6.0.11"},  // a backport
		{"2.4.57+dfsg-1", "2.4.57"},     // a repacked upstream
		{"20250419~deb12u2", "20250419"},
		{"1.0", "1.0"},           // a native package
		{"1.2-rc3-4", "1.2-rc3"}, // only the last dash starts the revision
		{"1.2_b@3-1", "1.2_b_3"}, // what a tag cannot hold
		{" 7.1.1-2 ", "7.1.1"},
	} {
		got, err := Tag(c.deb)
		if err != nil || got != c.want {
			t.Errorf("Tag(%q) = %q, %v; want %q", c.deb, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "-1", "1:-2", "+dfsg-1"} {
		if got, err := Tag(bad); err == nil {
			t.Errorf("Tag(%q) = %q, want an error", bad, got)
		}
	}
	e, _ := LookupEngine("varnish")
	if ref, err := e.Ref("7.1.1-2+deb12u1"); ref != "hlsbench/varnish:7.1.1" || err != nil {
		t.Errorf("Ref = %q, %v", ref, err)
	}
}

func TestInputs(t *testing.T) {
	o := BaseOptions{}
	// Pinned: a change here rebuilds every user's images. Bump
	// BuildVersion rather than changing it by accident.
	// (12dc3f05: NGINX's purge module, for purge-stampede.)
	const want = "12dc3f05"
	if got := o.Inputs(); !strings.HasPrefix(got, want) {
		t.Errorf("Inputs() = %s, want %s…: the inputs changed; if on purpose, update the test", got, want)
	}
	if a, b := o.Inputs(), (BaseOptions{Packages: DefaultPackages()}).Inputs(); a != b {
		t.Errorf("nil packages and DefaultPackages differ: %s %s", a, b)
	}
	shuffled := slices.Clone(DefaultPackages())
	slices.Reverse(shuffled)
	if a, b := o.Inputs(), (BaseOptions{Packages: shuffled}).Inputs(); a != b {
		t.Errorf("the packages' order changed the inputs")
	}
	if a, b := o.Inputs(), (BaseOptions{Engines: []string{"varnish"}}).Inputs(); a != b {
		t.Errorf("the engines asked for changed the inputs: one base serves them all")
	}
	for name, other := range map[string]BaseOptions{
		"a package added": {Packages: append(DefaultPackages(), "curl")},
		"another mirror":  {Mirror: "http://127.0.0.1:3142/debian"},
		"another suite":   {Suite: "trixie"},
		"no security":     {SecurityMirror: "http://127.0.0.1/security"},
	} {
		if o.Inputs() == other.Inputs() {
			t.Errorf("%s: the inputs did not change", name)
		}
	}
	if !strings.Contains(o.withDefaults().sourcesList(), "deb http://deb.debian.org/debian-security bookworm-security main\n") ||
		!strings.Contains(o.withDefaults().sourcesList(), "bookworm-updates main") {
		t.Errorf("sources.list:\n%s", o.withDefaults().sourcesList())
	}
}

func TestDefaultPackages(t *testing.T) {
	want := []string{"ca-certificates", "haproxy", "hitch", "libnginx-mod-http-cache-purge", "nginx-light", "varnish"}
	if got := DefaultPackages(); !slices.Equal(got, want) {
		t.Errorf("DefaultPackages() = %v, want %v", got, want)
	}
}

func TestSelfContext(t *testing.T) {
	bin := []byte("\x7fELF not really")
	ctxTar, err := SelfContext(bin)
	if err != nil {
		t.Fatal(err)
	}
	files := readTar(t, bytes.NewReader(ctxTar))
	if got := files["Dockerfile"].data; got != "FROM scratch\nCOPY hlsbench /hlsbench\nENTRYPOINT [\"/hlsbench\"]\n" {
		t.Errorf("Dockerfile:\n%s", got)
	}
	if f := files["hlsbench"]; f.data != string(bin) || f.hdr.Mode != 0o755 {
		t.Errorf("hlsbench: mode %o, %q", f.hdr.Mode, f.data)
	}
	if len(files) != 2 {
		t.Errorf("context holds %d files, want 2", len(files))
	}
	if again, _ := SelfContext(bin); !bytes.Equal(again, ctxTar) {
		t.Errorf("the same binary gave another context")
	}
}

func TestDockerfiles(t *testing.T) {
	for _, name := range EngineNames() {
		e, _ := LookupEngine(name)
		df, err := Dockerfile(name)
		if err != nil {
			t.Fatal(err)
		}
		var instr []string
		for _, line := range strings.Split(string(df), "\n") {
			if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
				instr = append(instr, line)
			}
		}
		if len(instr) < 2 || instr[0] != "ARG BASE="+DefaultDockerfileBase || instr[1] != "FROM ${BASE}" {
			t.Errorf("%s: want ARG BASE=%s then FROM ${BASE}, got %q", name, DefaultDockerfileBase, instr)
		}
		if !regexp.MustCompile(`apt-get install -y --no-install-recommends ` + regexp.QuoteMeta(e.Package) + `\b`).Match(df) {
			t.Errorf("%s: does not install %s without recommends", name, e.Package)
		}
		if !strings.Contains(string(df), "org.hlsbench=1") || !strings.Contains(string(df), "org.hlsbench.engine="+name) {
			t.Errorf("%s: labels missing", name)
		}
	}
	if _, err := Dockerfile("squid"); err == nil {
		t.Errorf("Dockerfile(squid): want an error")
	}
}

func TestTarDir(t *testing.T) {
	root := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "usr/bin"), 0o755))
	must(os.MkdirAll(filepath.Join(root, "proc/1"), 0o555))
	must(os.WriteFile(filepath.Join(root, "proc/1/status"), []byte("x"), 0o644))
	must(os.WriteFile(filepath.Join(root, "usr/bin/tool"), []byte("#!/bin/sh\n"), 0o4755))
	must(os.Chmod(filepath.Join(root, "usr/bin/tool"), 0o755|os.ModeSetuid))
	must(os.Link(filepath.Join(root, "usr/bin/tool"), filepath.Join(root, "usr/bin/tool2")))
	must(os.Symlink("usr/bin", filepath.Join(root, "bin")))
	must(syscall.Mkfifo(filepath.Join(root, "fifo"), 0o600))
	var buf bytes.Buffer
	must(tarDir(&buf, root, func(rel string) bool { return rel == "proc" }))
	files := readTar(t, &buf)
	var names []string
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	want := []string{"bin", "fifo", "proc/", "usr/", "usr/bin/", "usr/bin/tool", "usr/bin/tool2"}
	if !slices.Equal(names, want) {
		t.Fatalf("names %q, want %q", names, want)
	}
	if h := files["bin"].hdr; h.Typeflag != tar.TypeSymlink || h.Linkname != "usr/bin" {
		t.Errorf("bin: %c %q", h.Typeflag, h.Linkname)
	}
	if f := files["usr/bin/tool"]; f.hdr.Typeflag != tar.TypeReg || f.hdr.Mode&0o7777 != 0o4755 || f.data != "#!/bin/sh\n" {
		t.Errorf("tool: %c %o %q", f.hdr.Typeflag, f.hdr.Mode, f.data)
	}
	if h := files["usr/bin/tool2"].hdr; h.Typeflag != tar.TypeLink || h.Linkname != "usr/bin/tool" {
		t.Errorf("tool2: %c %q", h.Typeflag, h.Linkname)
	}
	if h := files["fifo"].hdr; h.Typeflag != tar.TypeFifo || h.Uname != "" {
		t.Errorf("fifo: %c %q", h.Typeflag, h.Uname)
	}
	if h := files["proc/"].hdr; h.Mode&0o777 != 0o555 {
		t.Errorf("proc: mode %o", h.Mode)
	}
}

func TestReadStream(t *testing.T) {
	id, err := readStream(strings.NewReader(`{"status":"Importing"}` + "\n" + `{"status":"sha256:abc"}`))
	if id != "sha256:abc" || err != nil {
		t.Errorf("import: %q, %v", id, err)
	}
	id, err = readStream(strings.NewReader(`{"stream":"Step 1/2 : FROM scratch\n"}{"aux":{"ID":"sha256:def"}}{"stream":"Successfully built def\n"}`))
	if id != "sha256:def" || err != nil {
		t.Errorf("build: %q, %v", id, err)
	}
	_, err = readStream(strings.NewReader(`{"stream":"Step 2/3 : RUN false\n"}{"errorDetail":{"code":1,"message":"returned a non-zero code: 1"},"error":"returned a non-zero code: 1"}`))
	if err == nil || !strings.Contains(err.Error(), "non-zero code") || !strings.Contains(err.Error(), "RUN false") {
		t.Errorf("build error: %v", err)
	}
	if _, err := readStream(strings.NewReader(``)); err == nil {
		t.Errorf("empty stream: want an error")
	}
}

func TestConnectNoDaemon(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "docker.sock"))
	start := time.Now()
	cli, err := Connect(context.Background())
	if err == nil {
		cli.Close()
		t.Fatal("Connect with no daemon: want an error")
	}
	if d := time.Since(start); d > DefaultConnectTimeout+time.Second {
		t.Errorf("Connect took %s to fail", d)
	}
	if !errors.Is(err, ErrNoDaemon) || !strings.Contains(err.Error(), "start dockerd") || !strings.Contains(err.Error(), "docker.sock") {
		t.Errorf("error: %v", err)
	}
}

type tarFile struct {
	hdr  *tar.Header
	data string
}

func readTar(t *testing.T, r io.Reader) map[string]tarFile {
	t.Helper()
	files := map[string]tarFile{}
	tr := tar.NewReader(r)
	for range 1000 {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = tarFile{h, string(data)}
	}
	t.Fatal("more than 1000 files")
	return nil
}
