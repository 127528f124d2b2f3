//go:build !unix

package lock

import "errors"

func mkfifo(string) error { return errors.ErrUnsupported }
