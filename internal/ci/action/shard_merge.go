package action

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/proofgate/proofgate/bundle/sigstore"
	"github.com/proofgate/proofgate/internal/ci/artifact"
	"github.com/proofgate/proofgate/internal/ci/ghapi"
	"github.com/proofgate/proofgate/internal/ci/status"
	"github.com/proofgate/proofgate/internal/durable"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/internal/shard"
)

// runArtifact is an artifact as GET .../actions/runs/{run_id}/artifacts
// lists it.
type runArtifact struct {
	ID          int64     `json:"id"`
	Name        string    `json:"name"`
	Size        int64     `json:"size_in_bytes"`
	Expired     bool      `json:"expired"`
	CreatedAt   time.Time `json:"created_at"`
	WorkflowRun struct {
		ID               int64  `json:"id"`
		RepositoryID     int64  `json:"repository_id"`
		HeadRepositoryID int64  `json:"head_repository_id"`
		HeadSHA          string `json:"head_sha"`
	} `json:"workflow_run"`
}

// listRunArtifacts lists the artifacts of the job's workflow run (all
// attempts), at most MaxRunArtifacts, once per job. An artifact listed
// under another workflow run is refused (foreign): the listing is per run.
func (j *job) listRunArtifacts(ctx context.Context) ([]*runArtifact, error) {
	if j.runArts != nil {
		return j.runArts, nil
	}
	all := []*runArtifact{}
	for page := 1; page != 0; {
		if len(all) >= MaxRunArtifacts {
			return nil, shardRefuse(ShardAPI, "", "workflow run %d lists more than %d artifacts", j.wrun.ID, MaxRunArtifacts)
		}
		q := url.Values{"per_page": {"100"}, "page": {fmt.Sprint(page)}}
		var list struct {
			Artifacts []*runArtifact `json:"artifacts"`
		}
		resp, err := ghapi.Get(ctx, j.gh, fmt.Sprintf("repos/%s/%s/actions/runs/%d/artifacts?%s",
			url.PathEscape(j.owner), url.PathEscape(j.name), j.wrun.ID, q.Encode()), &list)
		if err != nil {
			return nil, shardRefuse(ShardAPI, "", "list the artifacts of workflow run %d (permissions: actions: read?): %v", j.wrun.ID, err)
		}
		for _, a := range list.Artifacts {
			if a == nil {
				continue
			}
			if a.WorkflowRun.ID != j.wrun.ID {
				return nil, shardRefuse(ShardForeign, a.Name, "listed for workflow run %d under workflow run %d", a.WorkflowRun.ID, j.wrun.ID)
			}
			all = append(all, a)
		}
		page = resp.NextPage
	}
	j.runArts = all
	return all, nil
}

// selectedShard is one shard artifact the merge takes.
type selectedShard struct {
	spec shard.Spec
	art  *runArtifact
}

// selectShards returns the shard artifacts of workflow run w's attempt,
// in index order: one N for all, each index 1..N exactly once, none
// expired. Other attempts' shards are left out (and counted in the
// message when none of this attempt exist).
func selectShards(arts []*runArtifact, w workflowRun) ([]selectedShard, error) {
	byIndex := map[int]*runArtifact{}
	n, other := 0, 0
	var names []string
	for _, a := range arts {
		sp, ok := parseShardArtifactName(a.Name, w.ID, w.Attempt)
		if !ok {
			if strings.HasPrefix(a.Name, ShardArtifactPrefix) {
				other++
			}
			continue
		}
		switch {
		case a.Expired:
			return nil, shardRefuse(ShardExpired, a.Name, "the artifact has expired")
		case n != 0 && sp.Count != n:
			return nil, shardRefuse(ShardCount, a.Name, "shard %s beside shards of %d (%s)", sp, n, strings.Join(names, ", "))
		case byIndex[sp.Index] != nil:
			return nil, shardRefuse(ShardDuplicate, a.Name, "listed twice (artifacts %d and %d)", byIndex[sp.Index].ID, a.ID)
		}
		n = sp.Count
		byIndex[sp.Index] = a
		names = append(names, a.Name)
	}
	if n == 0 {
		return nil, shardRefuse(ShardMissing, "", "workflow run %d attempt %d has no shard artifacts (%s%d-%d-I-of-N; %d of other attempts, which a merge never mixes in): did the matrix jobs run (needs:)?",
			w.ID, w.Attempt, ShardArtifactPrefix, w.ID, w.Attempt, other)
	}
	var missing []string
	out := make([]selectedShard, 0, n)
	for i := 1; i <= n; i++ {
		sp := shard.Spec{Index: i, Count: n}
		if byIndex[i] == nil {
			missing = append(missing, ShardArtifactName(w.ID, w.Attempt, sp))
			continue
		}
		out = append(out, selectedShard{spec: sp, art: byIndex[i]})
	}
	if len(missing) > 0 {
		return nil, shardRefuse(ShardMissing, missing[0], "%d of %d shards were not uploaded (%s): did their jobs fail? A merge needs every shard", len(missing), n, strings.Join(missing, ", "))
	}
	return out, nil
}

