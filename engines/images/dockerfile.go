package images

import (
	"context"
	"embed"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/client"
)

// Dockerfiles holds dockerfiles/<engine>/Dockerfile: bookworm-slim plus
// the engine's Debian package, for those with a registry (docker build
// engines/images/dockerfiles/varnish works as it is).
//
//go:embed dockerfiles
var Dockerfiles embed.FS

// DefaultDockerfileBase is the Dockerfiles' BASE when none is given.
const DefaultDockerfileBase = "debian:bookworm-slim"

// Dockerfile returns the engine's Dockerfile.
func Dockerfile(engine string) ([]byte, error) {
	if _, ok := engines[engine]; !ok {
		return nil, fmt.Errorf("no engine %q (engines: %s)", engine, strings.Join(EngineNames(), ", "))
	}
	return Dockerfiles.ReadFile("dockerfiles/" + engine + "/Dockerfile")
}

// DockerfileRef is the name BuildFromDockerfile gives an engine's image:
// not the version's tag, which is BuildBase's.
func DockerfileRef(engine string) string { return Repository + "/" + engine + ":dockerfile" }

// BuildFromDockerfile builds the engine's Dockerfile on base (""
// is DefaultDockerfileBase; hlsbench/base:bookworm needs no registry) as
// DockerfileRef(engine), labelled with the package's Debian version, read
// from the image. apt-get in the build reaches the Debian mirror through
// the host's network: the daemon has no bridge. progress may be nil.
func BuildFromDockerfile(ctx context.Context, cli *client.Client, engine, base string, progress io.Writer) (Built, error) {
	df, err := Dockerfile(engine)
	if err != nil {
		return Built{}, err
	}
	if base == "" {
		base = DefaultDockerfileBase
	}
	e := engines[engine]
	ref := DockerfileRef(engine)
	old, hadOld, err := inspect(ctx, cli, ref)
	if err != nil {
		return Built{}, err
	}
	start := time.Now()
	ctxTar, err := tarContext(map[string][]byte{"Dockerfile": df}, nil)
	if err != nil {
		return Built{}, fmt.Errorf("build %s: %w", ref, err)
	}
	inputs := digest("hlsbench images dockerfile "+BuildVersion, "base "+base, string(df))
	id, err := buildImage(ctx, cli, ctxTar, build.ImageBuildOptions{
		BuildArgs:   map[string]*string{"BASE": &base},
		NetworkMode: "host",
		Labels:      map[string]string{LabelInputs: inputs},
	})
	if err != nil {
		return Built{}, fmt.Errorf("build %s on %s: %w", ref, base, err)
	}
	out, err := RunOnce(ctx, cli, id, []string{"dpkg-query", "-W", "-f=${Version}", e.VersionPackage}, nil)
	if err == nil && out.ExitCode != 0 {
		err = fmt.Errorf("exit status %d: %s", out.ExitCode, strings.TrimSpace(out.Stderr))
	}
	if err != nil {
		return Built{}, fmt.Errorf("build %s: read the version of %s: %w", ref, e.VersionPackage, err)
	}
	v := strings.TrimSpace(out.Stdout)
	id, err = labelImage(ctx, cli, id, ref, map[string]string{LabelPackageVersion: v})
	if err != nil {
		return Built{}, fmt.Errorf("build %s: %w", ref, err)
	}
	logf(progress, "%s on %s (%s %s): %s", ref, base, e.VersionPackage, v, secs(time.Since(start)))
	if hadOld && old.ID != id {
		removeReplaced(ctx, cli, []string{old.ID}, progress)
	}
	return Built{Ref: ref, ID: id, PackageVersion: v}, nil
}
