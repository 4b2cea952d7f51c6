package images

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// AptDir is where this host's apt sources are: sources.list and
// sources.list.d (a test moves it).
var AptDir = "/etc/apt"

// aptSource is one deb line of an apt source: where and which suites and
// components.
type aptSource struct {
	uri        string
	suites     []string
	components []string
	file       string
}

// HostMirrors are the mirrors this host's own apt sources name for suite:
// the first deb source of suite with component main, and the first of
// suite-security (security is "" when none names it). hlsbench names no
// mirror of its own: the base image is built from where this host's
// packages come from, or from --mirror.
func HostMirrors(suite string) (mirror, security string, err error) {
	srcs, err := readAptSources(AptDir)
	if err != nil {
		return "", "", err
	}
	for _, s := range srcs {
		if !contains(s.components, "main") {
			continue
		}
		if mirror == "" && contains(s.suites, suite) {
			mirror = s.uri
		}
		if security == "" && contains(s.suites, suite+"-security") {
			security = s.uri
		}
	}
	if mirror == "" {
		return "", "", &OptionError{Option: "Mirror", Do: "the Debian mirror to build from", Err: fmt.Errorf("no deb source of %s main in this host's apt sources (%s, %s)",
			suite, filepath.Join(AptDir, "sources.list"), filepath.Join(AptDir, "sources.list.d"))}
	}
	return mirror, security, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// readAptSources reads sources.list and sources.list.d's *.list (one-line
// format) and *.sources (deb822) files, as apt does: other names in
// sources.list.d are ignored, and so are deb-src lines and stanzas with
// Enabled: no.
func readAptSources(dir string) ([]aptSource, error) {
	var out []aptSource
	files := []string{filepath.Join(dir, "sources.list")}
	ents, err := os.ReadDir(filepath.Join(dir, "sources.list.d"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("apt sources: %w", err)
	}
	var names []string
	for _, e := range ents {
		if n := e.Name(); !e.IsDir() && (strings.HasSuffix(n, ".list") || strings.HasSuffix(n, ".sources")) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		files = append(files, filepath.Join(dir, "sources.list.d", n))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("apt sources: %w", err)
		}
		if strings.HasSuffix(f, ".sources") {
			out = append(out, parseDeb822(b, f)...)
		} else {
			out = append(out, parseSourcesList(b, f)...)
		}
	}
	return out, nil
}

// parseSourcesList reads one-line entries: deb [options] uri suite
// component…
func parseSourcesList(b []byte, file string) []aptSource {
	var out []aptSource
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		f := strings.Fields(line)
		if len(f) < 3 || f[0] != "deb" {
			continue
		}
		f = f[1:]
		if strings.HasPrefix(f[0], "[") {
			// Options, possibly with spaces: up to the closing bracket.
			i := 0
			for i < len(f) && !strings.HasSuffix(f[i], "]") {
				i++
			}
			f = f[min(i+1, len(f)):]
		}
		if len(f) < 2 {
			continue
		}
		out = append(out, aptSource{uri: strings.TrimRight(f[0], "/"), suites: []string{f[1]}, components: f[2:], file: file})
	}
	return out
}

// parseDeb822 reads stanzas of Types, URIs, Suites and Components.
func parseDeb822(b []byte, file string) []aptSource {
	var out []aptSource
	for _, stanza := range strings.Split(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n\n") {
		fields := map[string]string{}
		var last string
		for _, line := range strings.Split(stanza, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "#") || strings.TrimSpace(line) == "" {
				continue
			}
			if (line[0] == ' ' || line[0] == '\t') && last != "" {
				fields[last] += " " + strings.TrimSpace(line) // a continuation
				continue
			}
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			last = strings.ToLower(strings.TrimSpace(k))
			fields[last] = strings.TrimSpace(v)
		}
		if !contains(strings.Fields(fields["types"]), "deb") || strings.EqualFold(fields["enabled"], "no") {
			continue
		}
		for _, uri := range strings.Fields(fields["uris"]) {
			out = append(out, aptSource{uri: strings.TrimRight(uri, "/"), suites: strings.Fields(fields["suites"]),
				components: strings.Fields(fields["components"]), file: file})
		}
	}
	return out
}
