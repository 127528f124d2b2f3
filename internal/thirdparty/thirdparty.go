// Package thirdparty fetches code nobody here wrote, for tests, with its
// own package manager: a module version as the Go module proxy serves it,
// a package as the npm registry serves it (with the lock file a
// repository of it has). The first-day tests (cmd/proofgate TestFirstDay,
// internal/ci/action TestE2EFirstDayAct) walk ProofGate's README on it.
package thirdparty

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Source writes a project's source into an empty directory.
type Source func(t testing.TB, dir string)

// GoModule copies the source of mod (path@version), as the Go module
// proxy serves it, into the directory.
func GoModule(mod string) Source {
	return func(t testing.TB, dir string) {
		t.Helper()
		out, err := exec.Command("go", "mod", "download", "-json", mod).Output()
		var m struct{ Dir, Error string }
		if err != nil || json.Unmarshal(out, &m) != nil || m.Dir == "" {
			t.Fatalf("go mod download %s: %v %s", mod, err, m.Error)
		}
		CopyWritable(t, m.Dir, dir)
	}
}

// NpmPackage unpacks pkg (name@version), as the npm registry serves it,
// into the directory and adds the lock file a repository has (npm install
// --package-lock-only, no scripts), resolved as on the day that version
// was published (npm's --before): the tree is the same on every run, and
// no dependency is a version published hours ago, which the registry's
// nodes do not all serve yet (an `npm ci` of such a lock fails with
// ETARGET on some of them).
func NpmPackage(pkg string) Source {
	return func(t testing.TB, dir string) {
		t.Helper()
		tmp := t.TempDir()
		run(t, tmp, "npm", "pack", "--silent", pkg)
		tgz, _ := filepath.Glob(filepath.Join(tmp, "*.tgz"))
		if len(tgz) != 1 {
			t.Fatalf("npm pack %s: %v", pkg, tgz)
		}
		run(t, tmp, "tar", "xzf", tgz[0])
		CopyWritable(t, filepath.Join(tmp, "package"), dir)
		run(t, dir, "npm", "install", "--package-lock-only", "--ignore-scripts", "--before="+published(t, pkg))
	}
}

// published returns when the npm registry says pkg (name@version) was
// published.
func published(t testing.TB, pkg string) string {
	t.Helper()
	at := strings.LastIndex(pkg, "@")
	if at <= 0 {
		t.Fatalf("npm package %q: want name@version", pkg)
	}
	out, err := exec.Command("npm", "view", pkg[:at], "time", "--json").Output()
	var times map[string]string
	if err != nil || json.Unmarshal(out, &times) != nil || times[pkg[at+1:]] == "" {
		t.Fatalf("npm view %s time: %v\n%s", pkg[:at], err, out)
	}
	return times[pkg[at+1:]]
}

func run(t testing.TB, dir string, argv ...string) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", argv, err, out)
	}
}

// CopyWritable copies a tree of directories and regular files (anything
// else fails the test), owner-writable: a module cache's files are
// read-only.
func CopyWritable(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file", p)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}
