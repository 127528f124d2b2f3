//go:build unix

package evidence

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// checkOwner refuses a file owned by anyone but the invoking user or root,
// or writable by its group or the world: either could change what runs.
func checkOwner(fi fs.FileInfo) *AllowlistError {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return &AllowlistError{Reason: ReasonOwner, Detail: "cannot read the file's owner"}
	}
	if uid := os.Getuid(); int(st.Uid) != uid && st.Uid != 0 {
		return &AllowlistError{Reason: ReasonOwner, Detail: fmt.Sprintf("owned by uid %d, not by you (uid %d) or root", st.Uid, uid)}
	}
	if m := fi.Mode().Perm(); m&0o022 != 0 {
		return &AllowlistError{Reason: ReasonWritable, Detail: fmt.Sprintf("mode %04o lets others change it; chmod go-w", m)}
	}
	return nil
}
