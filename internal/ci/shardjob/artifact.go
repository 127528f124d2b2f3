package shardjob

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-github/v62/github"

	"github.com/proofgate/proofgate/internal/ci/artifact"
	"github.com/proofgate/proofgate/internal/ci/ghapi"
	"github.com/proofgate/proofgate/internal/ci/handoff"
	"github.com/proofgate/proofgate/internal/durable"
	"github.com/proofgate/proofgate/internal/shard"
	"github.com/proofgate/proofgate/kernel/exit"
)

// Bounds of what a job lists and downloads.
const (
	// maxShardArtifactBytes bounds a downloaded shard zip (and its files).
	maxShardArtifactBytes = 256 << 20
	// maxRunArtifacts bounds the artifacts a job lists for its run.
	maxRunArtifacts = 1000
)

// listArtifacts lists the artifacts of workflow run runID of owner/repo
// (all attempts), at most maxRunArtifacts. An artifact listed under
// another workflow run is refused (foreign): the listing is per run.
func listArtifacts(ctx context.Context, gh *github.Client, owner, repo string, runID int64) ([]*artifact.Artifact, error) {
	all := []*artifact.Artifact{}
	for page := 1; page != 0; {
		if len(all) >= maxRunArtifacts {
			return nil, Refuse(API, "", "workflow run %d lists more than %d artifacts", runID, maxRunArtifacts)
		}
		q := url.Values{"per_page": {"100"}, "page": {fmt.Sprint(page)}}
		var list struct {
			Artifacts []*artifact.Artifact `json:"artifacts"`
		}
		resp, err := ghapi.Get(ctx, gh, fmt.Sprintf("repos/%s/%s/actions/runs/%d/artifacts?%s",
			url.PathEscape(owner), url.PathEscape(repo), runID, q.Encode()), &list)
		if err != nil {
			return nil, Refuse(API, "", "list the artifacts of workflow run %d (permissions: actions: read?): %v", runID, err)
		}
		for _, a := range list.Artifacts {
			if a == nil {
				continue
			}
			if a.Run.ID != runID {
				return nil, Refuse(Foreign, a.Name, "listed for workflow run %d under workflow run %d", a.Run.ID, runID)
			}
			all = append(all, a)
		}
		page = resp.NextPage
	}
	return all, nil
}

// downloadPlan downloads the plan artifact of workflow run w's attempt
// among arts (listed once and unexpired) from owner/repo, and returns its
// name and zip.
func downloadPlan(ctx context.Context, gh *github.Client, owner, repo string, arts []*artifact.Artifact, w WorkflowRun) (string, []byte, error) {
	a, err := findPlan(arts, w)
	if err != nil {
		return "", nil, err
	}
	zipData, err := artifact.Download(ctx, gh, owner, repo, a.ID, handoff.MaxArtifactBytes)
	if err != nil {
		return "", nil, Refuse(API, a.Name, "download: %v", err)
	}
	return a.Name, zipData, nil
}

// findPlan returns the plan artifact of workflow run w's attempt among
// arts: listed once and unexpired.
func findPlan(arts []*artifact.Artifact, w WorkflowRun) (*artifact.Artifact, error) {
	name := PlanArtifactName(w.ID, w.Attempt)
	var found []*artifact.Artifact
	for _, a := range arts {
		if a.Name == name {
			found = append(found, a)
		}
	}
	switch {
	case len(found) == 0:
		return nil, Refuse(PlanMissing, name, "workflow run %d attempt %d has no such artifact: the mode: plan job must run first (needs:), and a re-run must re-run all jobs", w.ID, w.Attempt)
	case len(found) > 1:
		return nil, Refuse(Duplicate, name, "listed %d times", len(found))
	case found[0].Expired:
		return nil, Refuse(Expired, name, "the artifact has expired")
	}
	return found[0], nil
}

// selected is one shard artifact a merge takes.
type selected struct {
	spec shard.Spec
	art  *artifact.Artifact
}

