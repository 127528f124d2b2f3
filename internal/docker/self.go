package docker

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"path"
	"strings"

	"github.com/moby/moby/client"
)

// Bounds on the /proc files read for self-detection. Lines longer than
// maxProcLine (an overlay root with hundreds of layers) are skipped, not
// parsed in part.
const (
	maxProcFile  = 4 << 20
	maxProcLine  = 64 << 10
	maxProcLines = 20000
	maxCandidate = 8 // container ids taken from each file
)

// selfFiles are the files that Docker bind-mounts into every container from
// its own directory <docker root>/containers/<id>/, keyed by base name.
var selfFiles = map[string]string{
	"hostname":    "/etc/hostname",
	"hosts":       "/etc/hosts",
	"resolv.conf": "/etc/resolv.conf",
}

// isContainerID reports whether s is a full Docker container id: 64
// lowercase hex digits.
func isContainerID(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// procLines calls fn for each line of data (at most maxProcFile bytes and
// maxProcLines lines are looked at; longer lines are skipped).
func procLines(data []byte, fn func(line string)) {
	if len(data) > maxProcFile {
		data = data[:maxProcFile]
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), maxProcLine)
	sc.Split(scanLinesSkipLong)
	for n := 0; n < maxProcLines && sc.Scan(); n++ {
		if b := sc.Bytes(); b != nil {
			fn(string(b))
		}
	}
}

// scanLinesSkipLong is bufio.ScanLines that returns a nil token (skipped by
// procLines) for a line longer than maxProcLine instead of failing the scan.
func scanLinesSkipLong(data []byte, atEOF bool) (int, []byte, error) {
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		if i > maxProcLine-1 {
			return i + 1, nil, nil
		}
		return i + 1, bytes.TrimSuffix(data[:i], []byte{'\r'}), nil
	}
	if len(data) >= maxProcLine-1 {
		// Too long and no newline yet: drop what we have and keep skipping
		// until the newline (the dropped prefix makes the rest unparsable,
		// which the callers tolerate: a partial line never matches).
		return len(data), nil, nil
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}

