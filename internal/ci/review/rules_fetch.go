package review

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/google/go-github/v62/github"
	"github.com/proofgate/proofgate/kernel/approval"
	"github.com/proofgate/proofgate/kernel/approval/codeowners"
)

// Bounds on what FetchRuleFacts reads.
const (
	MaxFiles        = 3000 // GitHub lists at most 3000 files of a PR
	MaxMemberships  = 2000 // team × person lookups
	MaxKeptCommits  = 20   // older approved commits checked for update merges
	MaxUpdateMerges = 10   // merges between an approved commit and the head
)

// RuleFacts are the facts approval rules read beyond the reviews.
type RuleFacts struct {
	BaseBranch string
	BaseSHA    string // the base commit: CODEOWNERS is read there, never from the head
	Title      string
	Labels     []string
	PRCommits  []string
	Files      []approval.ChangedFile
	// CodeOwners is the base's CODEOWNERS (nil: none); CodeOwnersPath
	// where it was found.
	CodeOwners     *codeowners.File
	CodeOwnersPath string
	// Teams: "org/slug" lower case → lower-case login → active member.
	Teams map[string]map[string]bool
	// UpdateMergedFrom are approved older commits the head only adds
	// proven base-branch merges to; NotKept says why another was not.
	UpdateMergedFrom map[string]bool
	NotKept          map[string]string
	FromAgentSession bool
	// AgentSession is how FromAgentSession was decided (nil: no rule
	// reads it).
	AgentSession *AgentSession
	// Fetched is set by FetchRuleFacts: rules are never evaluated on
	// facts that were not read (an empty file list would make every
	// changed_files rule inapplicable).
	Fetched bool
}

// TeamError is a team lookup that failed: evaluation fails closed.
type TeamError struct {
	Team string
	Err  error
}

func (e *TeamError) Error() string {
	return fmt.Sprintf("team %s: %v (the token needs read access to the organization's teams: a GitHub App or a token with read:org; the default GITHUB_TOKEN usually has none)", e.Team, e.Err)
}

func (e *TeamError) Unwrap() error { return e.Err }

// ErrTeamNotFound means a team a rule names does not exist or is not
// visible to the token.
var ErrTeamNotFound = errors.New("not found or not visible to the token")

// ErrIncompleteFiles means GitHub did not list every changed file.
var ErrIncompleteFiles = errors.New("pull request files are not completely listed")

// FetchRuleFacts reads what in.Rule's approval rules need: the changed
// files, the base's CODEOWNERS, the team memberships of the author and
// every decisive reviewer, and the update-merge proofs of older approved
// commits. in must come from Fetch.
func FetchRuleFacts(ctx context.Context, gh *github.Client, owner, repo string, pr int, in *Input) error {
	rf := &in.RuleFacts
	files, err := listFiles(ctx, gh, owner, repo, pr, in.changedFiles)
	if err != nil {
		return err
	}
	rf.Files = files
	if rf.CodeOwners, rf.CodeOwnersPath, err = readCodeOwners(ctx, gh, owner, repo, rf.BaseSHA); err != nil {
		return err
	}
	if err := resolveTeams(ctx, gh, in); err != nil {
		return err
	}
	if err := proveUpdateMerges(ctx, gh, owner, repo, in); err != nil {
		return err
	}
	rf.Fetched = true
	return nil
}

type ghFile struct {
	Filename         string `json:"filename"`
	Status           string `json:"status"`
	PreviousFilename string `json:"previous_filename"`
	SHA              string `json:"sha"`
}

// listFiles lists every changed file (paginated), refusing a listing
// shorter than the PR's changed_files.
func listFiles(ctx context.Context, gh *github.Client, owner, repo string, pr, want int) ([]approval.ChangedFile, error) {
	u := fmt.Sprintf("repos/%s/%s/pulls/%d/files", url.PathEscape(owner), url.PathEscape(repo), pr)
	var out []approval.ChangedFile
	for page := 1; page != 0; {
		var fs []ghFile
		resp, err := get(ctx, gh, pageURL(u, page), &fs)
		if err != nil {
			return nil, fmt.Errorf("list files of %s/%s#%d: %w", owner, repo, pr, err)
		}
		for _, f := range fs {
			out = append(out, approval.ChangedFile{Path: f.Filename, Previous: f.PreviousFilename})
		}
		if len(out) > MaxFiles {
			return nil, fmt.Errorf("list files of %s/%s#%d: more than %d files", owner, repo, pr, MaxFiles)
		}
		page = resp.NextPage
	}
	if len(out) < want {
		return nil, fmt.Errorf("%s/%s#%d: %d of %d files listed: %w", owner, repo, pr, len(out), want, ErrIncompleteFiles)
	}
	return out, nil
}

type ghContent struct {
	Type     string `json:"type"`
	Encoding string `json:"encoding"`
	Content  string `json:"content"`
	Size     int    `json:"size"`
}

// readCodeOwners reads CODEOWNERS at the base commit from GitHub's
// locations, the first found winning; none found is nil.
func readCodeOwners(ctx context.Context, gh *github.Client, owner, repo, baseSHA string) (*codeowners.File, string, error) {
	if !hexSHA.MatchString(baseSHA) {
		return nil, "", fmt.Errorf("pull request base commit %q is not a full SHA: CODEOWNERS cannot be read at the base", baseSHA)
	}
	for _, loc := range codeowners.Locations {
		var c ghContent
		resp, err := get(ctx, gh, fmt.Sprintf("repos/%s/%s/contents/%s?ref=%s", url.PathEscape(owner), url.PathEscape(repo), loc, baseSHA), &c)
		if resp != nil && resp.StatusCode == http.StatusNotFound {
			continue
		}
		if err != nil {
			return nil, "", fmt.Errorf("read %s at %s: %w", loc, short(baseSHA), err)
		}
		if c.Type != "file" || c.Encoding != "base64" {
			return nil, "", fmt.Errorf("read %s at %s: the contents API answered type %q encoding %q (a file over 1 MB is not served inline)", loc, short(baseSHA), c.Type, c.Encoding)
		}
		data, err := base64.StdEncoding.DecodeString(strings.ReplaceAll(c.Content, "\n", ""))
		if err != nil {
			return nil, "", fmt.Errorf("read %s at %s: %w", loc, short(baseSHA), err)
		}
		f, err := codeowners.Parse(data)
		if err != nil {
			return nil, "", fmt.Errorf("%s at %s: %w", loc, short(baseSHA), err)
		}
		return f, loc, nil
	}
	return nil, "", nil
}
