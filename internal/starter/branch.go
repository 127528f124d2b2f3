package starter

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
)

// Branch is the branch the generated workflows run on after a
// merge, and where init read it.
type Branch struct{ Name, From string }

// branchName is what init writes into a workflow's branch filter: no
// glob characters (* ? + [ ! would make it a pattern), no YAML specials.
var branchName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/-]{0,99}$`)

// DefaultBranch reads the repository's default branch: origin/HEAD,
// else the current branch when it is the only one, else
// init.defaultBranch, else main.
func DefaultBranch(ctx context.Context, root string) Branch {
	git := func(args ...string) string {
		out, err := exec.CommandContext(ctx, "git", append([]string{"-C", root}, args...)...).Output()
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(out))
	}
	if b, ok := strings.CutPrefix(git("symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD"), "origin/"); ok && branchName.MatchString(b) {
		return Branch{b, "origin/HEAD"}
	}
	cur := git("symbolic-ref", "--quiet", "--short", "HEAD")
	heads := strings.Fields(git("for-each-ref", "--format=%(refname:short)", "refs/heads/"))
	if branchName.MatchString(cur) && (len(heads) == 0 || len(heads) == 1 && heads[0] == cur) {
		return Branch{cur, "the only branch"}
	}
	if b := git("config", "--get", "init.defaultBranch"); branchName.MatchString(b) {
		return Branch{b, "init.defaultBranch"}
	}
	return Branch{"main", "default"}
}

const mainFilter = "    branches: [main]\n"

var yamlWord = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9._/-]*$`)

// OnBranch points an example workflow's push filter at branch.
func OnBranch(workflow []byte, branch string) ([]byte, error) {
	n := bytes.Count(workflow, []byte(mainFilter))
	if n == 0 || branch == "main" {
		return workflow, nil
	}
	if n > 1 {
		return nil, fmt.Errorf("%d push branch filters, want one", n)
	}
	v := branch
	switch strings.ToLower(branch) {
	case "y", "n", "yes", "no", "on", "off", "true", "false", "null":
		v = strconv.Quote(branch)
	default:
		if !yamlWord.MatchString(branch) {
			v = strconv.Quote(branch)
		}
	}
	return bytes.Replace(workflow, []byte(mainFilter), []byte("    branches: ["+v+"]\n"), 1), nil
}
