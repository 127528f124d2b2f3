//go:build unix

package cache

import "syscall"

func mkfifo(p string) error { return syscall.Mkfifo(p, 0o666) }
