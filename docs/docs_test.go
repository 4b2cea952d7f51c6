package docs

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readmeMaxLines is what a newcomer reads before the first command: what
// hlsbench is, the two commands on a fresh machine, the page and a
// comparison of two builds (issue 45, item 10). The rest belongs in docs/
// and METHODOLOGY.md, linked from it.
const readmeMaxLines = 250

// root is the repository's top, where README.md is: the test runs in docs/.
const root = ".."

func TestREADMEIsShort(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > readmeMaxLines {
		t.Errorf("README.md has %d lines, want at most %d: move the detail into docs/ or METHODOLOGY.md and link it", n, readmeMaxLines)
	}
}

// The README's two commands stay the ones the Makefile and CI run: its
// test command is what .ci/run calls on a fresh clone, and each command's
// comment spells out the Makefile's recipe.
func TestREADMECommandsAreCI(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	readme, makefile, ci := read("README.md"), read("Makefile"), read(".ci/run")
	if !regexp.MustCompile(`(?m)^make test$`).MatchString(ci) {
		t.Error(".ci/run does not run make test, the README's test command")
	}
	for _, c := range []struct{ target, want string }{
		{"test", "go test -p 1 -count=1 -timeout 40m ./..."},
		{"run", "bin/hlsbench run"},
	} {
		recipe := recipe(makefile, c.target)
		if len(recipe) == 0 || recipe[0] != c.want {
			t.Errorf("make %s runs %q, want %q: say so in the README and here", c.target, recipe, c.want)
			continue
		}
		line := regexp.MustCompile(`(?m)^make ` + c.target + ` +#.*$`).FindString(readme)
		if !strings.Contains(line, c.want) {
			t.Errorf("README.md's make %s line %q does not say it runs %q", c.target, line, c.want)
		}
	}
	if r := recipe(makefile, "test"); len(r) != 2 || r[1] != strings.Replace(r[0], "go test", "go test -race", 1) {
		t.Errorf("make test runs %q; the README says: the suite, then the same with -race", r)
	}
}

// recipe returns the commands of a Makefile target, in order.
func recipe(makefile, target string) []string {
	var out []string
	in := false
	for _, line := range strings.Split(makefile, "\n") {
		switch {
		case strings.HasPrefix(line, target+":"):
			in = true
		case in && strings.HasPrefix(line, "\t"):
			out = append(out, strings.TrimSpace(line))
		case in:
			return out
		}
	}
	return out
}

// documents are the files whose relative links must hold: the README,
// METHODOLOGY.md and everything in docs/.
func documents(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md", "METHODOLOGY.md"}
	more, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(more) == 0 {
		t.Fatal("docs/ holds no Markdown file")
	}
	for _, f := range more {
		rel, err := filepath.Rel(root, f)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, rel)
	}
	return files
}

func TestDocLinks(t *testing.T) {
	for _, p := range checkLinks(dirFS(root), documents(t)) {
		t.Error(p)
	}
}

// The docs each have a way back: the README links every file in docs/, so
// none is written and never found.
func TestREADMELinksEveryDoc(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	linked := map[string]bool{}
	for _, l := range findLinks(string(b)) {
		u, err := url.Parse(l.target)
		if err == nil && u.Scheme == "" {
			linked[filepath.Clean(u.Path)] = true
		}
	}
	for _, f := range documents(t)[2:] {
		if !linked[f] {
			t.Errorf("README.md does not link %s", f)
		}
	}
}

