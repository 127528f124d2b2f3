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
	"strings"

	"github.com/proofgate/proofgate/kernel/runtime"
)

// ErrCopyLimit is wrapped when a workspace is larger than the copy limit.
var ErrCopyLimit = errors.New("workspace exceeds the copy limit")

// ErrWorkspaceSize is wrapped when a workspace's files alone exceed the
// check's workspace_size.
var ErrWorkspaceSize = errors.New("workspace exceeds workspace_size")

// tarOptions shape a workspace archive.
type tarOptions struct {
	uid, gid int
	limit    int64    // bytes of file content (the copy limit); 0 = none
	size     int64    // bytes of file content allowed by workspace_size; 0 = none
	exclude  []string // subtrees left out, slash-separated relative paths
	// rootMode, when non-zero, is the mode of the first root entry in place
	// of the workspace's own (see copy.go: the real mode, written last,
	// tells that the daemon has unpacked everything before it).
	rootMode int64
}

// writeWorkspaceTar writes the tree at dir as a complete tar (see
// walkWorkspace).
func writeWorkspaceTar(w io.Writer, dir string, uid, gid int, limit int64) error {
	tw := tar.NewWriter(w)
	if _, err := walkWorkspace(tw, dir, tarOptions{uid: uid, gid: gid, limit: limit}); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("workspace copy: %w", err)
	}
	return nil
}

// walkWorkspace writes the tree at dir into tw, entries relative to dir and
// owned by o.uid:o.gid, and returns the root directory's mode. Every access
// goes through an os.Root, so nothing outside dir is read. Symlinks are
// stored as symlinks when their target (resolved lexically from the link's
// directory) stays inside dir, and skipped otherwise; their targets are
// never read. Sockets, devices and FIFOs are skipped, and so are the
// o.exclude subtrees. A file or directory that vanishes during the walk (a
// temporary file of a sibling check) is skipped, not an error. More than
// o.limit bytes of file content fails with ErrCopyLimit, more than o.size
// with ErrWorkspaceSize. Errors name the workspace-relative path.
//
// Every entry keeps its modification time, and each directory below the
// root is written a second time after the whole tree: the daemon sets a
// directory's time when it unpacks the directory's entry, the entries
// unpacked into it then move it, and the archive of a copy ends only after
// the check (the root's time comes with its last entry, written by the
// caller). Go's test cache keys opened files and listed directories by
// size and mtime: the checkout's times make it hit as on the host, and
// miss where the checkout changed.
func walkWorkspace(tw *tar.Writer, dir string, o tarOptions) (root tar.Header, err error) {
	var dirs []*tar.Header
	root, err = walkEntries(tw, dir, o, &dirs)
	for _, h := range dirs {
		if err == nil {
			err = tw.WriteHeader(h)
		}
	}
	if err != nil {
		return tar.Header{}, fmt.Errorf("workspace copy: %w", err)
	}
	return root, nil
}

// walkEntries writes every entry once, collects the directories below the
// root in dirs and returns the root's entry as the workspace has it.
func walkEntries(tw *tar.Writer, dir string, o tarOptions, dirs *[]*tar.Header) (tar.Header, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return tar.Header{}, err
	}
	defer root.Close()
	var total int64
	var rootHdr tar.Header
	err = fs.WalkDir(root.FS(), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			if name != "." && errors.Is(err, fs.ErrNotExist) {
				return nil // vanished while walking
			}
			return pathError(name, err)
		}
		if excluded(name, o.exclude) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		fi, err := root.Lstat(name)
		if errors.Is(err, fs.ErrNotExist) && name != "." {
			return nil
		}
		if err != nil {
			return pathError(name, err)
		}
		h := &tar.Header{Name: name, Uid: o.uid, Gid: o.gid, Mode: int64(fi.Mode().Perm()), ModTime: fi.ModTime(), Format: tar.FormatPAX}
		switch {
		case fi.IsDir():
			if name == "." {
				// The daemon skips an entry named "." when unpacking; "/"
				// (relative to the destination) sets the owner and mode of
				// the volume's root so the check can create files there.
				h.Name, h.Typeflag = "/", tar.TypeDir
				rootHdr = *h
				if o.rootMode != 0 {
					h.Mode = o.rootMode
				}
			} else {
				h.Name, h.Typeflag = name+"/", tar.TypeDir
				*dirs = append(*dirs, h)
			}
			return tw.WriteHeader(h)
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := root.Readlink(name)
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			if err != nil {
				return pathError(name, err)
			}
			if !linkStaysInside(name, target) {
				return nil
			}
			h.Typeflag, h.Linkname, h.Mode = tar.TypeSymlink, target, 0o777
			return tw.WriteHeader(h)
		case fi.Mode().IsRegular():
			return copyFile(tw, root, name, h, &total, o)
		default:
			return nil
		}
	})
	return rootHdr, err
}

// copyFile writes one regular file's entry and content.
func copyFile(tw *tar.Writer, root *os.Root, name string, h *tar.Header, total *int64, o tarOptions) error {
	f, err := root.OpenFile(name, os.O_RDONLY|runtime.NoFollow, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return pathError(name, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return pathError(name, err)
	}
	if !st.Mode().IsRegular() {
		return nil
	}
	*total += st.Size()
	if o.limit > 0 && *total > o.limit {
		return fmt.Errorf("%w (%d bytes)", ErrCopyLimit, o.limit)
	}
	if o.size > 0 && *total > o.size {
		return fmt.Errorf("%w (%d bytes; %s brings the files to %d)", ErrWorkspaceSize, o.size, name, *total)
	}
	h.Typeflag, h.Size, h.Mode, h.ModTime = tar.TypeReg, st.Size(), int64(st.Mode().Perm()), st.ModTime()
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	if _, err := io.CopyN(tw, f, st.Size()); err != nil {
		return fmt.Errorf("%s changed while copying: %w", name, err)
	}
	return nil
}

// pathError names the workspace-relative path of a failed access (the
// os.Root error's own path is dropped: it is the same, less readable).
func pathError(name string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("%s: %w", name, err)
}

// excluded reports whether name (slash-separated, relative) is one of the
// excluded subtrees or lies beneath one.
func excluded(name string, exclude []string) bool {
	for _, x := range exclude {
		if name == x || strings.HasPrefix(name, x+"/") {
			return true
		}
	}
	return false
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
