package docker

import "syscall"

const noFollow = syscall.O_NOFOLLOW
