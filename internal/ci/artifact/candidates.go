package artifact

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/google/go-github/v62/github"
	"github.com/proofgate/proofgate/internal/ci/event"
	"github.com/proofgate/proofgate/internal/ci/ghapi"
)

// Bounds of finding a release commit's bundle artifact.
const (
	// MaxCandidates bounds how many artifacts one search returns.
	MaxCandidates = 10
	// MaxBundleBytes bounds a downloaded bundle artifact's zip.
	MaxBundleBytes = 512 << 20
	// maxScanPages bounds the recent-artifacts scan (100 per page).
	maxScanPages = 3
)

// Search is what Candidates looks for: the bundle artifacts of a release
// commit.
type Search struct {
	Commit   string // the release commit
	ByCommit bool   // only the artifact for Commit itself (match: commit)
	// Name is the one artifact name the scan of recent artifacts keeps;
	// "" keeps the names starting with Prefix but none of Exclude.
	Name    string
	Prefix  string
	Exclude []string
	// NameFor names the artifact of a run whose head is the given commit.
	NameFor func(head string) string
}

// keeps says whether the scan of recent artifacts keeps an artifact
// called name.
func (s *Search) keeps(name string) bool {
	if s.Name != "" {
		return name == s.Name
	}
	if !strings.HasPrefix(name, s.Prefix) {
		return false
	}
	for _, p := range s.Exclude {
		if strings.HasPrefix(name, p) {
			return false
		}
	}
	return true
}

// Candidates lists the artifacts to try, most specific first: the
// artifact for the commit itself; unless ByCommit, the artifacts for the
// heads of the pull requests GitHub associates with the commit
// (commits/{sha}/pulls); and, when those give none, the newest unexpired
// artifacts the scan keeps (see Search). It returns at most MaxCandidates.
func Candidates(ctx context.Context, gh *github.Client, owner, repo string, s Search) ([]*Artifact, error) {
	var out []*Artifact
	seen := map[int64]bool{}
	add := func(a *Artifact) {
		if a != nil && !seen[a.ID] && len(out) < MaxCandidates {
			seen[a.ID] = true
			out = append(out, a)
		}
	}
	a, firstErr := Find(ctx, gh, owner, repo, s.NameFor(s.Commit), s.Commit)
	add(a)
	if s.ByCommit || !isFindMiss(firstErr) {
		return out, firstErr
	}
	heads, err := pullHeads(ctx, gh, owner, repo, s.Commit)
	if err != nil {
		return out, err
	}
	for _, h := range heads {
		a, err := Find(ctx, gh, owner, repo, s.NameFor(h), h)
		if err != nil && !isFindMiss(err) {
			return out, err
		}
		add(a)
	}
	if len(out) > 0 {
		return out, nil
	}
	// The newest unexpired ProofGate artifacts: the verified tree decides.
	recent, err := listRecent(ctx, gh, owner, repo, &s)
	if err != nil {
		return out, err
	}
	for _, a := range recent {
		add(a)
	}
	return out, firstErr
}

// pullHeads returns the heads of the pull requests GitHub associates with
// commit, other than the commit itself; none when GitHub answers 404 or
// 422.
func pullHeads(ctx context.Context, gh *github.Client, owner, repo, commit string) ([]string, error) {
	var prs []struct {
		Head struct {
			SHA string `json:"sha"`
		} `json:"head"`
	}
	_, err := ghapi.Get(ctx, gh, fmt.Sprintf("repos/%s/%s/commits/%s/pulls?per_page=100", url.PathEscape(owner), url.PathEscape(repo), url.PathEscape(commit)), &prs)
	if err != nil {
		var ge *github.ErrorResponse
		if !errors.As(err, &ge) || ge.Response == nil || ge.Response.StatusCode != http.StatusNotFound && ge.Response.StatusCode != http.StatusUnprocessableEntity {
			return nil, fmt.Errorf("pull requests for %s: %w", commit, err)
		}
	}
	var heads []string
	for _, p := range prs {
		if h := p.Head.SHA; event.IsHexSHA(h) && h != commit {
			heads = append(heads, h)
		}
	}
	return heads, nil
}

// isFindMiss says whether err, from Find, only says no artifact is usable.
func isFindMiss(err error) bool {
	return err == nil || errors.Is(err, ErrNotFound) || errors.Is(err, ErrExpired) || errors.Is(err, ErrOtherCommit)
}

// listRecent lists the newest unexpired artifacts s keeps, newest first.
func listRecent(ctx context.Context, gh *github.Client, owner, repo string, s *Search) ([]*Artifact, error) {
	var out []*Artifact
	for page := 1; page != 0 && page <= maxScanPages; {
		q := url.Values{"per_page": {"100"}, "page": {strconv.Itoa(page)}}
		if s.Name != "" {
			q.Set("name", s.Name)
		}
		var list struct {
			Artifacts []*Artifact `json:"artifacts"`
		}
		resp, err := ghapi.Get(ctx, gh, fmt.Sprintf("repos/%s/%s/actions/artifacts?%s", url.PathEscape(owner), url.PathEscape(repo), q.Encode()), &list)
		if err != nil {
			return nil, fmt.Errorf("list artifacts in %s/%s: %w", owner, repo, err)
		}
		for _, a := range list.Artifacts {
			if a != nil && !a.Expired && s.keeps(a.Name) {
				out = append(out, a)
			}
		}
		page = resp.NextPage
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.After(out[j].CreatedAt)
		}
		return out[i].ID > out[j].ID
	})
	return out, nil
}

// Bundle is the evidence bundle an artifact zip holds.
type Bundle struct {
	Name string // the .tar.gz file's name in the zip
	Data []byte
	// Companion is the companion Sigstore bundle's name, "" when the
	// artifact has none (one made before the action uploaded it).
	Companion     string
	CompanionData []byte
}

// BundleFromZip returns the bundle inside an artifact zip, found by name:
// exactly one .tar.gz file, beside which only its companion Sigstore
// bundle, named companionName(the archive's name), may lie. Each file and
// the whole are bounded by maxBytes.
func BundleFromZip(zipData []byte, maxBytes int64, companionName func(archive string) string) (*Bundle, error) {
	files, err := Unzip(zipData, maxBytes, maxBytes)
	if err != nil {
		return nil, err
	}
	b := &Bundle{}
	n := 0
	for f := range files {
		if strings.HasSuffix(f, ".tar.gz") {
			b.Name = f
			n++
		}
	}
	if n != 1 {
		return nil, fmt.Errorf("the artifact holds %d .tar.gz bundles, want exactly 1", n)
	}
	cn := companionName(b.Name)
	for f, data := range files {
		switch f {
		case b.Name:
		case cn:
			b.Companion, b.CompanionData = cn, data
		default:
			return nil, fmt.Errorf("the artifact holds %q beside %s: only its companion %s may", f, b.Name, cn)
		}
	}
	b.Data = files[b.Name]
	return b, nil
}
