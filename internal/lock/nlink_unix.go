//go:build unix

package lock

import (
	"io/fs"
	"syscall"
)

// nlink is fi's hard link count; ok is false when the platform does not
// say.
func nlink(fi fs.FileInfo) (n uint64, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return uint64(st.Nlink), true
}
