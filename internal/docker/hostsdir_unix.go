//go:build unix

package docker

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// pidGone reports whether no process has pid (kill 0 says ESRCH).
func pidGone(pid int) bool { return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) }

// ownedBySelf reports whether fi belongs to this process's user.
func ownedBySelf(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}
