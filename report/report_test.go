package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hlsbench/hlsbench/results"
	"github.com/hlsbench/hlsbench/results/golden"
	"github.com/hlsbench/hlsbench/results/stats"
	"github.com/hlsbench/hlsbench/workloads"
)

// fixtures are the directories under testdata the golden files are made of.
var fixtures = []string{"suite", "failing", "saturated", "null"}

// build reads and builds a fixture with the default options.
func build(t *testing.T, fixture string) *Report {
	t.Helper()
	in, err := Read([]string{filepath.Join("testdata", fixture)})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Build(in, catalogOptions())
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestGolden(t *testing.T) {
	writers := []struct {
		ext   string
		write func(io.Writer, *Report) error
	}{{"md", WriteMarkdown}, {"csv", WriteCSV}, {"html", WriteHTML}}
	for _, fx := range fixtures {
		rep := build(t, fx)
		for _, w := range writers {
			t.Run(fx+"."+w.ext, func(t *testing.T) {
				var b bytes.Buffer
				if err := w.write(&b, rep); err != nil {
					t.Fatal(err)
				}
				golden.Assert(t, filepath.Join("testdata", "golden", fx+"."+w.ext), b.Bytes())
			})
		}
	}
}

// readTree is every regular file under dir, by its slash path.
func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file", p)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = b
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// sameTree fails unless a and b hold the same files with the same bytes.
func sameTree(t *testing.T, a, b string) {
	t.Helper()
	ta, tb := readTree(t, a), readTree(t, b)
	for name, da := range ta {
		db, ok := tb[name]
		switch {
		case !ok:
			t.Errorf("%s is in %s but not in %s", name, a, b)
		case !bytes.Equal(da, db):
			t.Errorf("%s differs between %s and %s (%d and %d bytes)", name, a, b, len(da), len(db))
		}
	}
	for name := range tb {
		if _, ok := ta[name]; !ok {
			t.Errorf("%s is in %s but not in %s", name, b, a)
		}
	}
}

func TestWriteDirDeterministic(t *testing.T) {
	for _, fx := range fixtures {
		t.Run(fx, func(t *testing.T) {
			rep := build(t, fx)
			a, b := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
			for _, d := range []string{a, b} {
				if err := WriteDir(d, rep); err != nil {
					t.Fatal(err)
				}
			}
			sameTree(t, a, b)
			// And a report built again from the files, not the same Report.
			c := filepath.Join(t.TempDir(), "c")
			if err := WriteDir(c, build(t, fx)); err != nil {
				t.Fatal(err)
			}
			sameTree(t, a, c)
			// Every file WriteDir says it writes, and no other.
			want := Files(rep)
			var got []string
			for f := range readTree(t, a) {
				got = append(got, f)
			}
			slices.Sort(want)
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("files %v, Files says %v", got, want)
			}
		})
	}
}

// testOf finds a test by ID.
func testOf(t *testing.T, rep *Report, id string) Test {
	t.Helper()
	for _, w := range rep.Workloads {
		for _, tt := range w.Tests {
			if tt.ID == id {
				return tt
			}
		}
	}
	t.Fatalf("no test %s", id)
	return Test{}
}

func cellOfEngine(t *testing.T, tt Test, engine string) Cell {
	t.Helper()
	for _, c := range tt.Cells {
		if c.Engine == engine {
			return c
		}
	}
	t.Fatalf("%s has no %s cell", tt.ID, engine)
	return Cell{}
}

