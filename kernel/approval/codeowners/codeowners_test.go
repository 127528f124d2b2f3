package codeowners

import (
	"errors"
	"strings"
	"testing"
)

// example is GitHub's documented example file ("About code owners"),
// abridged, with its comments.
const example = `# This is a comment.
# Each line is a file pattern followed by one or more owners.
*       @global-owner1 @global-owner2
*.js    @js-owner #This is an inline comment.
*.go docs@example.com
*.txt @octo-org/octocats
/build/logs/ @doctocat
docs/* docs@example.com
apps/ @octocat
/docs/ @doctocat
/scripts/ @doctocat @octocat
**/logs @octocat
/apps/ @octocat
/apps/github
`

func owners(t *testing.T, f *File, path string) string {
	t.Helper()
	os, _ := f.Owners(path)
	var s []string
	for _, o := range os {
		s = append(s, o.String())
	}
	return strings.Join(s, " ")
}

func TestGitHubExample(t *testing.T) {
	f, err := Parse([]byte(example))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Skipped) != 0 {
		t.Fatalf("skipped: %+v", f.Skipped)
	}
	for path, want := range map[string]string{
		"README.md":                         "@global-owner1 @global-owner2",
		"src/app.js":                        "@js-owner",
		"main.go":                           "docs@example.com",
		"notes/a.txt":                       "@octo-org/octocats",
		"build/logs/today.log":              "@octocat", // **/logs comes later and wins
		"build/logs/deep/x":                 "@octocat",
		"docs/getting-started.md":           "@doctocat", // /docs/ is later than docs/*
		"docs/build-app/troubleshooting.md": "@doctocat",
		"scripts/deploy.sh":                 "@doctocat @octocat",
		"deeply/nested/logs/x.txt":          "@octocat",
		"apps/web/index.html":               "@octocat",
		"apps/github/main.rb":               "",         // cleared by /apps/github
		"lib/apps/x.rb":                     "@octocat", // apps/ at any depth
		"lib/apps.rb":                       "@global-owner1 @global-owner2",
		"scripts2/x":                        "@global-owner1 @global-owner2",
	} {
		if got := owners(t, f, path); got != want {
			t.Errorf("%s: %q, want %q", path, got, want)
		}
	}
}

func TestDocsStarNotDeep(t *testing.T) {
	f, _ := Parse([]byte("* @all\ndocs/* @docs\n"))
	for path, want := range map[string]string{
		"docs/getting-started.md":           "@docs",
		"docs/build-app/troubleshooting.md": "@all",
		"x/docs/a.md":                       "@all", // docs/* is anchored (a slash in the middle)
	} {
		if got := owners(t, f, path); got != want {
			t.Errorf("%s: %q, want %q", path, got, want)
		}
	}
}

func TestSyntax(t *testing.T) {
	f, err := Parse([]byte("\\#notes @a\n!neg @b\n[ab].go @c\nsrc/ @bad/owner/x\n/x @ok\n  \n# c\nfile\\ name @sp\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := owners(t, f, "#notes"); got != "@a" {
		t.Errorf(`\#notes: %q`, got)
	}
	if got := owners(t, f, "file name"); got != "@sp" {
		t.Errorf("escaped space: %q", got)
	}
	if len(f.Skipped) != 3 {
		t.Errorf("skipped %+v, want the !, [ ] and bad-owner lines", f.Skipped)
	}
	if o, e := f.Owners("unowned/y"); o != nil || e != nil {
		t.Errorf("unowned: %v %v", o, e)
	}
}

func TestTooLarge(t *testing.T) {
	if _, err := Parse(make([]byte, MaxSize+1)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("%v, want ErrTooLarge", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(example), "apps/github/x")
	f.Fuzz(func(t *testing.T, data []byte, path string) {
		if len(data) > 1<<16 || len(path) > 512 {
			return
		}
		cf, err := Parse(data)
		if err != nil {
			return
		}
		os, e := cf.Owners(path)
		if e == nil && os != nil {
			t.Fatal("owners without an entry")
		}
		if e != nil && len(os) != len(e.Owners) {
			t.Fatal("owners differ from the deciding entry")
		}
	})
}
