// Package images makes the Docker images hlsbench runs its engines in, with
// or without a registry, and talks to the Docker daemon through the Engine
// API (never the docker CLI).
//
// BuildBase needs no registry at all: debootstrap writes a Debian bookworm
// root filesystem with the engines' packages, and the daemon imports it as
// hlsbench/base:bookworm, tagged again per engine (hlsbench/varnish:7.1.1).
// BuildSelf puts a static hlsbench binary in an image FROM scratch.
// BuildFromDockerfile builds an engine's Dockerfile (bookworm-slim plus the
// Debian package) for those with a registry, or on the imported base.
//
// Everything made here carries the label org.hlsbench=1; an image also
// carries org.hlsbench.inputs, the digest of what it was made from, so a
// build with the same inputs is skipped.
package images

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/docker/docker/client"

	"github.com/hlsbench/hlsbench/engines/launch"
)

// BuildVersion is the version of the build code: bump it when a change here
// changes what lands in an image, so images built before are rebuilt.
const BuildVersion = "2" // 2: loaded with fixed times, every package recorded

// Labels.
const (
	LabelOwner  = launch.LabelOwner     // "1" on every image and container hlsbench creates
	LabelInputs = "org.hlsbench.inputs" // sha256 of what the image was made from
	LabelEngine = "org.hlsbench.engine" // the engine an image is for
	// LabelPackageVersion is the engine's full Debian version
	// (7.1.1-2+deb12u1); the tag has only the upstream part.
	LabelPackageVersion = "org.hlsbench.package-version"
	// LabelPackagePrefix + package on the base image: that package's Debian
	// version, so an engine's image can be tagged without a rebuild.
	LabelPackagePrefix = "org.hlsbench.package."
	// LabelPackages lists every package installed in a debootstrapped
	// image, "name=version" separated by spaces (also in PackagesFile).
	LabelPackages = "org.hlsbench.packages"
	LabelVersion  = "org.hlsbench.version" // hlsbench's own version, on its image
	LabelSource   = "org.hlsbench.source"  // debootstrap, dockerfile or self
	LabelBase     = "org.hlsbench.base"    // an engine image's base, by ID
	// LabelRun is set by the runtimes on what a run creates (org.hlsbench.run=<run id>).
	LabelRun = "org.hlsbench.run"
)

// Repository is the prefix of every image name made here.
const Repository = "hlsbench"

// Engine is what an engine's image holds.
type Engine struct {
	Name string // varnish
	// Package is the Debian package installed (nginx-light).
	Package string
	// VersionPackage is the package whose version names the image: the one
	// holding Binary (nginx-light is a metapackage over nginx).
	VersionPackage string
	Binary         string   // /usr/sbin/varnishd
	VersionArgs    []string // prints the version: varnishd -V
	// Modules are packages of the engine's modules hlsbench may load
	// (NGINX's purge for purge-stampede).
	Modules []string
}

// engines is every engine with an image, by name.
var engines = map[string]Engine{
	"varnish": {Name: "varnish", Package: "varnish", VersionPackage: "varnish", Binary: "/usr/sbin/varnishd", VersionArgs: []string{"-V"}},
	"nginx": {Name: "nginx", Package: "nginx-light", VersionPackage: "nginx", Binary: "/usr/sbin/nginx", VersionArgs: []string{"-v"},
		Modules: []string{"libnginx-mod-http-cache-purge"}},
	"hitch":   {Name: "hitch", Package: "hitch", VersionPackage: "hitch", Binary: "/usr/sbin/hitch", VersionArgs: []string{"--version"}},
	"haproxy": {Name: "haproxy", Package: "haproxy", VersionPackage: "haproxy", Binary: "/usr/sbin/haproxy", VersionArgs: []string{"-v"}},
}

