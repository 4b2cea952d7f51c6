// Package srcbuild builds the Varnish family of engines (Varnish Cache,
// Vinyl Cache) from their source trees with Debian's toolchain, into a
// cache keyed by the digest of the inputs, so that a repeat finds the build
// in seconds:
//
//	b, err := srcbuild.Make(ctx, srcbuild.Options{Engine: "vinyl", Source: "vinyl-cache-trunk-27d2ce15b.tar.gz",
//		VTest: "vtest2-vtest-11ee910.tar.gz"})
//	// b.Daemon is .../vinyl-trunk-27d2ce15b-<digest>/prefix/sbin/varnishd
//
// The recipe is the trees' own: ./autogen.sh, ./configure --prefix,
// make, make install. The prefix is final from the start (varnishd finds
// its VMODs and compiles VCL through paths fixed at configure time); the
// install is staged and renamed into the cache only once everything
// worked, so the cache never holds half a build.
package srcbuild

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/hlsbench/hlsbench/engines/internal/procgroup"
	"github.com/hlsbench/hlsbench/engines/runstate"
)

// Recipe changes whenever the way a build is made changes: it is part of
// the inputs' digest, so older cached builds are not taken for new ones.
const Recipe = "1"

// Engines are the engines this package builds.
var Engines = []string{"varnish", "vinyl"}

// Packages are the Debian packages a build of engine needs.
func Packages(engine string) []string {
	p := []string{"autoconf", "automake", "libtool", "make", "gcc", "pkg-config", "libpcre2-dev", "libedit-dev",
		"libncurses-dev", "libjemalloc-dev", "python3-docutils", "python3-sphinx"}
	if engine == "varnish" {
		p = append(p, "libssl-dev") // Varnish 9's native TLS
	}
	return p
}

// Missing returns those of pkgs dpkg does not list as installed.
func Missing(ctx context.Context, pkgs []string) ([]string, error) {
	if _, err := exec.LookPath("dpkg-query"); err != nil {
		return nil, errors.New("no dpkg-query: building from source needs Debian's toolchain (a Debian or Ubuntu host)")
	}
	var missing []string
	for _, p := range pkgs {
		out, err := exec.CommandContext(ctx, "dpkg-query", "-W", "-f=${db:Status-Abbrev}", p).Output()
		if err != nil || !strings.HasPrefix(string(out), "ii") {
			missing = append(missing, p)
		}
	}
	return missing, nil
}

// MissingError names the packages a build needs and lacks.
type MissingError struct{ Packages []string }

func (e *MissingError) Error() string {
	return fmt.Sprintf("the build needs Debian packages that are not installed: %s (apt-get install %s)",
		strings.Join(e.Packages, ", "), strings.Join(e.Packages, " "))
}

// InputError is a build refused for what it was given: the field of
// Options at fault and why, with what would be accepted. A command line
// names its own flag or argument for the field.
type InputError struct {
	Field string // "engine", "source" or "vtest"
	Err   error
}

func (e *InputError) Error() string { return e.Field + " " + e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

func inputErr(field, format string, args ...any) error {
	return &InputError{Field: field, Err: fmt.Errorf(format, args...)}
}

// StepError is a step of a build (configure, make, …) that failed. Its
// error ends with the last lines of the step's output; the whole of it is
// in Options.Log, when given.
type StepError struct {
	Build string // engine@version
	Step  string // "autogen.sh", "configure", "make" or "make install"
	Err   error
}

func (e *StepError) Error() string { return e.Build + ": " + e.Step + ": " + e.Err.Error() }
func (e *StepError) Unwrap() error { return e.Err }

// Dir is the cache of builds: $XDG_CACHE_HOME/hlsbench/engines, else
// ~/.cache/hlsbench/engines.
func Dir() string {
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "hlsbench", "engines")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".cache", "hlsbench", "engines")
	}
	return filepath.Join(os.TempDir(), "hlsbench", "engines")
}

// Options say what to build.
type Options struct {
	Engine string // varnish or vinyl
	// Source is the engine's source: a .tar.gz (or .tgz, .tar) of its tree,
	// such as a release or a `git archive` snapshot, or a directory.
	Source string
	// VTest is VTest2's source, unpacked into the tree where its configure
	// expects the submodule, when the tree lacks it ("" when it has it).
	VTest    string
	Dir      string // the cache; "" is Dir()
	Jobs     int    // make -j; 0 is the number of CPUs
	Force    bool   // build again even when the cache has the build
	Progress io.Writer
	Log      io.Writer // the build tools' whole output, besides build.log
}