// TestReportFailingNoValue: NGINX fails every full GET of the segment workload;
// every output says so and none shows a 0.
func TestReportFailingNoValue(t *testing.T) {
	rep := build(t, "failing")
	for _, id := range []string{"segment/full-p50-ttfb", "segment/full-p99-ttfb"} {
		c := cellOfEngine(t, testOf(t, rep, id), "nginx")
		if c.Value != nil || !strings.Contains(c.NoValue, "HTTP 502") {
			t.Fatalf("%s nginx: value %v, no value %q; want none, for HTTP 502", id, c.Value, c.NoValue)
		}
	}
	nginx := cellOfEngine(t, testOf(t, rep, "segment/full-p50-ttfb"), "nginx")

	var html, md bytes.Buffer
	if err := WriteHTML(&html, rep); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarkdown(&md, rep); err != nil {
		t.Fatal(err)
	}
	for name, page := range map[string]string{"html": html.String(), "md": md.String()} {
		// A table row starts with the cell's label (in HTML, after the
		// row's anchor).
		lines := grepLines(page, "| "+mdEscape(nginx.Label)+" |", "no value: ")
		if name == "html" {
			lines = grepLines(page, `<tr id="`, "<td>"+htmlEscape(nginx.Label)+`</td><td class="none">no value: `)
		}
		if len(lines) != 2 {
			t.Errorf("%s: %d table rows of %s with no value, want 2 (full p50 and p99):\n%s", name, len(lines), nginx.Label, strings.Join(lines, "\n"))
		}
		for _, l := range lines {
			if !strings.Contains(l, "HTTP 502") {
				t.Errorf("%s: row does not say why: %s", name, l)
			}
		}
	}

	rows, col := csvRows(t, rep)
	var found int
	for _, r := range rows[1:] {
		if r[col["engine"]] != "nginx" || r[col["workload"]] != "segment" || !strings.HasPrefix(r[col["test"]], "full-") {
			continue
		}
		found++
		if v := r[col["value"]]; v != "" {
			t.Errorf("csv %s pass %s: value %q, want empty", r[col["test"]], r[col["pass"]], v)
		}
		if r[col["no_value"]] == "" {
			t.Errorf("csv %s pass %s: no reason in no_value", r[col["test"]], r[col["pass"]])
		}
		if r[col["pass"]] == "all" && !strings.Contains(r[col["no_value"]], "HTTP 502") {
			t.Errorf("csv %s: no_value %q does not say HTTP 502", r[col["test"]], r[col["no_value"]])
		}
		for _, k := range []string{"min", "median", "max"} {
			if r[col[k]] == "0" {
				t.Errorf("csv %s pass %s: %s is 0 with no value", r[col["test"]], r[col["pass"]], k)
			}
		}
	}
	if found != 2*(1+8) {
		t.Errorf("%d csv rows for nginx's full GETs, want 18 (2 tests, each all + 8 passes)", found)
	}

	// The chart: a bar for builtin and Varnish and the legend's, none for
	// NGINX, whose row says why.
	tt := testOf(t, rep, "segment/full-p50-ttfb")
	s := svgOf(t, tt)
	if got := strings.Count(s, barFill); got != 2+1 {
		t.Errorf("%d bar fills in %s, want 3 (builtin, Varnish, legend)", got, tt.Slug)
	}
	if !strings.Contains(s, "no value: ") || !strings.Contains(s, "HTTP 502") {
		t.Errorf("%s's svg does not show the reason (%q)", tt.Slug, reasonText(nginx.NoValue))
	}
	// The same test with NGINX given a value gets its bar: the count above
	// is of bars, not of something else.
	for i := range tt.Cells {
		if tt.Cells[i].Engine == "nginx" {
			tt.Cells[i].Value, tt.Cells[i].NoValue = f64(0.09), ""
		}
	}
	if got := strings.Count(svgOf(t, tt), barFill); got != 3+1 {
		t.Errorf("%d bar fills once NGINX has a value, want 4", got)
	}
}

