package images

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
	"golang.org/x/sys/unix"
)

// Defaults of BaseOptions: the host's own Debian, so the engines in the
// images are the versions a local install has.
const (
	DefaultSuite          = "bookworm"
	DefaultMirror         = "http://deb.debian.org/debian"
	DefaultSecurityMirror = "http://deb.debian.org/debian-security"
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
	// Suite, Mirror and SecurityMirror: "" is the Default.
	Suite, Mirror, SecurityMirror string
	Packages                      []string // nil: DefaultPackages
	Force                         bool     // rebuild even when up to date
	TempDir                       string   // where the root filesystem is written; "" is os.TempDir
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
	if o.Mirror == "" {
		o.Mirror = DefaultMirror
	}
	if o.SecurityMirror == "" {
		o.SecurityMirror = DefaultSecurityMirror
	}
	if o.Packages == nil {
		o.Packages = DefaultPackages()
	}
	return o
}

// sourcesList is the root filesystem's /etc/apt/sources.list: the suite
// with its updates and security updates, as on the host.
func (o BaseOptions) sourcesList() string {
	return fmt.Sprintf("deb %[1]s %[2]s main\ndeb %[1]s %[2]s-updates main\ndeb %[3]s %[2]s-security main\n",
		o.Mirror, o.Suite, o.SecurityMirror)
}

// Inputs is the digest of what the base is made from: a build with the
// same inputs is skipped. Package versions are not inputs (they are known
// only once installed): --force picks up a new security update.
func (o BaseOptions) Inputs() string {
	o = o.withDefaults()
	pkgs := slices.Clone(o.Packages)
	sort.Strings(pkgs)
	pkgs = slices.Compact(pkgs)
	return digest("hlsbench images base "+BuildVersion, "variant minbase", "suite "+o.Suite,
		o.sourcesList(), "packages "+strings.Join(pkgs, " "))
}

