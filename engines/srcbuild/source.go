package srcbuild

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// A source is a tree to build: a tarball or a directory.
type source struct {
	path   string
	dir    bool
	hash   string // sha256 of the tarball, or of the directory's files
	commit string // the git commit it was made from, when it says
}

// openSource identifies p: its digest, and its commit from a `git archive`
// tarball's pax comment or a directory's git HEAD.
func openSource(p string) (*source, error) {
	if p == "" {
		return nil, errors.New("no path given")
	}
	st, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	s := &source{path: p, dir: st.IsDir()}
	if s.dir {
		s.hash, err = treeHash(p)
		if err != nil {
			return nil, err
		}
		if out, err := exec.Command("git", "-C", p, "rev-parse", "--verify", "HEAD").Output(); err == nil {
			s.commit = strings.TrimSpace(string(out))
		}
		return s, nil
	}
	if !isTarball(p) {
		return nil, errors.New("want a .tar.gz, .tgz or .tar of the source tree, or a directory")
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, err
	}
	s.hash = hex.EncodeToString(h.Sum(nil))
	if s.commit, err = tarCommit(p); err != nil {
		return nil, err
	}
	return s, nil
}

// digest is the source's hash; "" for no source.
func (s *source) digest() string {
	if s == nil {
		return ""
	}
	return s.hash
}

func isTarball(p string) bool {
	for _, ext := range []string{".tar.gz", ".tgz", ".tar"} {
		if strings.HasSuffix(p, ext) {
			return true
		}
	}
	return false
}

// openTar opens a tarball, gunzipping it unless it is a plain .tar.
func openTar(p string) (*tar.Reader, func(), error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, nil, err
	}
	if strings.HasSuffix(p, ".tar") {
		return tar.NewReader(bufio.NewReader(f)), func() { f.Close() }, nil
	}
	zr, err := gzip.NewReader(bufio.NewReader(f))
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("not gzip: %w", err)
	}
	return tar.NewReader(zr), func() { zr.Close(); f.Close() }, nil
}

// tarCommit is the commit a `git archive` tarball records in its pax
// global header ("comment=<id>"), or "".
func tarCommit(p string) (string, error) {
	tr, closeFn, err := openTar(p)
	if err != nil {
		return "", err
	}
	defer closeFn()
	h, err := tr.Next()
	if err != nil {
		return "", fmt.Errorf("read the tarball: %w", err)
	}
	c := h.PAXRecords["comment"]
	if h.Typeflag != tar.TypeXGlobalHeader || len(c) != 40 || strings.Trim(c, "0123456789abcdef") != "" {
		return "", nil
	}
	return c, nil
}

// unpack writes the tree into dst (created), dropping the one top
// directory a release or `git archive --prefix` tarball wraps it in.
func (s *source) unpack(dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	if s.dir {
		return copyTree(s.path, dst)
	}
	top, err := tarTop(s.path)
	if err != nil {
		return err
	}
	tr, closeFn, err := openTar(s.path)
	if err != nil {
		return err
	}
	defer closeFn()
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read the tarball: %w", err)
		}
		if h.Typeflag == tar.TypeXGlobalHeader {
			continue
		}
		name := path.Clean(h.Name)
		if top != "" {
			rest, ok := strings.CutPrefix(name, top)
			if !ok {
				continue
			}
			name = strings.TrimPrefix(rest, "/")
		}
		if name == "" || name == "." {
			continue
		}
		if !fs.ValidPath(name) {
			return fmt.Errorf("entry %q leaves the tree", h.Name)
		}
		// Nothing is written through a symlink the tarball made: a link
		// entry followed by link/file (or by a file of the link's own
		// name) would write wherever the link points.
		if link := throughLink(dst, name); link != "" {
			return fmt.Errorf("entry %q goes through the symlink %q the tarball made: refused (it could write outside the tree)", h.Name, link)
		}
		target := filepath.Join(dst, filepath.FromSlash(name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := writeFile(target, tr, h.FileInfo().Mode().Perm()); err != nil {
				return err
			}
		case tar.TypeSymlink:
			// Relative, and inside the tree from where it stands (its
			// parents are real directories: throughLink saw to it).
			to := path.Join(path.Dir(name), h.Linkname)
			if path.IsAbs(h.Linkname) || !fs.ValidPath(to) {
				return fmt.Errorf("entry %q is a symlink to %q, outside the tree: refused", h.Name, h.Linkname)
			}
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			if err := os.Symlink(h.Linkname, target); err != nil {
				return err
			}
		}
	}
}

// throughLink is the first of name's components under dst, the name itself
// included, that is a symlink on disk ("" when none is).
func throughLink(dst, name string) string {
	p := dst
	for _, c := range strings.Split(name, "/") {
		p = filepath.Join(p, c)
		st, err := os.Lstat(p)
		if err != nil {
			return "" // not there yet: nothing below it is either
		}
		if st.Mode()&fs.ModeSymlink != 0 {
			rel, _ := filepath.Rel(dst, p)
			return filepath.ToSlash(rel)
		}
	}
	return ""
}

// tarTop is the one directory every entry of the tarball is under, or "".
func tarTop(p string) (string, error) {
	tr, closeFn, err := openTar(p)
	if err != nil {
		return "", err
	}
	defer closeFn()
	top := ""
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return top, nil
		}
		if err != nil {
			return "", fmt.Errorf("read the tarball: %w", err)
		}
		if h.Typeflag == tar.TypeXGlobalHeader {
			continue
		}
		first, _, _ := strings.Cut(strings.TrimPrefix(path.Clean(h.Name), "./"), "/")
		switch {
		case top == "":
			top = first
		case first != top:
			return "", nil
		}
		if h.Typeflag != tar.TypeDir && path.Clean(h.Name) == first {
			return "", nil // a file at the top: no wrapping directory
		}
	}
}

func writeFile(target string, r io.Reader, perm fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, perm|0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// copyTree copies the directory src into dst, leaving out .git.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.Name() == ".git" && rel != "." {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil // a submodule's .git file
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(l, target)
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			return writeFile(target, f, info.Mode().Perm())
		}
		return nil
	})
}

// treeHash digests a directory's files (paths, executable bits, contents
// and symlink targets), leaving out .git.
func treeHash(dir string) (string, error) {
	var paths []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == ".git" && p != dir {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.IsDir() {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	sort.Strings(paths)
	h := sha256.New()
	for _, p := range paths {
		rel, _ := filepath.Rel(dir, p)
		info, err := os.Lstat(p)
		if err != nil {
			return "", err
		}
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			fmt.Fprintf(h, "l %s %s\n", rel, l)
		case info.Mode().IsRegular():
			fmt.Fprintf(h, "f %s %o %d\n", rel, info.Mode().Perm()&0o111, info.Size())
			f, err := os.Open(p)
			if err != nil {
				return "", err
			}
			_, err = io.Copy(h, f)
			f.Close()
			if err != nil {
				return "", err
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