func TestCheckLinksFindsBroken(t *testing.T) {
	fsys := mapFS{
		"README.md": "# Top\n\n## Two commands, on a `fresh` machine\n\n" +
			"[ok](docs/a.md#the-rule) [ok](#two-commands-on-a-fresh-machine) [ok](docs/a.md) [web](https://example.invalid/x)\n" +
			"[gone](docs/b.md) [no heading](docs/a.md#nothing) [self](#top-1) `[code](nowhere.md)`\n" +
			"```\n[fenced](nowhere.md)\n# not a heading\n```\n" +
			"[up](../outside.md) [dup](#dup-1)\n\n## Dup\n\n## Dup\n",
		"docs/a.md": "# A\n\n## The rule\n\n[back](../README.md#dup) [not a heading](../README.md#not-a-heading)\n",
	}
	got := checkLinks(fsys, []string{"README.md", "docs/a.md"})
	want := []string{
		`README.md:6: [gone](docs/b.md): no such file`,
		`README.md:6: [no heading](docs/a.md#nothing): docs/a.md has no heading with anchor "nothing"`,
		`README.md:6: [self](#top-1): README.md has no heading with anchor "top-1"`,
		`README.md:11: [up](../outside.md): outside the repository`,
		`docs/a.md:5: [not a heading](../README.md#not-a-heading): README.md has no heading with anchor "not-a-heading"`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("checkLinks:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// GitHub's anchors: the heading's text lowercased, every character that is
// not a letter, mark, digit, connector, hyphen or space removed, spaces
// made hyphens, and a repeated anchor numbered from -1.
func TestAnchors(t *testing.T) {
	md := "# hlsbench\n" +
		"## State files, `hlsbench clean` and `--lock`\n" +
		"### Load from several hosts: `hlsbench agent` and `--agents`\n" +
		"## Whose lateness it was: the host, the stalls, the repeats\n" +
		"### The null engine: the instrument's ceiling and floor\n" +
		"## What the reference page got wrong, and what we do instead\n" +
		"## Engines × topologies — [the rule](x.md) and **bold** `a_b` _em_ ##\n" +
		"## Saturation\n## Saturation\n" +
		"    # indented code, not a heading\n" +
		"#not a heading either\n" +
		"<a id=\"kept\"></a>\n"
	want := []string{
		"hlsbench",
		"state-files-hlsbench-clean-and---lock",
		"load-from-several-hosts-hlsbench-agent-and---agents",
		"whose-lateness-it-was-the-host-the-stalls-the-repeats",
		"the-null-engine-the-instruments-ceiling-and-floor",
		"what-the-reference-page-got-wrong-and-what-we-do-instead",
		"engines--topologies--the-rule-and-bold-a_b-em",
		"saturation",
		"saturation-1",
		"kept",
	}
	got := anchors(md)
	if len(got) != len(want) {
		t.Errorf("anchors: got %d %v, want %d", len(got), keys(got), len(want))
	}
	for _, a := range want {
		if !got[a] {
			t.Errorf("anchors: no %q in %v", a, keys(got))
		}
	}
}

func keys(m map[string]bool) []string {
	var s []string
	for k := range m {
		s = append(s, k)
	}
	return s
}

// checkLinks returns a problem per relative link in files (paths under fsys)
// whose file does not exist, leaves the repository, or names a heading the
// Markdown file it points to does not have.
func checkLinks(fsys readFS, files []string) []string {
	var problems []string
	cache := map[string]map[string]bool{}
	anchorsOf := func(name string) (map[string]bool, error) {
		if a, ok := cache[name]; ok {
			return a, nil
		}
		b, err := fsys.ReadFile(name)
		if err != nil {
			return nil, err
		}
		cache[name] = anchors(string(b))
		return cache[name], nil
	}
	for _, file := range files {
		b, err := fsys.ReadFile(file)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", file, err))
			continue
		}
		for _, l := range findLinks(string(b)) {
			u, err := url.Parse(l.target)
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s:%d: [%s](%s): %v", file, l.line, l.text, l.target, err))
				continue
			}
			if u.Scheme != "" || u.Host != "" {
				continue // Not ours to check offline.
			}
			target := file
			if u.Path != "" {
				target = filepath.ToSlash(filepath.Join(filepath.Dir(file), u.Path))
			}
			if target == ".." || strings.HasPrefix(target, "../") || filepath.IsAbs(u.Path) {
				problems = append(problems, fmt.Sprintf("%s:%d: [%s](%s): outside the repository", file, l.line, l.text, l.target))
				continue
			}
			if !fsys.Exists(target) {
				problems = append(problems, fmt.Sprintf("%s:%d: [%s](%s): no such file", file, l.line, l.text, l.target))
				continue
			}
			if u.Fragment == "" || !strings.HasSuffix(target, ".md") {
				continue
			}
			a, err := anchorsOf(target)
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s:%d: [%s](%s): %v", file, l.line, l.text, l.target, err))
				continue
			}
			if !a[u.Fragment] {
				problems = append(problems, fmt.Sprintf("%s:%d: [%s](%s): %s has no heading with anchor %q", file, l.line, l.text, l.target, target, u.Fragment))
			}
		}
	}
	return problems
}

// readFS is what checkLinks reads: the repository, or a map in its test.
type readFS interface {
	ReadFile(name string) ([]byte, error)
	Exists(name string) bool
}

// dirFS is the repository on disk; a link may name a directory too.
type dirFS string

func (d dirFS) ReadFile(name string) ([]byte, error) {
	return os.ReadFile(filepath.Join(string(d), filepath.FromSlash(name)))
}

func (d dirFS) Exists(name string) bool {
	_, err := os.Stat(filepath.Join(string(d), filepath.FromSlash(name)))
	return err == nil
}

// mapFS is a file system of Markdown texts, for the checker's own test.
type mapFS map[string]string

func (m mapFS) ReadFile(name string) ([]byte, error) {
	s, ok := m[name]
	if !ok {
		return nil, fmt.Errorf("%s: no such file", name)
	}
	return []byte(s), nil
}

func (m mapFS) Exists(name string) bool {
	for f := range m {
		if f == name || strings.HasPrefix(f, name+"/") {
			return true
		}
	}
	return false
}

// link is one link of a Markdown text, with the line it is on.
type link struct {
	text, target string
	line         int
}