// grepLines are page's lines that start with prefix and hold sub.
func grepLines(page, prefix, sub string) []string {
	var out []string
	for _, l := range strings.Split(page, "\n") {
		if strings.HasPrefix(l, prefix) && strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return out
}

// csvRows writes rep's CSV and reads it back: its rows, the header first,
// and each column's index by its name.
func csvRows(t *testing.T, rep *Report) (rows [][]string, col map[string]int) {
	t.Helper()
	var b bytes.Buffer
	if err := WriteCSV(&b, rep); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col = map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	return rows, col
}

// TestReportFailingTie: hit-path p99 has builtin and Varnish level (the same
// median, passes interleaved) and NGINX twice as slow.
func TestReportFailingTie(t *testing.T) {
	rep := build(t, "failing")
	tt := testOf(t, rep, "hit-path/p99-ttfb")
	f := tt.Finding
	builtin, varnish, nginx := cellOfEngine(t, tt, "builtin"), cellOfEngine(t, tt, "varnish"), cellOfEngine(t, tt, "nginx")
	s := stand(tt, catalogOptions())
	if s.leader == nil || (s.leader.Engine != "builtin" && s.leader.Engine != "varnish") {
		t.Fatalf("leader %+v, want builtin or varnish", s.leader)
	}
	if len(s.ties) != 1 || len(s.behind) != 1 || s.behind[0].cell.Engine != "nginx" {
		t.Fatalf("ties %d, behind %v; want one tie and nginx behind", len(s.ties), s.behind)
	}
	for _, want := range []string{builtin.Label, varnish.Label, "is not set apart from it (p = 1.00): a tie",
		nginx.Label + " is ", "× as long (p < 0.001)"} {
		if !strings.Contains(f, want) {
			t.Errorf("finding lacks %q:\n%s", want, f)
		}
	}
	if p := s.behind[0].delta.P; !(p < 0.05) {
		t.Errorf("nginx's p = %g, want < 0.05", p)
	}
	var w Workload
	for _, wl := range rep.Workloads {
		if wl.Name == "hit-path" {
			w = wl
		}
	}
	if !strings.Contains(w.Takeaway, "tied with") {
		t.Errorf("hit-path's takeaway does not call the tie: %s", w.Takeaway)
	}

	var html bytes.Buffer
	if err := WriteHTML(&html, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(html.String(), `<p class="finding">`+htmlEscape(f)+`</p>`) {
		t.Errorf("the page lacks the finding %q", f)
	}
}

// handTest is a test of cells each with the valid passes given (nil passes
// and a reason: a cell with no value).
func handTest(cells ...Cell) Test {
	return Test{ID: "w/t", Slug: "w-t", Workload: "w", Name: "t", Title: "p99 TTFB", Unit: "ms", LowerIsBetter: true, Cells: cells}
}

func handCell(label string, values ...float64) Cell {
	c := Cell{Label: label, Engine: label, Valid: true, ValidPasses: len(values), MeasuredPasses: len(values)}
	for i, v := range values {
		c.Passes = append(c.Passes, PassPoint{Index: i + 1, Value: f64(v), Valid: true})
	}
	med := slices.Clone(values)
	slices.Sort(med)
	c.Value = f64(med[len(med)/2])
	return c
}

func noValueCell(label, why string) Cell {
	return Cell{Label: label, Engine: label, NoValue: why, MeasuredPasses: 3}
}

func TestFinding(t *testing.T) {
	o := catalogOptions()
	for _, tc := range []struct {
		name string
		test Test
		// ties, unknown and none are how many cells stand so.
		ties, unknown, none int
		want                []string
		not                 []string
	}{{
		name: "all equal, 3 passes",
		test: handTest(handCell("a", 2, 2, 2), handCell("b", 2, 2, 2), handCell("c", 2, 2, 2)),
		ties: 2,
		want: []string{"A tie: a, b and c are each at 2.00 ms."},
		not:  []string{"lowest"},
	}, {
		name: "all equal, a ratio",
		test: func() Test {
			t := handTest(handCell("a", 200, 200, 200), handCell("b", 200, 200, 200))
			t.Unit, t.LowerIsBetter, t.Title = "x", false, "Coalescing efficiency"
			return t
		}(),
		ties: 1,
		want: []string{"A tie: a and b are each at 200 x."},
		not:  []string{" ms", "highest"},
	}, {
		name: "a tie of different values",
		test: handTest(handCell("a", 1, 1.01, 1.02, 1.01, 1, 1.02), handCell("b", 1.02, 1.01, 1.03, 1.01, 1.02, 1.03)),
		ties: 1,
		want: []string{"A tie: b is not set apart from a, lowest at 1.01 ms (p = "},
	}, {
		name:    "3 vs 3 different",
		test:    handTest(handCell("a", 1, 1.1, 1.2), handCell("b", 5, 5.1, 5.2)),
		unknown: 1,
		want: []string{"a is lowest at 1.10 ms.", "b is 4.64× as long, but it cannot be told apart from it",
			"with 3 and 3 valid passes no difference can reach p < 0.05", fmt.Sprintf("%d passes each can", stats.MinSamples(0.05))},
		not: []string{"tie"},
	}, {
		// Counts tie: six passes of 0 against 0,0,1,1,1,1 can never reach
		// p < 0.05 (the smallest p these ties allow is 56/924, see
		// results/stats TestCompareTiesExact), however many passes.
		name:    "ties that cannot be told apart",
		test:    handTest(handCell("a", 0, 0, 0, 0, 0, 0), handCell("b", 0, 0, 1, 1, 1, 1)),
		unknown: 1,
		want: []string{"a is lowest at 0 ms.", "but it cannot be told apart from it",
			"with 6 and 6 valid passes of so few distinct values no split of them can reach p < 0.05 (the smallest p is 0.0606)"},
		not: []string{"tie:", "passes each can"},
	}, {
		name: "one without a value",
		test: handTest(handCell("a", 1, 1, 1), handCell("b", 1, 1, 1), noValueCell("c", "every request failed: HTTP 502.")),
		ties: 1, none: 1,
		want: []string{"A tie: a and b", "c has no value: every request failed: HTTP 502."},
		not:  []string{"502.."},
	}, {
		name: "no value at all",
		test: handTest(noValueCell("a", "timed out"), noValueCell("b", "HTTP 502")),
		none: 2,
		want: []string{"No cell has a value for p99 TTFB.", "a has no value: timed out.", "b has no value: HTTP 502."},
		not:  []string{"lowest", "0 ms"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			s := stand(tc.test, o)
			if len(s.ties) != tc.ties || len(s.unknown) != tc.unknown || len(s.none) != tc.none || len(s.behind)+len(s.ahead) != 0 {
				t.Errorf("stand: %d ties, %d unknown, %d none, %d behind, %d ahead; want %d, %d, %d, 0, 0",
					len(s.ties), len(s.unknown), len(s.none), len(s.behind), len(s.ahead), tc.ties, tc.unknown, tc.none)
			}
			f := finding(tc.test, o)
			for _, w := range tc.want {
				if !strings.Contains(f, w) {
					t.Errorf("finding lacks %q:\n%s", w, f)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(f, n) {
					t.Errorf("finding has %q:\n%s", n, f)
				}
			}
		})
	}
	// Equal values tie however few the passes, and say why.
	s := stand(handTest(handCell("a", 2, 2, 2), handCell("b", 2, 2, 2)), o)
	if len(s.ties) != 1 || s.ties[0].delta.Reason != "every valid pass has the same value" {
		t.Errorf("equal passes: ties %+v, want one, for every valid pass having the same value", s.ties)
	}
	// A cell with passes but no value is listed with its reason, not compared.
	s = stand(handTest(handCell("a", 1, 1, 1), noValueCell("b", "x")), o)
	if len(s.none) != 1 || s.none[0].Label != "b" || s.leader == nil || s.leader.Label != "a" {
		t.Errorf("stand with a no-value cell: %+v", s)
	}
}

func TestReadErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	run, err := os.ReadFile(filepath.Join("testdata", "failing", "run-20261201T030000Z-0b0b0b0b.json"))
	if err != nil {
		t.Fatal(err)
	}
	a := write("a/run-x.json", string(run))
	b := write("b/run-x.json", string(run))
	notJSON := write("run-bad.json", "this is not JSON\n")
	empty := filepath.Join(dir, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	write("other/notes.txt", "not a run")
	suite := filepath.Join("testdata", "suite")
	missing := filepath.Join(dir, "nowhere", "run-1.json")

	for _, tc := range []struct {
		name string
		args []string
		// want are in the message; the first is the path it names.
		want []string
	}{
		{"no args", nil, []string{"no input", "suite directory or result files"}},
		{"missing path", []string{missing}, []string{missing, "no such file"}},
		{"empty dir", []string{empty}, []string{empty, "no manifest.json and no run-*.json"}},
		{"dir of other files", []string{filepath.Join(dir, "other")}, []string{filepath.Join(dir, "other"), "no manifest.json"}},
		{"suite dir and another", []string{suite, a}, []string{suite, "suite directory: give suite directories alone"}},
		{"another and suite dir", []string{a, suite}, []string{suite, "give suite directories alone"}},
		{"same base name", []string{a, b}, []string{a, b, "one name"}},
		{"not JSON", []string{notJSON}, []string{notJSON, "not a run file"}},
		{"manifest as a file", []string{filepath.Join(suite, "manifest.json")}, []string{filepath.Join(suite, "manifest.json"), "a manifest, not a run file: give its directory"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, err := Read(tc.args)
			if err == nil {
				t.Fatalf("Read(%q) = %d sources, no error", tc.args, len(in.Sources))
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}

	// The same file twice is one source, not an error.
	in, err := Read([]string{a, a})
	if err != nil || len(in.Sources) != 1 {
		t.Errorf("the same file twice: %v, %v", in, err)
	}
	// A directory of run files without a manifest is read.
	in, err = Read([]string{filepath.Join(dir, "a")})
	if err != nil || len(in.Sources) != 1 || in.Manifest != nil {
		t.Errorf("a directory of run files: %+v, %v", in, err)
	}
}

func TestWriteDirRefusesOtherFiles(t *testing.T) {
	rep := build(t, "failing")
	dir := filepath.Join(t.TempDir(), "site")
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"index.html": "my own page\n", "sub/notes.txt": "keep me\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	before := readTree(t, dir)
	err := WriteDir(dir, rep)
	var de *DirError
	if !errors.As(err, &de) || de.Dir != dir || !errors.Is(err, ErrNotReport) {
		t.Fatalf("WriteDir into a directory of other files: %v; want a DirError for %s, ErrNotReport", err, dir)
	}
	if want := "output directory " + dir + ": "; !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), Marker) {
		t.Errorf("error %q: want it to start %q and name %s", err, want, Marker)
	}
	after := readTree(t, dir)
	if len(after) != len(before) {
		t.Errorf("files %d, were %d", len(after), len(before))
	}
	for name, b := range before {
		if !bytes.Equal(after[name], b) {
			t.Errorf("%s changed", name)
		}
	}
	noStaging(t, filepath.Dir(dir))

	// A file, not a directory.
	file := filepath.Join(t.TempDir(), "site")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteDir(file, rep); !errors.As(err, &de) || de.Dir != file || !errors.Is(err, ErrNotDir) {
		t.Errorf("WriteDir onto a file: %v; want a DirError for %s, ErrNotDir", err, file)
	}
}

// noStaging fails if WriteDir left a staging or old directory in parent.
func noStaging(t *testing.T, parent string) {
	t.Helper()
	ents, err := os.ReadDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("left behind in %s: %s", parent, e.Name())
		}
	}
}

func TestWriteDirReplaces(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "site")
	if err := WriteDir(dir, build(t, "suite")); err != nil {
		t.Fatal(err)
	}
	stray := filepath.Join(dir, "charts", "stray.png")
	if err := os.WriteFile(stray, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	// An empty directory is taken too.
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	rep := build(t, "failing")
	for _, d := range []string{dir, empty} {
		if err := WriteDir(d, rep); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(stray); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a file of the old report is still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "runs", "manifest.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the old report's manifest is still there: %v", err)
	}
	sameTree(t, dir, empty)
	noStaging(t, filepath.Dir(dir))
}

func TestWriteDirFailsWhole(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "site")
	if err := WriteDir(dir, build(t, "suite")); err != nil {
		t.Fatal(err)
	}
	before := readTree(t, dir)

	// A test without cells has no chart: rendering fails after the page,
	// Markdown and CSV are written into the staging directory.
	rep := build(t, "failing")
	last := &rep.Workloads[len(rep.Workloads)-1]
	last.Tests[len(last.Tests)-1].Cells = nil
	err := WriteDir(dir, rep)
	if err == nil || !strings.Contains(err.Error(), "no cells") {
		t.Fatalf("WriteDir with a test without cells: %v; want the chart's error", err)
	}
	after := readTree(t, dir)
	if len(after) != len(before) {
		t.Errorf("%d files after a failed write, %d before", len(after), len(before))
	}
	for name, b := range before {
		if !bytes.Equal(after[name], b) {
			t.Errorf("%s changed in a failed write", name)
		}
	}
	noStaging(t, filepath.Dir(dir))

	// Into a new directory: nothing is made.
	fresh := filepath.Join(t.TempDir(), "new")
	if err := WriteDir(fresh, rep); err == nil {
		t.Fatal("no error")
	}
	if _, err := os.Stat(fresh); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a failed write made %s: %v", fresh, err)
	}
	noStaging(t, filepath.Dir(fresh))
}

