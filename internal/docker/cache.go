package docker

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/moby/moby/api/types/mount"

	"github.com/proofgate/proofgate/kernel/runtime"
)

// cacheMounts returns the bind mounts of the caches the kernel prepared
// (internal/cache) and their part of the profile: read-only unless the mode
// is rw. A source must be an absolute real directory with no symlink on
// its path (the kernel checked it; this is checked again right before the
// mount), and a target must not overlap what the sandbox mounts itself or
// another cache.
func (r *Runtime) cacheMounts(sb runtime.Sandbox) ([]mount.Mount, []any, error) {
	var mounts []mount.Mount
	var profile []any
	for i, c := range sb.Caches {
		field := fmt.Sprintf("caches[%d]", i)
		if err := checkCacheTarget(sb, i); err != nil {
			return nil, nil, err
		}
		if c.Mode != runtime.CacheReadWrite && c.Mode != runtime.CacheReadOnly {
			return nil, nil, &SpecError{field + ".mode", fmt.Sprintf("%q is not rw or ro", c.Mode)}
		}
		if err := checkCacheSource(c.Source); err != nil {
			return nil, nil, &SpecError{field + ".source", fmt.Sprintf("cache %s: %v", c.Name, err)}
		}
		host, err := r.hostSource(field+".source", c.Source)
		if err != nil {
			return nil, nil, err
		}
		mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: host, Target: c.Mount, ReadOnly: c.Mode != runtime.CacheReadWrite,
			BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate}})
		entry := map[string]any{
			"name": c.Name, "mount": c.Mount, "mode": c.Mode, "scope": c.Scope, "run_scope": c.RunScope,
			"digest": c.Digest, "entries": c.Entries, "bytes": c.Bytes,
			"generation": c.Generation, "provenance": c.Provenance, "written_by": c.WrittenBy,
		}
		if c.Lifetime != "" {
			entry["lifetime"] = c.Lifetime
		}
		profile = append(profile, entry)
	}
	return mounts, profile, nil
}

// checkCacheTarget refuses a cache target that is not a clean absolute
// path, or overlaps the workspace, /tmp, $HOME, /etc/hosts, /proc, /sys,
// /dev, an extra mount or another cache. The one exception: a run-lifetime
// cache strictly under the workspace of a copy-mode check (ADR 0032),
// which the copy leaves out (workspaceCaches).
func checkCacheTarget(sb runtime.Sandbox, i int) error {
	c := sb.Caches[i]
	field := fmt.Sprintf("caches[%d].mount", i)
	t := c.Mount
	if !filepath.IsAbs(t) || filepath.Clean(t) != t || t == "/" {
		return &SpecError{field, fmt.Sprintf("%q is not a clean absolute path", t)}
	}
	reserved := []string{"/tmp", Home, "/etc/hosts", "/proc", "/sys", "/dev"}
	switch {
	case !under(t, WorkspaceTarget) && !under(WorkspaceTarget, t):
	case t == WorkspaceTarget || under(WorkspaceTarget, t):
		return &SpecError{field, fmt.Sprintf("%s overlaps %s", t, WorkspaceTarget)}
	case c.Lifetime != runtime.LifetimeRun:
		return &SpecError{field, fmt.Sprintf("%s lies under %s: only a run-lifetime cache may", t, WorkspaceTarget)}
	case sb.Workspace != "copy":
		return &SpecError{field, fmt.Sprintf("%s lies under %s, which needs workspace copy (not %q)", t, WorkspaceTarget, sb.Workspace)}
	}
	for _, m := range sb.Mounts {
		reserved = append(reserved, filepath.Clean(m.Target))
	}
	for j, o := range sb.Caches {
		if j != i {
			reserved = append(reserved, o.Mount)
		}
	}
	for _, p := range reserved {
		if under(t, p) || under(p, t) {
			return &SpecError{field, fmt.Sprintf("%s overlaps %s", t, p)}
		}
	}
	return nil
}

// checkCacheSource requires an absolute directory that is no symlink and
// has none on its path.
func checkCacheSource(src string) error {
	if !filepath.IsAbs(src) {
		return fmt.Errorf("%q is not absolute", src)
	}
	fi, err := os.Lstat(src)
	if err != nil {
		return err
	}
	if fi.Mode()&os.ModeSymlink != 0 || !fi.IsDir() {
		return fmt.Errorf("%s is not a directory (a symlink is never mounted)", src)
	}
	if real, err := filepath.EvalSymlinks(src); err != nil || real != filepath.Clean(src) {
		return fmt.Errorf("%s has a symlink on its path (resolves to %s)", src, real)
	}
	return nil
}

// workspaceCaches returns the workspace-relative paths (slash-separated)
// of the caches mounted under /workspace, which the copy leaves out: the
// check sees the cache there, never the host's own tree (a developer's
// node_modules), and nothing of the copy is unpacked beneath the mount.
// Each directory on the way must be absent or a real directory in the
// host workspace: a symlink there (copied when it stays inside) would
// move the mount point away from the excluded path.
func workspaceCaches(ws string, sb runtime.Sandbox) ([]string, error) {
	var rels []string
	for i, c := range sb.Caches {
		rel, ok := strings.CutPrefix(c.Mount, WorkspaceTarget+"/")
		if !ok {
			continue
		}
		parts := strings.Split(rel, "/")
		for j := 1; j < len(parts); j++ {
			fi, err := os.Lstat(filepath.Join(ws, filepath.FromSlash(strings.Join(parts[:j], "/"))))
			if errors.Is(err, fs.ErrNotExist) {
				break
			}
			if err != nil || !fi.IsDir() {
				return nil, &SpecError{fmt.Sprintf("caches[%d].mount", i), fmt.Sprintf("%s: the workspace's %s is not a directory (a symlink there would move the mount)", c.Mount, strings.Join(parts[:j], "/"))}
			}
		}
		rels = append(rels, rel)
	}
	return rels, nil
}
