package source

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func run(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x.invalid", "GIT_COMMITTER_NAME=t",
		"GIT_COMMITTER_EMAIL=t@x.invalid", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_ALLOW_PROTOCOL=file")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", args, err, out)
	}
}

func write(t *testing.T, p, body string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

// repo makes a repository with a committed a.txt, run.sh and lib/b.txt.
func repo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	run(t, dir, "git", "init", "-q", ".")
	write(t, filepath.Join(dir, "a.txt"), "a\n", 0o644)
	write(t, filepath.Join(dir, "run.sh"), "#!/bin/sh\n", 0o644)
	write(t, filepath.Join(dir, "lib", "b.txt"), "b\n", 0o644)
	write(t, filepath.Join(dir, ".gitignore"), "ignored/\n", 0o644)
	run(t, dir, "git", "add", "-A")
	run(t, dir, "git", "commit", "-q", "-m", "init")
	return dir
}

func inspect(t *testing.T, dir string) State {
	t.Helper()
	st, err := Inspect(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// Every change a check could observe in the tracked or untracked files
// changes the digest; a plan on a clean tree is not dirty.
func TestDigestSeesEveryChange(t *testing.T) {
	for name, mutate := range map[string]func(t *testing.T, dir string){
		"content edit":  func(t *testing.T, dir string) { write(t, filepath.Join(dir, "a.txt"), "A\n", 0o644) },
		"mode change":   func(t *testing.T, dir string) { os.Chmod(filepath.Join(dir, "run.sh"), 0o755) },
		"rename":        func(t *testing.T, dir string) { run(t, dir, "git", "mv", "a.txt", "c.txt") },
		"unstaged move": func(t *testing.T, dir string) { os.Rename(filepath.Join(dir, "a.txt"), filepath.Join(dir, "c.txt")) },
		"delete":        func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "a.txt")) },
		"deleted then untracked (git rm --cached)": func(t *testing.T, dir string) {
			run(t, dir, "git", "rm", "-q", "--cached", "a.txt")
		},
		"new untracked file": func(t *testing.T, dir string) { write(t, filepath.Join(dir, "new.txt"), "x", 0o644) },
		"new untracked symlink": func(t *testing.T, dir string) {
			os.Symlink("a.txt", filepath.Join(dir, "link"))
		},
		"tracked file replaced by a symlink": func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "a.txt"))
			os.Symlink("lib/b.txt", filepath.Join(dir, "a.txt"))
		},
		"staged edit": func(t *testing.T, dir string) {
			write(t, filepath.Join(dir, "a.txt"), "S\n", 0o644)
			run(t, dir, "git", "add", "a.txt")
		},
		"edit hidden with skip-worktree": func(t *testing.T, dir string) {
			run(t, dir, "git", "update-index", "--skip-worktree", "a.txt")
			write(t, filepath.Join(dir, "a.txt"), "hidden\n", 0o644)
		},
		"edit hidden with assume-unchanged": func(t *testing.T, dir string) {
			run(t, dir, "git", "update-index", "--assume-unchanged", "a.txt")
			write(t, filepath.Join(dir, "a.txt"), "hidden\n", 0o644)
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := repo(t)
			before := inspect(t, dir)
			if before.Dirty {
				t.Fatalf("a clean tree is dirty: %v", before.Changes)
			}
			mutate(t, dir)
			after := inspect(t, dir)
			if after.Digest == before.Digest {
				t.Fatal("the change escaped the work-tree digest")
			}
			if !after.Dirty {
				t.Fatal("the changed tree is not dirty")
			}
		})
	}
}

// A file hidden by skip-worktree/assume-unchanged stays visible however
// often it is edited: every content change changes the digest.
func TestHiddenEditsKeepChangingTheDigest(t *testing.T) {
	dir := repo(t)
	run(t, dir, "git", "update-index", "--skip-worktree", "a.txt")
	write(t, filepath.Join(dir, "a.txt"), "one\n", 0o644)
	one := inspect(t, dir)
	write(t, filepath.Join(dir, "a.txt"), "two\n", 0o644)
	if two := inspect(t, dir); two.Digest == one.Digest {
		t.Fatal("a second edit of a skip-worktree file escaped the digest")
	}
}

// Submodules: a change inside a submodule's work tree changes the digest,
// also when the submodule was already dirty when the run was planned.
func TestSubmoduleChanges(t *testing.T) {
	sub := repo(t)
	top := repo(t)
	run(t, top, "git", "-c", "protocol.file.allow=always", "submodule", "add", "-q", sub, "sub")
	run(t, top, "git", "commit", "-q", "-m", "add sub")
	if st := inspect(t, top); st.Dirty {
		t.Fatalf("clean superproject is dirty: %v", st.Changes)
	}
	steps := []func(){
		func() { write(t, filepath.Join(top, "sub", "a.txt"), "dirty once\n", 0o644) },
		func() { write(t, filepath.Join(top, "sub", "a.txt"), "dirty twice\n", 0o644) },
		func() { write(t, filepath.Join(top, "sub", "lib", "b.txt"), "other file\n", 0o644) },
		func() { write(t, filepath.Join(top, "sub", "untracked.txt"), "u\n", 0o644) },
		func() { write(t, filepath.Join(top, "sub", "untracked.txt"), "u2\n", 0o644) },
		func() { os.Chmod(filepath.Join(top, "sub", "run.sh"), 0o755) },
	}
	prev := inspect(t, top)
	for i, step := range steps {
		step()
		now := inspect(t, top)
		if now.Digest == prev.Digest {
			t.Fatalf("step %d: a change inside the submodule escaped the digest", i)
		}
		if !now.Dirty {
			t.Fatalf("step %d: not dirty", i)
		}
		prev = now
	}
}

// Git-ignored files are not part of the digest (intended: build outputs
// and caches that checks write are ignored, and counting them would make
// every run STALE). Documented here so a change is deliberate.
func TestIgnoredFilesAreOutsideTheDigest(t *testing.T) {
	dir := repo(t)
	before := inspect(t, dir)
	write(t, filepath.Join(dir, "ignored", "cache"), "x", 0o644)
	if after := inspect(t, dir); after.Digest != before.Digest || after.Dirty {
		t.Fatal("an ignored file changed the digest")
	}
}

// Exclusions leave out exactly the state directory's runs.
func TestExcludeOnlyRuns(t *testing.T) {
	dir := repo(t)
	before, err := Inspect(context.Background(), dir, ".proofgate/runs")
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, ".proofgate", "runs", "x", "run.json"), "{}", 0o644)
	if st, _ := Inspect(context.Background(), dir, ".proofgate/runs"); st.Digest != before.Digest {
		t.Fatal("the excluded runs directory changed the digest")
	}
	write(t, filepath.Join(dir, ".proofgate", "keys.json"), "{}", 0o644)
	if st, _ := Inspect(context.Background(), dir, ".proofgate/runs"); st.Digest == before.Digest {
		t.Fatal("a file under .proofgate outside runs/ escaped the digest")
	}
}
