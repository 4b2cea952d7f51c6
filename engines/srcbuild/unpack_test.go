package srcbuild

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tarEntry is one entry of a hand-made tarball: a file (Body), a
// directory (name ending in /) or a symlink (Link).
type tarEntry struct {
	Name, Body, Link string
}

// plainTar writes entries into a .tar under dir.
func plainTar(t testing.TB, dir string, entries []tarEntry) string {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.Name, Mode: 0o644}
		switch {
		case e.Link != "":
			h.Typeflag, h.Linkname = tar.TypeSymlink, e.Link
		case strings.HasSuffix(e.Name, "/"):
			h.Typeflag, h.Mode = tar.TypeDir, 0o755
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.Body))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			tw.Write([]byte(e.Body))
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "src.tar")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// unpackInto unpacks entries into root/tree and says whether anything
// appeared in root besides the tarball and the tree.
func unpackInto(t testing.TB, entries []tarEntry) (err error, escaped []string) {
	t.Helper()
	root := t.TempDir()
	src, err := openSource(plainTar(t, root, entries))
	if err != nil {
		return err, nil
	}
	err = src.unpack(filepath.Join(root, "tree"))
	list, _ := os.ReadDir(root)
	for _, e := range list {
		if e.Name() != "tree" && e.Name() != "src.tar" {
			escaped = append(escaped, e.Name())
		}
	}
	return err, escaped
}

func TestUnpackRefusesEscapes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		entries []tarEntry
		refuse  string // "" when it must unpack
	}{
		{"a link inside, then a file beside it", []tarEntry{{Name: "t/"}, {Name: "t/lib/"}, {Name: "t/cur", Link: "lib"}, {Name: "t/lib/x", Body: "x"}}, ""},
		{"a link out, then a file through it", []tarEntry{{Name: "t/"}, {Name: "t/out", Link: "../.."}, {Name: "t/out/evil", Body: "x"}}, "outside the tree"},
		{"an absolute link", []tarEntry{{Name: "t/"}, {Name: "t/etc", Link: "/etc"}}, "outside the tree"},
		{"a link inside, written through", []tarEntry{{Name: "t/"}, {Name: "t/a/"}, {Name: "t/l", Link: "a"}, {Name: "t/l/f", Body: "x"}}, "goes through the symlink"},
		{"a file over a link", []tarEntry{{Name: "t/"}, {Name: "t/a", Body: "a"}, {Name: "t/l", Link: "a"}, {Name: "t/l", Body: "over"}}, "goes through the symlink"},
		// Lexically inside, physically out: s is the tree itself, so s/t
		// pointing at ../x would leave it.
		{"a link through a link", []tarEntry{{Name: "t/"}, {Name: "t/a/b/"}, {Name: "t/a/b/s", Link: "../.."}, {Name: "t/a/b/s/t", Link: "../x"}}, "goes through the symlink"},
		{"dot-dot in a name", []tarEntry{{Name: "t/"}, {Name: "t/../evil", Body: "x"}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err, escaped := unpackInto(t, tc.entries)
			if len(escaped) > 0 {
				t.Errorf("wrote outside the tree: %v", escaped)
			}
			switch {
			case tc.refuse == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.refuse != "" && (err == nil || !strings.Contains(err.Error(), tc.refuse)):
				t.Errorf("err %v, want one with %q", err, tc.refuse)
			}
		})
	}
}

// Whatever a tarball holds, unpacking writes nothing outside its tree.
func FuzzUnpackStaysInside(f *testing.F) {
	f.Add("out", "../..", "out/evil", "x")
	f.Add("l", "a", "l/f", "y")
	f.Add("a/b/s", "../..", "a/b/s/t", "../x")
	f.Add("x", "/tmp", "x/y", "z")
	f.Fuzz(func(t *testing.T, link, to, file, body string) {
		if strings.ContainsAny(link+to+file, "\x00") || len(link+to+file) > 200 {
			t.Skip()
		}
		_, escaped := unpackInto(t, []tarEntry{{Name: "t/"}, {Name: "t/" + link, Link: to}, {Name: "t/" + file, Body: body}})
		if len(escaped) > 0 {
			t.Fatalf("link %q → %q, file %q: wrote outside the tree: %v", link, to, file, escaped)
		}
	})
}
