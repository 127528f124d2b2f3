// Package pathglob matches repository paths against the path globs of a
// contract's approval rules (approval.rules[].if.changed_files).
//
// A path is slash-separated and relative to the repository root, as git
// and the GitHub pull-request files API write it ("src/main.go"). A glob
// is matched against the whole path, segment by segment:
//
//	**   a whole segment: zero or more segments (a/**/b matches a/b, a/x/b, a/x/y/b;
//	     a/** matches everything under a, not a itself)
//	*    any run of characters within one segment (never "/")
//	?    any one character within one segment (never "/")
//	\c   the character c literally (\*, \?, \\)
//
// Every other character matches itself, case-sensitively. There are no
// character classes, no negation inside a glob (a rule negates with its
// own "ignore" list) and no anchoring choice: a glob always starts at the
// repository root. [Valid] refuses what could point outside the repository
// or never match a path git writes: an empty glob, a leading "/", a "."
// or ".." segment, an empty segment ("a//b", a trailing "/"), a
// backslash before nothing, a NUL byte, more than MaxSegments segments or
// more than MaxLen bytes. Matching is O(segments²) in the worst case.
package pathglob

import (
	"errors"
	"fmt"
	"strings"
)

// Bounds on a glob.
const (
	MaxLen      = 1024
	MaxSegments = 64
)

// ErrInvalid is wrapped by every error Valid returns.
var ErrInvalid = errors.New("invalid path glob")

// Valid reports why pattern is not a usable glob, or nil.
func Valid(pattern string) error {
	bad := func(why string) error { return fmt.Errorf("%w %q: %s", ErrInvalid, pattern, why) }
	switch {
	case pattern == "":
		return bad("empty")
	case len(pattern) > MaxLen:
		return bad(fmt.Sprintf("longer than %d bytes", MaxLen))
	case strings.ContainsRune(pattern, 0):
		return bad("contains a NUL byte")
	case strings.HasPrefix(pattern, "/"):
		return bad("absolute: globs are relative to the repository root")
	}
	segs := strings.Split(pattern, "/")
	if len(segs) > MaxSegments {
		return bad(fmt.Sprintf("more than %d segments", MaxSegments))
	}
	for _, s := range segs {
		switch s {
		case "":
			return bad("empty segment")
		case ".", "..":
			return bad(fmt.Sprintf("a %q segment: globs cannot leave or restate a directory", s))
		}
		if strings.HasSuffix(s, `\`) && !strings.HasSuffix(s, `\\`) {
			return bad("a backslash escapes nothing")
		}
		if strings.Contains(s, "**") && s != "**" {
			return bad(`"**" must be a whole segment`)
		}
	}
	return nil
}

// Match reports whether path matches pattern. An invalid pattern matches
// nothing.
func Match(pattern, path string) bool {
	if Valid(pattern) != nil || path == "" {
		return false
	}
	return MatchSegments(strings.Split(pattern, "/"), strings.Split(path, "/"))
}

// MatchSegments matches path segments against pattern segments ("**"
// spans zero or more segments). It is exported for CODEOWNERS matching.
func MatchSegments(pat, segs []string) bool {
	if !slicesContains(pat, "**") { // no memo needed: one segment each
		if len(pat) != len(segs) {
			return false
		}
		for i := range pat {
			if !Segment(pat[i], segs[i]) {
				return false
			}
		}
		return true
	}
	// memo[i][j]: pat[i:] against segs[j:], 0 unknown, 1 yes, 2 no.
	memo := make([][]byte, len(pat)+1)
	for i := range memo {
		memo[i] = make([]byte, len(segs)+1)
	}
	var m func(i, j int) bool
	m = func(i, j int) bool {
		if v := memo[i][j]; v != 0 {
			return v == 1
		}
		var ok bool
		switch {
		case i == len(pat):
			ok = j == len(segs)
		case pat[i] == "**" && i == len(pat)-1: // a trailing ** is everything under
			ok = j < len(segs)
		case pat[i] == "**":
			ok = m(i+1, j) || (j < len(segs) && m(i, j+1))
		default:
			ok = j < len(segs) && Segment(pat[i], segs[j]) && m(i+1, j+1)
		}
		memo[i][j] = 2
		if ok {
			memo[i][j] = 1
		}
		return ok
	}
	return m(0, 0)
}

// Segment matches one path segment against one glob segment: "*" is any
// run of characters, "?" any one character, "\c" is c.
func Segment(pat, s string) bool {
	// Iterative wildcard match with one backtrack point (linear-ish).
	p, q := []rune(pat), []rune(s)
	pi, si, star, mark := 0, 0, -1, 0
	for si < len(q) {
		if pi < len(p) {
			switch c := p[pi]; {
			case c == '*':
				star, mark = pi, si
				pi++
				continue
			case c == '?':
				pi++
				si++
				continue
			case c == '\\' && pi+1 < len(p):
				if p[pi+1] == q[si] {
					pi += 2
					si++
					continue
				}
			case c == q[si]:
				pi++
				si++
				continue
			}
		}
		if star < 0 {
			return false
		}
		pi, mark = star+1, mark+1
		si = mark
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

func slicesContains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