// Build is a finished build, as recorded in its build.json.
type Build struct {
	Engine string `json:"engine"`
	// Version is the tree's own (configure.ac's AC_INIT), with the commit
	// appended when that names no release: trunk-27d2ce15b.
	Version    string `json:"version"`
	Commit     string `json:"commit,omitempty"` // the source's git commit, when known
	SourceHash string `json:"source_sha256"`
	VTestHash  string `json:"vtest_sha256,omitempty"`
	Source     string `json:"source"` // the path given
	Inputs     string `json:"inputs"` // the digest keying the cache
	Prefix     string `json:"prefix"`
	// Daemon and Stat are the installed varnishd (or vinyld) and its
	// varnishstat (or vinylstat).
	Daemon string `json:"daemon"`
	Stat   string `json:"stat"`
	// DaemonVersion is the first line `Daemon -V` printed.
	DaemonVersion string    `json:"daemon_version"`
	Built         time.Time `json:"built"`
	Seconds       float64   `json:"build_seconds"`
	Recipe        string    `json:"recipe"`

	UpToDate bool   `json:"-"` // found in the cache, not built
	Dir      string `json:"-"` // the build's directory in the cache
}

// Ref is how runs select the build: engine@version.
func (b Build) Ref() string { return b.Engine + "@" + b.Version }

const recordName = "build.json"

// Make builds o.Engine from o.Source into the cache, or finds the build
// already there.
func Make(ctx context.Context, o Options) (Build, error) {
	if !slices.Contains(Engines, o.Engine) {
		return Build{}, inputErr("engine", "%q: srcbuild builds %s", o.Engine, strings.Join(Engines, " or "))
	}
	if o.Dir == "" {
		o.Dir = Dir()
	}
	if o.Jobs <= 0 {
		o.Jobs = runtime.NumCPU()
	}
	src, err := openSource(o.Source)
	if err != nil {
		return Build{}, inputErr("source", "%s: %w", o.Source, err)
	}
	var vt *source
	if o.VTest != "" {
		if vt, err = openSource(o.VTest); err != nil {
			return Build{}, inputErr("vtest", "%s: %w", o.VTest, err)
		}
	}
	inputs := digest("recipe", Recipe, "engine", o.Engine, "source", src.hash, "vtest", vt.digest(), "arch", runtime.GOARCH)
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return Build{}, err
	}
	unlock, err := lock(ctx, filepath.Join(o.Dir, ".lock"))
	if err != nil {
		return Build{}, err
	}
	defer unlock()
	if !o.Force {
		if b, ok := find(o.Dir, func(b Build) bool { return b.Inputs == inputs }); ok {
			b.UpToDate = true
			logf(o.Progress, "%s: up to date in %s", b.Ref(), b.Dir)
			return b, nil
		}
	}
	return build(ctx, o, src, vt, inputs)
}

