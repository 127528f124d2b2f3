package contract

import (
	"os"
	"path"
	"path/filepath"
	"strings"
)

// dockerSockets are the well-known paths of the Docker daemon's socket.
var dockerSockets = []string{"/var/run/docker.sock", "/run/docker.sock"}

// MsgDockerSocket is the message of every refusal to mount the Docker socket.
const MsgDockerSocket = "the Docker socket must never be mounted"

// forbiddenTargets are container paths a mount may not cover.
var forbiddenTargets = []string{"/proc", "/sys", "/dev"}

// checkMount validates one declared mount and returns it with cleaned paths.
func (p *parser) checkMount(rm rawMount, at fieldPath) (Mount, error) {
	src, tgt := rm.Source, rm.Target
	if strings.IndexByte(src, 0) >= 0 {
		return Mount{}, p.errf(at.key("source"), "contains a NUL byte")
	}
	if strings.IndexByte(tgt, 0) >= 0 {
		return Mount{}, p.errf(at.key("target"), "contains a NUL byte")
	}
	if !path.IsAbs(src) && hasDotDot(src) {
		return Mount{}, p.errf(at.key("source"), "%q must be absolute or relative to the workspace without \"..\"", src)
	}
	if MountsDockerSocket(src) {
		return Mount{}, p.errf(at.key("source"), MsgDockerSocket)
	}
	if !path.IsAbs(tgt) {
		return Mount{}, p.errf(at.key("target"), "%q must be an absolute path in the container", tgt)
	}
	ct := path.Clean(tgt)
	if ct == "/" {
		return Mount{}, p.errf(at.key("target"), "cannot mount over /")
	}
	for _, f := range forbiddenTargets {
		if ct == f || strings.HasPrefix(ct, f+"/") {
			return Mount{}, p.errf(at.key("target"), "cannot mount over %s", f)
		}
	}
	return Mount{Source: path.Clean(src), Target: ct, Writable: rm.Writable}, nil
}

// MountsDockerSocket reports whether a mount source would expose the Docker
// socket: its cleaned form or its symlink resolution ends in docker.sock or
// is a directory that contains a well-known socket path (/, /var, /run,
// /var/run), or it exists and is a unix socket. Relative sources are
// judged by name only; runtimes must call CheckMountSource with the real
// workspace before mounting.
func MountsDockerSocket(source string) bool {
	candidates := []string{path.Clean(source)}
	if filepath.IsAbs(source) {
		if r, err := filepath.EvalSymlinks(source); err == nil {
			candidates = append(candidates, filepath.ToSlash(r))
		}
		if st, err := os.Stat(source); err == nil && st.Mode()&os.ModeSocket != 0 {
			return true
		}
	}
	sockets := append([]string(nil), dockerSockets...)
	for _, s := range dockerSockets {
		if r, err := filepath.EvalSymlinks(s); err == nil {
			sockets = append(sockets, filepath.ToSlash(r))
		}
	}
	if h, ok := os.LookupEnv("DOCKER_HOST"); ok && strings.HasPrefix(h, "unix://") {
		sockets = append(sockets, path.Clean(strings.TrimPrefix(h, "unix://")))
	}
	for _, c := range candidates {
		if strings.HasSuffix(c, "docker.sock") {
			return true
		}
		if !path.IsAbs(c) {
			continue
		}
		for _, s := range sockets {
			if c == s || c == "/" || strings.HasPrefix(s, c+"/") {
				return true
			}
		}
	}
	return false
}

// CheckMountSource resolves a declared mount source against the workspace
// root on this machine and refuses it when it escapes the workspace (a
// relative source through a symlink) or exposes the Docker socket. The
// Docker runtime calls it before every bind mount.
func CheckMountSource(workspace, source string) (string, error) {
	full := source
	if !filepath.IsAbs(source) {
		if hasDotDot(source) {
			return "", &Error{Path: "mounts", Msg: "mount source " + source + " leaves the workspace"}
		}
		full = filepath.Join(workspace, source)
		root, err := filepath.EvalSymlinks(workspace)
		if err != nil {
			return "", &Error{Path: "mounts", Msg: "cannot resolve workspace: " + err.Error(), Err: err}
		}
		r, err := filepath.EvalSymlinks(full)
		if err != nil {
			return "", &Error{Path: "mounts", Msg: "cannot resolve mount source " + source + ": " + err.Error(), Err: err}
		}
		if r != root && !strings.HasPrefix(r, root+string(filepath.Separator)) {
			return "", &Error{Path: "mounts", Msg: "mount source " + source + " resolves outside the workspace"}
		}
		full = r
	}
	if MountsDockerSocket(full) {
		return "", &Error{Path: "mounts", Msg: MsgDockerSocket}
	}
	return full, nil
}
