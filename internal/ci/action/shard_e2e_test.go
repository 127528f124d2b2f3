package action

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/key"
	"github.com/proofgate/proofgate/internal/ci/artifact"
	"github.com/proofgate/proofgate/internal/ci/shardjob"
	"github.com/proofgate/proofgate/internal/githubtest"
	"github.com/proofgate/proofgate/internal/shard"
	"github.com/proofgate/proofgate/internal/testimage"
)

// shardContract is a contract of n sandboxed checks that print the
// README; c02 depends on c01 (a chain the assignment keeps in one shard).
func shardContract(image string, n int) string {
	return sandboxedChecks(image, n, 2, "[/bin/helper, cat, /workspace/README.md]")
}

// sandboxedChecks is a contract of n Docker checks c<i> (i zero-padded to
// width digits) that each run argv (YAML flow list), the second depending
// on the first, approved by one writer.
func sandboxedChecks(image string, n, width int, argv string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `version: 1
name: widget
defaults:
  runtime: docker
  image: %s
  pull: never
  timeout: 60s
  network: none
  workspace: readonly
  resources: {memory: 64MiB, cpus: 1, pids: 32}
checks:
`, image)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "  - id: c%0*d\n    run: %s\n", width, i, argv)
		if i == 2 {
			fmt.Fprintf(&b, "    depends_on: [c%0*d]\n", width, 1)
		}
	}
	b.WriteString("approval: {required: 1, roles: [write, maintain, admin]}\n")
	return b.String()
}

// e2eJob is one job of a workflow run: its own runner checkout, file
// commands directory, environment and log.
type e2eJob struct {
	name string
	ws   string
	fc   string
	env  map[string]string
	log  bytes.Buffer
}

// matrixJob makes a job of workflow run id, attempt 1: a fresh clone of the
// checkout, its own runtime token, mode and shard inputs.
func (fx *fixture) matrixJob(name string, id int64, mode, sh string) *e2eJob {
	fx.t.Helper()
	j := &e2eJob{name: name, ws: filepath.Join(fx.t.TempDir(), "ws"), fc: fx.t.TempDir(), env: map[string]string{}}
	git(fx.t, fx.tmp, "clone", "-q", fx.ws, j.ws)
	git(fx.t, j.ws, "checkout", "-q", "--detach", fx.merge)
	for k, v := range fx.env {
		j.env[k] = v
	}
	j.env["GITHUB_WORKSPACE"] = j.ws
	j.env["GITHUB_OUTPUT"] = filepath.Join(j.fc, "set_output_1")
	j.env["GITHUB_STEP_SUMMARY"] = filepath.Join(j.fc, "step_summary_1")
	j.env["GITHUB_RUN_ID"], j.env["GITHUB_RUN_ATTEMPT"] = strconv.FormatInt(id, 10), "1"
	j.env["ACTIONS_RUNTIME_TOKEN"] = fx.gh.JobRuntimeToken(owner, repo, fx.head, id, name)
	j.env["INPUT_MODE"], j.env["INPUT_SHARD"] = mode, sh
	return j
}

