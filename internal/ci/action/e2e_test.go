package action

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/proofgate/proofgate/internal/ci/artifact"
	"github.com/proofgate/proofgate/internal/githubtest"
	"github.com/proofgate/proofgate/internal/testimage"
)

// dockerContract runs its checks in the helper image, sandboxed.
const dockerContract = `version: 1
name: widget
defaults:
  runtime: docker
  image: IMAGE
  pull: never
  timeout: 60s
  network: none
  workspace: readonly
  resources: {memory: 128MiB, cpus: 1, pids: 64}
checks:
  - id: readme
    run: [/bin/helper, cat, /workspace/README.md]
  - id: security-policy
    run: [/bin/helper, cat, /workspace/SECURITY.md]
approval: {required: 1, roles: [write, maintain, admin]}
`

// e2eImage returns the action image scripts/e2e.sh built, or skips: this
// test runs only from that script (PROOFGATE_E2E_IMAGE names the image).
func e2eImage(t *testing.T) string {
	img := os.Getenv("PROOFGATE_E2E_IMAGE")
	if img == "" {
		t.Skip("end-to-end test: run scripts/e2e.sh (PROOFGATE_E2E_IMAGE unset)")
	}
	return img
}

// dockerRun runs the action image as the runner runs a container action:
// the socket, workspace, file-commands and workflow mounts, INPUT_*,
// GITHUB_* and ACTIONS_* variables with paths rewritten to container paths.
// One deliberate difference: --network host, only so that the container
// reaches the fake GitHub on 127.0.0.1 (this machine has no bridge network).
// The hostname is then the host's, not the container id: the Docker runtime
// finds its own container by id (mountinfo, cgroup), not by hostname.
func (fx *fixture) dockerRun(image string, args ...string) int {
	fx.t.Helper()
	fx.resetFiles()
	cmdArgs := []string{"run", "--rm", "--network", "host",
		"--workdir", "/github/workspace",
		"-v", "/var/run/docker.sock:/var/run/docker.sock",
		"-v", fx.ws + ":/github/workspace",
		"-v", fx.fc + ":/github/file_commands",
		"-v", fx.wf + ":/github/workflow"}
	if fx.runnerTemp != "" {
		cmdArgs = append(cmdArgs, "-v", fx.runnerTemp+":/github/runner_temp")
	}
	rewrite := strings.NewReplacer(fx.ws, "/github/workspace", fx.fc, "/github/file_commands", fx.wf, "/github/workflow")
	keys := make([]string, 0, len(fx.env))
	for k := range fx.env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		cmdArgs = append(cmdArgs, "-e", k+"="+rewrite.Replace(fx.env[k]))
	}
	cmdArgs = append(cmdArgs, "-e", "RUNNER_OS=Linux", "-e", "CI=true", image)
	cmdArgs = append(cmdArgs, args...)
	cmd := exec.Command("docker", cmdArgs...)
	cmd.Stdout, cmd.Stderr = &fx.log, &fx.log
	start := time.Now()
	err := cmd.Run()
	fx.t.Logf("docker run %s %v: %v in %s", image, args, err, time.Since(start).Round(time.Millisecond))
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	fx.t.Fatalf("docker run: %v\n%s", err, fx.log.String())
	return -1
}

func wantCode(t *testing.T, fx *fixture, got, want int) {
	t.Helper()
	if got != want {
		t.Fatalf("exit code %d, want %d\nlog:\n%s\nsummary:\n%s", got, want, fx.log.String(), fx.summary())
	}
}

