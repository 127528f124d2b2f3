package cache

import (
	"os"
	"syscall"
)

// fileIdentity returns an entry's inode and ctime (ns) for the stamp.
func fileIdentity(fi os.FileInfo) (ino uint64, ctime int64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino), int64(st.Ctim.Sec)*1e9 + int64(st.Ctim.Nsec)
	}
	return 0, 0
}

// ownedByMe reports whether this process's user owns the entry.
func ownedByMe(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}

// noFollow makes an open fail on a symlink.
const noFollow = syscall.O_NOFOLLOW

// nonBlock keeps an open from waiting on a FIFO swapped in for a file.
const nonBlock = syscall.O_NONBLOCK