var (
	// fence opens or closes a fenced code block: nothing inside one is a
	// link or a heading.
	fence = regexp.MustCompile("^ {0,3}(`{3,}|~{3,})")
	// heading is an ATX heading: up to three spaces, one to six #, then a
	// space (or nothing), the text, and an optional closing run of #.
	heading = regexp.MustCompile(`^ {0,3}#{1,6}(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$`)
	// inlineLink is [text](target) or ![alt](target), with an optional
	// title; the text may hold an image, as a linked picture's does.
	inlineLink = regexp.MustCompile(`\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\(\s*(<[^>]*>|[^\s()]+)(?:\s+(?:"[^"]*"|'[^']*'))?\s*\)`)
	// refDef is a reference definition, [label]: target.
	refDef = regexp.MustCompile(`^ {0,3}\[([^\]]+)\]:\s*(<[^>]*>|\S+)`)
	// htmlAnchor is an anchor a document sets itself.
	htmlAnchor = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	// notInSlug is what GitHub removes from a heading's text to make its
	// anchor: anything but letters, marks, decimal and letter numbers,
	// connectors (the underscore), the hyphen and the space.
	notInSlug = regexp.MustCompile(`[^\p{L}\p{M}\p{Nd}\p{Nl}\p{Pc}\- ]`)
	// emphasis is an underscore that opens or closes emphasis: at a word's
	// edge, not inside one.
	emphasis = regexp.MustCompile(`(^|[^\p{L}\p{N}])_+|_+([^\p{L}\p{N}]|$)`)
)

// lines calls fn with every line outside fenced code blocks, numbered
// from 1.
func lines(md string, fn func(n int, line string)) {
	var open string
	for i, line := range strings.Split(md, "\n") {
		if m := fence.FindStringSubmatch(line); m != nil {
			switch {
			case open == "":
				open = m[1]
			case m[1][0] == open[0] && len(m[1]) >= len(open) && strings.TrimSpace(line) == m[1]:
				open = ""
			}
			continue
		}
		if open == "" {
			fn(i+1, line)
		}
	}
}

// code splits a line into text and inline code spans: a run of n
// backticks opens a span that the next run of exactly n closes.
func code(line string, fn func(s string, code bool)) {
	for {
		i := strings.IndexByte(line, '`')
		if i < 0 {
			fn(line, false)
			return
		}
		n := i
		for n < len(line) && line[n] == '`' {
			n++
		}
		run := line[i:n]
		end := -1
		for j := n; j < len(line); {
			k := strings.Index(line[j:], run)
			if k < 0 {
				break
			}
			k += j
			if k+len(run) == len(line) || line[k+len(run)] != '`' {
				end = k
				break
			}
			for j = k; j < len(line) && line[j] == '`'; j++ {
			}
		}
		if end < 0 {
			fn(line, false) // An unmatched run is literal backticks.
			return
		}
		fn(line[:i], false)
		fn(line[n:end], true)
		line = line[end+len(run):]
	}
}

// findLinks returns the links of a Markdown text, outside code.
func findLinks(md string) []link {
	var out []link
	lines(md, func(n int, line string) {
		if m := refDef.FindStringSubmatch(line); m != nil {
			out = append(out, link{m[1], strings.Trim(m[2], "<>"), n})
			return
		}
		var text strings.Builder
		code(line, func(s string, isCode bool) {
			if isCode {
				text.WriteString(strings.Repeat(" ", len(s)))
				return
			}
			text.WriteString(s)
		})
		for _, m := range inlineLink.FindAllStringSubmatch(text.String(), -1) {
			out = append(out, link{m[1], strings.Trim(m[2], "<>"), n})
			// A linked picture: the picture's own source is a link too.
			for _, in := range inlineLink.FindAllStringSubmatch(m[1], -1) {
				out = append(out, link{in[1], strings.Trim(in[2], "<>"), n})
			}
		}
	})
	return out
}

// anchors returns the anchors a Markdown text's headings get on GitHub,
// and those it sets with <a id> or <a name>.
func anchors(md string) map[string]bool {
	seen := map[string]int{}
	out := map[string]bool{}
	lines(md, func(_ int, line string) {
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			out[m[1]] = true
		}
		m := heading.FindStringSubmatch(line)
		if m == nil {
			return
		}
		s := slug(headingText(m[1]))
		a := s
		if k := seen[s]; k > 0 {
			a = fmt.Sprintf("%s-%d", s, k)
		}
		seen[s]++
		out[a] = true
	})
	return out
}

// headingText is the text a heading renders: code spans as their content,
// links as their text, emphasis markers gone.
func headingText(raw string) string {
	var b strings.Builder
	code(raw, func(s string, isCode bool) {
		if isCode {
			b.WriteString(s)
			return
		}
		s = inlineLink.ReplaceAllString(s, "$1")
		s = strings.ReplaceAll(s, "*", "")
		s = emphasis.ReplaceAllString(s, "$1$2")
		b.WriteString(s)
	})
	return b.String()
}

// slug is GitHub's anchor for a heading's text, before numbering repeats.
func slug(text string) string {
	s := notInSlug.ReplaceAllString(strings.ToLower(strings.TrimSpace(text)), "")
	return strings.ReplaceAll(s, " ", "-")
}
