//go:build !unix

package cache

import "errors"

func mkfifo(string) error { return errors.ErrUnsupported }