// TestWriteDirRoundTrip is `make page-from-results`: the page regenerated
// from the results it copied is the same page.
func TestWriteDirRoundTrip(t *testing.T) {
	for _, fx := range fixtures {
		t.Run(fx, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "site")
			if err := WriteDir(dir, build(t, fx)); err != nil {
				t.Fatal(err)
			}
			first := filepath.Join(t.TempDir(), "first")
			if err := os.CopyFS(first, os.DirFS(dir)); err != nil {
				t.Fatal(err)
			}
			in, err := Read([]string{filepath.Join(dir, "runs")})
			if err != nil {
				t.Fatal(err)
			}
			if (in.Manifest != nil) != (fx == "suite") {
				t.Errorf("runs/ read with manifest %v", in.Manifest != nil)
			}
			rep, err := Build(in, catalogOptions())
			if err != nil {
				t.Fatal(err)
			}
			if err := WriteDir(dir, rep); err != nil {
				t.Fatal(err)
			}
			sameTree(t, first, dir)
		})
	}
}

// TestReportCostPerTest: segment's full and Range GETs are separate traffic with
// their own engine cost; neither the cost table nor the CSV may show the
// full GETs' cost for the Range GETs.
func TestReportCostPerTest(t *testing.T) {
	rep := build(t, "suite")
	var seg Workload
	for _, w := range rep.Workloads {
		if w.Name == "segment" {
			seg = w
		}
	}
	cell := cellOfEngine(t, testOf(t, rep, "segment/range-p50-ttfb"), "builtin")
	if cell.CPUMsPer1000 == nil || *cell.CPUMsPer1000 != 60 {
		t.Fatalf("builtin's Range GET cost %v, want 60 (the fixture's)", cell.CPUMsPer1000)
	}
	if !seg.CostByTest() || len(seg.Cost) != 6 {
		t.Errorf("segment's cost rows %+v, want two per engine, naming their tests", seg.Cost)
	}
	for _, c := range seg.Cost {
		if c.Label == cell.Label && c.CPUMsPer1000 != nil && *c.CPUMsPer1000 == 60 &&
			!slices.Equal(c.Tests, []string{"p50 TTFB, 64 KiB Range GET", "p99 TTFB, 64 KiB Range GET"}) {
			t.Errorf("the 60 CPU-ms row names %q", c.Tests)
		}
	}
	// Hit-path's tests share one cost per engine: rows name no test.
	if rep.Workloads[0].CostByTest() || len(rep.Workloads[0].Cost) != 3 {
		t.Errorf("hit-path cost rows %+v", rep.Workloads[0].Cost)
	}
	var b bytes.Buffer
	if err := WriteCSV(&b, rep); err != nil {
		t.Fatal(err)
	}
	want := `segment,range-p50-ttfb,"p50 TTFB, 64 KiB Range GET",builtin,v0.9.0,process,plaintext,all,0.068,ms,true,true,,3,3,0.066,0.068,0.071,3000,0,60,22814720,`
	if !strings.Contains(b.String(), want) {
		t.Errorf("csv lacks the Range GET's own cost:\n%s", want)
	}
}

