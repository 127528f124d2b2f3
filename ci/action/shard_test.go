package action

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/internal/githubtest"
	"github.com/proofgate/proofgate/kernel/exit"
	"github.com/proofgate/proofgate/kernel/shard"
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

func TestShardArtifactNames(t *testing.T) {
	if got := ShardArtifactName(77, 2, shard.Spec{Index: 3, Count: 10}); got != "proofgate-shard-77-2-3-of-10" {
		t.Fatalf("name %q", got)
	}
	if got := PlanArtifactName(77, 2); got != "proofgate-plan-77-2" {
		t.Fatalf("plan name %q", got)
	}
	for name, want := range map[string]string{
		"proofgate-shard-77-2-3-of-10":  "3/10",
		"proofgate-shard-77-2-10-of-10": "10/10",
		"proofgate-shard-77-1-3-of-10":  "", // another attempt
		"proofgate-shard-78-2-3-of-10":  "", // another run
		"proofgate-shard-77-2-03-of-10": "",
		"proofgate-shard-77-2-11-of-10": "",
		"proofgate-shard-77-2-0-of-10":  "",
		"proofgate-shard-77-2-3-of-257": "",
		"proofgate-shard-77-2-3-of-10x": "",
		"proofgate-shard-77-2-+3-of-10": "",
		"proofgate-shard-77-2-3":        "",
		"proofgate-plan-77-2":           "",
		"proofgate-shard-77-23-of-10":   "",
	} {
		sp, ok := parseShardArtifactName(name, 77, 2)
		if got := map[bool]string{true: sp.String(), false: ""}[ok]; got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
}

func arts(names ...string) []*runArtifact {
	out := make([]*runArtifact, 0, len(names))
	for i, n := range names {
		a := &runArtifact{ID: int64(i + 1), Name: n}
		a.WorkflowRun.ID = 77
		out = append(out, a)
	}
	return out
}

// The merge takes exactly its attempt's shards, all of 1..N once, with
// one N; it refuses (typed) a missing, doubly listed, expired shard and
// disagreeing counts, and never mixes in another attempt's shards.
func TestSelectShards(t *testing.T) {
	w := workflowRun{ID: 77, Attempt: 2}
	sel, err := selectShards(arts("proofgate-plan-77-2", "proofgate-shard-77-2-2-of-3", "proofgate-shard-77-1-1-of-3", "proofgate-shard-77-2-3-of-3",
		"proofgate-shard-77-2-1-of-3", "proofgate-77", "proofgate-run-abc"), w)
	if err != nil || len(sel) != 3 {
		t.Fatalf("%v %v", sel, err)
	}
	for i, s := range sel {
		if s.spec.Index != i+1 || s.art.Name != ShardArtifactName(77, 2, s.spec) {
			t.Fatalf("selection %d: %+v", i, s)
		}
	}
	expired := arts("proofgate-shard-77-2-1-of-2", "proofgate-shard-77-2-2-of-2")
	expired[1].Expired = true
	for _, c := range []struct {
		list []*runArtifact
		want ShardReason
		text string
	}{
		{arts("proofgate-shard-77-2-1-of-3", "proofgate-shard-77-2-3-of-3"), ShardMissing, "1 of 3 shards were not uploaded (proofgate-shard-77-2-2-of-3)"},
		{arts("proofgate-shard-77-1-1-of-2", "proofgate-shard-77-1-2-of-2"), ShardMissing, "has no shard artifacts"},
		{arts(), ShardMissing, "has no shard artifacts"},
		{arts("proofgate-shard-77-2-1-of-2", "proofgate-shard-77-2-1-of-2", "proofgate-shard-77-2-2-of-2"), ShardDuplicate, "listed twice"},
		{arts("proofgate-shard-77-2-1-of-2", "proofgate-shard-77-2-2-of-3"), ShardCount, "beside shards of 2"},
		{expired, ShardExpired, "expired"},
	} {
		_, err := selectShards(c.list, w)
		var se *ShardError
		if !errors.As(err, &se) || se.Reason != c.want || !strings.Contains(err.Error(), c.text) {
			t.Errorf("%d artifacts: %v, want %s %q", len(c.list), err, c.want, c.text)
		}
		if shardClass(err) != exit.Refused {
			t.Errorf("%v: class %v", err, shardClass(err))
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

func wantShardRefusal(t *testing.T, fx *fixture, res *Result, err error, code int, reason ShardReason, text string) {
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
	name := PlanArtifactName(runID, 1)
	if out := fx.outputs(); out["plan-artifact"] != name || out["run-id"] == "" || out["state"] != "PLANNED" {
		t.Fatalf("plan outputs %v\n%s", fx.outputs(), fx.log.String())
	}
	if _, ok := fx.gh.Uploaded(name); !ok {
		t.Fatal("no plan uploaded")
	}

	// Another attempt of the run has no plan.
	fx.shardEnv(runID, 2, "shard", "", "1/2")
	res, err = fx.run()
	wantShardRefusal(t, fx, res, err, ExitRefused, ShardPlanMissing, "proofgate-plan-4242-2")

	// A plan signed by another key (a plan job with another secret).
	fx.env["INPUT_SIGNING-KEY"] = otherKeyPEM(t)
	fx.shardEnv(runID+1, 1, "plan", ModePlan, "")
	res, err = fx.run()
	mustCode(t, res.Code, ExitOK, err, fx.log.String())
	fx.env["INPUT_SIGNING-KEY"] = fx.keyPEM
	fx.shardEnv(runID+1, 1, "shard", "", "1/2")
	res, err = fx.run()
	wantShardRefusal(t, fx, res, err, ExitRefused, ShardPlanInvalid, "signature-invalid")

	// A valid plan of another workflow run (4244), listed under this run's
	// (4245) plan name, as if a job of this run had re-uploaded it.
	fx.shardEnv(runID+2, 1, "plan", ModePlan, "")
	res, err = fx.run()
	mustCode(t, res.Code, ExitOK, err, fx.log.String())
	other, _ := fx.gh.Uploaded(PlanArtifactName(runID+2, 1))
	fx.gh.AddArtifact(owner, repo, githubtest.Artifact{Name: PlanArtifactName(runID+3, 1), HeadSHA: fx.head, RunID: runID + 3, Data: other})
	fx.shardEnv(runID+3, 1, "shard", "", "1/2")
	res, err = fx.run()
	wantShardRefusal(t, fx, res, err, ExitRefused, ShardPlanInvalid, "the plan is for workflow run 4244 attempt 1")

	// No workflow run id; no key.
	fx.shardEnv(runID, 1, "shard", "", "1/2")
	delete(fx.env, "GITHUB_RUN_ID")
	res, err = fx.run()
	wantShardRefusal(t, fx, res, err, ExitUsage, ShardNoWorkflowRun, "GITHUB_RUN_ID")
	fx.shardEnv(runID, 1, "merge", ModeMerge, "")
	delete(fx.env, "INPUT_SIGNING-KEY")
	res, err = fx.run()
	wantShardRefusal(t, fx, res, err, ExitUsage, ShardNoSigner, "input signing-key is empty")
}
