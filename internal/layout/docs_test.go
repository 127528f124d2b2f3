package layout

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// TestSpecSectionsNumbered: SPEC.md's top-level sections are 1, 2, 3, …
// without a gap or an unnumbered one, so "§N" names one section.
func TestSpecSectionsNumbered(t *testing.T) {
	b, err := os.ReadFile("../../docs/SPEC.md")
	if err != nil {
		t.Fatal(err)
	}
	num := regexp.MustCompile(`^## (\d+)\. `)
	want := 1
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "## ") {
			continue
		}
		m := num.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("unnumbered section %q (want %d.)", line, want)
			continue
		}
		if n, _ := strconv.Atoi(m[1]); n != want {
			t.Errorf("section %q: want number %d", line, want)
		}
		want++
	}
}

// link is a markdown link's target: [text](target).
var link = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestDocLinks: every relative link in README.md and docs/ names a file
// that exists and, with #anchor into a markdown file, one of its headings
// (GitHub's anchor of it).
func TestDocLinks(t *testing.T) {
	files := []string{"../../README.md"}
	for _, g := range []string{"../../docs/*.md", "../../docs/adr/*.md"} {
		m, err := filepath.Glob(g)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	anchors := map[string]map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(withoutCode(string(b)), -1) {
			if err := checkLink(f, m[1], anchors); err != nil {
				t.Errorf("%s: %v", strings.TrimPrefix(f, "../../"), err)
			}
		}
	}
}

// withoutCode drops fenced code blocks, whose brackets are not links.
func withoutCode(s string) string {
	var out []string
	in := false
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			in = !in
			continue
		}
		if !in {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// checkLink checks one link target of file from.
func checkLink(from, target string, anchors map[string]map[string]bool) error {
	if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
		return nil
	}
	path, anchor, _ := strings.Cut(target, "#")
	dest := from
	if path != "" {
		dest = filepath.Join(filepath.Dir(from), path)
		if _, err := os.Stat(dest); err != nil {
			return fmt.Errorf("link %q: %v", target, err)
		}
	}
	if anchor == "" || !strings.HasSuffix(dest, ".md") {
		return nil
	}
	if anchors[dest] == nil {
		b, err := os.ReadFile(dest)
		if err != nil {
			return err
		}
		anchors[dest] = headings(withoutCode(string(b)))
	}
	if !anchors[dest][anchor] {
		return fmt.Errorf("link %q: %s has no heading with that anchor", target, strings.TrimPrefix(dest, "../../"))
	}
	return nil
}

// headings returns the GitHub anchors of a markdown file's headings:
// lowercase, spaces to hyphens, punctuation but hyphens and underscores
// dropped; a repeated one gets -1, -2, ….
func headings(s string) map[string]bool {
	out := map[string]bool{}
	count := map[string]int{}
	for _, line := range strings.Split(s, "\n") {
		text, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " ")
		if !ok || !strings.HasPrefix(line, "#") {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(text)) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := count[a]; n > 0 {
			out[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			out[a] = true
		}
		count[a]++
	}
	return out
}

// The anchor rule, on headings the docs have.
func TestHeadingAnchors(t *testing.T) {
	h := headings("## 12. Shards (`exec --shard`, `merge`, ADR 0026)\n### Keys\n### Keys\n")
	for _, a := range []string{"12-shards-exec---shard-merge-adr-0026", "keys", "keys-1"} {
		if !h[a] {
			t.Errorf("no anchor %q in %v", a, h)
		}
	}
}
