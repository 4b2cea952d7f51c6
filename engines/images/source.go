package images

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"

	engine "github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/engines/srcbuild"
)

// The labels of a source build's image: its git commit, its source's
// digest and where its daemon is (the same path as on the host).
const (
	LabelCommit       = "org.hlsbench.commit"
	LabelSourceSHA256 = "org.hlsbench.source-sha256"
	LabelDaemon       = "org.hlsbench.daemon"
)

// SourceRef is the image of a source build: hlsbench/vinyl:trunk-27d2ce15b.
func SourceRef(b srcbuild.Build) string { return Repository + "/" + b.Engine + ":" + b.Version }

// BuildFromSource puts a build from srcbuild into an image on the base
// (hlsbench/base:bookworm, which has the build's run-time libraries and the
// C compiler varnishd compiles VCL with), at the same path as on this host:
// its prefix is compiled into it. The build's record comes along, so the
// image names its version and commit. Rebuilt only when the build or the
// base changed (or force).
func BuildFromSource(ctx context.Context, cli *client.Client, b srcbuild.Build, force bool, progress io.Writer) (Built, error) {
	ref := SourceRef(b)
	baseImg, ok, err := inspect(ctx, cli, BaseRef)
	if err != nil {
		return Built{}, err
	}
	if !ok {
		return Built{}, fmt.Errorf("image %s: no %s to build it on: run hlsbench images build first", ref, BaseRef)
	}
	// The daemon is also on PATH under the engine's own binary name
	// (vinyld, varnishd: /usr/local/sbin comes first), so that a command
	// line naming it, as docker-compose.yml does, runs this build.
	e, ok := engine.Lookup(b.Engine)
	if !ok || !filepath.IsAbs(b.Daemon) {
		return Built{}, fmt.Errorf("image %s: engine %q, daemon %q: want a known engine and an absolute path", ref, b.Engine, b.Daemon)
	}
	link := "/usr/local/sbin/" + e.Binary()
	inputs := digest("hlsbench images source "+BuildVersion, "labels 2", "build "+b.Inputs, "base "+baseImg.ID, "link "+link)
	old, hadOld, err := inspect(ctx, cli, ref)
	if err != nil {
		return Built{}, err
	}
	if hadOld && !force && labels(old)[LabelInputs] == inputs {
		logf(progress, "%s: up to date", ref)
		return Built{Ref: ref, ID: old.ID, UpToDate: true, PackageVersion: b.Version}, nil
	}
	start := time.Now()
	var ctxTar bytes.Buffer
	df := fmt.Sprintf("FROM %s\nCOPY build/ %s/\nRUN [\"ln\", \"-sf\", %q, %q]\n", baseImg.ID, b.Dir, b.Daemon, link)
	if err := tarBuildContext(&ctxTar, df, b.Dir); err != nil {
		return Built{}, fmt.Errorf("image %s: %w", ref, err)
	}
	id, err := buildImage(ctx, cli, ctxTar.Bytes(), build.ImageBuildOptions{Tags: []string{ref}, Labels: map[string]string{
		LabelInputs: inputs, LabelEngine: b.Engine, LabelPackageVersion: b.Version, LabelSource: "build",
		LabelBase: baseImg.ID, LabelCommit: b.Commit, LabelSourceSHA256: b.SourceHash, LabelDaemon: b.Daemon,
	}})
	if err != nil {
		return Built{}, fmt.Errorf("image %s: %w", ref, err)
	}
	// Built on this host, it may want what the image lacks (a library, a
	// newer glibc): its daemon must run there before the image is kept.
	out, err := RunOnce(ctx, cli, id, []string{e.Binary(), "-V"}, nil)
	if err == nil && out.ExitCode != 0 {
		err = fmt.Errorf("exit status %d", out.ExitCode)
	}
	if err != nil {
		if _, rerr := cli.ImageRemove(ctx, id, image.RemoveOptions{Force: true, PruneChildren: true}); rerr != nil {
			err = errors.Join(err, fmt.Errorf("remove the image: %w", rerr))
		}
		return Built{}, fmt.Errorf("image %s: %s -V does not run in it (built on this host, it may need a library %s lacks): %w\n%s",
			ref, b.Daemon, BaseRef, err, strings.TrimSpace(out.Stdout+"\n"+out.Stderr))
	}
	logf(progress, "%s (%s, %s of context): %s; in it, %s", ref, filepath.Base(b.Dir), mib(ctxTar.Len()), secs(time.Since(start)),
		firstLine(out.Stdout+out.Stderr))
	if hadOld && old.ID != id {
		removeReplaced(ctx, cli, []string{old.ID}, progress)
	}
	return Built{Ref: ref, ID: id, PackageVersion: b.Version}, nil
}

// tarBuildContext writes a build context of the Dockerfile df and the
// build directory dir under build/ (its log left out).
func tarBuildContext(w io.Writer, df, dir string) error {
	tw := tar.NewWriter(w)
	if err := tw.WriteHeader(&tar.Header{Name: "Dockerfile", Mode: 0o644, Size: int64(len(df)), Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	if _, err := io.WriteString(tw, df); err != nil {
		return err
	}
	if err := writeTree(tw, dir, "build/", nil, func(rel string) bool { return rel == "build.log" }, time.Time{}); err != nil {
		return err
	}
	return tw.Close()
}

func mib(n int) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// firstLine is s's first non-empty line, trimmed.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}
