package action

import (
	"fmt"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/internal/ci/shardjob"
	"github.com/proofgate/proofgate/internal/githubtest"
	"github.com/proofgate/proofgate/internal/shard"
	"github.com/proofgate/proofgate/internal/sigstoretest"
	"github.com/proofgate/proofgate/kernel/replay"
)

// A keyless sharded run: the plan, two shards and the merge are signed by
// ephemeral keys Fulcio certifies for the jobs' (shared) identity and
// verified against the base commit's trusted root and each job's own
// identity. A shard signed under another workflow's identity is refused
// (untrusted); the merge then completes with a keyless bundle.
func TestShardKeyless(t *testing.T) {
	svc := sigstoretest.Start(t)
	const n = 2
	fx := newFixtureBase(t, shardProcessContract(4), map[string]string{trustedRootRel: string(svc.TrustedRoot)}, nil)
	fx.gh.AddReview(owner, repo, prNum, githubtest.Review{User: bob, State: "APPROVED", CommitID: fx.head})
	delete(fx.env, "INPUT_SIGNING-KEY")
	fx.env["INPUT_SIGNING"] = SigningKeyless
	fx.env["INPUT_FULCIO-URL"], fx.env["INPUT_TSA-URL"], fx.env["INPUT_REKOR-URL"] = svc.FulcioURL, svc.TSAURL, ""
	fx.env["INPUT_TRUSTED-ROOT"] = trustedRootRel
	fx.prEvent()
	as := func(c githubtest.Claims) {
		fx.env[idTokenURLEnv], fx.env[idTokenTokenEnv] = svc.OIDC.RequestEndpoint(c)
	}
	own := reviewIdentity(fx, "pull_request")
	job := func(id int64, mode, sh string, c githubtest.Claims) (*Result, error) {
		fx.shardEnv(id, 1, mode+sh, mode, sh)
		as(c)
		return fx.run()
	}
	res, err := job(runID, ModePlan, "", own)
	mustCode(t, res.Code, ExitOK, err, fx.log.String())
	for i := 1; i <= n; i++ {
		res, err := job(runID, "", fmt.Sprintf("%d/%d", i, n), own)
		mustCode(t, res.Code, ExitOK, err, fx.log.String())
	}
	// The same shard signed under another workflow file's identity (a
	// workflow that can run the action with the same inputs): in its own
	// workflow run, with its own plan, then listed as shard 2 here.
	other := own
	other.JobWorkflowRef = owner + "/" + repo + "/.github/workflows/other.yml@" + own.Ref
	other.WorkflowRef = other.JobWorkflowRef
	res, err = job(runID+1, ModePlan, "", other)
	mustCode(t, res.Code, ExitOK, err, fx.log.String())
	res, err = job(runID+1, "", "2/2", other)
	mustCode(t, res.Code, ExitOK, err, fx.log.String())
	name := func(id int64) string { return shardjob.ShardArtifactName(id, 1, shard.Spec{Index: 2, Count: n}) }
	alien, _ := fx.gh.ListedData(owner, repo, runID+1, name(runID+1))

	// The merge: every keyless signature verified with the job's own
	// identity and the base commit's trusted root.
	res, err = job(runID, ModeMerge, "", own)
	mustCode(t, res.Code, ExitOK, err, fx.log.String())
	if res.State != replay.Complete || res.ArtifactID == 0 || !strings.HasSuffix(res.Signer, "/.github/workflows/proofgate.yml@refs/pull/7/merge") {
		t.Fatalf("keyless merge: %+v", res)
	}

	// The other identity's shard listed as shard 2: refused, for its
	// certificate's identity (not for a payload type sigstore-go refuses).
	fx.gh.TamperBlob(name(runID), alien)
	res, err = job(runID, ModeMerge, "", own)
	if res.ShardRefusal != string(shard.Untrusted) || !strings.Contains(err.Error(), name(runID)) || !strings.Contains(err.Error(), "identity-mismatch") {
		t.Fatalf("alien-signed shard: refusal %q (%v)\n%s", res.ShardRefusal, err, fx.log.String())
	}
	mustCode(t, res.Code, ExitRefused, err, fx.log.String())
	t.Logf("other identity: %s", grepLine(fx.log.String(), "::error title=ProofGate::"))
}
