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
	const mirror, security = "http://mirror.example/debian", "http://mirror.example/debian-security"
	o := BaseOptions{Mirror: mirror, SecurityMirror: security}
	with := func(f func(*BaseOptions)) BaseOptions {
		v := o
		f(&v)
		return v
	}
	// Pinned: a change here rebuilds every user's images. Bump
	// BuildVersion rather than changing it by accident.
	const want = "302bea59e1a0"
	if got := o.Inputs(); !strings.HasPrefix(got, want) {
		t.Errorf("Inputs() = %s, want %s…: the inputs changed; if on purpose, update the test", got, want)
	}
	if a, b := o.Inputs(), with(func(v *BaseOptions) { v.Packages = DefaultPackages() }).Inputs(); a != b {
		t.Errorf("nil packages and DefaultPackages differ: %s %s", a, b)
	}
	shuffled := slices.Clone(DefaultPackages())
	slices.Reverse(shuffled)
	if a, b := o.Inputs(), with(func(v *BaseOptions) { v.Packages = shuffled }).Inputs(); a != b {
		t.Errorf("the packages' order changed the inputs")
	}
	if a, b := o.Inputs(), with(func(v *BaseOptions) { v.Engines = []string{"varnish"} }).Inputs(); a != b {
		t.Errorf("the engines asked for changed the inputs: one base serves them all")
	}
	for name, other := range map[string]BaseOptions{
		"a package added": with(func(v *BaseOptions) { v.Packages = append(DefaultPackages(), "curl") }),
		"another mirror":  with(func(v *BaseOptions) { v.Mirror = "http://127.0.0.1:3142/debian" }),
		"another suite":   with(func(v *BaseOptions) { v.Suite = "trixie" }),
		"no security":     with(func(v *BaseOptions) { v.SecurityMirror = "" }),
	} {
		if o.Inputs() == other.Inputs() {
			t.Errorf("%s: the inputs did not change", name)
		}
	}
	if l := o.withDefaults().sourcesList(); !strings.Contains(l, "deb "+security+" bookworm-security main\n") ||
		!strings.Contains(l, "deb "+mirror+" bookworm-updates main\n") {
		t.Errorf("sources.list:\n%s", l)
	}
	if l := with(func(v *BaseOptions) { v.SecurityMirror = "" }).withDefaults().sourcesList(); strings.Contains(l, "security") {
		t.Errorf("sources.list without a security mirror:\n%s", l)
	}
}

// The mirrors come from the host's apt sources, one-line and deb822, as
// apt reads them: disabled stanzas, deb-src lines and other file names
// are not sources.
func TestHostMirrors(t *testing.T) {
	old := AptDir
	defer func() { AptDir = old }()
	AptDir = t.TempDir()
	var oe *OptionError
	if _, _, err := HostMirrors("bookworm"); !errors.As(err, &oe) || oe.Option != "Mirror" || strings.Contains(err.Error(), "--") {
		t.Errorf("no sources: %v; want an OptionError naming the Mirror option, no flag", err)
	}
	write := func(name, data string) {
		p := filepath.Join(AptDir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("sources.list", "# nothing here\ndeb-src http://src.example/debian bookworm main\n")
	write("sources.list.d/a-disabled.sources", "Types: deb\nURIs: http://off.example/debian\nSuites: bookworm\nComponents: main\nEnabled: no\n")
	write("sources.list.d/b.list.disabled", "deb http://ignored.example/debian bookworm main\n")
	write("sources.list.d/c-node.sources", "Types: deb\nURIs: https://node.example/node_20.x\nSuites: nodistro\nComponents: main\n")
	write("sources.list.d/d-debian.sources", `Types: deb
# a comment
URIs: http://mirror.example/debian/
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://mirror.example/debian-security
Suites: bookworm-security
Components: main
`)
	m, s, err := HostMirrors("bookworm")
	if err != nil || m != "http://mirror.example/debian" || s != "http://mirror.example/debian-security" {
		t.Errorf("deb822: %q %q %v", m, s, err)
	}
	write("sources.list", "deb [arch=amd64 signed-by=/usr/share/keyrings/k.gpg] http://first.example/debian bookworm main contrib\n")
	if m, s, err = HostMirrors("bookworm"); err != nil || m != "http://first.example/debian" || s != "http://mirror.example/debian-security" {
		t.Errorf("sources.list first: %q %q %v", m, s, err)
	}
	if _, _, err := HostMirrors("trixie"); err == nil {
		t.Errorf("trixie: no error, though no source names it")
	}
}

func TestDefaultPackages(t *testing.T) {
	want := []string{"ca-certificates", "haproxy", "hitch", "libnginx-mod-http-cache-purge", "nginx-light", "varnish"}
	if got := DefaultPackages(); !slices.Equal(got, want) {
		t.Errorf("DefaultPackages() = %v, want %v", got, want)
	}
}

func TestSelfLayer(t *testing.T) {
	bin := []byte("\x7fELF not really")
	var layer bytes.Buffer
	if err := selfLayer(&layer, bin); err != nil {
		t.Fatal(err)
	}
	files := readTar(t, bytes.NewReader(layer.Bytes()))
	if f := files["hlsbench"]; f.data != string(bin) || f.hdr.Mode != 0o755 || !f.hdr.ModTime.Equal(Epoch) {
		t.Errorf("hlsbench: mode %o, time %v, %q", f.hdr.Mode, f.hdr.ModTime, f.data)
	}
	if len(files) != 1 {
		t.Errorf("layer holds %d files, want 1", len(files))
	}
	var again bytes.Buffer
	if selfLayer(&again, bin); !bytes.Equal(again.Bytes(), layer.Bytes()) {
		t.Errorf("the same binary gave another layer")
	}
}

// An image's configuration is the same bytes for the same layers and
// labels (its ID their digest), whenever it is made.
func TestNewConfigStable(t *testing.T) {
	cc := containerConfig{Env: []string{pathEnv}, Labels: map[string]string{"b": "2", "a": "1", LabelOwner: "1"}}
	a := newConfig([]string{"sha256:" + strings.Repeat("ab", 32)}, cc, "test")
	cc.Labels = map[string]string{LabelOwner: "1", "a": "1", "b": "2"}
	b := newConfig([]string{"sha256:" + strings.Repeat("ab", 32)}, cc, "test")
	if !bytes.Equal(a, b) || configID(a) != configID(b) {
		t.Errorf("two configurations of the same image differ:\n%s\n%s", a, b)
	}
	if !bytes.Contains(a, []byte(`"created":"2000-01-01T00:00:00Z"`)) || !bytes.Contains(a, []byte(`"diff_ids":["sha256:abab`)) {
		t.Errorf("configuration %s", a)
	}
}

func TestPinDiff(t *testing.T) {
	want := pinsOf([]string{"libc6=2.36-9+deb12u4", "varnish=7.1.1-1.1", "gone=1"})
	got := pinsOf([]string{"libc6=2.36-9+deb12u7", "varnish=7.1.1-1.1", "new=2"})
	if d := strings.Join(pinDiff(want, got), ", "); d != "gone (gone), libc6 2.36-9+deb12u4 → 2.36-9+deb12u7, new (new)" {
		t.Errorf("pinDiff: %s", d)
	}
	if d := pinDiff(want, want); len(d) != 0 {
		t.Errorf("pinDiff of the same: %v", d)
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
	must(tarDir(&buf, root, func(rel string) bool { return rel == "proc" }, time.Time{}))
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