// TestNotApplicableLabel: a cell not applicable in its topology was never
// started, so the run has no engine record for it; its row still names the
// version the engine ran with in the other topologies.
func TestNotApplicableLabel(t *testing.T) {
	in, err := Read([]string{filepath.Join("testdata", "suite")})
	if err != nil {
		t.Fatal(err)
	}
	run := in.Sources[0].Run
	var na *results.Result
	for _, r := range run.Results {
		if r.Engine == "varnish" && r.Workload == "hit-path" && r.Test == "p50-ttfb" {
			c := r
			c.Topology, c.Value, c.Valid = "tls", nil, false
			c.NotApplicable = "this Varnish has no TLS listener"
			c.NoValue = "not applicable: " + c.NotApplicable
			c.Passes, c.Histogram, c.MeasuredPasses, c.ValidPasses = nil, "", 0, 0
			na = &c
		}
	}
	if na == nil {
		t.Fatal("the fixture has no varnish hit-path p50")
	}
	run.Results = append(run.Results, *na)
	rep, err := Build(in, catalogOptions())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range testOf(t, rep, "hit-path/p50-ttfb").Cells {
		if c.Engine == "varnish" {
			got = append(got, c.Label)
			if !strings.Contains(c.Label, "7.1.1") || c.Version != "7.1.1" {
				t.Errorf("varnish %s cell: label %q, version %q; want 7.1.1 in both", c.Topology, c.Label, c.Version)
			}
		}
	}
	if len(got) != 2 {
		t.Fatalf("varnish cells %q, want plaintext and tls", got)
	}
}

