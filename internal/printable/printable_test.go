package printable

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCheck(t *testing.T) {
	for _, s := range []string{"alice", "Zoë Ångström", "bot[bot]", "repo:acme/widget", "名前", "a b"} {
		if err := Check("--actor", s); err != nil {
			t.Errorf("%q refused: %v", s, err)
		}
	}
	for _, s := range []string{
		"", "   ",
		"alice\ndecision approved by bob", // a forged second line
		"alice\r", "a\tb",
		"\x1b[2Jalice",       // ANSI: clear screen
		"alice\u202eecilA",   // right-to-left override
		"al\u200bice",        // zero-width space
		"a\u2028b",           // line separator
		"a\x7fb", "a\u0085b", // DEL, NEL (C1)
		"\xff\xfe",
		"\U000F0000", // private use
		strings.Repeat("a", MaxName+1),
	} {
		err := Check("--actor", s)
		if err == nil {
			t.Errorf("%q accepted", s)
			continue
		}
		if !strings.HasPrefix(err.Error(), "--actor: ") {
			t.Errorf("%q: error %q does not name the flag", s, err)
		}
	}
}

func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		"alice":                "alice",
		"a\nb":                 `a\nb`,
		"\x1b[31mred":          `\x1b[31mred`,
		"x\u202ey":             `x\u202ey`,
		"bad\xffutf8":          `bad\xffutf8`,
		`C:\path\n (literal)`:  `C:\path\n (literal)`,
		"tab\tand\rreturn\x00": `tab\tand\rreturn\x00`,
	} {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzEscape(f *testing.F) {
	for _, s := range []string{"alice", "a\nb", "\x1b[0m", "\u202e", "\xff", "日本\u200d語"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e := Escape(s)
		if !utf8.ValidString(e) {
			t.Fatalf("Escape(%q) is not UTF-8", s)
		}
		for _, r := range e {
			if !Safe(r) {
				t.Fatalf("Escape(%q) = %q holds unsafe %U", s, e, r)
			}
		}
		if Escape(e) != e {
			t.Fatalf("Escape is not idempotent on %q", s)
		}
		if Check("f", s) == nil && e != s {
			t.Fatalf("Check accepts %q but Escape changes it", s)
		}
	})
}

func TestClip(t *testing.T) {
	if got := ClipQuoted("k"); got != `"k"` {
		t.Fatal(got)
	}
	if got := ClipQuoted(strings.Repeat("x", 100)); got != strings.Repeat("x", 80)+"…" {
		t.Fatal(got)
	}
	if got := Clip("k\n"); got != "k\n" {
		t.Fatal(got)
	}
	if got := Clip(strings.Repeat("x", 81)); got != strings.Repeat("x", 80)+"…" {
		t.Fatal(got)
	}
}
