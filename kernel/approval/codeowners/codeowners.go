// Package codeowners parses a GitHub CODEOWNERS file and answers who owns
// a path, with GitHub's documented semantics ("About code owners"):
//
//   - one entry per line: a pattern, then owners separated by blanks;
//     blank lines and lines starting with "#" are comments, and a token
//     starting with "#" ends the line (an inline comment);
//   - the LAST entry whose pattern matches a path decides its owners; an
//     entry with no owners leaves the path unowned (it clears ownership);
//   - owners are "@user", "@org/team" or e-mail addresses; e-mails are
//     kept but never satisfy an approval rule (an approval comes from an
//     account, and mapping an e-mail to one is not provable here);
//   - patterns are gitignore-like: "*" matches within one segment and "**"
//     across segments; a pattern with a "/" at its start or in its middle
//     is anchored at the repository root, one without is matched at any
//     depth; a trailing "/" matches a directory (everything under it); a
//     pattern matching a directory owns everything under it, except one
//     whose last segment is "*" ("docs/*" owns docs/a.md but not
//     docs/build/b.md, as GitHub documents); "\" escapes the next
//     character ("\#x" is a pattern starting with "#");
//   - GitHub's unsupported syntax ("!" negation, "[ ]" ranges) makes the
//     line invalid, and GitHub skips invalid lines: so does Parse, listing
//     them in File.Skipped.
//
// The file is looked up at .github/CODEOWNERS, CODEOWNERS, then
// docs/CODEOWNERS on the base branch ([Locations]; the first found wins),
// and GitHub ignores a file over 3 MiB: Parse refuses one ([MaxSize]).
package codeowners

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/proofgate/proofgate/internal/pathglob"
)

// Locations are where GitHub looks for the file, in order.
var Locations = []string{".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS"}

// Bounds.
const (
	MaxSize       = 3 << 20 // GitHub ignores a larger file
	MaxEntries    = 20000
	MaxOwners     = 256 // per entry
	maxLineTokens = MaxOwners + 64
)

// ErrTooLarge is returned for a file over MaxSize.
var ErrTooLarge = errors.New("CODEOWNERS file over 3 MiB (GitHub ignores it)")

// Owner is one owner of an entry.
type Owner struct {
	User  string // login, for "@user"
	Org   string // for "@org/team"
	Team  string // team slug, for "@org/team"
	Email string // for an e-mail address
}

// String is the owner as written ("@user", "@org/team", the e-mail).
func (o Owner) String() string {
	switch {
	case o.Team != "":
		return "@" + o.Org + "/" + o.Team
	case o.User != "":
		return "@" + o.User
	}
	return o.Email
}

// Entry is one valid line.
type Entry struct {
	Line    int
	Pattern string
	Owners  []Owner
	segs    []string
	anchor  bool
	dirOnly bool
	noDeep  bool   // last segment is "*": no ownership of subdirectories
	lit0    string // the first segment when it is literal: a fast refusal
}

// Skipped is an invalid line GitHub would skip.
type Skipped struct {
	Line int
	Why  string
}

// File is a parsed CODEOWNERS file.
type File struct {
	Entries []Entry
	Skipped []Skipped
}

// Parse parses data. It fails only for a file that is too large or has
// too many entries; invalid lines are skipped and listed.
func Parse(data []byte) (*File, error) {
	if len(data) > MaxSize {
		return nil, ErrTooLarge
	}
	f := &File{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), MaxSize+1)
	for n := 1; sc.Scan(); n++ {
		e, why, ok := parseLine(sc.Text())
		switch {
		case why != "":
			f.Skipped = append(f.Skipped, Skipped{Line: n, Why: why})
		case ok:
			e.Line = n
			f.Entries = append(f.Entries, e)
			if len(f.Entries) > MaxEntries {
				return nil, fmt.Errorf("CODEOWNERS: more than %d entries", MaxEntries)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("CODEOWNERS: %w", err)
	}
	return f, nil
}

// parseLine parses one line: ok is false for a blank or comment line, why
// says why an invalid line is skipped.
func parseLine(line string) (e Entry, why string, ok bool) {
	toks := tokens(strings.TrimRight(line, "\r"))
	if len(toks) == 0 {
		return e, "", false
	}
	if len(toks) > maxLineTokens {
		return e, fmt.Sprintf("more than %d owners", MaxOwners), false
	}
	pat := toks[0]
	if strings.HasPrefix(pat, "!") {
		return e, "negation (!) is not supported", false
	}
	if strings.ContainsAny(unescape(pat, true), "[]") {
		return e, "character ranges ([ ]) are not supported", false
	}
	for _, t := range toks[1:] {
		o, err := parseOwner(t)
		if err != "" {
			return e, err, false
		}
		e.Owners = append(e.Owners, o)
	}
	e.Pattern = pat
	if !compile(&e) {
		return e, fmt.Sprintf("pattern %q cannot match a path", pat), false
	}
	return e, "", true
}

// tokens splits a line on blanks, honouring "\" escapes, and stops at an
// unescaped "#" that starts a token.
func tokens(line string) []string {
	var out []string
	var cur strings.Builder
	inTok := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '\\' && i+1 < len(line):
			cur.WriteByte(c)
			cur.WriteByte(line[i+1])
			i++
			inTok = true
		case c == ' ' || c == '\t':
			if inTok {
				out = append(out, cur.String())
				cur.Reset()
				inTok = false
			}
		case c == '#' && !inTok:
			return out
		default:
			cur.WriteByte(c)
			inTok = true
		}
	}
	if inTok {
		out = append(out, cur.String())
	}
	return out
}

