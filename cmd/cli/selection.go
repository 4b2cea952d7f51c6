package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/hlsbench/hlsbench/engines"
	"github.com/hlsbench/hlsbench/engines/images"
	"github.com/hlsbench/hlsbench/engines/srcbuild"
)

// parseEngines reads --engine: a comma list of [LABEL=]NAME[@VERSION]
// (engines.Selection). Each selection's Row() is its name everywhere
// results go.
func parseEngines(s string) ([]engines.Selection, error) {
	sels, err := engines.ParseSelections(s)
	if err != nil {
		return nil, usagef("--engine %v", err)
	}
	return sels, nil
}

// rows are the selections' row names.
func rows(sels []engines.Selection) []string {
	out := make([]string, len(sels))
	for i, s := range sels {
		out[i] = s.Row()
	}
	return out
}

// selectionMap is the selections by row.
func selectionMap(sels []engines.Selection) map[string]engines.Selection {
	m := map[string]engines.Selection{}
	for _, s := range sels {
		m[s.Row()] = s
	}
	return m
}

// parseBinaryFlag reads --binary: one PATH for the run's one process
// engine, or ROW=PATH pairs (a comma list) naming the rows they are for.
func parseBinaryFlag(flag string, sels []engines.Selection) (map[string]string, error) {
	out := map[string]string{}
	if flag == "" {
		return out, nil
	}
	if !strings.Contains(flag, "=") {
		var procs []string
		for _, sel := range sels {
			if _, ok := engines.Lookup(sel.Name); ok {
				procs = append(procs, sel.Row())
			}
		}
		if len(procs) != 1 {
			return nil, usagef("--binary %s: a bare path is the one process engine's binary: give exactly one of %v in --engine, or ROW=PATH for each (base=builtin,head=builtin --binary base=/path/hlsbench-base)", flag, engines.ProcessEngines())
		}
		out[procs[0]] = flag
		return out, nil
	}
	bySel := selectionMap(sels)
	for _, pair := range strings.Split(flag, ",") {
		row, path, ok := strings.Cut(strings.TrimSpace(pair), "=")
		sel, known := bySel[row]
		switch {
		case !ok || row == "" || path == "":
			return nil, usagef("--binary %q: want ROW=PATH (a comma list), ROW an engine of --engine", pair)
		case !known:
			return nil, usagef("--binary %s: %s is not in --engine (%s)", pair, row, strings.Join(rows(sels), ", "))
		case sel.Name == engines.ExternalName:
			return nil, usagef("--binary %s: an external proxy is not hlsbench's to start", pair)
		case out[row] != "":
			return nil, usagef("--binary %s: %s given twice", pair, row)
		}
		out[row] = path
	}
	return out, nil
}

// resolveBinaries finds the binary of each engine selected, for the
// process runtime: --binary's for the rows it names (for builtin and null,
// another hlsbench, whose version it asks); for a bare name the binary on
// PATH, else the newest build (hlsbench engines build); for NAME@VERSION
// the binary on PATH if it is that version, else that build. A build's
// version, commit and source digest go into sources; the output says which
// build a bare name took.
func resolveBinaries(ctx context.Context, stderr io.Writer, sels []engines.Selection, binaryFlag string) (map[string]string, map[string]engines.Source, error) {
	given, err := parseBinaryFlag(binaryFlag, sels)
	if err != nil {
		return nil, nil, err
	}
	binaries, sources := map[string]string{}, map[string]engines.Source{}
	for _, sel := range sels {
		row, path := sel.Row(), given[sel.Row()]
		if path == "" {
			continue
		}
		if sel.Name == "builtin" || sel.Name == engines.NullName {
			bin, version, err := otherHlsbench(ctx, path)
			if err != nil {
				return nil, nil, usagef("--binary %s=%s: %v", row, path, err)
			}
			binaries[row], sources[row] = bin, engines.Source{Version: version}
			continue
		}
		e, _ := engines.Lookup(sel.Name)
		bin, err := engines.FindBinary(e, path)
		if err != nil {
			var be *engines.BinaryError
			if errors.As(err, &be) {
				return nil, nil, usagef("--binary %s: %v (want the path of %s's %s, or a name on PATH)", be.Path, be.Err, row, e.Binary())
			}
			return nil, nil, err
		}
		binaries[row] = bin
		if b, ok := srcbuild.ForBinary("", bin); ok {
			sources[row] = buildSource(b)
		} else if b, ok := srcbuild.ForPrefixBinary(bin); ok {
			sources[row] = buildSource(b)
		}
	}
	for _, sel := range sels {
		row, name, version := sel.Row(), sel.Name, sel.Version
		e, ok := engines.Lookup(name)
		if !ok || binaries[row] != "" {
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
			fmt.Fprintf(stderr, "hlsbench: %s: no %s on PATH: running the newest build, %s (%s)\n", row, e.Binary(), b.Ref(), b.Daemon)
			binaries[row], sources[row] = b.Daemon, buildSource(b)
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
				binaries[row] = onPath
				continue
			}
		}
		b, ok := srcbuild.Find("", name, version)
		if !ok {
			return nil, nil, usagef("--engine %s: no %s %s here (%s): build it with hlsbench engines build %s --source …, or give --binary",
				sel, name, version, versionsHere(name, pathVersion), name)
		}
		binaries[row], sources[row] = b.Daemon, buildSource(b)
	}
	return binaries, sources, nil
}

