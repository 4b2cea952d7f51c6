package images

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"

	"github.com/hlsbench/hlsbench/engines/launch"
)

// The tests below need a Docker daemon (and, for the base, root and
// debootstrap). Without one they skip, saying what is missing; under
// CI=true they fail instead, so CI cannot pass by skipping them.

// testLabel marks the containers these tests create.
const testLabel = "org.hlsbench.test"

// need skips the test, or fails it under CI=true.
func need(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true: "+format, args...)
	}
	t.Skipf(format, args...)
}

// docker returns a client of the daemon, and checks at the end of the
// test that none of this package's containers (labelled testLabel) is left.
// Other packages' tests may run containers meanwhile: they are theirs.
func docker(t *testing.T) *client.Client {
	t.Helper()
	cli, err := Connect(context.Background())
	if err != nil {
		need(t, "%v", err)
	}
	t.Cleanup(func() {
		defer cli.Close()
		left, err := cli.ContainerList(context.Background(), container.ListOptions{All: true,
			Filters: filters.NewArgs(filters.Arg("label", LabelOwner+"=1"), filters.Arg("label", testLabel))})
		if err != nil {
			t.Errorf("list containers: %v", err)
		}
		for _, c := range left {
			t.Errorf("container %.12s (%s, %v) left behind", c.ID, c.Image, c.Labels)
		}
	})
	return cli
}

// base is the one BuildBase of this test binary (about a minute), shared
// by the tests that need the engines' images.
var base struct {
	once     sync.Once
	built    []Built
	err      error
	took     time.Duration
	progress bytes.Buffer
}

func buildBase(t *testing.T, cli *client.Client) []Built {
	t.Helper()
	if os.Geteuid() != 0 {
		need(t, "building the base image needs root (debootstrap, chroot)")
	}
	if _, err := exec.LookPath("debootstrap"); err != nil {
		need(t, "no debootstrap (apt-get install debootstrap)")
	}
	base.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		start := time.Now()
		base.built, base.err = BuildBase(ctx, cli, BaseOptions{Progress: &base.progress})
		base.took = time.Since(start)
	})
	t.Logf("BuildBase (%s):\n%s", base.took.Round(time.Millisecond), base.progress.String())
	if base.err != nil {
		t.Fatalf("BuildBase: %v", base.err)
	}
	return base.built
}

func TestBuildBase(t *testing.T) {
	cli := docker(t)
	built := buildBase(t, cli)
	if len(built) != 1+len(EngineNames()) || built[0].Ref != BaseRef {
		t.Fatalf("built %+v", built)
	}
	list, err := List(context.Background(), launch.Docker{Client: cli})
	if err != nil {
		t.Fatal(err)
	}
	tagged := map[string]Image{}
	for _, im := range list {
		for _, tag := range im.Tags {
			tagged[tag] = im
		}
	}
	resolved, err := BaseOptions{}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	inputs := resolved.Inputs()
	for _, b := range built {
		im, ok := tagged[b.Ref]
		if !ok {
			t.Errorf("%s: not listed", b.Ref)
			continue
		}
		if im.ID != b.ID || im.Inputs != inputs || im.Size == 0 {
			t.Errorf("%s: listed as %+v, built %+v", b.Ref, im, b)
		}
		if !slices.ContainsFunc(im.Packages, func(p string) bool { return strings.HasPrefix(p, "libc6=") }) ||
			!slices.ContainsFunc(im.Packages, func(p string) bool { return strings.HasPrefix(p, "varnish=") }) {
			t.Errorf("%s: its packages do not list libc6 and varnish: %v", b.Ref, im.Packages)
		}
		if b.Ref != BaseRef {
			e, _ := LookupEngine(im.Engine)
			if ref, _ := e.Ref(im.PackageVersion); ref != b.Ref || im.PackageVersion != b.PackageVersion {
				t.Errorf("%s: engine %q, package version %q", b.Ref, im.Engine, im.PackageVersion)
			}
		}
	}
}

// TestEngineVersions runs each engine's version command in a container of
// its image: the version it prints is the tag's.
func TestEngineVersions(t *testing.T) {
	cli := docker(t)
	built := buildBase(t, cli)
	for _, b := range built[1:] {
		name := strings.TrimPrefix(b.Ref[:strings.IndexByte(b.Ref, ':')], Repository+"/")
		e, _ := LookupEngine(name)
		tag := b.Ref[strings.IndexByte(b.Ref, ':')+1:]
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		out, err := RunOnce(ctx, cli, b.Ref, append([]string{e.Binary}, e.VersionArgs...), map[string]string{testLabel: t.Name()})
		cancel()
		if err != nil {
			t.Errorf("%s: %v", b.Ref, err)
			continue
		}
		text := out.Stdout + out.Stderr
		t.Logf("%s: %s %s: exit %d: %s", b.Ref, e.Binary, strings.Join(e.VersionArgs, " "), out.ExitCode, strings.TrimSpace(text))
		if out.ExitCode != 0 || !strings.Contains(text, tag) {
			t.Errorf("%s: exit %d, want the version %s in %q", b.Ref, out.ExitCode, tag, text)
		}
	}
}

