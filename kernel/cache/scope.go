package cache

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// Scope names.
const (
	ScopeDefault = "default"
	ScopeLocal   = "local"
)

// Scope is the scope a run writes (Name) and the scope it may read when its
// own has nothing yet (Base, "" for none).
type Scope struct {
	Name string
	Base string
}

// Local is the scope of CLI runs outside GitHub.
func Local() Scope { return Scope{Name: ScopeLocal} }

// Default is the scope of runs on the default branch.
func Default() Scope { return Scope{Name: ScopeDefault} }

// PullRequest is pull request n's scope, which reads the default scope.
func PullRequest(n int) Scope {
	return Scope{Name: "pr-" + strconv.Itoa(n), Base: ScopeDefault}
}

// Branch is the scope of pushes to ref, a branch other than the default.
func Branch(ref string) Scope {
	sum := sha256.Sum256([]byte(ref))
	return Scope{Name: "branch-" + hex.EncodeToString(sum[:8]), Base: ScopeDefault}
}

// Facts are what the CI adapter knows about a run's source.
type Facts struct {
	// PR is the pull request number; 0 when the run is not about one.
	PR int
	// Ref is the pushed ref (refs/heads/main) of a run that is not about a
	// pull request; DefaultBranch the repository's default branch (main).
	Ref           string
	DefaultBranch string
}

// ScopeFor decides a GitHub run's scope: a pull request's own; default for
// a push to the default branch; a branch scope otherwise. A run whose
// default branch is unknown never gets the default scope.
func ScopeFor(f Facts) (Scope, error) {
	switch {
	case f.PR < 0:
		return Scope{}, fmt.Errorf("cache scope: pull request number %d is negative", f.PR)
	case f.PR > 0:
		return PullRequest(f.PR), nil
	case f.Ref == "":
		return Scope{}, fmt.Errorf("cache scope: neither a pull request nor a ref")
	case f.DefaultBranch != "" && strings.TrimPrefix(f.Ref, "refs/heads/") == f.DefaultBranch && strings.HasPrefix(f.Ref, "refs/heads/"):
		return Default(), nil
	}
	return Branch(f.Ref), nil
}

// valid reports whether a scope name is one Store accepts.
func validScope(s string) bool {
	switch {
	case s == ScopeDefault || s == ScopeLocal:
		return true
	case strings.HasPrefix(s, "pr-"):
		n, err := strconv.Atoi(s[3:])
		return err == nil && n > 0 && strconv.Itoa(n) == s[3:]
	case strings.HasPrefix(s, "branch-"):
		h := s[len("branch-"):]
		_, err := hex.DecodeString(h)
		return err == nil && len(h) == 16
	}
	return false
}
