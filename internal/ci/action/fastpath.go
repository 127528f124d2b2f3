package action

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/sigstore"
	"github.com/proofgate/proofgate/internal/ci/artifact"
	"github.com/proofgate/proofgate/internal/ci/ghapi"
	"github.com/proofgate/proofgate/internal/ci/handoff"
	"github.com/proofgate/proofgate/internal/durable"
	"github.com/proofgate/proofgate/internal/run"
)

// fastPath is an imported run.
type fastPath struct {
	artifact string
	took     time.Duration
}

// tryFastPath imports the pull_request job's run for a pull_request_review
// event. On success j.r is the imported run, open for writing; otherwise it
// reports why, and the caller re-runs the checks.
func (j *job) tryFastPath(ctx context.Context) bool {
	if j.ev.Name != "pull_request_review" || j.gh == nil {
		return false
	}
	start := time.Now()
	name, err := j.importRun(ctx)
	if err != nil {
		var fe *handoff.Error
		if !errors.As(err, &fe) {
			fe = handoff.Refuse(handoff.GitHubAPI, "%v", err)
		}
		j.res.FastPathRefusal = string(fe.Reason)
		msg := "no trustworthy run of the pull_request job for head " + short(j.ev.HeadSHA) + " (" + fe.Error() + "): re-running the checks"
		j.s.notes = append(j.s.notes, "Review fast path not taken: "+msg+".")
		j.f.annotate("notice", "ProofGate re-runs the checks", msg)
		return false
	}
	j.fast = &fastPath{artifact: name, took: time.Since(start)}
	j.res.Imported = true
	j.res.RunID = j.r.ID
	rep := j.r.Report()
	j.s.report = rep
	j.res.State, j.res.VerificationDigest = rep.State, rep.VerificationDigest
	j.f.output("run-id", j.r.ID)
	j.f.output("verification-digest", rep.VerificationDigest)
	j.s.notes = append(j.s.notes, fmt.Sprintf("Review fast path: imported run %s from artifact %s (signature, chain, head %s and base contract verified in %s); the checks were not re-run.",
		code(j.r.ID), code(name), code(short(j.ev.HeadSHA)), j.fast.took.Round(time.Millisecond)))
	j.f.logf("proofgate: imported run %s from %s in %s, checks not re-run", j.r.ID, name, j.fast.took.Round(time.Millisecond))
	return true
}

// importRun finds, verifies and imports the hand-off; it returns the
// artifact's name.
func (j *job) importRun(ctx context.Context) (string, error) {
	var kv *sigstore.Verifiers
	switch {
	case j.keyless:
		var err error
		if kv, err = j.keylessVerifiers(ctx); err != nil {
			return "", err
		}
	case j.signer == nil:
		return "", handoff.Refuse(handoff.NoKey, "the hand-off is verified with the job's signing key, and there is none")
	}
	name := RunArtifactPrefix + j.ev.HeadSHA
	a, err := j.findRun(ctx, name)
	if err != nil {
		return "", err
	}
	zipData, err := artifact.Download(ctx, j.gh, j.owner, j.name, a.ID, handoff.MaxArtifactBytes)
	if err != nil {
		return "", handoff.Refuse(handoff.GitHubAPI, "download %s: %v", name, err)
	}
	files, st, err := handoff.Open(zipData, j.signer, kv)
	if err != nil {
		return "", err
	}
	if err := j.bindRun(ctx, st); err != nil {
		return "", err
	}
	return name, j.installRun(st.Predicate.Run.RunID, files)
}

// listedArtifact is an artifact with the workflow run's repositories.
type listedArtifact struct {
	artifact.Artifact
	WorkflowRun struct {
		HeadSHA          string `json:"head_sha"`
		RepositoryID     int64  `json:"repository_id"`
		HeadRepositoryID int64  `json:"head_repository_id"`
	} `json:"workflow_run"`
}

