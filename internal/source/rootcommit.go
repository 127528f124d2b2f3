package source

import (
	"context"
	"fmt"
	"regexp"
	"strings"
)

var commitRE = regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)

// RootCommit returns the root commit of HEAD's first-parent history in the
// repository containing dir: the commit every later commit of the
// repository descends from, which another repository's history does not
// have (a fork shares it; a repository id tells forks apart). It is the
// identity a state-wide checkpoint binds (bundle/checkpoint.Repository).
func RootCommit(ctx context.Context, dir string) (string, error) {
	out, err := git(ctx, dir, "rev-list", "--first-parent", "--max-parents=0", "HEAD")
	if err != nil {
		return "", fmt.Errorf("root commit of %s: %w", dir, err)
	}
	f := strings.Fields(out)
	if len(f) != 1 || !commitRE.MatchString(f[0]) {
		return "", fmt.Errorf("root commit of %s: git printed %q", dir, out)
	}
	return f[0], nil
}
