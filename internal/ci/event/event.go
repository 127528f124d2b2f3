// Package event reads the GitHub Actions run context for ProofGate: the
// triggering event's payload (GITHUB_EVENT_NAME, GITHUB_EVENT_PATH) and the
// contract of the pull request's base commit, which governs the run.
package event

import (
	"errors"
	"fmt"
	"io"

	"github.com/proofgate/proofgate/internal/bounded"
	"github.com/proofgate/proofgate/internal/strictjson"
)

// MaxPayloadBytes bounds the event payload (GitHub caps webhooks at 25 MB).
const MaxPayloadBytes = 25 << 20

// User is a GitHub account from the payload.
type User struct {
	Login string `json:"login"`
	ID    int64  `json:"id"`
	Type  string `json:"type"`
}

// Review is the review of a pull_request_review event. State is as the
// payload spells it (lower case: approved, changes_requested, commented).
type Review struct {
	ID       int64  `json:"id"`
	State    string `json:"state"`
	CommitID string `json:"commit_id"`
	User     User   `json:"user"`
}

// Context is what ProofGate needs from the triggering event. For events
// other than pull_request, pull_request_target, pull_request_review and
// merge_group only Name, Action, Repository and DefaultBranch are set (PR
// is 0), and Ref and After for push and workflow_dispatch.
type Context struct {
	Name       string // GITHUB_EVENT_NAME
	Action     string // payload "action"
	Repository string // owner/name
	PR         int    // pull request number
	HeadSHA    string // pull_request.head.sha: what reviews bind to
	HeadRef    string
	HeadRepo   string // head.repo.full_name ("" if the fork was deleted)
	BaseSHA    string // pull_request.base.sha: the commit whose contract governs
	BaseRef    string
	BaseRepo   string
	Fork       bool    // head repository is not the base repository
	Author     User    // pull_request.user
	Review     *Review // pull_request_review only
	// MergeGroup is the merge queue entry of a merge_group event (nil
	// otherwise). HeadSHA and BaseSHA are then its head and base too.
	MergeGroup *MergeGroup
	// DefaultBranch is repository.default_branch ("" when the payload
	// has none): it decides whether a push run writes the default cache
	// scope (internal/cache).
	DefaultBranch string
	// Ref is the payload's ref of a push or workflow_dispatch event, and
	// After a push's after (its new head): "" otherwise. With GITHUB_REF
	// and GITHUB_SHA they decide which cache scope the run may write.
	Ref   string
	After string
}

// IsPullRequest reports whether the event is about a pull request.
func (c *Context) IsPullRequest() bool { return c.PR != 0 }

type repoJSON struct {
	FullName      string `json:"full_name"`
	DefaultBranch string `json:"default_branch"`
}

type refJSON struct {
	Ref  string    `json:"ref"`
	SHA  string    `json:"sha"`
	Repo *repoJSON `json:"repo"`
}

type payload struct {
	Action      string    `json:"action"`
	Repository  *repoJSON `json:"repository"`
	PullRequest *struct {
		Number int      `json:"number"`
		User   *User    `json:"user"`
		Head   *refJSON `json:"head"`
		Base   *refJSON `json:"base"`
	} `json:"pull_request"`
	Review     *Review         `json:"review"`
	MergeGroup *mergeGroupJSON `json:"merge_group"`
}

// IsHexSHA reports whether s is a full SHA-1 or SHA-256 object name.
func IsHexSHA(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// ShortSHA is a commit's name as the Action's messages show it: its first
// 12 characters.
func ShortSHA(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

// Parse reads an event payload. Errors name the offending field.
func Parse(name string, data []byte) (*Context, error) {
	if len(data) > MaxPayloadBytes {
		return nil, fmt.Errorf("event payload: %d bytes, over %d", len(data), MaxPayloadBytes)
	}
	var p payload
	if err := strictjson.DecodeOpen(data, &p); err != nil {
		return nil, fmt.Errorf("event payload: %w", err)
	}
	c := &Context{Name: name, Action: p.Action}
	if p.Repository != nil {
		c.Repository = p.Repository.FullName
		c.DefaultBranch = p.Repository.DefaultBranch
	}
	switch name {
	case "pull_request", "pull_request_target", "pull_request_review":
	case "push", "workflow_dispatch":
		return parseRef(c, data)
	case "merge_group":
		return parseMergeGroup(c, p.MergeGroup)
	default:
		return c, nil
	}
	pr := p.PullRequest
	switch {
	case pr == nil:
		return nil, errors.New("event payload: pull_request is missing")
	case pr.Number <= 0:
		return nil, fmt.Errorf("event payload: pull_request.number %d is not positive", pr.Number)
	case pr.Head == nil || !IsHexSHA(pr.Head.SHA):
		return nil, errors.New("event payload: pull_request.head.sha is missing or not a full hex SHA")
	case pr.Base == nil || !IsHexSHA(pr.Base.SHA):
		return nil, errors.New("event payload: pull_request.base.sha is missing or not a full hex SHA")
	case pr.Base.Repo == nil || pr.Base.Repo.FullName == "":
		return nil, errors.New("event payload: pull_request.base.repo.full_name is missing")
	case pr.User == nil || pr.User.Login == "" || pr.User.ID == 0:
		return nil, errors.New("event payload: pull_request.user login/id is missing")
	}
	c.PR = pr.Number
	c.HeadSHA, c.HeadRef = pr.Head.SHA, pr.Head.Ref
	c.BaseSHA, c.BaseRef, c.BaseRepo = pr.Base.SHA, pr.Base.Ref, pr.Base.Repo.FullName
	if pr.Head.Repo != nil {
		c.HeadRepo = pr.Head.Repo.FullName
	}
	// A deleted fork has head.repo null: treat it as a fork. Names are
	// compared exactly (both come canonical from GitHub): any doubt is a fork.
	c.Fork = c.HeadRepo != c.BaseRepo
	c.Author = *pr.User
	if c.Repository == "" {
		c.Repository = c.BaseRepo
	}
	if name == "pull_request_review" {
		r := p.Review
		if r == nil {
			return nil, errors.New("event payload: review is missing")
		}
		if r.ID == 0 || r.State == "" {
			return nil, errors.New("event payload: review.id or review.state is missing")
		}
		c.Review = r
	}
	return c, nil
}

// parseRef reads a push or workflow_dispatch payload's ref and a push's
// after, each a string when present.
func parseRef(c *Context, data []byte) (*Context, error) {
	var p struct {
		Ref   string `json:"ref"`
		After string `json:"after"`
	}
	if err := strictjson.DecodeOpen(data, &p); err != nil {
		return nil, fmt.Errorf("event payload: %w", err)
	}
	c.Ref = p.Ref
	if c.Name == "push" {
		c.After = p.After
	}
	return c, nil
}

// Load reads GITHUB_EVENT_NAME and the payload at GITHUB_EVENT_PATH.
func Load(getenv func(string) string) (*Context, error) {
	name := getenv("GITHUB_EVENT_NAME")
	if name == "" {
		return nil, errors.New("GITHUB_EVENT_NAME is not set")
	}
	path := getenv("GITHUB_EVENT_PATH")
	if path == "" {
		return nil, errors.New("GITHUB_EVENT_PATH is not set")
	}
	f, err := bounded.Open(path)
	if err != nil {
		return nil, fmt.Errorf("GITHUB_EVENT_PATH: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxPayloadBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	c, err := Parse(name, data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}
