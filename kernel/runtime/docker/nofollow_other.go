//go:build !linux

package docker

const noFollow = 0
