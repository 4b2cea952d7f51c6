package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/docker/docker/client"

	"github.com/hlsbench/hlsbench/engines/images"
	"github.com/hlsbench/hlsbench/engines/launch"
	"github.com/hlsbench/hlsbench/engines/runstate"
)

// parseImages reads --image NAME=REF flags (NAME an engine or hlsbench).
func parseImages(flags []string, engineNames []string) (map[string]string, error) {
	m := map[string]string{}
	for _, f := range flags {
		name, ref, ok := strings.Cut(f, "=")
		if !ok || name == "" || ref == "" {
			return nil, usagef("--image %q: want NAME=IMAGE, e.g. varnish=varnish:7.1 or hlsbench=hlsbench/hlsbench:dev", f)
		}
		if name != "hlsbench" && !slices.Contains(engineNames, name) {
			return nil, usagef("--image %s: %s is not an engine of this run (%s) nor hlsbench", f, name, strings.Join(engineNames, ", "))
		}
		m[name] = ref
	}
	return m, nil
}

// dockerImages connects to the daemon and finds an image for each engine
// and for hlsbench itself (the origin and the built-in cache): the --image
// given, else the newest `hlsbench images build` made.
func dockerImages(ctx context.Context, engineNames []string, given map[string]string, version string) (*client.Client, map[string]string, error) {
	cli, err := launch.Connect(ctx, 2*time.Second)
	if err != nil {
		return nil, nil, err
	}
	built, err := images.List(ctx, cli)
	if err != nil {
		cli.Close()
		return nil, nil, fmt.Errorf("docker: %w", err)
	}
	refs := map[string]string{}
	for _, name := range append([]string{"hlsbench"}, engineNames...) {
		if name == "builtin" || name == "external" {
			continue
		}
		if ref, ok := given[name]; ok {
			if _, err := cli.ImageInspect(ctx, ref); err != nil {
				cli.Close()
				return nil, nil, usagef("--image %s=%s: %v", name, ref, err)
			}
			refs[name] = ref
			continue
		}
		ref := imageFor(built, name, version)
		if ref == "" {
			cli.Close()
			what, hint := "no image for "+name, "hlsbench images build --engine "+name
			if name == "hlsbench" {
				what, hint = "no image of hlsbench "+version+" (it runs the origin and the built-in cache)", "hlsbench images build --self"
			}
			return nil, nil, fmt.Errorf("--runtime docker: %s: build it with `%s`, or give --image %s=IMAGE", what, hint, name)
		}
		refs[name] = ref
	}
	return cli, refs, nil
}

// imageFor is the newest image `hlsbench images build` made for name (an
// engine, or hlsbench of version), by its tag; not a Dockerfile build.
func imageFor(built []images.Image, name, version string) string {
	var best string
	var created time.Time
	for _, im := range built {
		ours := im.Engine == name
		if name == "hlsbench" {
			ours = im.Source == "self" && im.Version == version
		}
		if !ours || im.Source == "dockerfile" {
			continue
		}
		for _, t := range im.Tags {
			if !strings.HasSuffix(t, ":dockerfile") && (best == "" || im.Created.After(created)) {
				best, created = t, im.Created
			}
		}
	}
	return best
}

// sweepContainers removes the containers of the dead runs a sweep found:
// what a killed run left. Containers of any other run (alive, or another
// runtime directory's) are left alone. No daemon answering within a second
// is no error: there is nothing of ours to find.
func sweepContainers(ctx context.Context, stderr io.Writer, sw runstate.Swept, dryRun bool) {
	if len(sw.Dead) == 0 {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	cli, err := launch.Connect(cctx, time.Second)
	if err != nil {
		return
	}
	defer cli.Close()
	runs, err := launch.Runs(cctx, cli)
	if err != nil {
		fmt.Fprintf(stderr, "hlsbench: %v\n", err)
		return
	}
	for _, d := range sw.Dead {
		ids := runs[d.Run]
		if len(ids) == 0 {
			continue
		}
		if dryRun {
			fmt.Fprintf(stderr, "hlsbench: a killed run left %d containers (run %s) (--dry-run: nothing removed)\n", len(ids), d.Run)
			continue
		}
		removed, err := launch.Remove(ctx, cli, d.Run)
		if len(removed) > 0 {
			fmt.Fprintf(stderr, "hlsbench: removed the containers a killed run left (run %s): %s\n", d.Run, strings.Join(removed, ", "))
		}
		if err != nil {
			fmt.Fprintf(stderr, "hlsbench: could not remove all containers of run %s: %v\n", d.Run, err)
		}
	}
}