func build(ctx context.Context, o Options, src, vt *source, inputs string) (b Build, err error) {
	start := time.Now()
	work, err := runstate.From(ctx).MkdirTemp(o.Dir, "build-"+o.Engine)
	if err != nil {
		return Build{}, err
	}
	defer func() {
		if rerr := runstate.From(ctx).RemoveAll(work); rerr != nil && err == nil {
			err = rerr
		}
	}()
	tree := filepath.Join(work, "src")
	step := time.Now()
	if err := src.unpack(tree); err != nil {
		return Build{}, fmt.Errorf("unpack the source %s: %w", o.Source, err)
	}
	configureAC, err := os.ReadFile(filepath.Join(tree, "configure.ac"))
	if err != nil {
		return Build{}, inputErr("source", "%s: no configure.ac at the top of the tree: want a Varnish or Vinyl Cache source tree", o.Source)
	}
	version, err := acVersion(configureAC)
	if err != nil {
		return Build{}, inputErr("source", "%s: %w", o.Source, err)
	}
	if !isRelease(version) {
		// trunk, 9.0.0-dev and the like name no release: the commit does.
		id := src.commit
		if id == "" {
			id = src.hash
		}
		version += "-" + id[:min(9, len(id))]
	}
	if sub := vtestPath(configureAC); sub != "" && !exists(filepath.Join(tree, sub, "src", "vtc_main.c")) {
		if vt == nil {
			return Build{}, inputErr("vtest", "is needed: %s lacks VTest2 in %s, which its configure needs; want VTest2's source, a tarball or directory", o.Source, sub)
		}
		if err := vt.unpack(filepath.Join(tree, sub)); err != nil {
			return Build{}, fmt.Errorf("unpack VTest2's source %s: %w", o.VTest, err)
		}
		if !exists(filepath.Join(tree, sub, "src", "vtc_main.c")) {
			return Build{}, inputErr("vtest", "%s: no src/vtc_main.c in it: want a VTest2 source tree", o.VTest)
		}
	}
	logf(o.Progress, "%s@%s: unpacked in %s", o.Engine, version, secs(time.Since(step)))

	final := filepath.Join(o.Dir, o.Engine+"-"+version+"-"+inputs[:12])
	prefix := filepath.Join(final, "prefix")
	logPath := filepath.Join(work, "build.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return Build{}, err
	}
	defer logFile.Close()
	log := io.Writer(logFile)
	if o.Log != nil {
		log = io.MultiWriter(logFile, o.Log)
	}
	stage := filepath.Join(work, "stage")
	steps := []struct {
		name string
		args []string
	}{
		{"autogen.sh", []string{"./autogen.sh"}},
		{"configure", []string{"./configure", "--prefix=" + prefix}},
		{"make", []string{"make", fmt.Sprintf("-j%d", o.Jobs)}},
		{"make install", []string{"make", "install", "DESTDIR=" + stage}},
	}
	for _, s := range steps {
		step := time.Now()
		fmt.Fprintf(log, "\n$ %s\n", strings.Join(s.args, " "))
		cmd := exec.Command(s.args[0], s.args[1:]...)
		cmd.Dir = tree
		if err := runLogged(ctx, log, cmd); err != nil {
			return Build{}, &StepError{Build: o.Engine + "@" + version, Step: s.name, Err: err}
		}
		logf(o.Progress, "%s@%s: %s in %s", o.Engine, version, s.name, secs(time.Since(step)))
	}

	// The staged install moves to the cache in two renames: the prefix
	// into the build's directory, then that directory into place.
	out := filepath.Join(work, "out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		return Build{}, err
	}
	if err := os.Rename(filepath.Join(stage, prefix), filepath.Join(out, "prefix")); err != nil {
		return Build{}, fmt.Errorf("%s@%s: make install put nothing in %s: %w", o.Engine, version, prefix, err)
	}
	b = Build{Engine: o.Engine, Version: version, Commit: src.commit, SourceHash: src.hash, VTestHash: vt.digest(),
		Source: o.Source, Inputs: inputs, Prefix: prefix, Recipe: Recipe}
	if b.Daemon, b.Stat, err = binaries(filepath.Join(out, "prefix")); err != nil {
		return Build{}, fmt.Errorf("%s@%s: %w", o.Engine, version, err)
	}
	b.Daemon = filepath.Join(prefix, b.Daemon)
	b.Stat = filepath.Join(prefix, b.Stat)
	if err := os.Rename(logPath, filepath.Join(out, "build.log")); err != nil {
		return Build{}, err
	}
	if err := os.RemoveAll(final); err != nil { // a forced rebuild replaces it
		return Build{}, err
	}
	if err := os.Rename(out, final); err != nil {
		return Build{}, err
	}
	b.Dir = final
	// The binary runs from its final place: that is where it finds its
	// libraries.
	vout, err := exec.CommandContext(ctx, b.Daemon, "-V").CombinedOutput()
	if err != nil {
		os.RemoveAll(final)
		return Build{}, fmt.Errorf("%s@%s: %s -V: %w: %s", o.Engine, version, b.Daemon, err, strings.TrimSpace(string(vout)))
	}
	b.DaemonVersion, _, _ = strings.Cut(strings.TrimSpace(string(vout)), "\n")
	b.Built = time.Now().UTC().Truncate(time.Second)
	b.Seconds = time.Since(start).Seconds()
	if err := writeRecord(final, b); err != nil {
		os.RemoveAll(final)
		return Build{}, err
	}
	logf(o.Progress, "%s: built in %s into %s (%s)", b.Ref(), secs(time.Since(start)), final, b.DaemonVersion)
	return b, nil
}

// binaries finds the daemon and its stat tool under an installed prefix:
// Vinyl Cache's are vinyld and vinylstat once renamed, varnishd and
// varnishstat before. Paths are relative to prefix.
func binaries(prefix string) (daemon, stat string, err error) {
	for _, pair := range [][2]string{{"sbin/vinyld", "bin/vinylstat"}, {"sbin/varnishd", "bin/varnishstat"}} {
		if exists(filepath.Join(prefix, pair[0])) {
			if !exists(filepath.Join(prefix, pair[1])) {
				return "", "", fmt.Errorf("installed %s but not %s", pair[0], pair[1])
			}
			return pair[0], pair[1], nil
		}
	}
	return "", "", errors.New("installed neither sbin/varnishd nor sbin/vinyld")
}

