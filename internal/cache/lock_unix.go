//go:build linux || darwin || freebsd || netbsd || openbsd

package cache

import (
	"errors"
	"os"
	"syscall"
)

// tryLock takes an flock on f without blocking; busy reports contention.
func tryLock(f *os.File, exclusive bool) (busy bool, err error) {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	err = syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return true, nil
	}
	return false, err
}
