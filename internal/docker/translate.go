package docker

import (
	"os"
	"path"
	"strings"
)

// MountPoint is one mount of the harness's own container, as the daemon
// reports it: Source is the path on the daemon's host, Destination the path
// inside the harness container.
type MountPoint struct {
	Type        string // "bind", "volume", "tmpfs", ...
	Source      string
	Destination string
}

// TranslatePath maps p, an absolute path inside the harness container, to
// the daemon host's path, using the mount with the longest Destination that
// contains p. Only bind and volume mounts (which have a host Source) count.
// It reports false when no such mount contains p; p is cleaned first and
// ".." can never climb out of a mount.
func TranslatePath(mounts []MountPoint, p string) (string, bool) {
	if !strings.HasPrefix(p, "/") {
		return "", false
	}
	p = path.Clean(p)
	best := -1
	for i, m := range mounts {
		if m.Type != "bind" && m.Type != "volume" && m.Type != "" {
			continue
		}
		if m.Source == "" || !strings.HasPrefix(m.Destination, "/") || !strings.HasPrefix(m.Source, "/") {
			continue
		}
		d := path.Clean(m.Destination)
		if !under(p, d) {
			continue
		}
		if best < 0 || len(d) > len(path.Clean(mounts[best].Destination)) {
			best = i
		}
	}
	if best < 0 {
		return "", false
	}
	d := path.Clean(mounts[best].Destination)
	rest := strings.TrimPrefix(p, d)
	if d == "/" {
		rest = p
	}
	return path.Join(path.Clean(mounts[best].Source), rest), true
}

// inContainer reports signs that this process runs inside a container.
func inContainer() bool {
	for _, f := range []string{"/.dockerenv", "/run/.containerenv"} {
		if _, err := os.Stat(f); err == nil {
			return true
		}
	}
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return false
	}
	s := string(b)
	return strings.Contains(s, "/docker/") || strings.Contains(s, "/docker-") || strings.Contains(s, "containerd")
}
