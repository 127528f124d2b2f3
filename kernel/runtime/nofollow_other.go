//go:build !linux

package runtime

// NoFollow is O_NOFOLLOW where the platform has it.
const NoFollow = 0
