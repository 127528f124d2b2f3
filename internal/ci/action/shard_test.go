package action

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/internal/ci/artifact"
	"github.com/proofgate/proofgate/internal/ci/shardjob"
	"github.com/proofgate/proofgate/internal/githubtest"
	"github.com/proofgate/proofgate/internal/shard"
	"github.com/proofgate/proofgate/kernel/replay"
)

func inputEnv(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

// Inputs mode and shard: bad values are usage errors naming the input.
func TestShardInputs(t *testing.T) {
	for _, c := range []struct {
		mode, shard, want string
	}{
		{"", "", ""},
		{"merge", "", ""},
		{"PLAN", "", ""},
		{"rerun", "", "input mode: \"rerun\" is not run, plan or merge"},
		{"merge", "1/3", "input shard: \"1/3\" is set, but a mode: merge job executes no shard"},
		{"plan", "1/3", "input shard: \"1/3\" is set, but a mode: plan job"},
		{"", "0/3", "input shard: \"0/3\""},
		{"", "4/3", "input shard: \"4/3\""},
		{"", "3", "input shard: \"3\""},
		{"", "1/257", "input shard: \"1/257\""},
		{"", "a/b", "input shard: \"a/b\""},
	} {
		f := newWorkflow(inputEnv(map[string]string{"INPUT_MODE": c.mode, "INPUT_SHARD": c.shard, "INPUT_SIGNING-KEY": "x"}), &strings.Builder{})
		in, err := readInputs(f)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("mode %q shard %q: %v", c.mode, c.shard, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("mode %q shard %q: error %v, want %q", c.mode, c.shard, err, c.want)
		case c.want == "" && in.mode != strings.ToLower(map[bool]string{true: ModeRun, false: c.mode}[c.mode == ""]):
			t.Errorf("mode %q read as %q", c.mode, in.mode)
		}
	}
}

const runID = 4242

// shardEnv points the fixture at a job of workflow run id, attempt: its
// own runtime token, the run's ids, mode and shard inputs, and a fresh
// clone of the checkout (each job runs on its own runner).
func (fx *fixture) shardEnv(id int64, attempt int, job, mode, sh string) {
	fx.t.Helper()
	ws := filepath.Join(fx.t.TempDir(), "ws")
	git(fx.t, fx.tmp, "clone", "-q", fx.ws, ws)
	git(fx.t, ws, "checkout", "-q", "--detach", fx.merge)
	fx.env["GITHUB_WORKSPACE"] = ws
	fx.env["GITHUB_RUN_ID"] = strconv.FormatInt(id, 10)
	fx.env["GITHUB_RUN_ATTEMPT"] = strconv.Itoa(attempt)
	fx.env["ACTIONS_RUNTIME_TOKEN"] = fx.gh.JobRuntimeToken(owner, repo, fx.head, id, fmt.Sprintf("%s-%d", job, attempt))
	fx.env["INPUT_MODE"], fx.env["INPUT_SHARD"] = mode, sh
}

func otherKeyPEM(t *testing.T) string {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

func wantShardRefusal(t *testing.T, fx *fixture, res *Result, err error, code int, reason shardjob.Reason, text string) {
	t.Helper()
	mustCode(t, res.Code, code, err, fx.log.String())
	if res.ShardRefusal != string(reason) || err == nil || !strings.Contains(err.Error(), text) {
		t.Fatalf("refusal %q (%v), want %s %q\n%s", res.ShardRefusal, err, reason, text, fx.log.String())
	}
	if out := fx.outputs(); out["shard-refusal"] != string(reason) {
		t.Fatalf("output shard-refusal %q", out["shard-refusal"])
	}
	if !strings.Contains(fx.log.String(), "::error title=ProofGate::sharded run refused ("+string(reason)+")") {
		t.Fatalf("no error annotation naming %s:\n%s", reason, fx.log.String())
	}
	t.Logf("exit %d: %s", res.Code, grepLine(fx.log.String(), "::error title=ProofGate::"))
}

// The plan job uploads the signed planned run; shard jobs refuse a plan
// that is missing (none of their attempt), one signed by another key, and
// a job without the run's ids or a key.
func TestShardPlanHostile(t *testing.T) {
	fx := newFixture(t, processContract, nil)
	fx.prEvent()
	fx.shardEnv(runID, 1, "plan", ModePlan, "")
	res, err := fx.run()
	mustCode(t, res.Code, ExitOK, err, fx.log.String())
	name := shardjob.PlanArtifactName(runID, 1)
	if out := fx.outputs(); out["plan-artifact"] != name || out["run-id"] == "" || out["state"] != "PLANNED" {
		t.Fatalf("plan outputs %v\n%s", fx.outputs(), fx.log.String())
	}
	if _, ok := fx.gh.Uploaded(name); !ok {
		t.Fatal("no plan uploaded")
	}

	// Another attempt of the run has no plan.
	fx.shardEnv(runID, 2, "shard", "", "1/2")
	res, err = fx.run()
	wantShardRefusal(t, fx, res, err, ExitRefused, shardjob.PlanMissing, "proofgate-plan-4242-2")

	// A plan signed by another key (a plan job with another secret).
	fx.env["INPUT_SIGNING-KEY"] = otherKeyPEM(t)
	fx.shardEnv(runID+1, 1, "plan", ModePlan, "")
	res, err = fx.run()
	mustCode(t, res.Code, ExitOK, err, fx.log.String())
	fx.env["INPUT_SIGNING-KEY"] = fx.keyPEM
	fx.shardEnv(runID+1, 1, "shard", "", "1/2")
	res, err = fx.run()
	wantShardRefusal(t, fx, res, err, ExitRefused, shardjob.PlanInvalid, "signature-invalid")

	// A valid plan of another workflow run (4244), listed under this run's
	// (4245) plan name, as if a job of this run had re-uploaded it.
	fx.shardEnv(runID+2, 1, "plan", ModePlan, "")
	res, err = fx.run()
	mustCode(t, res.Code, ExitOK, err, fx.log.String())
	other, _ := fx.gh.Uploaded(shardjob.PlanArtifactName(runID+2, 1))
	fx.gh.AddArtifact(owner, repo, githubtest.Artifact{Name: shardjob.PlanArtifactName(runID+3, 1), HeadSHA: fx.head, RunID: runID + 3, Data: other})
	fx.shardEnv(runID+3, 1, "shard", "", "1/2")
	res, err = fx.run()
	wantShardRefusal(t, fx, res, err, ExitRefused, shardjob.PlanInvalid, "the plan is for workflow run 4244 attempt 1")

	// No workflow run id; no key.
	fx.shardEnv(runID, 1, "shard", "", "1/2")
	delete(fx.env, "GITHUB_RUN_ID")
	res, err = fx.run()
	wantShardRefusal(t, fx, res, err, ExitUsage, shardjob.NoWorkflowRun, "GITHUB_RUN_ID")
	fx.shardEnv(runID, 1, "merge", ModeMerge, "")
	delete(fx.env, "INPUT_SIGNING-KEY")
	res, err = fx.run()
	wantShardRefusal(t, fx, res, err, ExitUsage, shardjob.NoSigner, "input signing-key is empty")
}

// shardProcessContract has n process checks (no Docker); c02 depends on
// c01.
func shardProcessContract(n int) string {
	var b strings.Builder
	b.WriteString("version: 1\nname: widget\ndefaults:\n  runtime: process\n  timeout: 30s\nchecks:\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "  - id: c%02d\n    run: [test, -f, README.md]\n", i)
		if i == 2 {
			b.WriteString("    depends_on: [c01]\n")
		}
	}
	b.WriteString("approval: {required: 1, roles: [write, maintain, admin]}\n")
	return b.String()
}

// The whole sharded path in process (the e2e runs it in action
// containers): plan, three shard jobs, and merge jobs that refuse a
// tampered shard, a shard uploaded twice under two indexes, a shard
// re-signed by another key and a missing shard, then merge, count the
// approval, upload the bundle that the verify step accepts. A failed check
// in a shard fails the shard job but still uploads the shard, and the
// merge blocks the run.
func TestShardFlow(t *testing.T) {
	const n, checks = 3, 8
	fx := newFixture(t, shardProcessContract(checks), nil)
	fx.gh.AddReview(owner, repo, prNum, githubtest.Review{User: bob, State: "APPROVED", CommitID: fx.head})
	fx.prEvent()
	job := func(mode, sh string) (*Result, error) {
		fx.shardEnv(runID, 1, mode+sh, mode, sh)
		return fx.run()
	}
	res, err := job(ModePlan, "")
	mustCode(t, res.Code, ExitOK, err, fx.log.String())
	planned := res.RunID
	name := func(i int) string { return shardjob.ShardArtifactName(runID, 1, shard.Spec{Index: i, Count: n}) }
	total := 0
	for i := 1; i <= n; i++ {
		res, err := job("", fmt.Sprintf("%d/%d", i, n))
		mustCode(t, res.Code, ExitOK, err, fx.log.String())
		if out := fx.outputs(); out["shard-artifact"] != name(i) || out["run-id"] != planned {
			t.Fatalf("shard %d outputs %v", i, out)
		}
		z, ok := fx.gh.ListedData(owner, repo, runID, name(i))
		if !ok {
			t.Fatalf("shard %d not listed", i)
		}
		files, err := artifact.Unzip(z, 1<<30, 1<<30)
		if err != nil || files["shard.json"] == nil || files["shard.sig"] == nil {
			t.Fatalf("shard %d artifact: %v %v", i, keysOf(files), err)
		}
		total += strings.Count(fx.summary(), "check(s) executed") // one note per shard job
	}
	if total != n {
		t.Fatalf("%d shard notes", total)
	}
	merge := func(code int, reason shardjob.Reason, text string) *Result {
		t.Helper()
		res, err := job(ModeMerge, "")
		if reason == "" {
			mustCode(t, res.Code, code, err, fx.log.String())
			return res
		}
		wantShardRefusal(t, fx, res, err, code, reason, text)
		return res
	}
	good2, _ := fx.gh.ListedData(owner, repo, runID, name(2))
	good3, _ := fx.gh.ListedData(owner, repo, runID, name(3))

	// Tampered: one byte of the shard's files changed, zip well-formed.
	fx.gh.TamperBlob(name(2), rezip(t, good2, func(files map[string][]byte) {
		for n, b := range files {
			if strings.HasPrefix(n, "blobs/") {
				files[n] = append(bytes.Clone(b), 'x')
				return
			}
		}
		t.Fatal("no blob in the shard")
	}))
	merge(ExitRefused, shardjob.Reason(shard.Tampered), name(2))
	// Shard 2 executed twice: also uploaded as shard 3.
	fx.gh.TamperBlob(name(2), good2)
	fx.gh.TamperBlob(name(3), good2)
	merge(ExitRefused, shardjob.Duplicate, name(3))
	fx.gh.TamperBlob(name(3), good3)
	// Re-signed by another key.
	fx.gh.TamperBlob(name(3), resign(t, good3))
	merge(ExitRefused, shardjob.Reason(shard.Untrusted), name(3))
	fx.gh.TamperBlob(name(3), good3)
	// Missing.
	restore := fx.gh.HideArtifact(owner, repo, name(1))
	merge(ExitRefused, shardjob.Missing, name(1))
	restore()

	res = merge(ExitOK, "", "")
	if res.State != replay.Complete || res.RunID != planned || res.Recorded != 1 || res.ArtifactID == 0 {
		t.Fatalf("merge: %+v\n%s", res, fx.log.String())
	}
	if s := fx.summary(); !strings.Contains(s, fmt.Sprintf("%d shards of workflow run %d attempt 1 merged (%d checks", n, runID, checks)) || !strings.Contains(s, "| `c08` | ✅ passed") {
		t.Fatalf("summary:\n%s", s)
	}
	m := fx.release()
	fx.env["GITHUB_WORKSPACE"] = fx.ws // the release job's checkout has the merge commit
	fx.env["GITHUB_EVENT_NAME"], fx.env["GITHUB_SHA"] = "push", m
	fx.env["INPUT_TRUST-STORE"] = fx.trust
	fx.env["INPUT_REQUIRE-APPROVALS"] = "1"
	vr, err := fx.verify()
	mustCode(t, vr.Code, ExitOK, err, fx.log.String())
	if vr.RunID != planned {
		t.Fatalf("verify: %+v", vr)
	}
}

// A check that fails in a shard: the shard job uploads its shard and
// exits 1; the merge blocks the run (exit 1, BLOCKED, no bundle).
func TestShardFailedCheckBlocks(t *testing.T) {
	c := strings.Replace(shardProcessContract(4), "  - id: c04\n    run: [test, -f, README.md]", "  - id: c04\n    run: [test, -f, MISSING.md]", 1)
	fx := newFixture(t, c, nil)
	fx.gh.AddReview(owner, repo, prNum, githubtest.Review{User: bob, State: "APPROVED", CommitID: fx.head})
	fx.prEvent()
	fx.shardEnv(runID, 1, "plan", ModePlan, "")
	res, err := fx.run()
	mustCode(t, res.Code, ExitOK, err, fx.log.String())
	failed := 0
	for i := 1; i <= 2; i++ {
		fx.shardEnv(runID, 1, fmt.Sprintf("s%d", i), "", fmt.Sprintf("%d/2", i))
		res, err := fx.run()
		if res.Code == ExitRefused {
			failed++
			if !strings.Contains(fx.log.String(), "the merge job blocks the run") {
				t.Fatalf("failed shard log:\n%s", fx.log.String())
			}
		} else {
			mustCode(t, res.Code, ExitOK, err, fx.log.String())
		}
		if fx.outputs()["shard-artifact"] == "" {
			t.Fatalf("shard %d uploaded nothing\n%s", i, fx.log.String())
		}
	}
	if failed != 1 {
		t.Fatalf("%d shard jobs failed, want 1", failed)
	}
	fx.shardEnv(runID, 1, "merge", ModeMerge, "")
	res, err = fx.run()
	mustCode(t, res.Code, ExitRefused, err, fx.log.String())
	if res.State != replay.Blocked || res.ArtifactID != 0 {
		t.Fatalf("merge of a failed shard: %+v", res)
	}
}

func keysOf(m map[string][]byte) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// The example's review path: a merge without approval yet ends
// AWAITING_APPROVAL and hands the merged run off; the unsharded review job
// imports it (the fast path) without re-running a check, counts the
// approval and uploads the bundle.
func TestShardMergeHandoffReview(t *testing.T) {
	const n = 2
	fx := newFixture(t, shardProcessContract(4), nil)
	fx.prEvent()
	fx.shardEnv(runID, 1, "plan", ModePlan, "")
	res, err := fx.run()
	mustCode(t, res.Code, ExitOK, err, fx.log.String())
	for i := 1; i <= n; i++ {
		fx.shardEnv(runID, 1, fmt.Sprintf("s%d", i), "", fmt.Sprintf("%d/%d", i, n))
		res, err := fx.run()
		mustCode(t, res.Code, ExitOK, err, fx.log.String())
	}
	fx.shardEnv(runID, 1, "merge", ModeMerge, "")
	res, err = fx.run()
	mustCode(t, res.Code, ExitAwaiting, err, fx.log.String())
	merged := res.RunID
	if res.State != replay.AwaitingApproval || fx.outputs()["run-artifact"] != RunArtifactPrefix+fx.head {
		t.Fatalf("merge without approval: %+v %v\n%s", res, fx.outputs(), fx.log.String())
	}
	id := fx.gh.AddReview(owner, repo, prNum, githubtest.Review{User: bob, State: "APPROVED", CommitID: fx.head})
	fx.shardEnv(runID+1, 1, "review", "", "")
	fx.reviewEvent(id)
	res, err = fx.run()
	mustCode(t, res.Code, ExitOK, err, fx.log.String())
	if !res.Imported || res.RunID != merged || res.State != replay.Complete || res.ArtifactID == 0 || strings.Contains(fx.log.String(), "passed  c0") {
		t.Fatalf("review of a merged run: %+v (refusal %q)\n%s", res, res.FastPathRefusal, fx.log.String())
	}
}

// A re-run (attempt 2) plans a new run; its merge takes only attempt 2's
// shards although attempt 1's are listed under the same workflow run, and
// a merge of an attempt whose plan job did not run refuses (plan-missing).
func TestShardAttemptsNotMixed(t *testing.T) {
	fx := newFixture(t, shardProcessContract(3), nil)
	fx.gh.AddReview(owner, repo, prNum, githubtest.Review{User: bob, State: "APPROVED", CommitID: fx.head})
	fx.prEvent()
	plans := map[int]string{}
	for attempt := 1; attempt <= 2; attempt++ {
		fx.shardEnv(runID, attempt, "plan", ModePlan, "")
		res, err := fx.run()
		mustCode(t, res.Code, ExitOK, err, fx.log.String())
		plans[attempt] = res.RunID
		for i := 1; i <= 2; i++ {
			fx.shardEnv(runID, attempt, fmt.Sprintf("s%d", i), "", fmt.Sprintf("%d/2", i))
			res, err := fx.run()
			mustCode(t, res.Code, ExitOK, err, fx.log.String())
		}
	}
	if plans[1] == plans[2] {
		t.Fatal("the re-run reused the plan")
	}
	fx.shardEnv(runID, 3, "merge", ModeMerge, "")
	res, err := fx.run()
	wantShardRefusal(t, fx, res, err, ExitRefused, shardjob.PlanMissing, "proofgate-plan-4242-3")
	fx.shardEnv(runID, 2, "merge", ModeMerge, "")
	res, err = fx.run()
	mustCode(t, res.Code, ExitOK, err, fx.log.String())
	if res.RunID != plans[2] || res.State != replay.Complete {
		t.Fatalf("attempt 2 merge: %+v", res)
	}
}
