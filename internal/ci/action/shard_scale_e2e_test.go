package action

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/trust"
	"github.com/proofgate/proofgate/internal/ci/shardjob"
	"github.com/proofgate/proofgate/internal/githubtest"
	"github.com/proofgate/proofgate/internal/shard"
	"github.com/proofgate/proofgate/internal/testimage"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// The scale of issue 17's "done when": 200 checks, 10 matrix shards.
const (
	scaleChecks = 200
	scaleShards = 10
	// scaleJobs is each shard job's `jobs` input: how many sandboxed
	// checks one shard container runs at once.
	scaleJobs = 2
)

// trivialContract is a contract of n sandboxed checks that each start a
// container running `/bin/helper true`: the cost measured is ProofGate's
// and Docker's per check, not the check's. c002 depends on c001 (a chain
// the assignment keeps in one shard).
func trivialContract(image string, n int) string {
	return sandboxedChecks(image, n, 3, `[/bin/helper, "true"]`)
}

// runShardJobs starts every shard job at once, as GitHub starts a matrix,
// waits for all and wants each to exit 0 with its shard artifact output.
func (fx *fixture) runShardJobs(image string, id int64, n int, jobs []*e2eJob) {
	fx.t.Helper()
	codes := make([]int, len(jobs))
	var wg sync.WaitGroup
	for k, j := range jobs {
		wg.Add(1)
		go func() { defer wg.Done(); codes[k] = fx.runJob(image, j) }()
	}
	wg.Wait()
	for k, j := range jobs {
		wantJob(fx.t, j, codes[k], ExitOK)
		sp := shard.Spec{Index: k + 1, Count: n}
		if out := j.outputs(fx.t); out["shard-artifact"] != shardjob.ShardArtifactName(id, 1, sp) {
			fx.t.Fatalf("shard %s outputs %v\n%s", sp, out, j.log.String())
		}
	}
}

