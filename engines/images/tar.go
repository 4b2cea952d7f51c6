package images

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// tarDir writes the tree under root to w as a tar stream with the names
// relative to root, keeping modes, numeric owners, symlinks, hard links,
// device nodes and file capabilities (security.capability). Sockets are
// left out; so is the content of every directory skip names (relative,
// slash-separated), though the directory itself stays. Names come in
// lexical order, and every entry's time is mtime (none is zero: the files'
// own), so the same tree gives the same stream whenever it was written.
func tarDir(w io.Writer, root string, skip func(rel string) bool, mtime time.Time) error {
	tw := tar.NewWriter(w)
	if err := writeTree(tw, root, "", skip, nil, mtime); err != nil {
		return err
	}
	return tw.Close()
}

// writeTree writes the tree under root to tw as tarDir does, each name
// after prefix; entries leave names (relative to root) are left out.
func writeTree(tw *tar.Writer, root, prefix string, skip, leave func(rel string) bool, mtime time.Time) error {
	type inode struct{ dev, ino uint64 }
	links := map[inode]string{}
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		if rel == "." {
			return nil
		}
		rel = filepath.ToSlash(rel)
		if leave != nil && leave(rel) {
			return nil
		}
		fi, err := os.Lstat(path)
		if err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSocket != 0 {
			return nil
		}
		target := ""
		if fi.Mode()&fs.ModeSymlink != 0 {
			if target, err = os.Readlink(path); err != nil {
				return err
			}
		}
		hdr, err := tar.FileInfoHeader(fi, target)
		if err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		hdr.Name = prefix + rel
		if fi.IsDir() {
			hdr.Name += "/"
		}
		// The rootfs's names for the numeric IDs are not the host's.
		hdr.Uname, hdr.Gname = "", ""
		hdr.ModTime = hdr.ModTime.Truncate(1e9)
		if !mtime.IsZero() {
			hdr.ModTime = mtime
		}
		hdr.AccessTime, hdr.ChangeTime = hdr.ModTime, hdr.ModTime
		hdr.Format = tar.FormatPAX
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && fi.Mode().IsRegular() && st.Nlink > 1 {
			key := inode{uint64(st.Dev), st.Ino}
			if first, seen := links[key]; seen {
				hdr.Typeflag, hdr.Linkname, hdr.Size = tar.TypeLink, first, 0
			} else {
				links[key] = hdr.Name
			}
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			if c, err := getxattr(path, "security.capability"); err != nil {
				return fmt.Errorf("%s: %w", rel, err)
			} else if c != nil {
				hdr.PAXRecords = map[string]string{"SCHILY.xattr.security.capability": string(c)}
			}
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		if hdr.Typeflag == tar.TypeReg && hdr.Size > 0 {
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			_, err = io.Copy(tw, f)
			f.Close()
			if err != nil {
				return fmt.Errorf("%s: %w", rel, err)
			}
		}
		if fi.IsDir() && skip != nil && skip(rel) {
			return fs.SkipDir
		}
		return nil
	})
}

// getxattr returns the attribute, or nil when the file has none.
func getxattr(path, name string) ([]byte, error) {
	buf := make([]byte, 256)
	n, err := unix.Getxattr(path, name, buf)
	if errors.Is(err, unix.ENODATA) || errors.Is(err, unix.ENOTSUP) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return buf[:n], nil
}