// otherHlsbench checks that path is an hlsbench binary that runs here and
// returns its absolute path and version ("hlsbench version X" prints X).
func otherHlsbench(ctx context.Context, path string) (string, string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", "", err
	}
	fi, err := os.Stat(abs)
	switch {
	case err != nil:
		return "", "", err
	case fi.IsDir() || fi.Mode()&0o111 == 0:
		return "", "", fmt.Errorf("not an executable file: want another hlsbench binary, e.g. one `make build` made")
	}
	vctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(vctx, abs, "--version").Output()
	version, ok := strings.CutPrefix(strings.TrimSpace(string(out)), "hlsbench version ")
	if err != nil || !ok || version == "" {
		return "", "", fmt.Errorf("%s --version did not say \"hlsbench version …\" (%v): want another hlsbench binary", abs, err)
	}
	return abs, version, nil
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

// parseExternals reads --url and --origin-listen for the external rows of
// --engine: one value each for a single external (external, or
// external@TAG), or TAG=VALUE pairs, a comma list, for several
// (--engine external@a,external@b --url a=URL,b=URL). Both maps are by
// row; empty when no external is selected, and then both flags must be.
func parseExternals(sels []engines.Selection, urlFlag, listenFlag string) (urls, listens map[string]string, err error) {
	var ext []engines.Selection
	for _, s := range sels {
		if s.Name == engines.ExternalName {
			ext = append(ext, s)
		}
	}
	if len(ext) == 0 {
		if urlFlag != "" || listenFlag != "" {
			return nil, nil, usagef("--url and --origin-listen go with --engine external")
		}
		return map[string]string{}, map[string]string{}, nil
	}
	if urlFlag == "" || listenFlag == "" {
		return nil, nil, usagef("--engine external needs --url (the proxy) and --origin-listen (where the proxy fetches from)")
	}
	split := func(flag, value string) (map[string]string, error) {
		out := map[string]string{}
		if len(ext) == 1 && !strings.Contains(value, "=") {
			out[ext[0].Row()] = value
			return out, nil
		}
		tags := map[string]string{} // TAG (or label) → row
		for _, s := range ext {
			tag := s.Version
			if s.Label != "" {
				tag = s.Label
			}
			tags[tag] = s.Row()
		}
		for _, pair := range strings.Split(value, ",") {
			tag, v, ok := strings.Cut(strings.TrimSpace(pair), "=")
			row, known := tags[tag]
			switch {
			case !ok || tag == "" || v == "":
				return nil, usagef("--%s %q: with several external proxies, want TAG=VALUE for each (--engine external@a,external@b --%s a=…,b=…)", flag, pair, flag)
			case !known:
				return nil, usagef("--%s %s: no external@%s in --engine", flag, pair, tag)
			}
			out[row] = v
		}
		for _, s := range ext {
			if out[s.Row()] == "" {
				return nil, usagef("--%s: none given for %s", flag, s.Row())
			}
		}
		return out, nil
	}
	if urls, err = split("url", urlFlag); err != nil {
		return nil, nil, err
	}
	if listens, err = split("origin-listen", listenFlag); err != nil {
		return nil, nil, err
	}
	for row, u := range urls {
		pu, err := url.Parse(u)
		if err != nil || pu.Scheme != "http" || pu.Host == "" {
			return nil, nil, usagef("--url %q (%s): want http://host:port of the proxy", u, row)
		}
	}
	seen := map[string]string{}
	for row, l := range listens {
		if _, _, err := net.SplitHostPort(l); err != nil {
			return nil, nil, usagef("--origin-listen %q (%s): want host:port, e.g. 127.0.0.1:8081", l, row)
		}
		if other, dup := seen[l]; dup {
			return nil, nil, usagef("--origin-listen: %s and %s both given %s: each external proxy fetches from an origin of its own", other, row, l)
		}
		seen[l] = row
	}
	return urls, listens, nil
}

