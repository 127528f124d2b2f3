package beneath

import (
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// stat resolves rel beneath root with openat2(2); ENOSYS (a kernel before
// 5.6, a seccomp filter) falls back to os.Root.
func stat(root, rel string) (fs.FileInfo, error) {
	dfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: root, Err: err}
	}
	defer unix.Close(dfd)
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS}
	var fd int
	for range 8 { // EAGAIN: a rename raced the walk; the kernel asks to retry
		if fd, err = unix.Openat2(dfd, rel, &how); err != unix.EAGAIN {
			break
		}
	}
	switch {
	case errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EPERM):
		return statRoot(root, rel)
	case errors.Is(err, unix.EXDEV):
		return nil, ErrOutside
	case err != nil:
		return nil, &fs.PathError{Op: "openat2", Path: rel, Err: err}
	}
	f := os.NewFile(uintptr(fd), rel)
	defer f.Close()
	return f.Stat()
}
