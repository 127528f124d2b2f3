// Package actor is the one identity normalization of ProofGate: every
// comparison of two actors (a run approver with another, a tool-call
// decider with the session's agent, an authorizer with an earlier one, a
// review login with a pull request's author) goes through Key, and every
// actor a person gives (--actor, an agent name) through Check first.
//
// Key is the comparison key of a name: Unicode white space trimmed and
// runs of it collapsed to one space, invisible characters dropped, each
// rune case-folded (the smallest rune of the strings.EqualFold orbit of
// its lower case, so "Alice", "ALICE" and "alice" are one key, as are the
// Kelvin sign and K), and Cyrillic and Greek letters that look like Latin
// ones (and a few Latin lookalikes: dotless i, fullwidth forms) mapped to
// them, so "аlice" with a Cyrillic а has the key of "alice". Keys merge,
// never split, compared with the earlier strings.ToLower(TrimSpace) and
// EqualFold comparisons: two names one of those took for the same person
// still are, so counting distinct approvers and refusing self-approval
// fail closed.
//
// Check refuses, beside what printable.Check refuses (control and format
// characters: zero-width spaces and joiners, bidirectional controls), the
// characters that print as nothing or as a space although they are not
// one (NBSP and every space but U+0020, Hangul fillers, variation
// selectors, the combining grapheme joiner, the braille blank), and a name
// mixing letters of more than one of the Latin, Greek and Cyrillic
// scripts.
//
// Recorded values keep the form a person gave, trimmed (Clean): the event
// log stores the actor as it is displayed, and replay compares recorded
// actors by Key, so logs written before this package verify as before
// unless they hold two spellings of one actor that Key now merges (a
// self-approval by "NAME " of NAME's call, which replay now refuses).
package actor

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/proofgate/proofgate/internal/printable"
)

// Error is a name Check refuses.
type Error struct {
	Field  string // the flag or field, e.g. "--actor"
	Detail string
}

func (e *Error) Error() string { return e.Field + ": " + e.Detail }

// Check refuses a name a person gives as an identity (see the package
// doc); field names the flag or field in the error.
func Check(field, name string) error {
	if err := printable.Check(field, name); err != nil {
		return &Error{Field: field, Detail: strings.TrimPrefix(err.Error(), field+": ")}
	}
	scripts := map[string]bool{}
	for i, r := range name {
		switch {
		case r != ' ' && unicode.IsSpace(r), invisible(r):
			return &Error{field, fmt.Sprintf("invisible or space-like character %U at byte %d; give the name in plain characters", r, i)}
		case unicode.Is(unicode.Latin, r):
			scripts["Latin"] = true
		case unicode.Is(unicode.Greek, r):
			scripts["Greek"] = true
		case unicode.Is(unicode.Cyrillic, r):
			scripts["Cyrillic"] = true
		}
	}
	if len(scripts) > 1 {
		return &Error{field, fmt.Sprintf("%q mixes the letters of %d of the Latin, Greek and Cyrillic scripts (a lookalike of another name); give it in one script", printable.Escape(name), len(scripts))}
	}
	return nil
}

// Clean returns name trimmed of surrounding white space, or Check's
// error: the form to record.
func Clean(field, name string) (string, error) {
	if err := Check(field, name); err != nil {
		return "", err
	}
	return strings.TrimSpace(name), nil
}

// Key returns the comparison key of name (see the package doc). It never
// fails: a recorded name Check would refuse still has a key.
func Key(name string) string {
	var b strings.Builder
	space := false
	for _, r := range name {
		switch {
		case invisible(r) || unicode.Is(unicode.Cf, r) || unicode.IsControl(r) && !unicode.IsSpace(r):
			continue
		case unicode.IsSpace(r):
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(skeleton(fold(r)))
	}
	return b.String()
}

// Same reports whether a and b name one actor: equal keys, neither empty.
func Same(a, b string) bool {
	ka := Key(a)
	return ka != "" && ka == Key(b)
}

// fold is the smallest rune of the case-folding orbit of r's lower case.
func fold(r rune) rune {
	r = unicode.ToLower(r)
	m := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		m = min(m, f)
	}
	return m
}

// skeleton maps a folded lookalike to the folded Latin letter it imitates.
func skeleton(r rune) rune {
	if r >= 0xFF01 && r <= 0xFF5E { // fullwidth ASCII
		return fold(r - 0xFEE0)
	}
	if l, ok := lookalikes[r]; ok {
		return l
	}
	return r
}

// lookalikes maps folded (upper-case) Cyrillic and Greek letters, and Latin
// ones outside ASCII, to the folded ASCII letter they print like.
var lookalikes = func() map[rune]rune {
	m := map[rune]rune{}
	for latin, like := range map[rune]string{
		'A': "АΑ", 'B': "ВΒ", 'C': "СϹ", 'D': "Ԁ", 'E': "ЕΕ", 'H': "НΗҺ", 'I': "ІΙӀı", 'J': "Ј",
		'K': "КΚ", 'M': "МΜ", 'N': "Ν", 'O': "ОΟ", 'P': "РΡ", 'Q': "Ԛ", 'S': "Ѕ", 'T': "ТΤ",
		'W': "Ԝ", 'X': "ХΧ", 'Y': "УΥҮ", 'Z': "Ζ",
	} {
		for _, r := range like {
			m[fold(r)] = fold(latin)
		}
	}
	return m
}()

// invisible reports whether r prints as nothing (or as a blank) although
// it is not white space: Hangul fillers, variation selectors, the
// combining grapheme joiner, the braille blank, and format characters.
func invisible(r rune) bool {
	switch {
	case r == 0x034F, r == 0x115F, r == 0x1160, r == 0x3164, r == 0xFFA0, r == 0x2800, r == 0x180E:
		return true
	case r >= 0xFE00 && r <= 0xFE0F, r >= 0xE0100 && r <= 0xE01EF, r >= 0x180B && r <= 0x180F:
		return true
	}
	return unicode.Is(unicode.Cf, r)
}