// selectShards returns the shard artifacts of workflow run w's attempt,
// in index order: one N for all, each index 1..N exactly once, none
// expired. Other attempts' shards are left out (and counted in the
// message when none of this attempt exist).
func selectShards(arts []*artifact.Artifact, w WorkflowRun) ([]selected, error) {
	byIndex := map[int]*artifact.Artifact{}
	n, other := 0, 0
	var names []string
	for _, a := range arts {
		sp, ok := parseShardArtifactName(a.Name, w.ID, w.Attempt)
		if !ok {
			if strings.HasPrefix(a.Name, shardPrefix) {
				other++
			}
			continue
		}
		switch {
		case a.Expired:
			return nil, Refuse(Expired, a.Name, "the artifact has expired")
		case n != 0 && sp.Count != n:
			return nil, Refuse(Count, a.Name, "shard %s beside shards of %d (%s)", sp, n, strings.Join(names, ", "))
		case byIndex[sp.Index] != nil:
			return nil, Refuse(Duplicate, a.Name, "listed twice (artifacts %d and %d)", byIndex[sp.Index].ID, a.ID)
		}
		n = sp.Count
		byIndex[sp.Index] = a
		names = append(names, a.Name)
	}
	if n == 0 {
		return nil, Refuse(Missing, "", "workflow run %d attempt %d has no shard artifacts (%s%d-%d-I-of-N; %d of other attempts, which a merge never mixes in): did the matrix jobs run (needs:)?",
			w.ID, w.Attempt, shardPrefix, w.ID, w.Attempt, other)
	}
	return complete(byIndex, n, w)
}

// complete returns the shards 1..n of byIndex in index order, or refuses
// naming the missing ones.
func complete(byIndex map[int]*artifact.Artifact, n int, w WorkflowRun) ([]selected, error) {
	var missing []string
	out := make([]selected, 0, n)
	for i := 1; i <= n; i++ {
		sp := shard.Spec{Index: i, Count: n}
		if byIndex[i] == nil {
			missing = append(missing, ShardArtifactName(w.ID, w.Attempt, sp))
			continue
		}
		out = append(out, selected{spec: sp, art: byIndex[i]})
	}
	if len(missing) > 0 {
		return nil, Refuse(Missing, missing[0], "%d of %d shards were not uploaded (%s): did their jobs fail? A merge needs every shard", len(missing), n, strings.Join(missing, ", "))
	}
	return out, nil
}

// DownloadShards selects the shard artifacts of workflow run w's attempt
// among arts (selectShards), downloads and unpacks each from owner/repo
// into its own directory under a new temporary directory, and returns the
// directories in index order, the artifact name of each and the function
// that removes them.
func DownloadShards(ctx context.Context, gh *github.Client, owner, repo string, arts []*artifact.Artifact, w WorkflowRun) ([]string, map[string]string, func(), error) {
	sel, err := selectShards(arts, w)
	if err != nil {
		return nil, nil, nil, err
	}
	tmp, err := os.MkdirTemp("", "proofgate-merge-")
	if err != nil {
		return nil, nil, nil, exit.Wrap(exit.Environment, fmt.Errorf("shard directories: %w", err))
	}
	remove := func() { os.RemoveAll(tmp) }
	dirs := make([]string, 0, len(sel))
	names := map[string]string{}
	for _, s := range sel {
		dir := filepath.Join(tmp, s.art.Name)
		if err := download(ctx, gh, owner, repo, s.art, dir); err != nil {
			remove()
			return nil, nil, nil, err
		}
		dirs = append(dirs, dir)
		names[dir] = s.art.Name
	}
	return dirs, names, remove, nil
}

// download downloads shard artifact a of owner/repo and unpacks it into
// dir.
func download(ctx context.Context, gh *github.Client, owner, repo string, a *artifact.Artifact, dir string) error {
	data, err := artifact.Download(ctx, gh, owner, repo, a.ID, maxShardArtifactBytes)
	if err != nil {
		return Refuse(API, a.Name, "download: %v", err)
	}
	files, err := artifact.Unzip(data, maxShardArtifactBytes, maxShardArtifactBytes)
	if err != nil {
		return Refuse(Malformed, a.Name, "%v", err)
	}
	for n, b := range files {
		p := filepath.Join(dir, filepath.FromSlash(n))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return exit.Wrap(exit.Environment, fmt.Errorf("unpack %s: %w", a.Name, err))
		}
		if err := durable.CreateExclusive(p, b, 0o644); err != nil {
			return exit.Wrap(exit.Environment, fmt.Errorf("unpack %s: %w", a.Name, err))
		}
	}
	return nil
}
