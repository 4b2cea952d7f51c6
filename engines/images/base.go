package images

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/client"
	"golang.org/x/sys/unix"

	"github.com/hlsbench/hlsbench/engines/internal/procgroup"
)

// Defaults of BaseOptions: the host's own Debian, from the mirrors this
// host's apt sources name (HostMirrors), so the engines in the images are
// the versions a local install has.
const (
	DefaultSuite = "bookworm"
	// BaseRef is the root filesystem with every engine's package.
	BaseRef = Repository + "/base:bookworm"
)

// DefaultPackages are installed in the base: every engine's, and the CA
// certificates a TLS terminator's tests need.
func DefaultPackages() []string {
	pkgs := []string{"ca-certificates"}
	for _, n := range EngineNames() {
		pkgs = append(pkgs, engines[n].Package)
		pkgs = append(pkgs, engines[n].Modules...)
	}
	sort.Strings(pkgs)
	return pkgs
}

// BaseOptions say what BuildBase makes.
type BaseOptions struct {
	// Engines get an image each; nil: all of EngineNames. The base holds
	// every package whichever engines are asked for, so that each engine's
	// image is the same base.
	Engines []string
	// Suite: "" is DefaultSuite. Mirror and SecurityMirror: "" are the
	// ones this host's apt sources name for the suite (HostMirrors); with
	// no security mirror there, the base has no security updates.
	Suite, Mirror, SecurityMirror string
	Packages                      []string // nil: DefaultPackages
	Force                         bool     // rebuild even when up to date
	// A rebuild installs the package versions the image it replaces
	// recorded, and fails when the mirror's differ (pinned: the same
	// inputs give the same image). Update takes the mirror's current
	// versions instead (a security update), and rebuilds.
	Update  bool
	TempDir string // where the root filesystem is written; "" is os.TempDir
	// Progress gets a line per step, with its time; Log the output of
	// debootstrap and apt-get. Either may be nil.
	Progress, Log io.Writer
}

func (o BaseOptions) withDefaults() BaseOptions {
	if o.Engines == nil {
		o.Engines = EngineNames()
	}
	if o.Suite == "" {
		o.Suite = DefaultSuite
	}
	if o.Packages == nil {
		o.Packages = DefaultPackages()
	}
	return o
}

// OptionError is an error one of BaseOptions would get past: Option names
// the field (Force, Update, Mirror) and Do what setting it does. The caller
// says how its user sets it.
type OptionError struct {
	Option, Do string
	Err        error
}

func (e *OptionError) Error() string { return fmt.Sprintf("%v (%s: set %s)", e.Err, e.Do, e.Option) }
func (e *OptionError) Unwrap() error { return e.Err }

// Resolve fills in the defaults, the mirrors from this host's apt sources
// included: an error says none is there to take (give Mirror).
func (o BaseOptions) Resolve() (BaseOptions, error) {
	o = o.withDefaults()
	if o.Mirror != "" {
		return o, nil
	}
	mirror, security, err := HostMirrors(o.Suite)
	if err != nil {
		return o, err
	}
	o.Mirror = mirror
	if o.SecurityMirror == "" {
		o.SecurityMirror = security
	}
	return o, nil
}

// sourcesList is the root filesystem's /etc/apt/sources.list: the suite
// with its updates and, with a security mirror, security updates, as on
// the host.
func (o BaseOptions) sourcesList() string {
	s := fmt.Sprintf("deb %[1]s %[2]s main\ndeb %[1]s %[2]s-updates main\n", o.Mirror, o.Suite)
	if o.SecurityMirror != "" {
		s += fmt.Sprintf("deb %s %s-security main\n", o.SecurityMirror, o.Suite)
	}
	return s
}

// Inputs is the digest of what the base is made from (o resolved): a
// build with the same inputs is skipped. Package versions are not inputs
// (they are known only once installed): --force picks up a new security
// update.
func (o BaseOptions) Inputs() string {
	o = o.withDefaults()
	pkgs := slices.Clone(o.Packages)
	sort.Strings(pkgs)
	pkgs = slices.Compact(pkgs)
	return digest("hlsbench images base "+BuildVersion, "variant minbase", "suite "+o.Suite,
		o.sourcesList(), "packages "+strings.Join(pkgs, " "))
}

