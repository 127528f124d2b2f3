package pathglob

import (
	"errors"
	"testing"
)

func TestMatch(t *testing.T) {
	for _, c := range []struct {
		pat, path string
		want      bool
	}{
		{"src/**", "src/a.go", true},
		{"src/**", "src/a/b/c.go", true},
		{"src/**", "src", false},
		{"src/**", "srcx/a.go", false},
		{"**/*.go", "a.go", true},
		{"**/*.go", "a/b/c.go", true},
		{"*.go", "a/b.go", false}, // * never crosses /
		{"*.go", "b.go", true},
		{"a/**/b", "a/b", true},
		{"a/**/b", "a/x/y/b", true},
		{"a/**/b", "a/x/y/c", false},
		{"docs/?.md", "docs/a.md", true},
		{"docs/?.md", "docs/ab.md", false},
		{`a\*b`, "a*b", true},
		{`a\*b`, "axb", false},
		{"A.go", "a.go", false},
		{"**", "anything/at/all", true},
		{"*", "a/b", false},
		{"a*b*c", "aXbYc", true},
		{"a*b*c", "aXbY", false},
	} {
		if got := Match(c.pat, c.path); got != c.want {
			t.Errorf("Match(%q, %q) = %v, want %v", c.pat, c.path, got, c.want)
		}
	}
}

// TestValidRefuses: globs that could name something outside the
// repository, or never match a git path, are refused.
func TestValidRefuses(t *testing.T) {
	for _, p := range []string{"", "/etc/passwd", "../x", "src/../../x", "a/./b", "a//b", "a/", "..", `a\`, "a**", "x\x00"} {
		err := Valid(p)
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("Valid(%q) = %v, want ErrInvalid", p, err)
		}
		if Match(p, "x") || Match(p, "../x") {
			t.Errorf("invalid %q matched", p)
		}
	}
	for _, p := range []string{"src/**", "**/*.go", "a", `a\\`} {
		if err := Valid(p); err != nil {
			t.Errorf("Valid(%q) = %v", p, err)
		}
	}
}

func FuzzMatch(f *testing.F) {
	f.Add("a/**/b*", "a/x/bcd")
	f.Fuzz(func(t *testing.T, pat, path string) {
		if len(pat) > 200 || len(path) > 400 {
			return
		}
		_ = Match(pat, path)
		if Valid(pat) == nil && Match(pat, path) && path == "" {
			t.Fatal("matched the empty path")
		}
	})
}