// BuildBase makes BaseRef, a Debian root filesystem written by debootstrap
// with o.Packages installed, imported through the API (no registry), and
// tags it per engine (hlsbench/varnish:7.1.1). Images already there with
// the same inputs are kept. It needs root, debootstrap and the mirrors.
func BuildBase(ctx context.Context, cli *client.Client, o BaseOptions) ([]Built, error) {
	o = o.withDefaults()
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
	base, ok, err := inspect(ctx, cli, BaseRef)
	if err != nil {
		return nil, err
	}
	var replaced []string
	var versions map[string]string
	var baseBuilt Built
	if ok && !o.Force && labels(base)[LabelInputs] == inputs {
		baseBuilt = Built{Ref: BaseRef, ID: base.ID, UpToDate: true}
		versions = packageLabels(labels(base))
		logf(o.Progress, "%s up to date (%.19s)", BaseRef, base.ID)
	} else {
		if ok {
			replaced = append(replaced, base.ID)
		}
		id, vs, err := buildRootfs(ctx, cli, o, inputs)
		if err != nil {
			return nil, err
		}
		baseBuilt, versions = Built{Ref: BaseRef, ID: id}, vs
	}
	out := []Built{baseBuilt}
	for _, n := range o.Engines {
		e := engines[n]
		v, ok := versions[e.VersionPackage]
		if !ok {
			return out, fmt.Errorf("%s: %s records no version of %s (rebuild it with --force)", n, BaseRef, e.VersionPackage)
		}
		ref, err := e.Ref(v)
		if err != nil {
			return out, err
		}
		ii, ok, err := inspect(ctx, cli, ref)
		if err != nil {
			return out, err
		}
		if ok && labels(ii)[LabelBase] == baseBuilt.ID && labels(ii)[LabelInputs] == inputs && labels(ii)[LabelPackageVersion] == v {
			logf(o.Progress, "%s up to date (%.19s)", ref, ii.ID)
			out = append(out, Built{Ref: ref, ID: ii.ID, UpToDate: true, PackageVersion: v})
			continue
		}
		if ok {
			replaced = append([]string{ii.ID}, replaced...)
		}
		start := time.Now()
		id, err := labelImage(ctx, cli, BaseRef, ref, map[string]string{
			LabelEngine: n, LabelPackageVersion: v, LabelInputs: inputs, LabelSource: "debootstrap", LabelBase: baseBuilt.ID})
		if err != nil {
			return out, fmt.Errorf("tag %s: %w", ref, err)
		}
		logf(o.Progress, "%s (%s %s): %s", ref, e.VersionPackage, v, secs(time.Since(start)))
		out = append(out, Built{Ref: ref, ID: id, PackageVersion: v})
	}
	removeReplaced(ctx, cli, replaced, o.Progress)
	return out, nil
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

// buildRootfs writes the root filesystem, imports it as BaseRef and
// returns the image's ID and the installed packages' versions.
func buildRootfs(ctx context.Context, cli *client.Client, o BaseOptions, inputs string) (id string, versions map[string]string, err error) {
	if os.Geteuid() != 0 {
		return "", nil, errors.New("building the base image needs root (debootstrap and chroot)")
	}
	debootstrap, err := exec.LookPath("debootstrap")
	if err != nil {
		return "", nil, errors.New("debootstrap not found: apt-get install debootstrap")
	}
	tmp, err := os.MkdirTemp(o.TempDir, "hlsbench-rootfs-")
	if err != nil {
		return "", nil, fmt.Errorf("root filesystem directory: %w", err)
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
		return "", nil, fmt.Errorf("debootstrap %s: %w", o.Suite, err)
	}
	logf(o.Progress, "debootstrap: %s", secs(time.Since(start)))

	start = time.Now()
	if err := prepareRootfs(root, o); err != nil {
		return "", nil, err
	}
	pkgs := slices.Clone(o.Packages)
	script := "set -e; apt-get update -qq; apt-get install -y -qq --no-install-recommends " + strings.Join(pkgs, " ") +
		"; apt-get clean; rm -rf /var/lib/apt/lists/*"
	logf(o.Progress, "apt-get install %s …", strings.Join(pkgs, " "))
	if err := runLogged(ctx, o.Log, root, exec.Command("/bin/sh", "-c", script)); err != nil {
		return "", nil, fmt.Errorf("install %s in the root filesystem: %w", strings.Join(pkgs, " "), err)
	}
	versions, err = dpkgVersions(ctx, root, pkgs, o)
	if err != nil {
		return "", nil, err
	}
	if err := scrubRootfs(root); err != nil {
		return "", nil, err
	}
	logf(o.Progress, "apt-get install: %s", secs(time.Since(start)))

	start = time.Now()
	changes := []string{"ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		fmt.Sprintf("LABEL %s=1", LabelOwner), fmt.Sprintf("LABEL %s=%s", LabelInputs, inputs),
		fmt.Sprintf("LABEL %s=debootstrap", LabelSource)}
	for _, p := range sortedKeys(versions) {
		changes = append(changes, fmt.Sprintf("LABEL %s%s=%s", LabelPackagePrefix, p, versions[p]))
	}
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(tarDir(pw, root, func(rel string) bool {
			return rel == "proc" || rel == "sys" || rel == "tmp" || rel == "var/tmp"
		}))
	}()
	rc, err := cli.ImageImport(ctx, image.ImportSource{Source: pr, SourceName: "-"}, BaseRef,
		image.ImportOptions{Message: "hlsbench images build: debootstrap " + o.Suite, Changes: changes})
	if err != nil {
		pr.CloseWithError(err)
		return "", nil, fmt.Errorf("import %s: %w", BaseRef, err)
	}
	id, err = readStream(rc)
	rc.Close()
	pr.Close()
	if err != nil {
		return "", nil, fmt.Errorf("import %s: %w", BaseRef, err)
	}
	logf(o.Progress, "import %s (%.19s): %s", BaseRef, id, secs(time.Since(start)))
	return id, versions, nil
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

// scrubRootfs removes what of this host debootstrap copied in: Docker
// gives each container its own resolv.conf and hostname.
func scrubRootfs(root string) error {
	for _, name := range []string{"etc/resolv.conf", "etc/hostname"} {
		if err := os.WriteFile(filepath.Join(root, name), nil, 0o644); err != nil {
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

// runLogged runs cmd (chrooted to root unless it is "") with a plain
// environment, its output to log (and, when it fails, the tail of it in
// the error). Cancelling ctx stops its whole process group: debootstrap
// is a shell script with children.
func runLogged(ctx context.Context, log io.Writer, root string, cmd *exec.Cmd) error {
	var tail tailBuffer
	w := io.Writer(&tail)
	if log != nil {
		w = io.MultiWriter(log, &tail)
	}
	if cmd.Stdout == nil {
		cmd.Stdout = w
	}
	cmd.Stderr = w
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C", "DEBIAN_FRONTEND=noninteractive", "HOME=/root"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if root != "" {
		cmd.SysProcAttr.Chroot = root
		cmd.Dir = "/"
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			// debootstrap's trap unmounts what it mounted; SIGKILL after.
			syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			}
		case <-done:
		}
	}()
	err := cmd.Wait()
	close(done)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		if t := strings.TrimSpace(tail.String()); t != "" {
			return fmt.Errorf("%w:\n%s", err, t)
		}
	}
	return err
}

// tailBuffer keeps the last 4 KiB written to it.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 4096 {
		t.b = t.b[len(t.b)-4096:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return string(t.b) }

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
