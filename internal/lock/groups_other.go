//go:build !linux

package lock

import "errors"

// Without /proc start times and cgroups nothing proves that a recorded
// group is still the check's: it is never signalled.
func killGroup(Group) (string, error) { return ResultNoSupport, nil }

// KillCgroup is not supported off Linux.
func KillCgroup(dir string) (string, error) {
	return "", errors.New("cgroups are not supported on this OS")
}

func groupRuns(Group) (bool, error) {
	return true, errors.New("whether a recorded process group runs cannot be told on this OS")
}
