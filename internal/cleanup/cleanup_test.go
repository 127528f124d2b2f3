package cleanup

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func write(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

// fixture: a repository with a build/ root and a directory outside it.
func fixture(t *testing.T) (repo, outside string) {
	base := t.TempDir()
	repo, outside = filepath.Join(base, "repo"), filepath.Join(base, "outside")
	write(t, filepath.Join(repo, "build", "a.o"))
	write(t, filepath.Join(repo, "build", "sub", "b.o"))
	write(t, filepath.Join(repo, "src", "main.go"))
	write(t, filepath.Join(outside, "precious"))
	write(t, filepath.Join(repo, ".git", "HEAD"))
	return repo, outside
}

func reasonOf(t *testing.T, err error) Reason {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v is not a *cleanup.Error", err)
	}
	return e.Reason
}

func TestDryRunRemovesNothingApplyRemovesOnlyInside(t *testing.T) {
	repo, _ := fixture(t)
	state := filepath.Join(repo, ".proofgate")
	res, err := Clean(repo, state, []string{"build", "absent"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Applied || res.Removed() != 2 || res.Roots[0].Entries[0].Path != "build/a.o" || res.Roots[0].Entries[1] != (Entry{"build/sub", "dir"}) || !res.Roots[1].Missing {
		t.Fatalf("dry run: %+v", res)
	}
	if !exists(filepath.Join(repo, "build", "a.o")) {
		t.Fatal("dry run removed a file")
	}
	res, err = Clean(repo, state, []string{"build"}, true)
	if err != nil || !res.Applied || res.Removed() != 2 {
		t.Fatalf("apply: %+v %v", res, err)
	}
	if exists(filepath.Join(repo, "build", "a.o")) || exists(filepath.Join(repo, "build", "sub")) || !exists(filepath.Join(repo, "build")) || !exists(filepath.Join(repo, "src", "main.go")) {
		t.Fatal("apply removed the wrong things")
	}
}

// A root that is a symlink (to outside, or even to inside) is refused
// before anything is removed; so is a root under a symlinked parent.
func TestSymlinkedRootRefused(t *testing.T) {
	repo, outside := fixture(t)
	os.Symlink(outside, filepath.Join(repo, "out"))
	os.Symlink("src", filepath.Join(repo, "alias"))
	os.Symlink(outside, filepath.Join(repo, "build", "parent"))
	for _, root := range []string{"out", "alias", "build/parent/x"} {
		_, err := Clean(repo, filepath.Join(repo, ".proofgate"), []string{"build", root}, true)
		if reasonOf(t, err) != ReasonSymlink {
			t.Errorf("%s: %v", root, err)
		}
	}
	if !exists(filepath.Join(outside, "precious")) || !exists(filepath.Join(repo, "src", "main.go")) || !exists(filepath.Join(repo, "build", "a.o")) {
		t.Fatal("a refused cleanup removed something")
	}
}

// .git, "..", absolute paths and the state directory are refused.
func TestForbiddenRootsRefused(t *testing.T) {
	repo, outside := fixture(t)
	for root, want := range map[string]Reason{
		".git": ReasonInvalid, "a/.git": ReasonInvalid, "..": ReasonInvalid, "build/../..": ReasonInvalid,
		outside: ReasonInvalid, ".": ReasonInvalid, ".proofgate": ReasonInvalid,
		"state": ReasonStateDir, "state/runs": ReasonStateDir, "var": ReasonStateDir,
		"src/main.go": ReasonNotDirectory,
	} {
		_, err := Clean(repo, filepath.Join(repo, "var", "state"), []string{root}, true)
		if root == "state" || root == "state/runs" {
			_, err = Clean(repo, filepath.Join(repo, "state"), []string{root}, true)
		}
		if got := reasonOf(t, err); got != want {
			t.Errorf("%q: %s, want %s (%v)", root, got, want, err)
		}
	}
	if !exists(filepath.Join(repo, ".git", "HEAD")) {
		t.Fatal(".git touched")
	}
}

// A symlink inside a root pointing outside: the link is removed, its
// target never.
func TestSymlinkInsideRootRemovesLinkOnly(t *testing.T) {
	repo, outside := fixture(t)
	os.Symlink(outside, filepath.Join(repo, "build", "escape"))
	os.Symlink(filepath.Join(outside, "precious"), filepath.Join(repo, "build", "file-link"))
	res, err := Clean(repo, filepath.Join(repo, ".proofgate"), []string{"build"}, true)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]string{}
	for _, e := range res.Roots[0].Entries {
		kinds[e.Path] = e.Kind
	}
	if kinds["build/escape"] != "symlink" || kinds["build/file-link"] != "symlink" {
		t.Fatalf("entries %v", kinds)
	}
	if exists(filepath.Join(repo, "build", "escape")) || !exists(filepath.Join(outside, "precious")) {
		t.Fatal("the link stayed or its target went")
	}
}

// TOCTOU: a listed directory swapped for a symlink to outside between
// listing and removal is removed as a link; the outside tree survives.
// The root itself swapped for a symlink after it was opened: the opened
// directory is cleaned, never the symlink's target.
func TestSwapBetweenListAndRemove(t *testing.T) {
	repo, outside := fixture(t)
	t.Cleanup(func() { beforeRemove = nil })
	beforeRemove = func() {
		if err := os.RemoveAll(filepath.Join(repo, "build", "sub")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(outside, filepath.Join(repo, "build", "sub")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Clean(repo, filepath.Join(repo, ".proofgate"), []string{"build"}, true); err != nil {
		t.Fatal(err)
	}
	if !exists(filepath.Join(outside, "precious")) || exists(filepath.Join(repo, "build", "sub")) {
		t.Fatal("the swapped symlink was followed")
	}

	repo, outside = fixture(t)
	beforeRemove = func() {
		os.Rename(filepath.Join(repo, "build"), filepath.Join(repo, "build.old"))
		os.Symlink(outside, filepath.Join(repo, "build"))
	}
	write(t, filepath.Join(outside, "a.o"))
	if _, err := Clean(repo, filepath.Join(repo, ".proofgate"), []string{"build"}, true); err != nil {
		t.Fatal(err)
	}
	if !exists(filepath.Join(outside, "a.o")) || !exists(filepath.Join(outside, "precious")) || exists(filepath.Join(repo, "build.old", "a.o")) {
		t.Fatal("the root swapped for a symlink led the removal outside")
	}
}

// A component swapped between its check and its open: for another
// directory of the repository (root-swapped), or for a symlink leading
// outside (outside-repository). Nothing is removed either way.
func TestComponentSwapDetected(t *testing.T) {
	t.Cleanup(func() { afterLstat = nil })
	for want, swap := range map[Reason]func(repo, outside string){
		ReasonSwapped: func(repo, _ string) {
			os.Rename(filepath.Join(repo, "build"), filepath.Join(repo, "b2"))
			os.Rename(filepath.Join(repo, "src"), filepath.Join(repo, "build"))
		},
		ReasonOutside: func(repo, outside string) {
			os.Rename(filepath.Join(repo, "build"), filepath.Join(repo, "b2"))
			os.Symlink(outside, filepath.Join(repo, "build"))
		},
	} {
		repo, outside := fixture(t)
		afterLstat = func(c string) {
			if c == "build" {
				swap(repo, outside)
			}
		}
		_, err := Clean(repo, filepath.Join(repo, ".proofgate"), []string{"build"}, true)
		if got := reasonOf(t, err); got != want {
			t.Errorf("%s: got %s (%v)", want, got, err)
		}
		if !exists(filepath.Join(outside, "precious")) || !exists(filepath.Join(repo, "b2", "a.o")) {
			t.Errorf("%s: something was removed", want)
		}
	}
}

func TestTooManyEntriesRefusedBeforeRemoval(t *testing.T) {
	repo, _ := fixture(t)
	for i := 0; i <= MaxEntries; i++ {
		write(t, filepath.Join(repo, "many", "f"+string(rune('a'+i%26))+string(rune('a'+i/26%26))+string(rune('a'+i/676))))
	}
	_, err := Clean(repo, filepath.Join(repo, ".proofgate"), []string{"build", "many"}, true)
	if reasonOf(t, err) != ReasonTooMany || !exists(filepath.Join(repo, "build", "a.o")) {
		t.Fatalf("%v", err)
	}
}
