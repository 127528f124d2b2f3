package starter

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/proofgate/proofgate/internal/printable"
	"github.com/proofgate/proofgate/internal/source"
)

// The repository a CLI run records (run.planned's repo, the bundle
// predicate's run.repo; ADR 0033): --repo OWNER/NAME, else the GitHub
// origin remote, else nothing. It is what the local signer asserts; a
// trust store key's identity repo:OWNER/NAME is what binds it.

// ownerName is a GitHub OWNER/NAME (the rule bundle verify --repo applies).
var ownerName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}$`)

// PlaceholderRepo is what OriginRepo returns without a GitHub origin
// remote.
const PlaceholderRepo = "OWNER/NAME"

// CheckRepo refuses an OWNER/NAME that GitHub would not accept; what names
// the value in the error (a flag, "origin").
func CheckRepo(what, s string) error {
	owner, name, _ := strings.Cut(s, "/")
	if !ownerName.MatchString(s) || owner == "." || owner == ".." || name == "." || name == ".." {
		if len(s) > 120 {
			s = s[:120] + "..."
		}
		return fmt.Errorf("%s %q: want OWNER/NAME, as in github.com/OWNER/NAME (letters, digits, '-', '_', '.')", what, s)
	}
	return nil
}

var githubRemote = regexp.MustCompile(`github\.com[:/]([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+?)(\.git)?/?$`)

// OriginRepo returns OWNER/NAME of root's GitHub origin remote, or
// PlaceholderRepo.
func OriginRepo(ctx context.Context, root string) string {
	out, err := exec.CommandContext(ctx, "git", "-C", root, "remote", "get-url", "origin").Output()
	if err == nil {
		if m := githubRemote.FindStringSubmatch(strings.TrimSpace(string(out))); m != nil {
			return m[1] + "/" + m[2]
		}
	}
	return PlaceholderRepo
}

// LocalRepo is OWNER/NAME of root's GitHub origin remote, or "" when
// there is none (or it is not a valid OWNER/NAME).
func LocalRepo(ctx context.Context, root string) string {
	r := OriginRepo(ctx, root)
	if r == PlaceholderRepo || CheckRepo("origin", r) != nil {
		return ""
	}
	return r
}

// TrustAddCommand is the `trust add` that makes store trust the public
// key pub for the bundles of local and Action runs of repo (OWNER/NAME,
// or "" or the placeholder when there is no GitHub origin), and a note
// to print after it ("" when none is needed). With a repository the key
// is bound to it (--identity repo:OWNER/NAME, which local runs satisfy
// because they record the origin); without one the key is not bound, and
// the note says how to bind it.
func TrustAddCommand(store, pub, repo string) (cmd, note string) {
	cmd = "proofgate trust add --store " + printable.ShellQuote(store) + " --public-key " + printable.ShellQuote(pub)
	if repo != "" && repo != PlaceholderRepo && CheckRepo("origin", repo) == nil {
		return cmd + " --identity repo:" + repo, ""
	}
	return cmd, "(no GitHub origin remote: this key is trusted for bundles of any repository; to bind it to one, " +
		"add --identity repo:OWNER/NAME and run with --repo OWNER/NAME, or first: git remote add origin https://github.com/OWNER/NAME)"
}

// IgnoreLines returns the state directory's runs/ as a .gitignore line
// unless git already ignores it (or it lies outside the repository).
func IgnoreLines(ctx context.Context, root, state string) ([]string, error) {
	abs, err := filepath.Abs(filepath.Join(state, "runs"))
	if err != nil {
		return nil, err
	}
	if r, err := source.AbsReal(filepath.Dir(abs)); err == nil {
		abs = filepath.Join(r, "runs")
	}
	rel, err := source.RelLocal(root, abs)
	if err != nil {
		return nil, nil
	}
	probe := exec.CommandContext(ctx, "git", "-C", root, "check-ignore", "-q", "--no-index", rel+"/x")
	if probe.Run() == nil {
		return nil, nil
	}
	return []string{"/" + rel + "/"}, nil
}
