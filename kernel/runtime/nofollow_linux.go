package runtime

import "syscall"

// NoFollow is O_NOFOLLOW where the platform has it.
const NoFollow = syscall.O_NOFOLLOW
