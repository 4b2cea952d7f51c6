package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/engines/images"
	"github.com/hlsbench/hlsbench/engines/srcbuild"
)

// parseEngines reads --engine: a comma list of NAME or NAME@VERSION (a
// process engine's build: varnish@9.0.2). The selection as given is the
// row's name everywhere results go.
func parseEngines(s string) ([]string, error) {
	var out []string
	known := append([]string{"builtin", engines.NullName, "external"}, engines.ProcessEngines()...)
	for _, sel := range strings.Split(s, ",") {
		sel = strings.TrimSpace(sel)
		name, version := engines.SplitRef(sel)
		switch {
		case !slices.Contains(known, name):
			return nil, usagef("--engine %q: want %s, or NAME@VERSION for a build of one of %s (a comma list runs several)",
				sel, strings.Join(known, ", "), strings.Join(engines.ProcessEngines(), ", "))
		case strings.Contains(sel, "@") && (version == "" || strings.ContainsAny(version, "@/ ")):
			return nil, usagef("--engine %q: want NAME@VERSION, e.g. varnish@9.0.2", sel)
		case version != "" && (name == "builtin" || name == engines.NullName || name == "external"):
			return nil, usagef("--engine %q: %s has no builds to choose from (builtin and null are this hlsbench)", sel, name)
		case slices.Contains(out, sel):
			return nil, usagef("--engine %q: given twice", sel)
		}
		out = append(out, sel)
	}
	if len(out) == 0 {
		return nil, errors.New("--engine: none given")
	}
	return out, nil
}

// resolveBinaries finds the binary of each process engine selected, for
// the process runtime: --binary for the one engine it names; for a bare
// name the binary on PATH, else the newest build (hlsbench engines build);
// for NAME@VERSION the binary on PATH if it is that version, else that
// build. A build's version, commit and source digest go into sources; the
// output says which build a bare name took.
func resolveBinaries(ctx context.Context, stderr io.Writer, sels []string, binaryFlag string) (map[string]string, map[string]engines.Source, error) {
	binaries, sources := map[string]string{}, map[string]engines.Source{}
	if binaryFlag != "" {
		var procs []string
		for _, sel := range sels {
			if _, ok := engineOf(sel); ok {
				procs = append(procs, sel)
			}
		}
		if len(procs) != 1 {
			return nil, nil, usagef("--binary names one engine's binary: give exactly one of %v in --engine", engines.ProcessEngines())
		}
		e, _ := engineOf(procs[0])
		bin, err := engines.FindBinary(e, binaryFlag)
		if err != nil {
			var be *engines.BinaryError
			if errors.As(err, &be) {
				return nil, nil, usagef("--binary %s: %v (want the path of %s's %s, or a name on PATH)", be.Path, be.Err, procs[0], e.Binary())
			}
			return nil, nil, err
		}
		binaries[procs[0]] = bin
		if b, ok := srcbuild.ForBinary("", bin); ok {
			sources[procs[0]] = buildSource(b)
		} else if b, ok := srcbuild.ForPrefixBinary(bin); ok {
			sources[procs[0]] = buildSource(b)
		}
	}
	for _, sel := range sels {
		name, version := engines.SplitRef(sel)
		e, ok := engines.Lookup(name)
		if !ok || binaries[sel] != "" {
			continue
		}
		onPath, pathErr := engines.FindBinary(e, "")
		if version == "" {
			if pathErr == nil {
				continue // found again when it starts
			}
			b, ok := srcbuild.Find("", name, "")
			if !ok {
				return nil, nil, fmt.Errorf("%w (--binary gives its path; hlsbench engines build %s --source … builds one)", pathErr, name)
			}
			fmt.Fprintf(stderr, "hlsbench: %s: no %s on PATH: running the newest build, %s (%s)\n", name, e.Binary(), b.Ref(), b.Daemon)
			binaries[sel], sources[sel] = b.Daemon, buildSource(b)
			continue
		}
		var pathVersion string
		if pathErr == nil {
			if v, ok := e.(engines.Versioner); ok {
				vctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				pathVersion, _ = v.Version(vctx, engines.LocalExec(""), onPath)
				cancel()
			}
			if pathVersion == version {
				binaries[sel] = onPath
				continue
			}
		}
		b, ok := srcbuild.Find("", name, version)
		if !ok {
			return nil, nil, usagef("--engine %s: no %s %s here (%s): build it with hlsbench engines build %s --source …, or give --binary",
				sel, name, version, versionsHere(name, pathVersion), name)
		}
		binaries[sel], sources[sel] = b.Daemon, buildSource(b)
	}
	return binaries, sources, nil
}

// versionsHere says which versions of engine this machine has.
func versionsHere(engine, pathVersion string) string {
	var have []string
	if pathVersion != "" {
		have = append(have, pathVersion+" on PATH")
	}
	builds, _ := srcbuild.List("")
	for _, b := range builds {
		if b.Engine == engine {
			have = append(have, b.Version+" built")
		}
	}
	if len(have) == 0 {
		return "none"
	}
	return strings.Join(have, ", ")
}

// engineOf is the process engine of a selection.
func engineOf(sel string) (engines.Engine, bool) {
	name, _ := engines.SplitRef(sel)
	return engines.Lookup(name)
}

func buildSource(b srcbuild.Build) engines.Source {
	return engines.Source{Version: b.Version, Commit: b.Commit, SHA256: b.SourceHash}
}

// imageSource is what a source build's image says of it (nothing for a
// packaged engine's image).
func imageSource(im images.Image) (daemon string, src engines.Source) {
	if im.Source != "build" {
		return "", engines.Source{}
	}
	return im.Daemon, engines.Source{Version: im.PackageVersion, Commit: im.Commit, SHA256: im.SourceSHA256}
}
