package main

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
)

// The repository a CLI run records (run.planned's repo, the bundle
// predicate's run.repo; ADR 0033): --repo OWNER/NAME, else the GitHub
// origin remote, else nothing. It is what the local signer asserts; a
// trust store key's identity repo:OWNER/NAME is what binds it.

// ownerName is a GitHub OWNER/NAME (the rule bundle verify --repo applies).
var ownerName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}$`)

// placeholderRepo is what originRepo (init.go) returns without a GitHub
// origin remote.
const placeholderRepo = "OWNER/NAME"

func registerRepo(c *cobra.Command, p *planFlags) {
	c.Flags().StringVar(&p.repo, "repo", "",
		"record the run as made for repository OWNER/NAME (default: the GitHub origin remote; none without one); "+
			"a trust store key with --identity repo:OWNER/NAME verifies only bundles of that repository")
}

// checkRepo refuses an OWNER/NAME that GitHub would not accept.
func checkRepo(flag, s string) error {
	owner, name, _ := strings.Cut(s, "/")
	if !ownerName.MatchString(s) || owner == "." || owner == ".." || name == "." || name == ".." {
		if len(s) > 120 {
			s = s[:120] + "..."
		}
		return usageErr(fmt.Errorf("%s %q: want OWNER/NAME, as in github.com/OWNER/NAME (letters, digits, '-', '_', '.')", flag, s))
	}
	return nil
}

// runRepo is the repository a run planned in root records: flag when
// given (validated), else OWNER/NAME of root's GitHub origin remote,
// else "".
func runRepo(ctx context.Context, root, flag string) (string, error) {
	if flag != "" {
		return flag, checkRepo("--repo", flag)
	}
	return localRepo(ctx, root), nil
}

// localRepo is OWNER/NAME of root's GitHub origin remote, or "" when
// there is none (or it is not a valid OWNER/NAME).
func localRepo(ctx context.Context, root string) string {
	r := originRepo(ctx, root)
	if r == placeholderRepo || checkRepo("origin", r) != nil {
		return ""
	}
	return r
}

// trustAddCommand is the `trust add` that makes store trust the public
// key pub for the bundles of local and Action runs of repo (OWNER/NAME,
// or "" or the placeholder when there is no GitHub origin), and a note
// to print after it ("" when none is needed). With a repository the key
// is bound to it (--identity repo:OWNER/NAME, which local runs satisfy
// because they record the origin); without one the key is not bound, and
// the note says how to bind it.
func trustAddCommand(store, pub, repo string) (cmd, note string) {
	cmd = "proofgate trust add --store " + shellQuote(store) + " --public-key " + shellQuote(pub)
	if repo != "" && repo != placeholderRepo && checkRepo("origin", repo) == nil {
		return cmd + " --identity repo:" + repo, ""
	}
	return cmd, "(no GitHub origin remote: this key is trusted for bundles of any repository; to bind it to one, " +
		"add --identity repo:OWNER/NAME and run with --repo OWNER/NAME, or first: git remote add origin https://github.com/OWNER/NAME)"
}