// BuildBase makes BaseRef, a Debian root filesystem written by debootstrap
// with o.Packages installed, loaded through the API (no registry), and an
// image per engine on the same layer (hlsbench/varnish:7.1.1). Every image
// is stamped with Epoch and its files too (load.go): the same inputs and
// package versions give the same image IDs. Images already there with the
// same inputs are kept. It needs root, debootstrap and the mirrors.
func BuildBase(ctx context.Context, cli *client.Client, o BaseOptions) ([]Built, error) {
	o, err := o.Resolve()
	if err != nil {
		return nil, err
	}
	for _, n := range o.Engines {
		e, ok := engines[n]
		if !ok {
			return nil, fmt.Errorf("no engine %q (engines: %s)", n, strings.Join(EngineNames(), ", "))
		}
		if !slices.Contains(o.Packages, e.Package) {
			return nil, fmt.Errorf("engine %s: its package %s is not among the packages", n, e.Package)
		}
	}
	inputs := o.Inputs()
	old, ok, err := inspect(ctx, cli, BaseRef)
	if err != nil {
		return nil, err
	}
	var replaced []string
	var base baseImage
	var baseBuilt Built
	if ok && !o.Force && !o.Update && labels(old)[LabelInputs] == inputs {
		baseBuilt = Built{Ref: BaseRef, ID: old.ID, UpToDate: true}
		base = baseImage{ID: old.ID, DiffIDs: old.RootFS.Layers, Labels: labels(old)}
		if old.Config != nil {
			base.Env = old.Config.Env
		}
		logf(o.Progress, "%s up to date (%.19s)", BaseRef, old.ID)
	} else {
		if ok {
			replaced = append(replaced, old.ID)
		}
		var pin map[string]string
		if ok && !o.Update && labels(old)[LabelInputs] == inputs {
			pin = pinsOf(strings.Fields(labels(old)[LabelPackages]))
		}
		rf, err := buildRootfs(ctx, o, pin)
		if err != nil {
			return nil, err
		}
		defer removeLayer(rf.layer)
		base = baseImage{DiffIDs: []string{rf.layer.DiffID}, Env: []string{pathEnv}, Labels: baseLabels(inputs, rf.versions, rf.packages)}
		start := time.Now()
		cfg := newConfig(base.DiffIDs, containerConfig{Env: base.Env, Labels: base.Labels}, "hlsbench images build: debootstrap "+o.Suite)
		ids, err := load(ctx, cli, []loadImage{{Ref: BaseRef, Config: cfg}}, map[string]layerFile{rf.layer.DiffID: rf.layer})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", BaseRef, err)
		}
		base.ID = ids[0]
		logf(o.Progress, "load %s (%.19s, %s layer): %s", BaseRef, base.ID, mib(int(rf.layer.Size)), secs(time.Since(start)))
		baseBuilt = Built{Ref: BaseRef, ID: base.ID}
	}
	versions := packageLabels(base.Labels)
	out := []Built{baseBuilt}
	var todo []loadImage
	var todoBuilt []Built
	for _, n := range o.Engines {
		e := engines[n]
		v, ok := versions[e.VersionPackage]
		if !ok {
			return out, &OptionError{Option: "Force", Do: "rebuild it", Err: fmt.Errorf("%s: %s records no version of %s", n, BaseRef, e.VersionPackage)}
		}
		ref, err := e.Ref(v)
		if err != nil {
			return out, err
		}
		ii, ok, err := inspect(ctx, cli, ref)
		if err != nil {
			return out, err
		}
		if ok && labels(ii)[LabelBase] == base.ID && labels(ii)[LabelInputs] == inputs && labels(ii)[LabelPackageVersion] == v {
			logf(o.Progress, "%s up to date (%.19s)", ref, ii.ID)
			out = append(out, Built{Ref: ref, ID: ii.ID, UpToDate: true, PackageVersion: v})
			continue
		}
		if ok {
			replaced = append([]string{ii.ID}, replaced...)
		}
		lab := maps.Clone(base.Labels)
		lab[LabelEngine], lab[LabelPackageVersion], lab[LabelBase] = n, v, base.ID
		todo = append(todo, loadImage{Ref: ref, Config: newConfig(base.DiffIDs, containerConfig{Env: base.Env, Labels: lab}, "hlsbench images build: "+ref)})
		todoBuilt = append(todoBuilt, Built{Ref: ref, PackageVersion: v})
	}
	if len(todo) > 0 {
		// The engines' images share the base's layer, which the daemon
		// has: only their configurations are sent.
		start := time.Now()
		ids, err := load(ctx, cli, todo, nil)
		if err != nil {
			return out, err
		}
		for i := range todoBuilt {
			todoBuilt[i].ID = ids[i]
			logf(o.Progress, "%s (%.19s)", todoBuilt[i].Ref, ids[i])
		}
		logf(o.Progress, "load %d engine images: %s", len(todo), secs(time.Since(start)))
		out = append(out, todoBuilt...)
	}
	removeReplaced(ctx, cli, replaced, o.Progress)
	return out, nil
}