// TestE2EShardMatrix200: a 200-check contract (sandboxed trivial checks)
// runs through the action image as a plan job, 10 shard containers started
// at once (each its own checkout and runtime token, `jobs: 2`) and a merge
// job against the fake GitHub. A merge given 9 of the 10 shards is refused
// (missing, naming the absent artifact); the merge of all 10 is COMPLETE,
// its bundle is accepted by `proofgate bundle verify` from the image
// (--require-approvals 1 --require-sandbox), and the verified predicate
// holds each of the 200 checks exactly once, passed, in the docker sandbox.
// Prints the timings on line SHARDS200 (scripts/e2e.sh greps it). The
// shard phase is bound by the Docker daemon: about 8 sandbox containers a
// second on this 2-core machine whatever `jobs` is (1, 2 and 4 measured
// alike), the rate of bare `docker run --rm` in parallel.
func TestE2EShardMatrix200(t *testing.T) {
	image := e2eImage(t)
	helper, err := testimage.Ensure(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	contract := trivialContract(helper, scaleChecks)
	fx := newFixtureBase(t, contract, nil, nil)
	fx.env["INPUT_JOBS"] = fmt.Sprint(scaleJobs)
	fx.gh.AddReview(owner, repo, prNum, githubtest.Review{User: bob, State: "APPROVED", CommitID: fx.head})
	fx.prEvent()
	const id = 6001

	start := time.Now()
	plan := fx.matrixJob("plan", id, ModePlan, "")
	wantJob(t, plan, fx.runJob(image, plan), ExitOK)
	planTook := time.Since(start)

	jobs := make([]*e2eJob, scaleShards)
	for i := range jobs {
		jobs[i] = fx.matrixJob(fmt.Sprintf("shard-%d", i+1), id, "", fmt.Sprintf("%d/%d", i+1, scaleShards))
	}
	sstart := time.Now()
	fx.runShardJobs(image, id, scaleShards, jobs)
	shardsTook := time.Since(sstart)

	// 9 of 10 shards: shard 7's upload never happened.
	missing := shardjob.ShardArtifactName(id, 1, shard.Spec{Index: 7, Count: scaleShards})
	restore := fx.gh.HideArtifact(owner, repo, missing)
	j := fx.matrixJob("merge", id, ModeMerge, "")
	wantJob(t, j, fx.runJob(image, j), ExitRefused)
	if out := j.outputs(t); out["shard-refusal"] != string(shardjob.Missing) || out["artifact-id"] != "" ||
		!strings.Contains(j.log.String(), "::error title=ProofGate::sharded run refused (missing)") || !strings.Contains(j.log.String(), missing) {
		t.Fatalf("merge of 9 shards: outputs %v\n%s", out, j.log.String())
	}
	restore()

	mstart := time.Now()
	j = fx.matrixJob("merge", id, ModeMerge, "")
	wantJob(t, j, fx.runJob(image, j), ExitOK)
	mergeTook := time.Since(mstart)
	out := j.outputs(t)
	if out["state"] != "COMPLETE" || out["artifact-id"] == "" || !strings.HasSuffix(out["bundle-path"], ".bundle.tar.gz") {
		t.Fatalf("merge outputs %v\n%s", out, j.log.String())
	}
	if sum := j.summary(); !strings.Contains(sum, fmt.Sprintf("%d shards of workflow run %d attempt 1 merged (%d checks", scaleShards, id, scaleChecks)) {
		t.Fatalf("summary:\n%s", sum)
	}

	vstart := time.Now()
	v := fx.verifyInImage(image, j, contract)
	verifyTook := time.Since(vstart)
	perCheck := wantEveryCheckOnce(t, fx, filepath.Join(j.ws, out["bundle-path"]), v)
	t.Logf("SHARDS200: %d checks, %d shard containers at once (jobs %d each): plan %.1fs, shards %.1fs, merge %.1fs, verify %.1fs, total %.1fs; mean check %dms (sandbox container start to exit)",
		scaleChecks, scaleShards, scaleJobs, planTook.Seconds(), shardsTook.Seconds(), mergeTook.Seconds(), verifyTook.Seconds(), time.Since(start).Seconds(), perCheck.Milliseconds())
}

// verifyInImage runs `proofgate bundle verify --json` from the action
// image, offline, on the merge job's bundle against the contract file,
// the commit and the repository, and returns the accepted verdict.
func (fx *fixture) verifyInImage(image string, j *e2eJob, contract string) bundle.Verdict {
	fx.t.Helper()
	writeFile(fx.t, filepath.Join(fx.wf, "contract.yaml"), contract)
	cmd := exec.Command("docker", "run", "--rm", "--network", "none", "--entrypoint", "/proofgate",
		"-v", j.ws+":/w:ro", "-v", fx.wf+":/wf:ro", image,
		"bundle", "verify", "/w/"+j.outputs(fx.t)["bundle-path"], "--trust", "/wf/trust.json", "--commit", fx.merge,
		"--contract", "/wf/contract.yaml", "--repo", owner+"/"+repo, "--require-approvals", "1", "--require-sandbox", "--json")
	vout, err := cmd.Output()
	if err != nil {
		fx.t.Fatalf("bundle verify: %v\n%s", err, vout)
	}
	var v bundle.Verdict
	if err := json.Unmarshal(vout, &v); err != nil || v.Verdict != bundle.VerdictAccepted || v.State != "COMPLETE" || len(v.Unsandboxed) != 0 {
		fx.t.Fatalf("bundle verify: %v %+v\n%s", err, v, vout)
	}
	return v
}

// wantEveryCheckOnce verifies the bundle in process under the policy the
// image's verify accepted (same commit, repository and contract hash) and
// wants its predicate to hold c001..cN each exactly once, passed, run in
// the docker sandbox, with the verdict's verification digest and chain. It
// returns the checks' mean recorded duration.
func wantEveryCheckOnce(t *testing.T, fx *fixture, path string, v bundle.Verdict) time.Duration {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := trust.Load(fx.trust)
	if err != nil {
		t.Fatal(err)
	}
	res, err := bundle.Verify(strings.NewReader(string(b)), st, bundle.VerifyOptions{Commit: fx.merge, Repo: owner + "/" + repo,
		ContractHash: v.ContractHash, RequireApprovals: 1, RequireSandbox: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Run.VerificationDigest != v.Digest || res.Run.Chain.Head != v.ChainHead {
		t.Fatalf("in-process verify: digest %s head %s, image's %s %s", res.Run.VerificationDigest, res.Run.Chain.Head, v.Digest, v.ChainHead)
	}
	seen := map[string]int{}
	var total int64
	for _, c := range res.Run.Checks {
		seen[c.ID]++
		total += c.DurationMS
		if c.Outcome != runtime.Passed || c.Runtime == nil || c.Runtime.Provider != "docker" || !c.Runtime.Sandboxed {
			t.Fatalf("check %s: outcome %s runtime %+v", c.ID, c.Outcome, c.Runtime)
		}
	}
	for i := 1; i <= scaleChecks; i++ {
		id := fmt.Sprintf("c%03d", i)
		if seen[id] != 1 {
			t.Fatalf("check %s appears %d times in the verified predicate", id, seen[id])
		}
		delete(seen, id)
	}
	if len(res.Run.Checks) != scaleChecks || len(seen) != 0 {
		t.Fatalf("verified predicate: %d checks, unexpected %v", len(res.Run.Checks), seen)
	}
	return time.Duration(total/int64(scaleChecks)) * time.Millisecond
}
