// Package printable keeps untrusted text from talking to a terminal or a
// log reader: names given on the command line must be printable (Check),
// and anything untrusted that is printed goes through Escape.
//
// Untrusted text is every string a run records from outside the kernel:
// actors, reasons and identities given on the command line, check ids and
// details, GitHub logins. A newline in an actor forges a second "decision
// approved by" line; an ANSI escape rewrites what the terminal shows; a
// Unicode bidirectional override reorders it (Trojan Source).
package printable

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxName bounds a name (actor, identity) in bytes.
const MaxName = 256

// Error is a name refused by Check.
type Error struct {
	Field  string // the flag or field, e.g. "--actor"
	Detail string
}

func (e *Error) Error() string { return e.Field + ": " + e.Detail }

// MaxText bounds a free-text value (a reason) in bytes.
const MaxText = 4096

// Check refuses a name that is empty, longer than MaxName bytes, not
// UTF-8, or holds a rune that is not safe to print (see Safe).
func Check(field, s string) error {
	if strings.TrimSpace(s) == "" {
		return &Error{field, "empty"}
	}
	return checkText(field, s, MaxName)
}

// CheckText refuses free text (a reason: it may be empty) longer than
// MaxText bytes, not UTF-8, or holding a rune that is not safe to print.
func CheckText(field, s string) error { return checkText(field, s, MaxText) }

func checkText(field, s string, max int) error {
	switch {
	case len(s) > max:
		return &Error{field, fmt.Sprintf("longer than %d bytes", max)}
	case !utf8.ValidString(s):
		return &Error{field, "not valid UTF-8"}
	}
	for i, r := range s {
		if !Safe(r) {
			return &Error{field, fmt.Sprintf("control or format character %U at byte %d; it must be printable text on one line", r, i)}
		}
	}
	return nil
}

// Safe reports whether r prints as itself: a letter, mark, number,
// punctuation, symbol or space separator. Everything else is refused:
// control characters (C0, DEL, C1: newline, ESC), format characters
// (category Cf: bidirectional overrides and isolates, zero-width joiners),
// line and paragraph separators, private-use and unassigned code points.
func Safe(r rune) bool {
	return unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Zs)
}

// Escape returns s with every unsafe rune written as a Go-style escape
// ("\n", "\x1b", "\u202e") and invalid UTF-8 bytes as "\xNN", so it
// prints on one line as what it is. Safe text is returned unchanged.
func Escape(s string) string {
	if isSafe(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case Safe(r):
			b.WriteRune(r)
		case r < 0x100:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += n
	}
	return b.String()
}

func isSafe(s string) bool {
	for _, r := range s {
		if !Safe(r) {
			return false
		}
	}
	return utf8.ValidString(s)
}

var plainWord = regexp.MustCompile(`^[A-Za-z0-9_./:=@+,-]+$`)

// ShellQuote quotes s for a POSIX shell when it is not a plain word, for
// a command a user copies.
func ShellQuote(s string) string {
	if plainWord.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// maxClip bounds a value from untrusted input quoted in an error.
const maxClip = 80

// Clip is s cut to its first 80 bytes and "…" when longer: a value from
// untrusted input, named in an error.
func Clip(s string) string {
	if len(s) > maxClip {
		return s[:maxClip] + "…"
	}
	return s
}

// ClipQuoted is s Go-quoted, or, when longer than 80 bytes, Clip(s).
func ClipQuoted(s string) string {
	if len(s) > maxClip {
		return Clip(s)
	}
	return strconv.Quote(s)
}
