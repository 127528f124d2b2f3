package contract

import (
	"path"
	"slices"
	"strings"
)

// MaxCleanupRoots bounds the cleanup: section.
const MaxCleanupRoots = 64

// DefaultStateDir is the state directory a cleanup root may never name or
// contain; internal/cleanup checks the state directory actually in use again
// when it cleans.
const DefaultStateDir = ".proofgate"

// resolveCleanup validates the cleanup roots lexically: each is a clean,
// relative, slash-separated path inside the repository, naming neither the
// repository itself, nor .git, nor the state directory, and unique. Symlinks
// cannot be judged here (the contract is machine-independent); internal/cleanup
// refuses them when it cleans. The roots keep their contract order.
func (p *parser) resolveCleanup(roots []string) ([]string, error) {
	if roots == nil {
		return nil, nil
	}
	if len(roots) > MaxCleanupRoots {
		return nil, p.errf("cleanup", "%d roots (at most %d)", len(roots), MaxCleanupRoots)
	}
	seen := map[string]int{}
	for i, r := range roots {
		fp := fieldPath("cleanup").idx(i)
		if why := CleanupRootProblem(r); why != "" {
			return nil, p.errf(fp, "%q: %s", r, why)
		}
		if j, dup := seen[r]; dup {
			return nil, p.errf(fp, "duplicate cleanup root %q (first at cleanup[%d])", r, j)
		}
		seen[r] = i
	}
	return nilIfEmpty(slices.Clone(roots)), nil
}

// CleanupRootProblem says why root is not an acceptable cleanup root, or ""
// when it is (lexically: see resolveCleanup).
func CleanupRootProblem(root string) string {
	switch {
	case root == "":
		return "empty"
	case strings.ContainsAny(root, "\x00\\"):
		return "contains a NUL or a backslash"
	case path.IsAbs(root):
		return "absolute (a cleanup root is relative to the repository)"
	}
	for _, c := range strings.Split(root, "/") {
		switch c {
		case "..":
			return "contains '..' (a cleanup root stays inside the repository)"
		case ".git":
			return "names .git (the repository's own data is never cleaned)"
		}
	}
	if path.Clean(root) != root {
		return "not a clean path (no '.', '//' or trailing '/')"
	}
	if root == "." {
		return "the repository itself"
	}
	if root == DefaultStateDir || strings.HasPrefix(root, DefaultStateDir+"/") {
		return "inside the state directory " + DefaultStateDir
	}
	return ""
}
