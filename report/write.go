package report

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/hlsbench/hlsbench/results"
)

// Marker is the file that says a directory is an hlsbench report, so
// WriteDir may replace it.
const Marker = ".hlsbench-report"

// ErrNotDir and ErrNotReport are why WriteDir refuses a directory (in a
// DirError): what is there is not one, or it holds files of someone else's.
var (
	ErrNotDir    = errors.New("a file, not a directory: give a new directory")
	ErrNotReport = errors.New("holds files and is not a report hlsbench wrote (no " + Marker + "): give a new or empty directory")
)

// DirError is the directory WriteDir was given, and why it cannot be
// written or replaced. It names the directory, not how a caller came by it
// (the command line says --out).
type DirError struct {
	Dir string
	Err error
}

func (e *DirError) Error() string { return fmt.Sprintf("output directory %s: %v", e.Dir, e.Err) }
func (e *DirError) Unwrap() error { return e.Err }

// Files lists what WriteDir writes, relative to the directory: the page,
// its Markdown and CSV, each test's and curve's chart as PNG and SVG, and the result
// files (and a suite's manifest) under runs/.
func Files(rep *Report) []string {
	f := []string{Marker, "index.html", "report.md", "figures.csv"}
	for _, w := range rep.Workloads {
		for _, t := range w.Tests {
			f = append(f, "charts/"+t.Slug+".png", "charts/"+t.Slug+".svg")
		}
		for _, c := range w.Curves {
			f = append(f, "charts/"+c.Slug+".png", "charts/"+c.Slug+".svg")
		}
	}
	for _, s := range rep.Sources {
		f = append(f, "runs/"+s.Name)
	}
	if rep.manifest {
		f = append(f, "runs/"+results.ManifestName)
	}
	return f
}

// WriteDir writes the whole report into dir: everything is rendered into a
// new directory beside it first, and only a complete one replaces dir, so a
// failure leaves dir as it was. dir must be new, empty, or a report written
// before (it holds Marker): it is replaced whole.
func WriteDir(dir string, rep *Report) (err error) {
	dir = filepath.Clean(dir)
	if err := replaceable(dir); err != nil {
		return err
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return &DirError{Dir: dir, Err: err}
	}
	stage, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".new-*")
	if err != nil {
		return &DirError{Dir: dir, Err: err}
	}
	defer func() {
		if err != nil {
			os.RemoveAll(stage)
		}
	}()
	if err := writeFiles(stage, rep); err != nil {
		return err
	}
	return swap(stage, dir)
}

// writeFiles writes every file of Files into stage.
func writeFiles(stage string, rep *Report) error {
	if err := os.Chmod(stage, 0o755); err != nil {
		return err
	}
	for _, sub := range []string{"charts", "runs"} {
		if err := os.Mkdir(filepath.Join(stage, sub), 0o755); err != nil {
			return err
		}
	}
	put := func(name string, write func(io.Writer) error) error {
		var b bytes.Buffer
		if err := write(&b); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		return os.WriteFile(filepath.Join(stage, name), b.Bytes(), 0o644)
	}
	raw := func(b []byte) func(io.Writer) error {
		return func(w io.Writer) error { _, err := w.Write(b); return err }
	}
	files := []struct {
		name  string
		write func(io.Writer) error
	}{
		{Marker, raw([]byte("This directory is written by `hlsbench report` and replaced whole when it runs again.\n"))},
		{"index.html", func(w io.Writer) error { return WriteHTML(w, rep) }},
		{"report.md", func(w io.Writer) error { return WriteMarkdown(w, rep) }},
		{"figures.csv", func(w io.Writer) error { return WriteCSV(w, rep) }},
	}
	for _, f := range files {
		if err := put(f.name, f.write); err != nil {
			return err
		}
	}
	for _, w := range rep.Workloads {
		for _, t := range w.Tests {
			if err := put("charts/"+t.Slug+".png", func(w io.Writer) error { return ChartPNG(w, t) }); err != nil {
				return err
			}
			if err := put("charts/"+t.Slug+".svg", func(w io.Writer) error { return ChartSVG(w, t) }); err != nil {
				return err
			}
		}
		for _, c := range w.Curves {
			if err := put("charts/"+c.Slug+".png", func(w io.Writer) error { return CurvePNG(w, c) }); err != nil {
				return err
			}
			if err := put("charts/"+c.Slug+".svg", func(w io.Writer) error { return CurveSVG(w, c) }); err != nil {
				return err
			}
		}
	}
	for _, s := range rep.Sources {
		if err := put("runs/"+s.Name, raw(s.Raw)); err != nil {
			return err
		}
	}
	if rep.manifest {
		return put("runs/"+results.ManifestName, raw(rep.manifestRaw))
	}
	return nil
}

// swap puts the rendered stage in dir's place: the old report moves aside,
// the new one takes its name, and the old one is put back if it cannot.
func swap(stage, dir string) error {
	old := ""
	if _, err := os.Stat(dir); err == nil {
		old = stage + ".old"
		if err := os.Rename(dir, old); err != nil {
			return &DirError{Dir: dir, Err: err}
		}
	}
	if err := os.Rename(stage, dir); err != nil {
		if old != "" {
			os.Rename(old, dir)
		}
		return &DirError{Dir: dir, Err: err}
	}
	if old != "" {
		os.RemoveAll(old)
	}
	return nil
}

// replaceable refuses a dir that holds anything but an earlier report.
func replaceable(dir string) error {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return &DirError{Dir: dir, Err: err}
	case !st.IsDir():
		return &DirError{Dir: dir, Err: ErrNotDir}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return &DirError{Dir: dir, Err: err}
	}
	if len(ents) == 0 {
		return nil
	}
	if _, err := os.Stat(filepath.Join(dir, Marker)); err != nil {
		return &DirError{Dir: dir, Err: ErrNotReport}
	}
	return nil
}