// runJob runs the action image for job j as the runner runs a container
// action (see dockerRun), so that several jobs can run at once.
func (fx *fixture) runJob(image string, j *e2eJob) int {
	fx.t.Helper()
	args := []string{"run", "--rm", "--network", "host", "--workdir", "/github/workspace",
		"-v", "/var/run/docker.sock:/var/run/docker.sock",
		"-v", j.ws + ":/github/workspace", "-v", j.fc + ":/github/file_commands", "-v", fx.wf + ":/github/workflow"}
	rewrite := strings.NewReplacer(j.ws, "/github/workspace", j.fc, "/github/file_commands", fx.wf, "/github/workflow")
	ks := make([]string, 0, len(j.env))
	for k := range j.env {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	for _, k := range ks {
		args = append(args, "-e", k+"="+rewrite.Replace(j.env[k]))
	}
	args = append(args, "-e", "RUNNER_OS=Linux", "-e", "CI=true", image)
	cmd := exec.Command("docker", args...)
	cmd.Stdout, cmd.Stderr = &j.log, &j.log
	start := time.Now()
	err := cmd.Run()
	fx.t.Logf("job %s: %v in %s", j.name, err, time.Since(start).Round(time.Millisecond))
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	fx.t.Errorf("docker run %s: %v\n%s", j.name, err, j.log.String())
	return -1
}

func (j *e2eJob) outputs(t *testing.T) map[string]string {
	return parseOutputs(t, j.env["GITHUB_OUTPUT"])
}

func (j *e2eJob) summary() string {
	b, _ := os.ReadFile(j.env["GITHUB_STEP_SUMMARY"])
	return string(b)
}

func wantJob(t *testing.T, j *e2eJob, got, want int) {
	t.Helper()
	if got != want {
		t.Fatalf("job %s: exit code %d, want %d\nlog:\n%s\nsummary:\n%s", j.name, got, want, j.log.String(), j.summary())
	}
}

// shardRun runs a plan job and then the given shards of n in parallel for
// workflow run id, and returns the shard jobs.
func (fx *fixture) shardRun(image string, id int64, n int, shards ...int) {
	fx.t.Helper()
	plan := fx.matrixJob("plan", id, ModePlan, "")
	wantJob(fx.t, plan, fx.runJob(image, plan), ExitOK)
	jobs := make([]*e2eJob, 0, len(shards))
	for _, i := range shards {
		jobs = append(jobs, fx.matrixJob(fmt.Sprintf("shard-%d", i), id, "", fmt.Sprintf("%d/%d", i, n)))
	}
	codes := make([]int, len(jobs))
	var wg sync.WaitGroup
	for k, j := range jobs {
		wg.Add(1)
		go func() { defer wg.Done(); codes[k] = fx.runJob(image, j) }()
	}
	wg.Wait()
	for k, j := range jobs {
		wantJob(fx.t, j, codes[k], ExitOK)
		sp := shard.Spec{Index: shards[k], Count: n}
		if out := j.outputs(fx.t); out["shard-artifact"] != shardjob.ShardArtifactName(id, 1, sp) {
			fx.t.Fatalf("shard %s outputs %v\n%s", sp, out, j.log.String())
		}
	}
}

// resign returns the shard artifact zip with its shard re-signed by
// another key: a well-formed shard whose signature no job's key made.
func resign(t *testing.T, zipData []byte) []byte {
	t.Helper()
	files, err := artifact.Unzip(zipData, 1<<30, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for n, b := range files {
		if n == "shard.sig" || n == "shard.sigstore.json" {
			continue
		}
		writeFile(t, filepath.Join(dir, filepath.FromSlash(n)), string(b))
	}
	pk, err := key.ParsePrivate([]byte(otherKeyPEM(t)), "other key")
	if err != nil {
		t.Fatal(err)
	}
	s, err := key.NewSigner(pk)
	if err != nil {
		t.Fatal(err)
	}
	if err := bundle.SignShard(dir, s); err != nil {
		t.Fatal(err)
	}
	out, err := shardjob.ReadShard(dir)
	if err != nil {
		t.Fatal(err)
	}
	z, err := artifact.Zip(out)
	if err != nil {
		t.Fatal(err)
	}
	return z
}

// TestE2EShardMatrix: a 20-check contract runs as a plan job, three shard
// jobs at once (three action containers, each its own checkout and
// runtime token) and a merge job against the fake GitHub. Before the good
// merge, merge jobs refuse, each with exit 1, output shard-refusal and an
// error naming the reason and the artifact: a missing shard (missing), a
// shard re-signed by another key (untrusted), and a shard of another
// workflow run of the same commit and contract (foreign). The good merge
// counts the approval, signs and uploads the bundle, and `proofgate bundle
// verify` accepts it with --require-approvals 1 --require-sandbox.
func TestE2EShardMatrix(t *testing.T) {
	image := e2eImage(t)
	helper, err := testimage.Ensure(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	const n, checks = 3, 20
	fx := newFixtureBase(t, shardContract(helper, checks), nil, nil)
	fx.gh.AddReview(owner, repo, prNum, githubtest.Review{User: bob, State: "APPROVED", CommitID: fx.head})
	fx.prEvent()
	const run1, run2 = 5001, 5002
	start := time.Now()
	fx.shardRun(image, run1, n, 1, 2, 3)
	shardsTook := time.Since(start)

	name := func(id int64, i int) string { return shardjob.ShardArtifactName(id, 1, shard.Spec{Index: i, Count: n}) }
	merge := func(want int, reason shardjob.Reason, text string) *e2eJob {
		t.Helper()
		j := fx.matrixJob("merge", run1, ModeMerge, "")
		wantJob(t, j, fx.runJob(image, j), want)
		if reason != "" {
			out := j.outputs(t)
			if out["shard-refusal"] != string(reason) || !strings.Contains(j.log.String(), "::error title=ProofGate::sharded run refused ("+string(reason)+")") ||
				!strings.Contains(j.log.String(), text) || out["artifact-id"] != "" {
				t.Fatalf("merge: outputs %v, want refusal %s %q\n%s", out, reason, text, j.log.String())
			}
			t.Logf("merge refused (%s): %s", reason, grepLine(j.log.String(), "::error title=ProofGate::"))
		}
		return j
	}

	// A missing shard: its upload never happened.
	restore := fx.gh.HideArtifact(owner, repo, name(run1, 3))
	merge(ExitRefused, shardjob.Missing, name(run1, 3))
	restore()

	// A shard signed by another key.
	good, ok := fx.gh.ListedData(owner, repo, run1, name(run1, 2))
	if !ok {
		t.Fatal("shard 2 not listed")
	}
	fx.gh.TamperBlob(name(run1, 2), resign(t, good))
	merge(ExitRefused, shardjob.Reason(shard.Untrusted), name(run1, 2))

	// A shard of another workflow run (same commit, contract and key).
	fx.shardRun(image, run2, n, 2)
	foreign, _ := fx.gh.ListedData(owner, repo, run2, name(run2, 2))
	fx.gh.TamperBlob(name(run1, 2), foreign)
	merge(ExitRefused, shardjob.Foreign, name(run1, 2))
	fx.gh.TamperBlob(name(run1, 2), good)

	// The merge: COMPLETE, bundle uploaded.
	mstart := time.Now()
	j := merge(ExitOK, "", "")
	mergeTook := time.Since(mstart)
	out := j.outputs(t)
	if out["state"] != "COMPLETE" || out["artifact-id"] == "" || !strings.HasSuffix(out["bundle-path"], ".bundle.tar.gz") {
		t.Fatalf("merge outputs %v\n%s", out, j.log.String())
	}
	if _, ok := fx.gh.Uploaded(ArtifactPrefix + fx.head); !ok {
		t.Fatal("no bundle uploaded")
	}
	sum := j.summary()
	for i := 1; i <= checks; i++ {
		if !strings.Contains(sum, fmt.Sprintf("| `c%02d` | ✅ passed", i)) {
			t.Fatalf("summary lacks check c%02d:\n%s", i, sum)
		}
	}
	if !strings.Contains(sum, "3 shards of workflow run 5001 attempt 1 merged (20 checks") || !strings.Contains(sum, "| bob | APPROVED |") {
		t.Fatalf("summary:\n%s", sum)
	}
	if sts := fx.gh.Statuses(owner, repo, fx.head); len(sts) == 0 || sts[len(sts)-1].State != "success" {
		t.Fatalf("final status %+v", sts)
	}

	// bundle verify, with the CLI in the image, offline.
	writeFile(t, filepath.Join(fx.wf, "contract.yaml"), shardContract(helper, checks))
	cmd := exec.Command("docker", "run", "--rm", "--network", "none", "--entrypoint", "/proofgate",
		"-v", j.ws+":/w:ro", "-v", fx.wf+":/wf:ro", image,
		"bundle", "verify", "/w/"+out["bundle-path"], "--trust", "/wf/trust.json", "--commit", fx.merge,
		"--contract", "/wf/contract.yaml", "--repo", owner+"/"+repo, "--require-approvals", "1", "--require-sandbox")
	vout, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bundle verify: %v\n%s", err, vout)
	}
	t.Logf("bundle verify: %s", strings.TrimSpace(string(vout)))
	t.Logf("SHARDS %d checks: plan + %d shard containers at once %s; merge job %s; total %s",
		checks, n, shardsTook.Round(time.Millisecond), mergeTook.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}

func grepLine(log, prefix string) string {
	for _, l := range strings.Split(log, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}
