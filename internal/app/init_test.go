package app

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/examples"
	"github.com/proofgate/proofgate/internal/starter"
	"github.com/proofgate/proofgate/kernel/exit"
)

// --action pins both example workflows by full SHA and leaves no
// placeholder (pin or comment) behind; anything but OWNER/REPO@<40 hex>
// is refused.
func TestPinAction(t *testing.T) {
	const ref = "acme/proofgate@0123456789abcdef0123456789abcdef01234567"
	for _, name := range workflowNames {
		b, err := examples.Workflows.ReadFile("workflows/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if !starter.HasActionPlaceholder(b) {
			t.Fatalf("%s: the example has no placeholder pin", name)
		}
		got := string(starter.PinAction(b, ref))
		if starter.HasActionPlaceholder([]byte(got)) || strings.Contains(got, "PLACEHOLDER") || strings.Contains(got, "OWNER/") {
			t.Fatalf("%s: placeholder left:\n%s", name, got)
		}
		want := "uses: acme/proofgate@0123456789abcdef0123456789abcdef01234567"
		if name == "release-gate.yml" {
			want = "uses: acme/proofgate/verify@0123456789abcdef0123456789abcdef01234567"
		}
		if !strings.Contains(got, want) || !strings.Contains(got, "pinned by full commit SHA (proofgate init --action)") {
			t.Fatalf("%s: want %q:\n%s", name, want, got)
		}
	}
	for _, bad := range []string{
		"acme/proofgate@v1", "acme/proofgate@main", "acme/proofgate",
		"acme/proofgate@0123456789ABCDEF0123456789abcdef01234567",
		"acme/proofgate@0123456789abcdef0123456789abcdef0123456",
		"OWNER/proofgate@0123456789abcdef0123456789abcdef01234567",
		"acme/proofgate@" + starter.ActionPlaceholderSHA,
		"acme/../x@0123456789abcdef0123456789abcdef01234567",
		"acme/proofgate@0123456789abcdef0123456789abcdef01234567\n",
		"https://github.com/acme/proofgate@0123456789abcdef0123456789abcdef01234567",
	} {
		if err := checkAction(bad, true); err == nil {
			t.Errorf("--action %q accepted", bad)
		}
	}
	if err := checkAction(ref, false); err == nil {
		t.Error("--action without --workflow accepted")
	}
	if err := checkAction(ref, true); err != nil {
		t.Error(err)
	}
}

// initRepo makes a git repository holding a go.mod, makes it the working
// directory, and returns it (symlinks resolved) and a key directory
// outside it. No user or system git configuration applies.
func initRepo(t *testing.T) (repo, keys string) {
	t.Helper()
	t.Setenv("GIT_CONFIG_GLOBAL", os.DevNull)
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	repo, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("git", "-C", repo, "init", "-q").CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(repo, "go.mod"), []byte("module example.com/repo\n\ngo 1.26\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(repo)
	return repo, filepath.Join(t.TempDir(), "keys")
}

// initRefused runs Init with o, wants a usage error saying want, and
// that nothing init writes exists afterwards, nor absent.
func initRefused(t *testing.T, repo string, o InitOptions, want string, absent ...string) {
	t.Helper()
	in, err := Init(context.Background(), o)
	if err == nil || !errors.Is(err, exit.Usage) || !strings.Contains(err.Error(), want) {
		t.Fatalf("Init = %v, %v; want a usage error saying %q", in, err, want)
	}
	for _, p := range append([]string{".proofgate/contract.yaml", ".github/workflows/proofgate.yml", ".gitignore"}, absent...) {
		if !filepath.IsAbs(p) {
			p = filepath.Join(repo, p)
		}
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s written by a refused init", p)
		}
	}
}

// One existing target refuses the whole init before anything is written:
// not the contract, not the other workflow, not the key, not .gitignore;
// the existing file is left as it was.
func TestInitRefusesAnExistingTarget(t *testing.T) {
	repo, keys := initRepo(t)
	mine := filepath.Join(repo, ".github", "workflows", "release-gate.yml")
	if err := os.MkdirAll(filepath.Dir(mine), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mine, []byte("mine: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := InitOptions{Contract: ".proofgate/contract.yaml", State: ".proofgate", Workflow: true, KeyDir: keys}
	initRefused(t, repo, o, "init never overwrites, and .github/workflows/release-gate.yml already exists; nothing was written", keys)
	if b, err := os.ReadFile(mine); err != nil || string(b) != "mine: true\n" {
		t.Fatalf("the existing workflow changed: %q, %v", b, err)
	}
}

// A key directory inside the work tree is refused, given directly or
// through a symlink outside it, and nothing is written.
func TestInitRefusesAKeyDirInsideTheWorkTree(t *testing.T) {
	repo, _ := initRepo(t)
	o := InitOptions{Contract: ".proofgate/contract.yaml", State: ".proofgate", KeyDir: "keys"}
	initRefused(t, repo, o, "the key directory keys is inside the work tree "+repo+": a private key must never be in the repository", "keys")
	if err := os.Mkdir(filepath.Join(repo, "inside"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "outside-link")
	if err := os.Symlink(filepath.Join(repo, "inside"), link); err != nil {
		t.Fatal(err)
	}
	o.KeyDir = link
	initRefused(t, repo, o, "is inside the work tree")
	if des, err := os.ReadDir(filepath.Join(repo, "inside")); err != nil || len(des) != 0 {
		t.Fatalf("the key directory holds %v (%v)", des, err)
	}
}

// The runs/ line is appended to a .gitignore that does not end in a
// newline on a fresh line, the lines before it kept; the contract and
// the key pair are written and reported.
func TestInitAppendsGitignoreOnAFreshLine(t *testing.T) {
	repo, keys := initRepo(t)
	ignore := filepath.Join(repo, ".gitignore")
	if err := os.WriteFile(ignore, []byte("bin/\n*.o"), 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := Init(context.Background(), InitOptions{Contract: ".proofgate/contract.yaml", State: ".proofgate", KeyDir: keys})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(ignore)
	if want := "bin/\n*.o\n# proofgate: run state (proofgate init)\n/.proofgate/runs/\n"; err != nil || string(b) != want {
		t.Fatalf(".gitignore = %q, %v; want %q", b, err, want)
	}
	want := []string{".proofgate/contract.yaml", in.PrivateKey, in.PublicKey, ".gitignore"}
	if strings.Join(in.Written, "|") != strings.Join(want, "|") || !strings.HasPrefix(in.PrivateKey, keys+string(filepath.Separator)) {
		t.Fatalf("written %q, want %q", in.Written, want)
	}
	if in.KeyID == "" || len(in.CI) != 3 || !strings.Contains(in.Next[1], "git add .proofgate/contract.yaml .gitignore") {
		t.Fatalf("key %q, ci %q, next %q", in.KeyID, in.CI, in.Next)
	}
}
