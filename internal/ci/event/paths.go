package event

import (
	"path"
	"path/filepath"
	"strings"
)

// CleanRel reports whether p is a clean relative slash path inside the
// repository: what an input naming a file of it (a contract, a trusted
// root, a workflow) must be.
func CleanRel(p string) bool {
	return p != "" && !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "-") && !strings.Contains(p, "\\") &&
		path.Clean(p) == p && filepath.IsLocal(p)
}

// SplitRepo splits OWNER/NAME (GITHUB_REPOSITORY's form); ok is false for
// anything else.
func SplitRepo(full string) (owner, name string, ok bool) {
	owner, name, ok = strings.Cut(full, "/")
	if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
		return "", "", false
	}
	return owner, name, true
}