// findRun lists artifact name and returns the newest unexpired one whose
// workflow run is for the head and ran in this repository (not a fork's
// head repository). The name is a hint; head_sha and the repository ids,
// which GitHub records, decide.
func (j *job) findRun(ctx context.Context, name string) (*listedArtifact, error) {
	q := url.Values{"name": {name}, "per_page": {"100"}}
	var list struct {
		Artifacts []*listedArtifact `json:"artifacts"`
	}
	if _, err := ghapi.Get(ctx, j.gh, fmt.Sprintf("repos/%s/%s/actions/artifacts?%s", url.PathEscape(j.owner), url.PathEscape(j.name), q.Encode()), &list); err != nil {
		return nil, handoff.Refuse(handoff.GitHubAPI, "list artifacts %s: %v", name, err)
	}
	var best *listedArtifact
	fork := 0
	for _, a := range list.Artifacts {
		switch {
		case a == nil || a.Name != name || a.Expired || a.WorkflowRun.HeadSHA != j.ev.HeadSHA:
		case a.WorkflowRun.HeadRepositoryID != a.WorkflowRun.RepositoryID || a.WorkflowRun.RepositoryID == 0:
			fork++
		case best == nil || a.CreatedAt.After(best.CreatedAt) || a.CreatedAt.Equal(best.CreatedAt) && a.ID > best.ID:
			best = a
		}
	}
	switch {
	case best != nil:
		return best, nil
	case fork > 0:
		return nil, handoff.Refuse(handoff.Fork, "%d artifact(s) %s come from workflow runs of another head repository (a fork): not trusted", fork, name)
	}
	return nil, handoff.Refuse(handoff.NotFound, "no unexpired artifact %s for head %s", name, short(j.ev.HeadSHA))
}

// bindRun requires the run to be for this PR's head, this repository, the
// base contract, and the commit the review job checked out.
func (j *job) bindRun(ctx context.Context, st *handoff.Statement) error {
	p, r := st.Predicate.PullRequest, st.Predicate.Run
	if p.Number != j.ev.PR || p.HeadSHA != j.ev.HeadSHA || p.BaseSHA != j.ev.BaseSHA {
		return handoff.Refuse(handoff.OtherHead, "the run is for PR #%d head %s base %s, the review for #%d head %s base %s",
			p.Number, short(p.HeadSHA), short(p.BaseSHA), j.ev.PR, short(j.ev.HeadSHA), short(j.ev.BaseSHA))
	}
	return j.bindSummary(ctx, r, "the run used contract %s, the base contract is %s",
		"the run tested commit %s, the checkout is %s (the test merge moved with the base?)")
}

// bindSummary requires an imported run to be for this repository, the
// contract and profile this job resolved, and the commit it checked out;
// contractMsg and commitMsg word the refusals (claimed, then ours).
func (j *job) bindSummary(ctx context.Context, r bundle.RunSummary, contractMsg, commitMsg string) error {
	if r.Repo != j.repo {
		return handoff.Refuse(handoff.OtherRepo, "the run is for repository %q, not %s", r.Repo, j.repo)
	}
	h, err := j.c.Hash()
	if err != nil {
		return handoff.Refuse(handoff.OtherContract, "%v", err)
	}
	if r.ContractHash != h || r.Profile != j.c.Profile {
		return handoff.Refuse(handoff.OtherContract, contractMsg, short(r.ContractHash), short(h))
	}
	commit, err := gitHead(ctx, j.ws)
	if err != nil || commit != r.Source.Commit {
		return handoff.Refuse(handoff.Checkout, commitMsg, short(r.Source.Commit), short(commit))
	}
	return nil
}

// installRun writes the verified files as the run directory and opens it.
// An existing directory of that run must hold the same log.
func (j *job) installRun(id string, files map[string][]byte) error {
	if !run.ValidID(id) {
		return handoff.Refuse(handoff.Malformed, "run id %q", id)
	}
	dir := run.NewStore(j.stateDir).Path(id)
	if have, err := handoff.ReadRunFile(dir, bundle.EventsFile); err == nil {
		if !bytes.Equal(have, files[bundle.EventsFile]) {
			return handoff.Refuse(handoff.Exists, "run %s is in the state directory with another log", id)
		}
	} else {
		for n, b := range files {
			p := filepath.Join(dir, filepath.FromSlash(n))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			if err := durable.CreateExclusive(p, b, 0o644); err != nil {
				return fmt.Errorf("import %s: %w", n, err)
			}
		}
	}
	r, err := run.Open(j.stateDir, id)
	if err != nil {
		return handoff.Refuse(handoff.Audit, "open the imported run: %v", err)
	}
	j.r = r
	return nil
}

// gitHead returns the checkout's HEAD commit.
func gitHead(ctx context.Context, ws string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", "-c", "safe.directory="+ws, "-C", ws, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_NO_REPLACE_OBJECTS=1")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git rev-parse HEAD: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}
