package docker

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
)

// ErrCopyLimit is wrapped when a workspace is larger than the copy limit.
var ErrCopyLimit = errors.New("workspace exceeds the copy limit")

// writeWorkspaceTar writes the tree at dir as a tar whose entries are
// relative to dir and owned by uid:gid. Every access goes through an
// os.Root, so nothing outside dir is read. Symlinks are stored as symlinks
// when their target (resolved lexically from the link's directory) stays
// inside dir, and skipped otherwise; their targets are never read. Sockets,
// devices and FIFOs are skipped. More than limit bytes of file content fails
// with ErrCopyLimit.
func writeWorkspaceTar(w io.Writer, dir string, uid, gid int, limit int64) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("workspace copy: %w", err)
	}
	defer root.Close()
	tw := tar.NewWriter(w)
	var total int64
	err = fs.WalkDir(root.FS(), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := root.Lstat(name)
		if err != nil {
			return err
		}
		h := &tar.Header{Name: name, Uid: uid, Gid: gid, Mode: int64(fi.Mode().Perm()), Format: tar.FormatPAX}
		switch {
		case fi.IsDir():
			if name == "." {
				// The daemon skips an entry named "." when unpacking; "/"
				// (relative to the destination) sets the owner and mode of
				// the volume's root so the check can create files there.
				h.Name = "/"
			} else {
				h.Name = name + "/"
			}
			h.Typeflag = tar.TypeDir
			return tw.WriteHeader(h)
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := root.Readlink(name)
			if err != nil {
				return err
			}
			if !linkStaysInside(name, target) {
				return nil
			}
			h.Typeflag, h.Linkname, h.Mode = tar.TypeSymlink, target, 0o777
			return tw.WriteHeader(h)
		case fi.Mode().IsRegular():
			f, err := root.OpenFile(name, os.O_RDONLY|noFollow, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			st, err := f.Stat()
			if err != nil {
				return err
			}
			if !st.Mode().IsRegular() {
				return nil
			}
			total += st.Size()
			if limit > 0 && total > limit {
				return fmt.Errorf("%w (%d bytes)", ErrCopyLimit, limit)
			}
			h.Typeflag, h.Size, h.Mode = tar.TypeReg, st.Size(), int64(st.Mode().Perm())
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			if _, err := io.CopyN(tw, f, st.Size()); err != nil {
				return fmt.Errorf("%s changed while copying: %w", name, err)
			}
			return nil
		default:
			return nil
		}
	})
	if err != nil {
		return fmt.Errorf("workspace copy: %w", err)
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("workspace copy: %w", err)
	}
	return nil
}

// linkStaysInside reports whether a symlink at name (slash-separated,
// relative to the workspace root) with the given target resolves lexically
// inside the root. Absolute targets never do.
func linkStaysInside(name, target string) bool {
	if target == "" || path.IsAbs(target) || filepath.IsAbs(target) {
		return false
	}
	return filepath.IsLocal(path.Join(path.Dir(name), target)) || path.Join(path.Dir(name), target) == "."
}