var (
	acInitRe  = regexp.MustCompile(`AC_INIT\(\s*\[[^\]]*\]\s*,\s*\[([^\]]+)\]`)
	vtestPaRe = regexp.MustCompile(`\$\{srcdir\}/([A-Za-z0-9_./-]+)/src/vtc_main\.c`)
)

// acVersion is the version configure.ac's AC_INIT gives.
func acVersion(configureAC []byte) (string, error) {
	m := acInitRe.FindSubmatch(configureAC)
	if m == nil {
		return "", errors.New("configure.ac has no AC_INIT([name], [version]): cannot tell the version")
	}
	v := strings.TrimSpace(string(m[1]))
	if v == "" || strings.ContainsAny(v, "/ \t") || strings.Contains(v, "..") {
		return "", fmt.Errorf("configure.ac's version %q is not one a path can carry", v)
	}
	return v, nil
}

// isRelease says whether v names a release (digits and dots: 9.0.2).
func isRelease(v string) bool {
	return v != "" && strings.Trim(v, "0123456789.") == "" && v[0] != '.'
}

// vtestPath is where configure.ac looks for VTest2 ("" if it does not).
func vtestPath(configureAC []byte) string {
	m := vtestPaRe.FindSubmatch(configureAC)
	if m == nil || strings.Contains(string(m[1]), "..") {
		return ""
	}
	return string(m[1])
}

// List returns the builds in the cache dir ("" is Dir()), newest first.
func List(dir string) ([]Build, error) {
	if dir == "" {
		dir = Dir()
	}
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Build
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		b, err := readRecord(filepath.Join(dir, e.Name()))
		if err != nil {
			continue // not a build, or one in progress
		}
		out = append(out, b)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Built.After(out[j].Built) })
	return out, nil
}

// Find returns the newest build of engine in the cache dir whose version
// is version ("" takes any).
func Find(dir, engine, version string) (Build, bool) {
	if dir == "" {
		dir = Dir()
	}
	return find(dir, func(b Build) bool { return b.Engine == engine && (version == "" || b.Version == version) })
}

func find(dir string, match func(Build) bool) (Build, bool) {
	all, _ := List(dir)
	for _, b := range all {
		if match(b) && exists(b.Daemon) {
			return b, true
		}
	}
	return Build{}, false
}

// ForBinary returns the cached build whose daemon is path, if any: how a
// run given --binary learns the version and commit of a build.
func ForBinary(dir, path string) (Build, bool) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return Build{}, false
	}
	return find(dir, func(b Build) bool { return b.Daemon == abs })
}

// ForPrefixBinary reads the build record beside an installed prefix that
// holds path (PREFIX/sbin/varnishd → PREFIX/../build.json): a build copied
// elsewhere, or into an image, still names itself.
func ForPrefixBinary(path string) (Build, bool) {
	dir := filepath.Dir(filepath.Dir(filepath.Dir(path)))
	b, err := readRecord(dir)
	if err != nil {
		return Build{}, false
	}
	return b, true
}

func readRecord(dir string) (Build, error) {
	data, err := os.ReadFile(filepath.Join(dir, recordName))
	if err != nil {
		return Build{}, err
	}
	var b Build
	if err := json.Unmarshal(data, &b); err != nil {
		return Build{}, fmt.Errorf("%s: %w", filepath.Join(dir, recordName), err)
	}
	if b.Engine == "" || b.Version == "" || b.Daemon == "" {
		return Build{}, fmt.Errorf("%s: not a build record", filepath.Join(dir, recordName))
	}
	b.Dir = dir
	return b, nil
}

// writeRecord writes build.json beside the prefix, last: a directory
// without it is not a build.
func writeRecord(dir string, b Build) error {
	data, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, recordName+".tmp")
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, recordName))
}

// lock holds an exclusive lock on path until unlock: two builds into one
// cache take turns.
func lock(ctx context.Context, path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err == nil {
			return func() { f.Close() }, nil
		} else if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// runLogged runs cmd in a process group of its own with a plain
// environment, its output to log and, when it fails, the tail of it in the
// error. Cancelling ctx ends the whole group (make has children).
func runLogged(ctx context.Context, log io.Writer, cmd *exec.Cmd) error {
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C", "HOME=" + os.Getenv("HOME")}
	return procgroup.Run(ctx, cmd, procgroup.Options{Grace: 5 * time.Second, TailBytes: 3 << 10, Log: log, Track: "build"})
}

func digest(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:%s\n", len(p), p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func logf(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, "hlsbench: "+format+"\n", args...)
	}
}

func secs(d time.Duration) string { return fmt.Sprintf("%.1fs", d.Seconds()) }