// EngineNames are the engines with an image, sorted.
func EngineNames() []string {
	names := make([]string, 0, len(engines))
	for n := range engines {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// LookupEngine returns the engine called name.
func LookupEngine(name string) (Engine, bool) {
	e, ok := engines[name]
	return e, ok
}

// Ref is an engine image's name: hlsbench/varnish:7.1.1 for the Debian
// version 7.1.1-2+deb12u1.
func (e Engine) Ref(debVersion string) (string, error) {
	tag, err := Tag(debVersion)
	if err != nil {
		return "", fmt.Errorf("%s: %w", e.Name, err)
	}
	return Repository + "/" + e.Name + ":" + tag, nil
}

// Tag turns a Debian version into an image tag: the upstream version alone,
// without the epoch (1:), the Debian revision (-2+deb12u1) or a repack
// suffix (+dfsg, ~rc1); anything a tag cannot hold becomes '_'.
func Tag(debVersion string) (string, error) {
	v := strings.TrimSpace(debVersion)
	if i := strings.IndexByte(v, ':'); i >= 0 {
		v = v[i+1:]
	}
	if i := strings.LastIndexByte(v, '-'); i >= 0 {
		v = v[:i]
	}
	if i := strings.IndexAny(v, "+~"); i >= 0 {
		v = v[:i]
	}
	if v == "" {
		return "", fmt.Errorf("no upstream version in Debian version %q", debVersion)
	}
	return sanitizeTag(v)
}

// sanitizeTag makes s a valid tag: what a tag cannot hold becomes '_'.
func sanitizeTag(s string) (string, error) {
	if s == "" {
		return "", errors.New("empty tag")
	}
	b := []byte(s)
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-'
		if !ok {
			b[i] = '_'
		}
	}
	if b[0] == '.' || b[0] == '-' {
		b = append([]byte{'v'}, b...)
	}
	if len(b) > 128 {
		b = b[:128]
	}
	return string(b), nil
}

// digest is the hex sha256 of parts, each on its own line.
func digest(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		io.WriteString(h, p)
		io.WriteString(h, "\n")
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ErrNoDaemon is wrapped by Connect's error when no Docker daemon answers.
var ErrNoDaemon = launch.ErrNoDaemon

// DefaultConnectTimeout bounds Connect's ping: without a daemon hlsbench
// says so at once instead of hanging.
const DefaultConnectTimeout = 2 * time.Second

// StartHint says how to start a daemon the way hlsbench wants it.
const StartHint = launch.StartHint

// Connect returns a client of the daemon at DOCKER_HOST (launch.Connect,
// within DefaultConnectTimeout). Close the client when done.
func Connect(ctx context.Context) (*client.Client, error) {
	return launch.Connect(ctx, DefaultConnectTimeout)
}

// Image is an image made by hlsbench, as List reports it.
type Image struct {
	ID      string
	Tags    []string // hlsbench/varnish:7.1.1; none for an image a rebuild replaced
	Size    int64    // bytes
	Created time.Time
	Inputs  string // LabelInputs
	Engine  string // LabelEngine, "" for the base and hlsbench's own
	// PackageVersion is the engine's Debian version; Version hlsbench's.
	PackageVersion string
	Version        string
	Source         string // LabelSource
	// Daemon, Commit and SourceSHA256 are a source build's (Source
	// "build"): where its varnishd is, and what it was built from.
	Daemon, Commit, SourceSHA256 string
	// Packages are every package a debootstrapped image holds,
	// "name=version", sorted (LabelPackages); nil for other images.
	Packages []string
}

// List returns the images labelled by hlsbench, sorted by their first tag.
func List(ctx context.Context, store launch.ImageStore) ([]Image, error) {
	sums, err := store.Images(ctx, LabelOwner+"=1")
	if err != nil {
		return nil, err
	}
	out := make([]Image, 0, len(sums))
	for _, s := range sums {
		tags := slices.Clone(s.Tags)
		sort.Strings(tags)
		out = append(out, Image{
			ID: s.ID, Tags: tags, Size: s.Size, Created: s.Created,
			Inputs: s.Labels[LabelInputs], Engine: s.Labels[LabelEngine],
			PackageVersion: s.Labels[LabelPackageVersion], Version: s.Labels[LabelVersion], Source: s.Labels[LabelSource],
			Daemon: s.Labels[LabelDaemon], Commit: s.Labels[LabelCommit], SourceSHA256: s.Labels[LabelSourceSHA256],
			Packages: strings.Fields(s.Labels[LabelPackages]),
		})
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if (len(a.Tags) == 0) != (len(b.Tags) == 0) {
			return len(a.Tags) > 0
		}
		if len(a.Tags) > 0 && a.Tags[0] != b.Tags[0] {
			return a.Tags[0] < b.Tags[0]
		}
		return a.Created.After(b.Created)
	})
	return out, nil
}

// Built is one image a build made or found up to date.
type Built struct {
	Ref      string // hlsbench/varnish:7.1.1
	ID       string
	UpToDate bool // already there with the same inputs: not rebuilt
	// PackageVersion is an engine's full Debian version.
	PackageVersion string
}

// logf writes one progress line.
func logf(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, "images: "+format+"\n", args...)
	}
}

// secs formats a duration for a progress line.
func secs(d time.Duration) string { return fmt.Sprintf("%.1fs", d.Seconds()) }