func TestBuildBaseUpToDate(t *testing.T) {
	cli := docker(t)
	first := buildBase(t, cli)
	var progress bytes.Buffer
	start := time.Now()
	again, err := BuildBase(context.Background(), cli, BaseOptions{Progress: &progress})
	took := time.Since(start)
	t.Logf("second BuildBase (%s):\n%s", took.Round(time.Millisecond), progress.String())
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != len(first) {
		t.Fatalf("second build: %+v", again)
	}
	for i, b := range again {
		if !b.UpToDate || b.ID != first[i].ID {
			t.Errorf("%s: rebuilt (%+v, first %+v)", b.Ref, b, first[i])
		}
	}
	if strings.Count(progress.String(), "up to date") != len(again) {
		t.Errorf("progress does not say up to date for each image")
	}
	if took > 10*time.Second {
		t.Errorf("an up-to-date build took %s", took)
	}
}

// A rebuild of the same inputs, pinned to the versions the images
// recorded, gives the same image IDs: nothing of the day or of the
// machine's clock gets in.
func TestBuildBaseReproducible(t *testing.T) {
	cli := docker(t)
	first := buildBase(t, cli)
	var progress bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	again, err := BuildBase(ctx, cli, BaseOptions{Force: true, Progress: &progress})
	t.Logf("rebuild:\n%s", progress.String())
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != len(first) {
		t.Fatalf("rebuild: %+v", again)
	}
	for i, b := range again {
		if b.ID != first[i].ID || b.Ref != first[i].Ref {
			t.Errorf("%s: %.19s rebuilt, %.19s first: the same inputs gave another image", b.Ref, b.ID, first[i].ID)
		}
	}
	out, err := RunOnce(ctx, cli, BaseRef, []string{"cat", "/" + PackagesFile}, map[string]string{testLabel: t.Name()})
	if err != nil || out.ExitCode != 0 || !strings.Contains(out.Stdout, "\nlibc6=") {
		t.Errorf("%s in the image: %v %q %q", PackagesFile, err, out.Stdout, out.Stderr)
	}
}

func TestBuildSelf(t *testing.T) {
	cli := docker(t)
	if _, err := exec.LookPath("go"); err != nil {
		need(t, "no go command to build hlsbench with")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var progress bytes.Buffer
	b, err := BuildSelf(ctx, cli, SelfOptions{Version: "dev", Progress: &progress})
	t.Logf("BuildSelf:\n%s", progress.String())
	if err != nil {
		t.Fatal(err)
	}
	if b.Ref != SelfRepository+":dev" {
		t.Errorf("ref %s", b.Ref)
	}
	out, err := RunOnce(ctx, cli, b.Ref, []string{"/hlsbench", "--version"}, map[string]string{testLabel: t.Name()})
	if err != nil {
		t.Fatal(err)
	}
	if out.ExitCode != 0 || strings.TrimSpace(out.Stdout) != "hlsbench version dev" {
		t.Errorf("/hlsbench --version: exit %d, %q %q", out.ExitCode, out.Stdout, out.Stderr)
	}
	// The same binary again: up to date. Built here, it is not the same
	// bytes (go build is reproducible, but -trimpath and the cache make
	// that a claim to test elsewhere), so use the image's own binary.
	ii, _, err := cli.ImageInspectWithRaw(ctx, b.Ref)
	if err != nil || ii.Config.Labels[LabelInputs] == "" || ii.Config.Labels[LabelOwner] != "1" {
		t.Errorf("labels of %s: %v %v", b.Ref, ii.Config, err)
	}
	// The same binary, forced to a rebuild: the same image.
	bin := filepath.Join(t.TempDir(), "hlsbench")
	if _, err := goBuild(ctx, "", "dev", bin); err != nil {
		t.Fatal(err)
	}
	x, err := BuildSelf(ctx, cli, SelfOptions{Binary: bin, Version: "repro", Force: true})
	if err != nil {
		t.Fatal(err)
	}
	y, err := BuildSelf(ctx, cli, SelfOptions{Binary: bin, Version: "repro", Force: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.ImageRemove(context.Background(), x.Ref, image.RemoveOptions{}) })
	if x.ID != y.ID {
		t.Errorf("the same binary gave two images: %.19s and %.19s", x.ID, y.ID)
	}
}

// TestBuildFromDockerfile builds the varnish Dockerfile on the imported
// base: no registry, but apt-get reaches the Debian mirror.
func TestBuildFromDockerfile(t *testing.T) {
	cli := docker(t)
	buildBase(t, cli)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var progress bytes.Buffer
	b, err := BuildFromDockerfile(ctx, cli, "varnish", BaseRef, &progress)
	t.Logf("BuildFromDockerfile:\n%s", progress.String())
	if err != nil {
		t.Fatal(err)
	}
	if b.Ref != "hlsbench/varnish:dockerfile" || !strings.HasPrefix(b.PackageVersion, "7.") {
		t.Errorf("built %+v", b)
	}
	out, err := RunOnce(ctx, cli, b.Ref, []string{"varnishd", "-V"}, map[string]string{testLabel: t.Name()})
	if err != nil || out.ExitCode != 0 {
		t.Fatalf("varnishd -V: %v %+v", err, out)
	}
	tag, _ := Tag(b.PackageVersion)
	if !strings.Contains(out.Stderr+out.Stdout, "varnish-"+tag) {
		t.Errorf("varnishd -V: %q, want %s", out.Stderr, tag)
	}
}