// TestReadSuiteParts: a page measured in parts is several suite
// directories, reported as one suite under a merged manifest; a cell
// finished in two parts is refused.
func TestReadSuiteParts(t *testing.T) {
	src := filepath.Join("testdata", "suite")
	whole, err := results.ReadManifest(src)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(src, whole.Runs[0]))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// part writes a suite directory holding the fixture's run under file,
	// with the fixture's cells of workloads (finished or not).
	part := func(name, file string, finished bool, workloads ...string) string {
		d := filepath.Join(dir, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, file), raw, 0o644); err != nil {
			t.Fatal(err)
		}
		m := whole
		m.Workloads, m.Cells, m.Runs = workloads, nil, []string{file}
		m.Args = []string{"--workload", strings.Join(workloads, ",")}
		for _, c := range whole.Cells {
			if slices.Contains(workloads, c.Workload) {
				c.File, c.Complete = file, finished
				m.Cells = append(m.Cells, c)
			}
		}
		if err := m.Save(d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	a := part("latency", "run-20261201T000000Z-aaaaaaaa.json", true, "hit-path", "segment")
	b := part("cache", "run-20261201T010000Z-bbbbbbbb.json", true, "miss-storm", "origin-flap")
	// A part that was cut short and measured again: its unfinished cells
	// give way to the finished ones.
	c := part("cache-cut", "run-20261201T005000Z-cccccccc.json", false, "miss-storm")

	in, err := Read([]string{a, c, b})
	if err != nil {
		t.Fatal(err)
	}
	m := in.Manifest
	if m == nil || len(m.Parts) != 3 || m.Parts[0].Name != "latency" || m.Parts[2].Args[1] != "miss-storm,origin-flap" {
		t.Fatalf("merged manifest parts: %+v", m)
	}
	if len(m.Cells) != len(whole.Cells) {
		t.Errorf("merged %d cells, want the fixture's %d", len(m.Cells), len(whole.Cells))
	}
	for _, cl := range m.Cells {
		if !cl.Complete {
			t.Errorf("cell %+v: unfinished, but part cache finished it", cl)
		}
	}
	var again results.Manifest
	if err := json.Unmarshal(in.ManifestRaw, &again); err != nil || len(again.Parts) != 3 {
		t.Errorf("the manifest written beside the runs: %v, %+v", err, again.Parts)
	}
	merged, err := Build(in, catalogOptions())
	if err != nil {
		t.Fatal(err)
	}
	one := build(t, "suite")
	if len(merged.Workloads) != len(one.Workloads) {
		t.Fatalf("merged page has %d workloads, the suite's %d", len(merged.Workloads), len(one.Workloads))
	}
	for i := range one.Workloads {
		if got, want := len(merged.Workloads[i].Tests), len(one.Workloads[i].Tests); got != want {
			t.Errorf("%s: %d tests merged, %d in the suite", one.Workloads[i].Name, got, want)
		}
	}

	// Parts measured with other builds of the built-in cache: each cell
	// is labelled with its own run's version, and the summary names both.
	for _, src := range in.Sources {
		if strings.Contains(src.Name, "bbbbbbbb") {
			for i := range src.Run.Engines {
				if src.Run.Engines[i].Name == "builtin" {
					src.Run.Engines[i].Version = "other-build"
				}
			}
		}
	}
	two, err := Build(in, catalogOptions())
	if err != nil {
		t.Fatal(err)
	}
	// Each cell keeps its own run's version; no label carries a build
	// (the table says its builds once, under it).
	builtin := func(id string) Cell {
		for _, c := range testOf(t, two, id).Cells {
			if c.Engine == "builtin" {
				return c
			}
		}
		return Cell{}
	}
	if c := builtin("miss-storm/p50-ttfb"); c.Version != "other-build" || strings.Contains(c.Label, "other-build") {
		t.Errorf("miss-storm's builtin cell %q (version %q), want its own run's version other-build, not in its label", c.Label, c.Version)
	}
	if c := builtin("hit-path/p50-ttfb"); c.Label == "" || c.Version == "other-build" {
		t.Errorf("hit-path's builtin cell %q (version %q), want its own run's version", c.Label, c.Version)
	}
	// The engines' table names every build the page was measured with.
	if i := slices.IndexFunc(two.Engines, func(e EngineRow) bool { return e.Engine == "Built-in" }); i < 0 ||
		len(two.Engines[i].Versions) != 2 || two.Engines[i].Versions[1] != "other-build" {
		t.Errorf("engines %+v, want both builtin versions", two.Engines)
	}

	// The same cell finished twice: which one to show is the user's call.
	d := part("cache-again", "run-20261201T020000Z-dddddddd.json", true, "origin-flap")
	_, err = Read([]string{a, b, d})
	if err == nil || !strings.Contains(err.Error(), "cache and cache-again both finished origin-flap") {
		t.Errorf("a cell finished in two parts: err %v", err)
	}
}

// catalogOptions are the defaults with the workloads' declarations, as
// `hlsbench report` builds the page.
func catalogOptions() Options {
	o := DefaultOptions()
	o.Catalog = workloads.Catalog()
	return o
}