// downloadShards downloads and unpacks each shard artifact into its own
// directory under tmp, and returns the directories in index order and the
// artifact name of each.
func (j *job) downloadShards(ctx context.Context, sel []selectedShard, tmp string) ([]string, map[string]string, error) {
	dirs := make([]string, 0, len(sel))
	names := map[string]string{}
	for _, s := range sel {
		data, err := artifact.Download(ctx, j.gh, j.owner, j.name, s.art.ID, MaxShardArtifactBytes)
		if err != nil {
			return nil, nil, shardRefuse(ShardAPI, s.art.Name, "download: %v", err)
		}
		files, err := artifact.Unzip(data, MaxShardArtifactBytes, MaxShardArtifactBytes)
		if err != nil {
			return nil, nil, shardRefuse(ShardMalformed, s.art.Name, "%v", err)
		}
		dir := filepath.Join(tmp, s.art.Name)
		for n, b := range files {
			p := filepath.Join(dir, filepath.FromSlash(n))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return nil, nil, environment("unpack %s: %w", s.art.Name, err)
			}
			if err := durable.CreateExclusive(p, b, 0o644); err != nil {
				return nil, nil, environment("unpack %s: %w", s.art.Name, err)
			}
		}
		dirs = append(dirs, dir)
		names[dir] = s.art.Name
	}
	return dirs, names, nil
}

// mergeShards is the mode: merge job: import the plan, take the run's
// shards, merge them (internal/shard verifies each), then decide as an
// unsharded run does.
func (j *job) mergeShards(ctx context.Context, kv *sigstore.Verifiers) (int, error) {
	j.report(ctx, status.Pending, "merging the shards of the sharded run")
	if err := j.importPlan(ctx, kv); err != nil {
		return 0, err
	}
	id := j.r.ID
	j.closeRun() // shard.Merge opens the run itself
	arts, err := j.listRunArtifacts(ctx)
	if err != nil {
		return 0, err
	}
	sel, err := selectShards(arts, j.wrun)
	if err != nil {
		return 0, err
	}
	tmp, err := os.MkdirTemp("", "proofgate-merge-")
	if err != nil {
		return 0, environment("shard directories: %w", err)
	}
	defer os.RemoveAll(tmp)
	dirs, names, err := j.downloadShards(ctx, sel, tmp)
	if err != nil {
		return 0, err
	}
	v, err := j.shardVerifier(kv)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	mr, err := shard.Merge(ctx, j.stateDir, id, dirs, shard.MergeOptions{Verifier: v})
	if err != nil {
		return 0, mergeRefusal(err, names)
	}
	r, err := run.Open(j.stateDir, id)
	if err != nil {
		return 0, environment("open the merged run: %w", err)
	}
	j.r, j.closed = r, false
	rep := r.Report()
	j.s.report = rep
	j.res.State, j.res.VerificationDigest = rep.State, rep.VerificationDigest
	showChecks(j.f, r.Dir, rep)
	if rep.VerificationDigest != "" {
		j.f.output("verification-digest", rep.VerificationDigest)
	}
	j.s.notes = append(j.s.notes, fmt.Sprintf("Sharded run: %d shards of workflow run %d attempt %d merged (%d checks, each shard's signature, chain and binding verified) in %s.",
		mr.Shards, j.wrun.ID, j.wrun.Attempt, mr.Checks, time.Since(start).Round(time.Millisecond)))
	j.f.logf("proofgate: merged %d shards (%d checks) into run %s: %s", mr.Shards, mr.Checks, id, rep.State)
	return j.decide(ctx)
}

// mergeRefusal makes a kernel merge refusal a ShardError naming the
// artifact of the shard directory it concerns.
func mergeRefusal(err error, names map[string]string) error {
	var me *shard.MergeError
	if !errors.As(err, &me) {
		return environment("merge: %w", err)
	}
	name := names[me.Dir]
	if name == "" {
		for d, n := range names {
			if strings.HasPrefix(me.Dir, d+string(filepath.Separator)) {
				name = n
			}
		}
	}
	return &ShardError{Reason: ShardReason(me.Reason), Artifact: name, Detail: me.Detail, Err: err}
}
