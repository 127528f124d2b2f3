package review

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/google/go-github/v62/github"
	"github.com/proofgate/proofgate/kernel/approval"
)

// resolveTeams reads the membership of the author and of every decisive
// reviewer in every team the rules may ask about. A team that does not
// exist, is not visible, or whose lookup fails is a *TeamError.
func resolveTeams(ctx context.Context, gh *github.Client, in *Input) error {
	f := in.facts()
	teams := approval.TeamsNeeded(in.Rule, f)
	people := []string{in.Author.Login}
	seen := map[string]bool{strings.ToLower(in.Author.Login): true}
	for _, r := range in.Reviews {
		if l := strings.ToLower(r.User.Login); r.User.ID != 0 && !r.User.IsBot() && decisive(strings.ToUpper(r.State)) && !seen[l] {
			seen[l] = true
			people = append(people, r.User.Login)
		}
	}
	if len(teams)*len(people) > MaxMemberships {
		return fmt.Errorf("%d teams × %d people is more than %d membership lookups", len(teams), len(people), MaxMemberships)
	}
	in.RuleFacts.Teams = map[string]map[string]bool{}
	for _, t := range teams {
		org, slug, _ := strings.Cut(t, "/")
		base := fmt.Sprintf("orgs/%s/teams/%s", url.PathEscape(org), url.PathEscape(slug))
		var team struct {
			Slug string `json:"slug"`
		}
		resp, err := get(ctx, gh, base, &team)
		if resp != nil && resp.StatusCode == http.StatusNotFound {
			return &TeamError{Team: t, Err: ErrTeamNotFound}
		}
		if err != nil {
			return &TeamError{Team: t, Err: err}
		}
		members := map[string]bool{}
		for _, p := range people {
			var m struct {
				State string `json:"state"`
			}
			resp, err := get(ctx, gh, base+"/memberships/"+url.PathEscape(p), &m)
			switch {
			case resp != nil && resp.StatusCode == http.StatusNotFound:
				members[strings.ToLower(p)] = false
			case err != nil:
				return &TeamError{Team: t, Err: fmt.Errorf("membership of %s: %w", p, err)}
			default:
				members[strings.ToLower(p)] = m.State == "active"
			}
		}
		in.RuleFacts.Teams[strings.ToLower(t)] = members
	}
	return nil
}

type ghCompare struct {
	Status   string `json:"status"`
	BehindBy int    `json:"behind_by"`
	Commits  []struct {
		SHA     string `json:"sha"`
		Parents []struct {
			SHA string `json:"sha"`
		} `json:"parents"`
	} `json:"commits"`
	Files []ghFile `json:"files"`
}

func compare(ctx context.Context, gh *github.Client, owner, repo, base, head string) (*ghCompare, error) {
	var c ghCompare
	if _, err := get(ctx, gh, fmt.Sprintf("repos/%s/%s/compare/%s...%s", url.PathEscape(owner), url.PathEscape(repo), url.PathEscape(base), url.PathEscape(head)), &c); err != nil {
		return nil, fmt.Errorf("compare %s...%s: %w", short(base), short(head), err)
	}
	return &c, nil
}

// proveUpdateMerges checks, for each older commit an approval names when
// a rule keeps approvals across update merges, that the head is that
// commit plus only merges of the base branch which change no file beyond
// the base's. What cannot be proven is not kept (NotKept says why).
func proveUpdateMerges(ctx context.Context, gh *github.Client, owner, repo string, in *Input) error {
	keep := false
	for _, r := range in.Rule.Rules {
		keep = keep || r.Options.IgnoreUpdateMerges
	}
	rf := &in.RuleFacts
	rf.UpdateMergedFrom, rf.NotKept = map[string]bool{}, map[string]string{}
	if !keep {
		return nil
	}
	for _, r := range in.Reviews {
		c := r.CommitID
		if strings.ToUpper(r.State) != StateApproved || c == in.Head || !hexSHA.MatchString(c) || rf.UpdateMergedFrom[c] || rf.NotKept[c] != "" {
			continue
		}
		if len(rf.UpdateMergedFrom)+len(rf.NotKept) >= MaxKeptCommits {
			rf.NotKept[c] = fmt.Sprintf("more than %d older approved commits", MaxKeptCommits)
			continue
		}
		why, err := proveOne(ctx, gh, owner, repo, c, in.Head, rf.BaseBranch)
		if err != nil {
			return err
		}
		if why != "" {
			rf.NotKept[c] = why
			continue
		}
		rf.UpdateMergedFrom[c] = true
	}
	return nil
}

// proveOne returns "" when head is old plus only update merges, else why
// not.
func proveOne(ctx context.Context, gh *github.Client, owner, repo, old, head, baseBranch string) (string, error) {
	c, err := compare(ctx, gh, owner, repo, old, head)
	if err != nil {
		return "", err
	}
	if c.Status != "ahead" || c.BehindBy != 0 || len(c.Commits) == 0 {
		return fmt.Sprintf("the head is not a descendant of %s (compare status %q)", short(old), c.Status), nil
	}
	if len(c.Commits) > MaxUpdateMerges {
		return fmt.Sprintf("more than %d commits since %s", MaxUpdateMerges, short(old)), nil
	}
	prev := old
	for _, cm := range c.Commits {
		if len(cm.Parents) != 2 || cm.Parents[0].SHA != prev {
			return fmt.Sprintf("commit %s is not a merge into %s", short(cm.SHA), short(prev)), nil
		}
		why, err := proveMerge(ctx, gh, owner, repo, prev, cm.SHA, cm.Parents[1].SHA, baseBranch)
		if err != nil || why != "" {
			return why, err
		}
		prev = cm.SHA
	}
	if prev != head {
		return fmt.Sprintf("the commits since %s do not end at the head", short(old)), nil
	}
	return "", nil
}

// proveMerge proves that merge (parents prev and other) merges a commit
// of the base branch and changes, relative to prev, only files to
// exactly their version in other: every file it changes is changed the
// same way (status and blob) on the base side.
func proveMerge(ctx context.Context, gh *github.Client, owner, repo, prev, merge, other, baseBranch string) (string, error) {
	onBase, err := compare(ctx, gh, owner, repo, other, baseBranch)
	if err != nil {
		return "", err
	}
	if onBase.Status != "ahead" && onBase.Status != "identical" {
		return fmt.Sprintf("merge %s merges %s, which is not on the base branch %s", short(merge), short(other), baseBranch), nil
	}
	step, err := compare(ctx, gh, owner, repo, prev, merge)
	if err != nil {
		return "", err
	}
	side, err := compare(ctx, gh, owner, repo, prev, other)
	if err != nil {
		return "", err
	}
	if len(step.Files) >= 300 || len(side.Files) >= 300 {
		return "a comparison lists 300 files or more (GitHub truncates it): cannot prove the merge", nil
	}
	theirs := map[string]ghFile{}
	for _, f := range side.Files {
		theirs[f.Filename] = f
	}
	for _, f := range step.Files {
		t, ok := theirs[f.Filename]
		if !ok || t.SHA != f.SHA || t.Status != f.Status {
			return fmt.Sprintf("merge %s changes %s beyond the base branch's version", short(merge), f.Filename), nil
		}
	}
	return "", nil
}