// pinsOf reads "name=version" items.
func pinsOf(items []string) map[string]string {
	m := map[string]string{}
	for _, it := range items {
		if n, v, ok := strings.Cut(it, "="); ok {
			m[n] = v
		}
	}
	return m
}

// pinDiff lists how got differs from want: "name want → got", "name
// (new)", "name (gone)", in name order.
func pinDiff(want, got map[string]string) []string {
	var out []string
	for _, n := range slices.Sorted(maps.Keys(want)) {
		switch g, ok := got[n]; {
		case !ok:
			out = append(out, n+" (gone)")
		case g != want[n]:
			out = append(out, n+" "+want[n]+" → "+g)
		}
	}
	for _, n := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[n]; !ok {
			out = append(out, n+" (new)")
		}
	}
	return out
}

// pathEnv is the images' PATH.
const pathEnv = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// baseImage is what an engine's image is made from: the base's ID, layers,
// environment and labels.
type baseImage struct {
	ID      string
	DiffIDs []string
	Env     []string
	Labels  map[string]string
}

// baseLabels are the base's labels: ours, its inputs, the engines'
// package versions and every package installed.
func baseLabels(inputs string, versions map[string]string, packages []string) map[string]string {
	lab := map[string]string{LabelOwner: "1", LabelInputs: inputs, LabelSource: "debootstrap", LabelPackages: strings.Join(packages, " ")}
	for p, v := range versions {
		lab[LabelPackagePrefix+p] = v
	}
	return lab
}

// labelImage makes ref: from, with labels added (a build with no layer of
// its own: it shares from's).
func labelImage(ctx context.Context, cli *client.Client, from, ref string, lab map[string]string) (string, error) {
	ctxTar, err := tarContext(map[string][]byte{"Dockerfile": []byte("FROM " + from + "\n")}, nil)
	if err != nil {
		return "", err
	}
	return buildImage(ctx, cli, ctxTar, build.ImageBuildOptions{Tags: []string{ref}, Labels: lab})
}

// packageLabels returns the package versions the base's labels record.
func packageLabels(lab map[string]string) map[string]string {
	vs := map[string]string{}
	for k, v := range lab {
		if p, ok := strings.CutPrefix(k, LabelPackagePrefix); ok {
			vs[p] = v
		}
	}
	return vs
}

// rootfs is a root filesystem written and packed: its layer, the engines'
// package versions and every package installed.
type rootfs struct {
	layer    layerFile
	versions map[string]string
	packages []string
}

