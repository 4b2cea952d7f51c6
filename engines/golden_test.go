package engines

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// update rewrites the golden files of every engine under testdata/.
var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden compares got with testdata/name. With -update it rewrites the file;
// on a mismatch it writes got beside it as name.got and names the first
// differing line.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
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
		t.Fatalf("%v (go test ./engines/ -run %s -update creates it)", err, t.Name())
	}
	if bytes.Equal(got, want) {
		os.Remove(path + ".got")
		return
	}
	if err := os.WriteFile(path+".got", got, 0o644); err != nil {
		t.Fatal(err)
	}
	gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	line := 0
	for line < len(gl) && line < len(wl) && gl[line] == wl[line] {
		line++
	}
	at := func(l []string) string {
		if line < len(l) {
			return l[line]
		}
		return "(end of file)"
	}
	t.Errorf("%s differs from %s.got at line %d:\nwant: %s\n got: %s\n(diff the two files; -update accepts the new output)",
		path, path, line+1, at(wl), at(gl))
}