func TestE2EActionImage(t *testing.T) {
	image := e2eImage(t)
	ctx := context.Background()
	helper, err := testimage.Ensure(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := strings.Replace(dockerContract, "IMAGE", helper, 1)
	fx := newFixtureBase(t, c, map[string]string{"SECURITY.md": "report to security@example.com\n"}, nil)

	// 0. PR opened, no review yet: AWAITING_APPROVAL, nothing uploaded.
	fx.prEvent()
	wantCode(t, fx, fx.dockerRun(image), ExitAwaiting)
	if out := fx.outputs(); out["state"] != "AWAITING_APPROVAL" || out["artifact-id"] != "" {
		t.Fatalf("outputs with no review: %v\n%s", out, fx.log.String())
	}
	if sum := fx.summary(); !strings.Contains(sum, "Requires 1 approving review") {
		t.Fatalf("summary with no review does not say what is missing:\n%s", sum)
	}

	// 1. A review on an older commit only: still AWAITING_APPROVAL.
	fx.gh.AddReview(owner, repo, prNum, githubtest.Review{User: bob, State: "APPROVED", CommitID: fx.base})
	fx.prEvent()
	wantCode(t, fx, fx.dockerRun(image), ExitAwaiting)
	out := fx.outputs()
	if out["state"] != "AWAITING_APPROVAL" || out["run-id"] == "" || !strings.HasPrefix(out["verification-digest"], "sha256:") || out["bundle-path"] != "" {
		t.Fatalf("outputs %v\n%s", out, fx.log.String())
	}
	sum := fx.summary()
	for _, want := range []string{"## ProofGate: AWAITING_APPROVAL", "| `readme` | ✅ passed", "docker", "sha256:", "not the verified head", "Requires 1 approving review"} {
		if !strings.Contains(sum, want) {
			t.Errorf("summary lacks %q:\n%s", want, sum)
		}
	}
	if !strings.Contains(fx.log.String(), "::group::check readme: passed") || !strings.Contains(fx.log.String(), "widget") {
		t.Errorf("log lacks the check's group and output:\n%s", fx.log.String())
	}
	if _, ok := fx.gh.Uploaded(ArtifactPrefix + fx.head); ok {
		t.Fatal("artifact uploaded for a pending run")
	}

	// 2. The maintainer approves the head: COMPLETE, signed bundle uploaded.
	id := fx.gh.AddReview(owner, repo, prNum, githubtest.Review{User: bob, State: "APPROVED", CommitID: fx.head})
	fx.reviewEvent(id)
	wantCode(t, fx, fx.dockerRun(image), ExitOK)
	out = fx.outputs()
	if out["state"] != "COMPLETE" || out["artifact-id"] == "" || !strings.HasSuffix(out["bundle-path"], ".bundle.tar.gz") {
		t.Fatalf("outputs %v\n%s", out, fx.log.String())
	}
	runID := out["run-id"]
	zipData, ok := fx.gh.Uploaded(ArtifactPrefix + fx.head)
	if !ok {
		t.Fatalf("no artifact uploaded\n%s", fx.log.String())
	}
	if files, err := artifact.Unzip(zipData, 1<<30, 1<<30); err != nil || len(files) != 2 || files[runID+".bundle.sigstore.json"] == nil || files[runID+".bundle.tar.gz"] == nil {
		t.Fatalf("artifact: want the archive and its companion: %d files, %v", len(files), err)
	}
	if out["sigstore-path"] != ".proofgate/runs/"+runID+".bundle.sigstore.json" {
		t.Fatalf("sigstore-path %q", out["sigstore-path"])
	}
	if !strings.Contains(fx.summary(), "| bob | APPROVED |") {
		t.Errorf("summary:\n%s", fx.summary())
	}

	// 3. Release gate on the merge commit that landed, match: tree.
	m := fx.release()
	fx.env["GITHUB_EVENT_NAME"], fx.env["GITHUB_SHA"] = "push", m
	fx.env["GITHUB_EVENT_PATH"] = filepath.Join(fx.wf, "push.json")
	writeFile(t, fx.env["GITHUB_EVENT_PATH"], `{"ref":"refs/tags/v1.0.0","after":"`+m+`"}`)
	fx.env["INPUT_TRUST-STORE"] = fx.trust
	fx.env["INPUT_MATCH"] = "tree"
	delete(fx.env, "INPUT_SIGNING-KEY")
	wantCode(t, fx, fx.dockerRun(image, "verify"), ExitOK)
	vo := fx.outputs()
	if vo["verdict"] != "accepted" || vo["run-id"] != runID {
		t.Fatalf("verify outputs %v\n%s", vo, fx.log.String())
	}

	// 4. A tampered artifact is refused.
	bad := bytes.Clone(zipData)
	bad[len(bad)/2] ^= 0x55
	fx.gh.TamperBlob(ArtifactPrefix+fx.head, bad)
	wantCode(t, fx, fx.dockerRun(image, "verify"), ExitRefused)
	if vo := fx.outputs(); vo["verdict"] != "refused" || vo["reason"] == "" {
		t.Fatalf("tampered: outputs %v\n%s", vo, fx.log.String())
	}
	t.Logf("corrupt artifact refused: %s", fx.outputs()["reason"])
	fx.gh.TamperBlob(ArtifactPrefix+fx.head, forge(t, zipData, "events.ndjson", func(b []byte) []byte {
		return bytes.Replace(b, []byte(`"login":"bob"`), []byte(`"login":"eve"`), 1)
	}))
	wantCode(t, fx, fx.dockerRun(image, "verify"), ExitRefused)
	if vo := fx.outputs(); vo["verdict"] != "refused" || vo["reason"] != "subject-mismatch" {
		t.Fatalf("forged events: outputs %v\n%s", vo, fx.log.String())
	}
}

// A PR that deletes SECURITY.md and drops the check guarding it from the
// contract still runs the base contract's check, and is blocked.
func TestE2EContractDropRunsBase(t *testing.T) {
	image := e2eImage(t)
	helper, err := testimage.Ensure(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c := strings.Replace(dockerContract, "IMAGE", helper, 1)
	weak := strings.Replace(c, "  - id: security-policy\n    run: [/bin/helper, cat, /workspace/SECURITY.md]\n", "", 1)
	fx := newFixtureBase(t, c, map[string]string{"SECURITY.md": "policy\n"}, map[string]string{".proofgate/contract.yaml": weak, "SECURITY.md": ""})
	fx.reviewEvent(fx.gh.AddReview(owner, repo, prNum, githubtest.Review{User: bob, State: "APPROVED", CommitID: fx.head}))
	wantCode(t, fx, fx.dockerRun(image), ExitRefused)
	if out := fx.outputs(); out["state"] != "BLOCKED" || out["artifact-id"] != "" {
		t.Fatalf("outputs %v", out)
	}
	log := fx.log.String()
	if !strings.Contains(log, "::error title=ProofGate check security-policy failed::") {
		t.Fatalf("log:\n%s", log)
	}
	if !strings.Contains(fx.summary(), "This pull request changes `.proofgate/contract.yaml`") {
		t.Fatalf("summary:\n%s", fx.summary())
	}
}