// buildRootfs writes the root filesystem and packs it as a layer whose
// every file time is Epoch (in o.TempDir: remove it with removeLayer).
func buildRootfs(ctx context.Context, o BaseOptions, pin map[string]string) (_ rootfs, err error) {
	if os.Geteuid() != 0 {
		return rootfs{}, errors.New("building the base image needs root (debootstrap and chroot)")
	}
	debootstrap, err := exec.LookPath("debootstrap")
	if err != nil {
		return rootfs{}, errors.New("debootstrap not found: apt-get install debootstrap")
	}
	tmp, err := os.MkdirTemp(o.TempDir, "hlsbench-rootfs-")
	if err != nil {
		return rootfs{}, fmt.Errorf("root filesystem directory: %w", err)
	}
	defer func() {
		if rerr := removeRootfs(tmp); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}()
	root := filepath.Join(tmp, "root")

	start := time.Now()
	logf(o.Progress, "debootstrap --variant=minbase %s from %s …", o.Suite, o.Mirror)
	if err := runLogged(ctx, o.Log, "", exec.Command(debootstrap, "--variant=minbase", o.Suite, root, o.Mirror)); err != nil {
		return rootfs{}, fmt.Errorf("debootstrap %s: %w", o.Suite, err)
	}
	logf(o.Progress, "debootstrap: %s", secs(time.Since(start)))

	start = time.Now()
	if err := prepareRootfs(root, o); err != nil {
		return rootfs{}, err
	}
	pkgs := slices.Clone(o.Packages)
	asked := slices.Clone(pkgs)
	for i, p := range asked {
		if v, ok := pin[p]; ok {
			asked[i] = p + "=" + v
		}
	}
	script := "set -e; apt-get update -qq; apt-get install -y -qq --no-install-recommends " + strings.Join(asked, " ") +
		"; apt-get clean; rm -rf /var/lib/apt/lists/*"
	logf(o.Progress, "apt-get install %s …", strings.Join(asked, " "))
	if err := runLogged(ctx, o.Log, root, exec.Command("/bin/sh", "-c", script)); err != nil {
		err = fmt.Errorf("install %s in the root filesystem: %w", strings.Join(asked, " "), err)
		if pin != nil {
			err = &OptionError{Option: "Update", Do: "take the mirror's current versions", Err: fmt.Errorf("%w\n(pinned to the versions the image it replaces recorded)", err)}
		}
		return rootfs{}, err
	}
	var rf rootfs
	if rf.versions, err = dpkgVersions(ctx, root, pkgs, o); err != nil {
		return rootfs{}, err
	}
	if rf.packages, err = installedPackages(ctx, root, o); err != nil {
		return rootfs{}, err
	}
	if pin != nil {
		if diff := pinDiff(pin, pinsOf(rf.packages)); len(diff) > 0 {
			return rootfs{}, &OptionError{Option: "Update", Do: "build with the mirror's current versions (the image records them)",
				Err: fmt.Errorf("the mirror's packages are not the ones %s recorded: %s", BaseRef, strings.Join(diff, ", "))}
		}
	}
	if err := scrubRootfs(root); err != nil {
		return rootfs{}, err
	}
	logf(o.Progress, "apt-get install: %s", secs(time.Since(start)))

	start = time.Now()
	rf.layer, err = writeLayer(o.TempDir, func(w io.Writer) error {
		return tarDir(w, root, func(rel string) bool {
			return rel == "proc" || rel == "sys" || rel == "tmp" || rel == "var/tmp"
		}, Epoch)
	})
	if err != nil {
		return rootfs{}, err
	}
	logf(o.Progress, "layer %.19s (%s): %s", rf.layer.DiffID, mib(int(rf.layer.Size)), secs(time.Since(start)))
	return rf, nil
}

// prepareRootfs points apt at the suite with its updates and security
// updates, and keeps package scripts from starting services.
func prepareRootfs(root string, o BaseOptions) error {
	files := []struct {
		name string
		data string
		mode os.FileMode
	}{
		{"etc/apt/sources.list", o.sourcesList(), 0o644},
		// As in Debian's own container images: an image starts what its
		// container's command says, nothing else.
		{"usr/sbin/policy-rc.d", "#!/bin/sh\nexit 101\n", 0o755},
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(root, f.name), []byte(f.data), f.mode); err != nil {
			return fmt.Errorf("root filesystem: %w", err)
		}
	}
	// apt-get needs a resolver; debootstrap copied the host's.
	if _, err := os.Stat(filepath.Join(root, "etc/resolv.conf")); err != nil {
		data, err := os.ReadFile("/etc/resolv.conf")
		if err != nil {
			return fmt.Errorf("root filesystem: %w", err)
		}
		if err := os.WriteFile(filepath.Join(root, "etc/resolv.conf"), data, 0o644); err != nil {
			return fmt.Errorf("root filesystem: %w", err)
		}
	}
	return nil
}

// scrubRootfs removes what of this host debootstrap copied in (Docker
// gives each container its own resolv.conf and hostname) and what differs
// from one build to the next: logs of the build, the backups and caches
// package tools leave, and random secrets a package's script made
// (Varnish's management secret: hlsbench gives varnishd its own).
func scrubRootfs(root string) error {
	for _, name := range []string{"etc/resolv.conf", "etc/hostname", "etc/machine-id"} {
		p := filepath.Join(root, name)
		if _, err := os.Lstat(p); errors.Is(err, os.ErrNotExist) && name == "etc/machine-id" {
			continue
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			return fmt.Errorf("root filesystem: %w", err)
		}
	}
	var gone []string
	for _, pattern := range []string{"var/log/*.log", "var/log/apt/*", "var/cache/debconf/*-old", "var/lib/dpkg/*-old",
		"var/cache/ldconfig/aux-cache", "etc/varnish/secret", "var/cache/apt/*.bin", "var/lib/apt/lists/*"} {
		m, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			return err
		}
		gone = append(gone, m...)
	}
	for _, p := range gone {
		if err := os.RemoveAll(p); err != nil {
			return fmt.Errorf("root filesystem: %w", err)
		}
	}
	return nil
}

