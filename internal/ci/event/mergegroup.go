package event

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// MergeGroup is a merge queue entry (the merge_group event's
// merge_group, action checks_requested): HeadSHA is the queue's merge
// commit, the one the checks run on; BaseSHA its parent on the base
// branch; HeadRef "refs/heads/gh-readonly-queue/<base>/pr-<N>-<sha>",
// a ref only GitHub writes, names the pull request the entry came from.
type MergeGroup struct {
	HeadSHA string
	HeadRef string
	BaseSHA string
	BaseRef string // refs/heads/<branch>
	Tree    string // head_commit.tree_id
	// PR is the pull request number in HeadRef (0 when HeadRef has none).
	PR int
}

type mergeGroupJSON struct {
	HeadSHA    string `json:"head_sha"`
	HeadRef    string `json:"head_ref"`
	BaseSHA    string `json:"base_sha"`
	BaseRef    string `json:"base_ref"`
	HeadCommit *struct {
		ID     string `json:"id"`
		TreeID string `json:"tree_id"`
	} `json:"head_commit"`
}

// queueRef is GitHub's merge queue branch: gh-readonly-queue/<base>/pr-<N>-<sha>.
var queueRef = regexp.MustCompile(`^refs/heads/gh-readonly-queue/(.+)/pr-([1-9][0-9]{0,9})-([0-9a-f]{40}|[0-9a-f]{64})$`)

// parseMergeGroup fills c from a merge_group payload; every field GitHub
// documents as required is required.
func parseMergeGroup(c *Context, m *mergeGroupJSON) (*Context, error) {
	switch {
	case m == nil:
		return nil, errors.New("event payload: merge_group is missing")
	case !IsHexSHA(m.HeadSHA):
		return nil, errors.New("event payload: merge_group.head_sha is missing or not a full hex SHA")
	case !IsHexSHA(m.BaseSHA):
		return nil, errors.New("event payload: merge_group.base_sha is missing or not a full hex SHA")
	case !strings.HasPrefix(m.BaseRef, "refs/heads/"):
		return nil, fmt.Errorf("event payload: merge_group.base_ref %q is not refs/heads/<branch>", m.BaseRef)
	case m.HeadRef == "":
		return nil, errors.New("event payload: merge_group.head_ref is missing")
	case m.HeadCommit == nil || m.HeadCommit.ID != m.HeadSHA || !IsHexSHA(m.HeadCommit.TreeID):
		return nil, errors.New("event payload: merge_group.head_commit is missing, or its id is not head_sha, or its tree_id is not a SHA")
	}
	g := &MergeGroup{HeadSHA: m.HeadSHA, HeadRef: m.HeadRef, BaseSHA: m.BaseSHA, BaseRef: m.BaseRef, Tree: m.HeadCommit.TreeID}
	if sm := queueRef.FindStringSubmatch(m.HeadRef); sm != nil && "refs/heads/"+sm[1] == m.BaseRef {
		g.PR, _ = strconv.Atoi(sm[2])
	}
	c.MergeGroup = g
	c.HeadSHA, c.HeadRef, c.BaseSHA, c.BaseRef = g.HeadSHA, g.HeadRef, g.BaseSHA, strings.TrimPrefix(g.BaseRef, "refs/heads/")
	c.BaseRepo = c.Repository
	return c, nil
}
