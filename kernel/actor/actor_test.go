package actor

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// TestCheck: plain names pass; every invisible, space-like and mixed-script
// variant of one is refused.
func TestCheck(t *testing.T) {
	for _, ok := range []string{"alice", "Alice Smith", " bob ", "Zoë O'Brien", "Дмитрий", "Σωκράτης", "山田太郎", "claude-code", "dependabot[bot]"} {
		if err := Check("--actor", ok); err != nil {
			t.Errorf("Check(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{
		"", "   ", "ali\u200bce", "alice\u200d", "\u202ealice", "alice\u2066", "\ufeffalice", "ali\u00adce", // format characters
		"alice\u00a0", "ali\u00a0ce", "alice\u3000", "alice\u2007", // spaces that are not U+0020
		"alice\u3164", "\u115falice", "alice\ufe0f", "ali\u034fce", "alice\u2800", "alice\u180e", // print as nothing
		"\u0430lice", "alic\u0435", "bοb", "\u0391lice", // Latin mixed with Cyrillic or Greek
		"alice\n", "ali\x1bce", strings.Repeat("a", 257),
	} {
		if err := Check("--actor", bad); err == nil {
			t.Errorf("Check(%q) accepted it", bad)
		}
	}
}

// TestSame: every whitespace, case, invisible and confusable variant of a
// name is the same actor; other names are not.
func TestSame(t *testing.T) {
	for _, v := range []string{"NAME", "name ", " Name", "NAME\t", "nAmE\n", "NA\u200bME", "N\u0410ME", "\u039dAME", "ＮＡＭＥ", "na\u034fme"} {
		if !Same("name", v) {
			t.Errorf("Same(name, %q) = false (key %q)", v, Key(v))
		}
	}
	for _, pair := range [][2]string{{"alice", "аlісе"}, {"kelvin", "\u212aelvin"}, {"İnci", "inci"}, {"ıvan", "ivan"}, {"Alice  Smith", "alice smith"}} {
		if !Same(pair[0], pair[1]) {
			t.Errorf("Same(%q, %q) = false", pair[0], pair[1])
		}
	}
	for _, pair := range [][2]string{{"alice", "bob"}, {"alice", "alice2"}, {"al ice", "alice"}, {"", ""}, {" ", "\u200b"}} {
		if Same(pair[0], pair[1]) {
			t.Errorf("Same(%q, %q) = true", pair[0], pair[1])
		}
	}
}

// TestKeyMergesWhatTheOldComparisonsMerged: two names strings.EqualFold
// or ToLower(TrimSpace) took for one actor still are one (keys merge,
// never split).
func TestKeyMergesWhatTheOldComparisonsMerged(t *testing.T) {
	for r := rune(0); r <= 0x2FFFF; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		s := string(r)
		for _, o := range []string{string(unicode.ToLower(r)), string(unicode.ToUpper(r)), string(unicode.SimpleFold(r))} {
			//lint:ignore SA6005 the comparisons callers made before Key, reproduced as they were
			if (strings.EqualFold(s, o) || strings.ToLower(s) == strings.ToLower(o)) && Key(s) != Key(o) {
				t.Fatalf("%U and %q: equal before, keys %q and %q", r, o, Key(s), Key(o))
			}
		}
	}
}

// FuzzNormalizeActor: Key is idempotent, never keeps an invisible or
// format character or leading/trailing space, equal-fold pairs have equal
// keys, and Check never accepts a name holding an invisible character.
func FuzzNormalizeActor(f *testing.F) {
	for _, s := range []string{"alice", "NAME ", "ali\u200bce", "\u0430lice", "ＮＡＭＥ", "a\u00a0b", "\u212a", "ı", "x\u3164"} {
		f.Add(s, strings.ToUpper(s))
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		k := Key(a)
		if Key(k) != k {
			t.Fatalf("Key not idempotent: %q -> %q -> %q", a, k, Key(k))
		}
		if strings.TrimSpace(k) != k {
			t.Fatalf("Key(%q) = %q keeps surrounding space", a, k)
		}
		for _, r := range k {
			if invisible(r) || unicode.Is(unicode.Cf, r) || (r != ' ' && unicode.IsSpace(r)) {
				t.Fatalf("Key(%q) = %q keeps %U", a, k, r)
			}
		}
		if strings.EqualFold(a, b) && Key(a) != Key(b) {
			t.Fatalf("EqualFold(%q, %q) but keys %q, %q", a, b, Key(a), Key(b))
		}
		if strings.EqualFold(strings.TrimSpace(a), strings.TrimSpace(b)) && Same(a, b) != (Key(a) != "") {
			t.Fatalf("Same(%q, %q) disagrees with equal keys", a, b)
		}
		if Check("actor", a) == nil {
			for _, r := range a {
				if invisible(r) || unicode.Is(unicode.Cf, r) || (r != ' ' && unicode.IsSpace(r)) {
					t.Fatalf("Check accepted %q holding %U", a, r)
				}
			}
			if c, _ := Clean("actor", a); Key(c) != k {
				t.Fatalf("Clean(%q) = %q changes the key", a, c)
			}
		}
	})
}