// dpkgVersions asks the root filesystem's dpkg for the engines' versions.
func dpkgVersions(ctx context.Context, root string, pkgs []string, o BaseOptions) (map[string]string, error) {
	want := slices.Clone(pkgs)
	for _, n := range EngineNames() {
		if p := engines[n].VersionPackage; slices.Contains(pkgs, engines[n].Package) && !slices.Contains(want, p) {
			want = append(want, p)
		}
	}
	var out bytes.Buffer
	cmd := exec.Command("/usr/bin/dpkg-query", append([]string{"-W", "-f=${Package} ${Version}\\n"}, want...)...)
	cmd.Stdout = &out
	if err := runLogged(ctx, o.Log, root, cmd); err != nil {
		return nil, fmt.Errorf("read the package versions: %w", err)
	}
	vs := map[string]string{}
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		if p, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), " "); ok && v != "" {
			vs[p] = v
		}
	}
	for _, p := range want {
		if vs[p] == "" {
			return nil, fmt.Errorf("read the package versions: %s is not installed", p)
		}
	}
	return vs, nil
}

// PackagesFile is where a debootstrapped image lists its packages, as
// LabelPackages does: "name=version", one per line.
const PackagesFile = "usr/share/hlsbench/packages"

// installedPackages lists every package installed in the root filesystem,
// "name=version" sorted, and writes the list to PackagesFile there.
func installedPackages(ctx context.Context, root string, o BaseOptions) ([]string, error) {
	var out bytes.Buffer
	cmd := exec.Command("/usr/bin/dpkg-query", "-W", "-f=${db:Status-Abbrev} ${Package}=${Version}\\n")
	cmd.Stdout = &out
	if err := runLogged(ctx, o.Log, root, cmd); err != nil {
		return nil, fmt.Errorf("list the installed packages: %w", err)
	}
	var all []string
	for _, line := range strings.Split(out.String(), "\n") {
		// "ii  name=version": installed; removed packages' leftovers
		// ("rc") are not.
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == "ii" {
			all = append(all, f[1])
		}
	}
	sort.Strings(all)
	p := filepath.Join(root, PackagesFile)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, fmt.Errorf("root filesystem: %w", err)
	}
	if err := os.WriteFile(p, []byte(strings.Join(all, "\n")+"\n"), 0o644); err != nil {
		return nil, fmt.Errorf("root filesystem: %w", err)
	}
	return all, nil
}

// runLogged runs cmd (chrooted to root unless it is "") with a plain
// environment, its output to log (and, when it fails, the tail of it in
// the error). Cancelling ctx stops its whole process group: debootstrap
// is a shell script with children, and its trap unmounts what it mounted
// when given SIGTERM, so it has 10 s before SIGKILL.
func runLogged(ctx context.Context, log io.Writer, root string, cmd *exec.Cmd) error {
	cmd.Env = []string{pathEnv, "LC_ALL=C", "DEBIAN_FRONTEND=noninteractive", "HOME=/root",
		"SOURCE_DATE_EPOCH=" + strconv.FormatInt(Epoch.Unix(), 10)}
	if root != "" {
		cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root}
		cmd.Dir = "/"
	}
	return procgroup.Run(ctx, cmd, procgroup.Options{Grace: 10 * time.Second, TailBytes: 4 << 10, Log: log})
}

// removeRootfs unmounts whatever is still mounted under dir (a killed
// debootstrap leaves its /proc mounted), deepest first, and only then
// removes dir: RemoveAll would go down into a mount.
func removeRootfs(dir string) error {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return fmt.Errorf("remove %s: %w", dir, err)
	}
	var mounts []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
			mounts = append(mounts, f[4])
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(mounts)))
	for _, m := range mounts {
		if err := unix.Unmount(m, unix.MNT_DETACH); err != nil {
			return fmt.Errorf("remove %s: unmount %s: %w (left in place)", dir, m, err)
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove %s: %w", dir, err)
	}
	return nil
}