// parseConfigFlag reads --config: KEY=FILE pairs (a comma list), KEY a row
// of --engine (a=varnish,b=varnish --config a=prod.vcl) or an engine's name
// for each of its rows that no pair names by row (--config varnish=my.vcl).
// The result is the file of each row that has one.
func parseConfigFlag(flag string, sels []engines.Selection) (map[string]string, error) {
	out := map[string]string{}
	if flag == "" {
		return out, nil
	}
	bySel := selectionMap(sels)
	byEngine := map[string]string{}
	for _, pair := range strings.Split(flag, ",") {
		key, path, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok || key == "" || path == "" {
			return nil, usagef("--config %q: want ENGINE=FILE or ROW=FILE (a comma list), e.g. varnish=my.vcl or nginx=my.conf", pair)
		}
		sel, isRow := bySel[key]
		name := key
		if isRow {
			name = sel.Name
		}
		if _, ok := engines.Lookup(name); !ok {
			return nil, usagef("--config %s: %s takes no configuration file: want one of %v or a row of --engine that runs one", pair, key, engines.ProcessEngines())
		}
		switch {
		case isRow && out[key] != "":
			return nil, usagef("--config %s: %s given twice", pair, key)
		case isRow:
			out[key] = path
		case byEngine[key] != "":
			return nil, usagef("--config %s: %s given twice", pair, key)
		default:
			byEngine[key] = path
		}
	}
	for name, path := range byEngine {
		n := 0
		for _, sel := range sels {
			if sel.Name == name {
				n++
				if out[sel.Row()] == "" {
					out[sel.Row()] = path
				}
			}
		}
		if n == 0 {
			return nil, usagef("--config %s=%s: no %s in --engine (%s)", name, path, name, strings.Join(rows(sels), ", "))
		}
	}
	return out, nil
}

// loadConfigs reads --config's files: a file the engine cannot run as
// hlsbench needs (no loopback origin, no plaintext listener), or whose
// addresses another row or another program already takes, is bad input.
func loadConfigs(flag string, sels []engines.Selection, originListens map[string]string) (map[string]*engines.UserConfig, error) {
	files, err := parseConfigFlag(flag, sels)
	if err != nil {
		return nil, err
	}
	out := map[string]*engines.UserConfig{}
	taken := map[string]string{} // address → what takes it
	for row, l := range originListens {
		taken[l] = "the origin of " + row
	}
	for _, sel := range sels {
		row, path := sel.Row(), files[sel.Row()]
		if path == "" {
			continue
		}
		e, _ := engines.Lookup(sel.Name)
		uc, err := engines.LoadUserConfig(e, path)
		if err != nil {
			return nil, usagef("--config %s=%s: %v", row, path, err)
		}
		for _, a := range []struct{ addr, what string }{{uc.Origin, "the origin of " + row}, {uc.Listen, row + "'s listener"}} {
			if a.addr == "" {
				continue
			}
			if other, dup := taken[a.addr]; dup {
				return nil, usagef("--config %s=%s: %s would be at %s, as %s is: give each row's file its own addresses", row, path, a.what, a.addr, other)
			}
			taken[a.addr] = a.what
			if err := addrFree(a.addr); err != nil {
				return nil, usagef("--config %s=%s: %s is at %s, which is taken here (%v): stop what listens there or change the file", row, path, a.what, a.addr, err)
			}
		}
		out[row] = uc
	}
	return out, nil
}

// checkConfigs has each engine check its file (varnishd -C, nginx -t)
// before anything starts, with the binary the row runs: one it rejects is
// bad input. In a container the engine checks it when it starts.
func checkConfigs(ctx context.Context, configs map[string]*engines.UserConfig, sels []engines.Selection, binaries map[string]string) error {
	for _, sel := range sels {
		row := sel.Row()
		uc := configs[row]
		if uc == nil {
			continue
		}
		e, _ := engines.Lookup(sel.Name)
		bin := binaries[row]
		if bin == "" {
			var err error
			if bin, err = engines.FindBinary(e, ""); err != nil {
				return err
			}
		}
		if err := engines.CheckUserConfig(ctx, e, uc, bin); err != nil {
			return usagef("--config %s=%s: %s rejected it: %v", row, uc.Path, e.Name(), err)
		}
	}
	return nil
}

// addrFree says whether a TCP listener could be opened at addr now.
func addrFree(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return ln.Close()
}