// unescape removes "\" escapes; with keepGlob an escaped "*" or "?" stays
// escaped (it is still a literal to the matcher).
func unescape(s string, keepGlob bool) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			if keepGlob && (s[i+1] == '*' || s[i+1] == '?' || s[i+1] == '\\') {
				b.WriteByte('\\')
			}
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func parseOwner(t string) (Owner, string) {
	if login, ok := strings.CutPrefix(t, "@"); ok {
		if org, team, isTeam := strings.Cut(login, "/"); isTeam {
			if !validName(org) || !validName(team) {
				return Owner{}, fmt.Sprintf("owner %q is not @org/team", t)
			}
			return Owner{Org: org, Team: team}, ""
		}
		if !validName(login) {
			return Owner{}, fmt.Sprintf("owner %q is not a valid login", t)
		}
		return Owner{User: login}, ""
	}
	if at := strings.IndexByte(t, '@'); at > 0 && at < len(t)-1 && !strings.ContainsAny(t, "/\\") {
		return Owner{Email: t}, ""
	}
	return Owner{}, fmt.Sprintf("owner %q is neither @user, @org/team nor an e-mail", t)
}

func validName(s string) bool {
	if s == "" || len(s) > 100 {
		return false
	}
	for _, c := range s {
		if !(c == '-' || c == '_' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// compile fills the entry's matcher from its pattern.
func compile(e *Entry) bool {
	p := unescape(e.Pattern, true)
	if strings.HasSuffix(p, "/") && !strings.HasSuffix(p, `\/`) {
		e.dirOnly = true
		p = strings.TrimRight(p, "/")
	}
	if strings.HasPrefix(p, "/") {
		e.anchor = true
		p = strings.TrimLeft(p, "/")
	}
	if p == "" {
		return false
	}
	if strings.Contains(p, "/") {
		e.anchor = true
	}
	e.segs = strings.Split(p, "/")
	for _, s := range e.segs {
		if s == "" || s == "." || s == ".." {
			return false
		}
	}
	if !e.anchor {
		e.segs = append([]string{"**"}, e.segs...)
	}
	e.noDeep = e.segs[len(e.segs)-1] == "*"
	if !strings.ContainsAny(e.segs[0], `*?\`) {
		e.lit0 = e.segs[0]
	}
	return len(e.segs) <= pathglob.MaxSegments+1
}

// matches reports whether the entry matches path: the path itself or,
// for a pattern that may own directories, a directory containing it.
func (e *Entry) matches(segs []string) bool {
	if e.lit0 != "" && segs[0] != e.lit0 {
		return false
	}
	if !e.dirOnly && pathglob.MatchSegments(e.segs, segs) {
		return true
	}
	if e.noDeep && !e.dirOnly {
		return false
	}
	for n := len(segs) - 1; n >= 1; n-- {
		if pathglob.MatchSegments(e.segs, segs[:n]) {
			return true
		}
	}
	return false
}

// Owners returns the owners of path (slash-separated, relative to the
// root) and the entry that decided them, or nil and no entry when no
// entry matches; an entry with no owners returns it with nil owners.
func (f *File) Owners(path string) ([]Owner, *Entry) {
	if f == nil {
		return nil, nil
	}
	segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
	for i := len(f.Entries) - 1; i >= 0; i-- {
		if e := &f.Entries[i]; e.matches(segs) {
			return e.Owners, e
		}
	}
	return nil, nil
}
