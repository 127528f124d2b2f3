package release

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// usesRef is a `uses:` in a workflow or a doc's YAML snippet.
var usesRef = regexp.MustCompile("uses:\\s*['\"]?([A-Za-z0-9_.<>-]+/[^\\s'\"`@]+(@(<[^>]*>|[^\\s'\"`]+))?)")

// Owners a doc or an example may tell a user to `uses:`: GitHub's own
// actions, Docker's (release.yml), and the marked placeholder OWNER that
// the user replaces with the ProofGate repository they trust. Any other
// owner is one this project does not control.
var allowedOwners = map[string]bool{"actions": true, "docker": true, "OWNER": true, "<owner>": true}

// No doc, example or workflow tells a user to `uses:` an owner this
// project does not control; a placeholder is pinned by full commit SHA.
func TestNoNamespaceAssumptions(t *testing.T) {
	root := filepath.Join("..", "..")
	var files []string
	for _, dir := range []string{"docs", "examples", ".github"} {
		filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && (strings.HasSuffix(p, ".md") || strings.HasSuffix(p, ".yml") || strings.HasSuffix(p, ".yaml")) {
				files = append(files, p)
			}
			return nil
		})
	}
	files = append(files, filepath.Join(root, "README.md"))
	seen := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			m := usesRef.FindStringSubmatch(line)
			if m == nil || strings.HasPrefix(m[1], "./") || strings.HasPrefix(m[1], "docker://") || m[1] == "." {
				continue
			}
			seen++
			if err := checkUses(m[1]); err != "" {
				t.Errorf("%s:%d: uses %s: %s", f, i+1, m[1], err)
			}
		}
	}
	if seen < 5 {
		t.Fatalf("found %d uses: references in %d files", seen, len(files))
	}
	// The check itself refuses what it should.
	for _, bad := range []string{"proofgate/proofgate@v1", "OWNER/proofgate@v1", "OWNER/proofgate@main", "acme/proofgate@1111111111111111111111111111111111111111"} {
		if checkUses(bad) == "" {
			t.Errorf("checkUses accepted %s", bad)
		}
	}
}

var (
	fullSHA        = regexp.MustCompile(`^[0-9a-f]{40}$`)
	shaPlaceholder = regexp.MustCompile(`^<[a-z ]*sha>$`)
)

// checkUses returns why ref may not be shown to a user, or "".
func checkUses(ref string) string {
	owner, _, _ := strings.Cut(ref, "/")
	_, version, _ := strings.Cut(ref, "@")
	switch {
	case !allowedOwners[owner]:
		return "owner " + owner + " is not one this project controls (use the placeholder OWNER)"
	case (owner == "OWNER" || owner == "<owner>") && !fullSHA.MatchString(version) && !shaPlaceholder.MatchString(version):
		return "the placeholder must be pinned by a full commit SHA"
	}
	return ""
}
