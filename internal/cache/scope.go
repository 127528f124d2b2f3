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

// Commit is the scope of a run whose commit may write no shared scope (see
// ScopeFor): private to that commit, so only runs of the very same
// content read what it wrote. It reads the default scope.
func Commit(sha string) Scope {
	return Scope{Name: "commit-" + sha, Base: ScopeDefault}
}

// Facts are what the CI adapter knows about a run's source: what GitHub
// states about the event (a pull request cannot choose these) and the
// commit the run binds (its recorded HEAD, which the workflow chose).
type Facts struct {
	// Event is the event's name (GITHUB_EVENT_NAME).
	Event string
	// PR is the pull request number; 0 when the run is not about one.
	PR int
	// Ref is GITHUB_REF (refs/heads/main) and SHA is GITHUB_SHA.
	Ref string
	SHA string
	// DefaultBranch is the payload's repository.default_branch (main).
	DefaultBranch string
	// PayloadRef is the payload's ref (push, workflow_dispatch) and
	// PayloadAfter a push payload's after: "" for other events.
	PayloadRef   string
	PayloadAfter string
	// Commit is the commit the run binds: the HEAD its plan recorded.
	Commit string
}

// refEvents are the events whose GITHUB_SHA is the head of the branch
// GITHUB_REF names when the event fires: for push and workflow_dispatch
// any branch (or tag), for the others always the default branch. Any
// other event (deployment's SHA is a chosen commit; merge_group's is a
// queue entry's) writes only a commit scope.
var refEvents = map[string]bool{
	"push": true, "workflow_dispatch": true, "schedule": true, "repository_dispatch": true,
	"issue_comment": true, "workflow_run": true,
}

// ScopeFor decides a GitHub run's scope from facts a pull request cannot
// choose. A pull request's event writes that pull request's scope. Any
// other run writes the scope of the branch its event names (default for
// the default branch) only when it binds exactly the commit GitHub states
// is that branch's head (refEvents; a push's payload must agree with
// GITHUB_REF and GITHUB_SHA); else only its commit's own scope. So a
// commit that is not the default branch's head never writes default,
// whatever the workflow checked out under whatever event, and an unknown
// default branch never gives it.
func ScopeFor(f Facts) (Scope, error) {
	switch {
	case f.PR < 0:
		return Scope{}, fmt.Errorf("cache scope: pull request number %d is negative", f.PR)
	case f.PR > 0:
		return PullRequest(f.PR), nil
	case !hexSHA(f.Commit):
		return Scope{}, fmt.Errorf("cache scope: the run's commit %q is not a full hex object name", f.Commit)
	case !boundToRef(f):
		return Commit(f.Commit), nil
	case f.DefaultBranch != "" && f.Ref == "refs/heads/"+f.DefaultBranch:
		return Default(), nil
	case f.Event == "push" || f.Event == "workflow_dispatch":
		return Branch(f.Ref), nil
	}
	return Commit(f.Commit), nil
}

// boundToRef reports whether the run binds the head of the ref its event
// names, as GitHub states it: GITHUB_SHA, and a push's after; a payload
// ref that differs from GITHUB_REF is a doubt, and a doubt is no.
func boundToRef(f Facts) bool {
	switch {
	case !refEvents[f.Event] || f.Ref == "" || f.SHA != f.Commit:
		return false
	case f.Event == "push":
		return f.PayloadRef == f.Ref && f.PayloadAfter == f.Commit
	case f.Event == "workflow_dispatch":
		return f.PayloadRef == f.Ref
	}
	return true
}

// hexSHA reports whether s is a full SHA-1 or SHA-256 object name.
func hexSHA(s string) bool { return lowerHex(s, 40) || lowerHex(s, 64) }

// valid reports whether a scope name is one Store accepts.
func validScope(s string) bool {
	switch {
	case s == ScopeDefault || s == ScopeLocal:
		return true
	case strings.HasPrefix(s, "commit-"):
		return hexSHA(s[len("commit-"):])
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
