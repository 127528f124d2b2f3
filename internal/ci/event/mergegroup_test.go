package event

import (
	"strings"
	"testing"
)

const (
	mgHead = "1111111111111111111111111111111111111111"
	mgBase = "2222222222222222222222222222222222222222"
	mgTree = "3333333333333333333333333333333333333333"
)

func mgPayload(edit func(string) string) []byte {
	p := `{"action":"checks_requested","merge_group":{"head_sha":"` + mgHead + `","head_ref":"refs/heads/gh-readonly-queue/main/pr-12-` + mgBase + `",
"base_sha":"` + mgBase + `","base_ref":"refs/heads/main","head_commit":{"id":"` + mgHead + `","tree_id":"` + mgTree + `","message":"m",
"timestamp":"2025-01-02T03:04:05Z","author":{"name":"a","email":"a@x"},"committer":{"name":"a","email":"a@x"}}},
"repository":{"full_name":"acme/widget","default_branch":"main"},"sender":{"login":"github-merge-queue[bot]"}}`
	if edit != nil {
		p = edit(p)
	}
	return []byte(p)
}

func TestMergeGroupPayload(t *testing.T) {
	c, err := Parse("merge_group", mgPayload(nil))
	if err != nil {
		t.Fatal(err)
	}
	g := c.MergeGroup
	if g == nil || g.PR != 12 || g.Tree != mgTree || c.HeadSHA != mgHead || c.BaseSHA != mgBase || c.BaseRef != "main" || c.IsPullRequest() || c.Fork {
		t.Fatalf("context %+v group %+v", c, g)
	}
	bad := map[string]func(string) string{
		"head_sha not hex": func(p string) string { return strings.Replace(p, `"head_sha":"`+mgHead, `"head_sha":"HEAD`, 1) },
		"no base_sha":      func(p string) string { return strings.Replace(p, `"base_sha":"`+mgBase+`",`, ``, 1) },
		"base_ref not a head": func(p string) string {
			return strings.Replace(p, `"base_ref":"refs/heads/main"`, `"base_ref":"main"`, 1)
		},
		"head_commit other id": func(p string) string { return strings.Replace(p, `"id":"`+mgHead, `"id":"`+mgBase, 1) },
		"no head_commit":       func(p string) string { return strings.Replace(p, `"head_commit":{`, `"x":{`, 1) },
		"no merge_group":       func(p string) string { return strings.Replace(p, `"merge_group"`, `"merge_grou"`, 1) },
		"duplicate head_sha": func(p string) string {
			return strings.Replace(p, `{"head_sha"`, `{"head_sha":"`+mgBase+`","head_sha"`, 1)
		},
	}
	for name, edit := range bad {
		if _, err := Parse("merge_group", mgPayload(edit)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// A head_ref naming another base, or no PR, links no pull request.
	for _, ref := range []string{"refs/heads/gh-readonly-queue/release/pr-12-" + mgBase, "refs/heads/gh-readonly-queue/main/pr-0-" + mgBase, "refs/heads/topic"} {
		c, err := Parse("merge_group", mgPayload(func(p string) string {
			return strings.Replace(p, "refs/heads/gh-readonly-queue/main/pr-12-"+mgBase, ref, 1)
		}))
		if err != nil || c.MergeGroup.PR != 0 {
			t.Errorf("head_ref %s: PR %d, %v", ref, c.MergeGroup.PR, err)
		}
	}
}
