//go:build !(linux || darwin || freebsd || netbsd || openbsd)

package cache

import (
	"errors"
	"os"
)

func tryLock(*os.File, bool) (bool, error) {
	return false, errors.New("cache: file locks are not supported on this system")
}
