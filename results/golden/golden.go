// Package golden compares what a test generated (a config, a command line,
// a report) with the golden file that pins it. Tests that use it take one
// -update flag, which rewrites the golden files instead:
//
//	go test ./engines -run TestNGINXGolden -update
package golden

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files the tests compare with")

// Assert compares got with the golden file at path (relative to the test's
// package directory). With -update it writes got there instead. On a
// mismatch it writes got beside it as path.got, for diff, and fails t
// naming the first line that differs; a match removes a .got left from
// before.
func Assert(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		os.Remove(path + ".got")
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run '^%s$' -update creates it)", err, t.Name())
	}
	if bytes.Equal(got, want) {
		os.Remove(path + ".got")
		return
	}
	if err := os.WriteFile(path+".got", got, 0o644); err != nil {
		t.Fatal(err)
	}
	line, w, g := firstDiff(want, got)
	t.Errorf("%s differs, first at line %d:\n  want %q\n  got  %q\nsee %s.got (diff -u %s %s.got; -update accepts the new output)",
		path, line, w, g, path, path, path)
}

// firstDiff is the number (from 1) of the first line want and got differ
// on, and that line in each ("(end of file)" past the last).
func firstDiff(want, got []byte) (line int, w, g string) {
	wl, gl := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	i := 0
	for i < len(wl) && i < len(gl) && wl[i] == gl[i] {
		i++
	}
	at := func(l []string) string {
		if i < len(l) {
			return l[i]
		}
		return "(end of file)"
	}
	return i + 1, at(wl), at(gl)
}