// unescapeMountinfo undoes the octal escapes (\040 space, \011 tab, \012
// newline, \134 backslash) the kernel writes in mountinfo paths. A malformed
// escape is kept as is.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			o := s[i+1 : i+4]
			if o[0] >= '0' && o[0] <= '3' && o[1] >= '0' && o[1] <= '7' && o[2] >= '0' && o[2] <= '7' {
				b.WriteByte((o[0]-'0')<<6 | (o[1]-'0')<<3 | (o[2] - '0'))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// mountinfo is what self-detection needs from /proc/self/mountinfo.
type mountinfo struct {
	// ids are the container ids named by the roots of the /etc/hostname,
	// /etc/hosts and /etc/resolv.conf bind mounts, first seen first.
	ids []string
	// points is the set of mount points (cleaned).
	points map[string]bool
}

// parseMountinfo parses /proc/self/mountinfo text (proc(5)): "ID PARENT
// MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS".
// A container id is taken from a mount at /etc/<f> (f one of hostname, hosts,
// resolv.conf) whose root ends in containers/<64 hex>/<f>: the root is
// relative to the filesystem holding the Docker root, so it is
// /var/lib/docker/containers/<id>/hostname, or /containers/<id>/hostname when
// /var/lib/docker is a filesystem of its own. Malformed lines are ignored.
func parseMountinfo(data []byte) mountinfo {
	mi := mountinfo{points: map[string]bool{}}
	seen := map[string]bool{}
	procLines(data, func(line string) {
		f := strings.Fields(line)
		sep := -1
		for i := 6; i < len(f); i++ {
			if f[i] == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || sep+2 >= len(f) {
			return
		}
		root, point := unescapeMountinfo(f[3]), unescapeMountinfo(f[4])
		if !strings.HasPrefix(point, "/") || !strings.HasPrefix(root, "/") {
			return
		}
		point = path.Clean(point)
		mi.points[point] = true
		if id := selfFileID(root, point); id != "" && !seen[id] && len(mi.ids) < maxCandidate {
			seen[id] = true
			mi.ids = append(mi.ids, id)
		}
	})
	return mi
}

// selfFileID returns the container id when a mount of root at point is one
// of Docker's per-container files, and "".
func selfFileID(root, point string) string {
	root = path.Clean(root)
	base := path.Base(root)
	if want, ok := selfFiles[base]; !ok || point != want {
		return ""
	}
	dir := path.Dir(root)
	id := path.Base(dir)
	if !isContainerID(id) || path.Base(path.Dir(dir)) != "containers" {
		return ""
	}
	return id
}

// parseCgroup parses /proc/self/cgroup text ("HIERARCHY:CONTROLLERS:PATH"
// per line) and returns the container ids it names, first seen first. In
// each path the deepest Docker segment counts: cgroup v1 and the cgroupfs
// driver use .../docker/<id>, the systemd driver .../docker-<id>.scope.
// A private cgroup namespace (the default on cgroup v2) shows "/" only:
// no id, and mountinfo must be used.
func parseCgroup(data []byte) []string {
	var ids []string
	seen := map[string]bool{}
	procLines(data, func(line string) {
		_, rest, ok := strings.Cut(line, ":")
		if !ok {
			return
		}
		_, p, ok := strings.Cut(rest, ":")
		if !ok || !strings.HasPrefix(p, "/") {
			return
		}
		segs := strings.Split(p, "/")
		id := ""
		for i, s := range segs {
			switch {
			case i > 0 && segs[i-1] == "docker" && isContainerID(s):
				id = s
			case strings.HasPrefix(s, "docker-") && strings.HasSuffix(s, ".scope") && isContainerID(s[len("docker-"):len(s)-len(".scope")]):
				id = s[len("docker-") : len(s)-len(".scope")]
			}
		}
		if id != "" && !seen[id] && len(ids) < maxCandidate {
			seen[id] = true
			ids = append(ids, id)
		}
	})
	return ids
}

// inspector is the part of the Engine API client that self-detection uses.
type inspector interface {
	ContainerInspect(ctx context.Context, id string, opts client.ContainerInspectOptions) (client.ContainerInspectResult, error)
}

// selfCandidate is a container that this process may be running in.
type selfCandidate struct {
	ref string // container id, or the hostname
	by  string // "mountinfo", "cgroup" or "hostname"
}

// selfCandidates lists, in order of trust, the containers this process may
// run in: ids from mountinfo, then from cgroup, then the hostname (only
// when other signs say this is a container).
func selfCandidates(mi mountinfo, cgroup []byte, host string, containerHint bool) []selfCandidate {
	var out []selfCandidate
	seen := map[string]bool{}
	add := func(ref, by string) {
		if ref != "" && !seen[ref] {
			seen[ref] = true
			out = append(out, selfCandidate{ref, by})
		}
	}
	for _, id := range mi.ids {
		add(id, "mountinfo")
	}
	for _, id := range parseCgroup(cgroup) {
		add(id, "cgroup")
	}
	if containerHint && host != "" {
		add(host, "hostname")
	}
	return out
}

// verifySelf reports whether the inspected container can be this process's
// own: it is running, it is the container the candidate names (full id, or
// a configured hostname equal to ours), and at least one of its bind or
// volume mounts has a destination that is a mount point in this process's
// mount namespace. A container with no such mount is refused: its record
// cannot be told apart from another container's, and nothing could be
// translated through it anyway.
func verifySelf(c selfCandidate, ins client.ContainerInspectResult, points map[string]bool) bool {
	ct := ins.Container
	if ct.State == nil || !ct.State.Running {
		return false
	}
	if c.by == "hostname" {
		if ct.Config == nil || ct.Config.Hostname != c.ref {
			return false
		}
	} else if ct.ID != c.ref {
		return false
	}
	for _, m := range ct.Mounts {
		if (m.Type == "bind" || m.Type == "volume") && strings.HasPrefix(m.Destination, "/") && points[path.Clean(m.Destination)] {
			return true
		}
	}
	return false
}

// findSelf returns the id and mounts of the container this process runs in,
// tried in the order of selfCandidates and verified with verifySelf, or ""
// and nil.
func findSelf(ctx context.Context, cli inspector, mi mountinfo, cgroup []byte, host string, containerHint bool) (string, []MountPoint) {
	for _, c := range selfCandidates(mi, cgroup, host, containerHint) {
		ins, err := cli.ContainerInspect(ctx, c.ref, client.ContainerInspectOptions{})
		if err != nil || !verifySelf(c, ins, mi.points) {
			continue
		}
		out := []MountPoint{}
		for _, m := range ins.Container.Mounts {
			out = append(out, MountPoint{Type: string(m.Type), Source: m.Source, Destination: m.Destination})
		}
		return ins.Container.ID, out
	}
	return "", nil
}

// readProc reads a /proc file, bounded; "" on any error.
func readProc(name string) []byte {
	f, err := os.Open(name)
	if err != nil {
		return nil
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, maxProcFile))
	return b
}

// detectSelf finds the harness's own container (see findSelf) from this
// process's /proc files and hostname.
func detectSelf(ctx context.Context, cli inspector, host string) (string, []MountPoint) {
	return findSelf(ctx, cli, parseMountinfo(readProc("/proc/self/mountinfo")), readProc("/proc/self/cgroup"), host, inContainer())
}
