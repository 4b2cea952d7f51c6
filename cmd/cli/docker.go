package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/hlsbench/hlsbench/engines"
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

// runImages finds in store (the launcher of runtime, a runtime of images)
// an image for each engine and for hlsbench itself (the origin and the
// built-in cache): the --image given, else the newest `hlsbench images
// build` made.
//
// found holds the images of ours among them, by name: a source build's
// says where its binary is and what it was built from.
func runImages(ctx context.Context, store launch.ImageStore, runtime string, sels []engines.Selection, given map[string]string, version string) (refs map[string]string, found map[string]images.Image, err error) {
	built, err := images.List(ctx, store)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", runtime, err)
	}
	refs, found = map[string]string{}, map[string]images.Image{}
	for _, sel := range append([]engines.Selection{{Name: "hlsbench"}}, sels...) {
		// name is the row (the key of refs and found), ref what its image
		// is looked up by.
		name, ref := sel.Row(), sel.Ref()
		if sel.Name == "builtin" || sel.Name == engines.NullName || sel.Name == engines.ExternalName {
			continue
		}
		if ref, ok := given[name]; ok {
			id, err := store.ImageID(ctx, ref)
			if err != nil {
				return nil, nil, usagef("--image %s=%s: %v", name, ref, err)
			}
			refs[name] = ref
			if i := slices.IndexFunc(built, func(im images.Image) bool { return im.ID == id }); i >= 0 {
				found[name] = built[i]
			}
			continue
		}
		im, tag := imageFor(built, ref, version)
		if tag == "" {
			what, hint := "no image for "+ref, "hlsbench images build --engine "+sel.Name
			switch engine, v := sel.Name, sel.Version; {
			case name == "hlsbench":
				what, hint = "no image of hlsbench "+version+" (it runs the origin and the built-in cache)", "hlsbench images build --self"
			case v != "":
				what, hint = "no image of "+engine+" "+v, "hlsbench engines build "+engine+" --source … --runtime docker"
			}
			return nil, nil, fmt.Errorf("--runtime %s: %s: build it with `%s`, or give --image %s=IMAGE", runtime, what, hint, name)
		}
		refs[name], found[name] = tag, im
	}
	return refs, found, nil
}

// imageFor is the image `hlsbench images build` or `engines build` made
// for sel (an engine as selected, or hlsbench of version), and its tag;
// never a Dockerfile build. NAME@VERSION is the image tagged VERSION; a
// bare name the newest packaged engine's image, else the newest build's.
func imageFor(built []images.Image, sel, version string) (images.Image, string) {
	name, want := engines.SplitRef(sel)
	var best images.Image
	var bestTag string
	better := func(im images.Image) bool {
		if bestTag == "" {
			return true
		}
		if want == "" && (im.Source == "build") != (best.Source == "build") {
			return best.Source == "build" // a packaged engine first
		}
		return im.Created.After(best.Created)
	}
	for _, im := range built {
		ours := im.Engine == name
		if name == "hlsbench" {
			ours = im.Source == "self" && im.Version == version
		}
		if !ours || im.Source == "dockerfile" {
			continue
		}
		for _, t := range im.Tags {
			if strings.HasSuffix(t, ":dockerfile") || want != "" && t != images.Repository+"/"+name+":"+want {
				continue
			}
			if better(im) {
				best, bestTag = im, t
			}
		}
	}
	return best, bestTag
}

// sweepLeftovers removes, in every runtime that keeps instances beside
// their processes, those whose run's hlsbench is gone, whatever the state
// files say: each container names the process that created it, and one
// whose creator is not alive in this boot is an orphan (a killed run's,
// one whose state file was removed, one from before a reboot). Containers
// of an older hlsbench, which do not name their creator, go when a sweep
// found their run dead. Live runs' are left alone. A runtime that does not
// answer within a second (no daemon) is no error: the next start, or
// hlsbench clean, reaps them when it does. It returns how many orphans it
// found.
func sweepLeftovers(ctx context.Context, stderr io.Writer, sw runstate.Swept, dryRun bool) int {
	n := 0
	for _, rt := range launch.Runtimes {
		if rt.Leftovers != nil {
			n += sweepRuntime(ctx, stderr, rt, sw, dryRun)
		}
	}
	return n
}

func sweepRuntime(ctx context.Context, stderr io.Writer, rt launch.Runtime, sw runstate.Swept, dryRun bool) int {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	sweeper, err := rt.Leftovers(cctx, time.Second)
	if err != nil {
		return 0
	}
	defer sweeper.Close()
	kind := sweeper.Kind()
	dead := map[string]bool{}
	for _, d := range sw.Dead {
		dead[d.Run] = true
	}
	orphans, err := sweeper.Orphans(cctx, func(run string) bool { return dead[run] })
	if err != nil {
		fmt.Fprintf(stderr, "hlsbench: %v\n", err)
		return 0
	}
	if len(orphans) == 0 {
		return 0
	}
	byRun := map[string][]string{}
	var runs []string
	for _, o := range orphans {
		if byRun[o.Run] == nil {
			runs = append(runs, o.Run)
		}
		byRun[o.Run] = append(byRun[o.Run], o.Name)
	}
	if dryRun {
		for _, run := range runs {
			fmt.Fprintf(stderr, "hlsbench: a run that is gone left %d %s (run %s): %s (--dry-run: nothing removed)\n", len(byRun[run]), kind, run, strings.Join(byRun[run], ", "))
		}
		return len(orphans)
	}
	removed, err := sweeper.RemoveOrphans(ctx, orphans)
	if len(removed) > 0 {
		fmt.Fprintf(stderr, "hlsbench: removed the %s of runs that are gone (%s): %s\n", kind, strings.Join(runs, ", "), strings.Join(removed, ", "))
	}
	if err != nil {
		fmt.Fprintf(stderr, "hlsbench: could not remove every one of the %s of runs that are gone: %v\n", kind, err)
	}
	// Their scratch directories too, which a state file may no longer
	// list (removed by hand, cleared by a reboot).
	var dirs []string
	var errs []error
	for _, o := range orphans {
		for _, d := range o.ScratchDirs() {
			if _, err := os.Lstat(d); err != nil {
				continue
			}
			if err := os.RemoveAll(d); err != nil {
				errs = append(errs, err)
				continue
			}
			dirs = append(dirs, d)
		}
	}
	if len(dirs) > 0 {
		fmt.Fprintf(stderr, "hlsbench: removed their directories: %s\n", strings.Join(dirs, ", "))
	}
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintf(stderr, "hlsbench: could not remove every directory of runs that are gone: %v\n", err)
	}
	return len(orphans)
}

// reapOwn removes whatever instances the run itself still has at its end
// in the runtimes that keep them (a stop that failed, a start cut short):
// none is left behind by a run that ended, whatever happened on the way.
func reapOwn(stderr io.Writer, run string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, rt := range launch.Runtimes {
		if rt.Leftovers == nil {
			continue
		}
		sweeper, err := rt.Leftovers(ctx, time.Second)
		if err != nil {
			continue
		}
		removed, err := sweeper.RemoveRun(ctx, run)
		sweeper.Close()
		if len(removed) > 0 {
			fmt.Fprintf(stderr, "hlsbench: removed the %s this run still had: %s\n", sweeper.Kind(), strings.Join(removed, ", "))
		}
		if err != nil {
			fmt.Fprintf(stderr, "hlsbench: could not remove every one of this run's %s: %v\n", sweeper.Kind(), err)
		}
	}
}
