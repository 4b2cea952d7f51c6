package golden

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorder stands in for a test: it keeps the failure Assert reports.
type recorder struct {
	testing.TB
	failure string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.failure = fmt.Sprintf(format, args...)
}

// A mismatch fails naming the first differing line and leaves the output
// beside the golden file; a match passes and removes that .got again.
func TestAssert(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.conf")
	if err := os.WriteFile(path, []byte("a\nb\nc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &recorder{TB: t}
	Assert(r, path, []byte("a\nB\nc\n"))
	if !strings.Contains(r.failure, "first at line 2:\n  want \"b\"\n  got  \"B\"") {
		t.Errorf("failure %q; want line 2 named", r.failure)
	}
	if got, err := os.ReadFile(path + ".got"); err != nil || string(got) != "a\nB\nc\n" {
		t.Errorf(".got %q, %v", got, err)
	}
	r = &recorder{TB: t}
	Assert(r, path, []byte("a\nb\nc\n"))
	if r.failure != "" {
		t.Errorf("a match failed: %s", r.failure)
	}
	if _, err := os.Stat(path + ".got"); !os.IsNotExist(err) {
		t.Errorf("the .got is still there after a match: %v", err)
	}
}

// Output that ends early differs at the line past its end.
func TestFirstDiffShorter(t *testing.T) {
	line, w, g := firstDiff([]byte("a\nb"), []byte("a"))
	if line != 2 || w != "b" || g != "(end of file)" {
		t.Errorf("firstDiff = %d %q %q", line, w, g)
	}
}
