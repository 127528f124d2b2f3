package cache

import "fmt"

// Reason says why a cache was refused or failed a check.
type Reason string

// Reasons.
const (
	// ReasonSymlink: the root, a scope or cache directory is a symlink,
	// or the tree holds a symlink that is absolute or leaves it.
	ReasonSymlink Reason = "symlink"
	// ReasonSpecial: the tree holds something other than directories,
	// regular files and symlinks (a FIFO, a socket, a device).
	ReasonSpecial Reason = "special-file"
	// ReasonTooLarge: the tree has more than MaxEntries entries.
	ReasonTooLarge Reason = "too-large"
	// ReasonChanged: a read-only cache changed while it was mounted (or
	// between its digest and its mount).
	ReasonChanged Reason = "changed"
	// ReasonRoot: the root is unusable (relative, inside the repository,
	// not a directory).
	ReasonRoot Reason = "root"
	// ReasonUse: the use itself is invalid (name, mount, scope).
	ReasonUse Reason = "use"
	// ReasonIO: the filesystem failed.
	ReasonIO Reason = "io"
)

// Error is a cache refusal: the cache (and scope), the reason, a message.
type Error struct {
	Cache  string
	Scope  string
	Reason Reason
	Msg    string
	Err    error
}

func (e *Error) Error() string {
	s := "cache"
	if e.Cache != "" {
		s += " " + e.Cache
	}
	if e.Scope != "" {
		s += " (scope " + e.Scope + ")"
	}
	return fmt.Sprintf("%s: %s", s, e.Msg)
}

func (e *Error) Unwrap() error { return e.Err }
