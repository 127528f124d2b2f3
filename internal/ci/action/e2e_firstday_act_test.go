package action

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/proofgate/proofgate/internal/githubtest"
	"github.com/proofgate/proofgate/internal/registrytest"
	"github.com/proofgate/proofgate/internal/thirdparty"
)

// A maintainer's first day, under nektos/act: real third-party code
// (spf13/cobra from the Go module proxy, fastq from the npm registry) made
// into a git repository with its real origin remote, `proofgate init
// --workflow --action ...` run in it, and the commands init prints followed
// (contract check, commit, trust store, commit; `gh secret set` becomes
// act's secret file), on a branch merged into main as a pull request that
// a maintainer approved on the fake GitHub. Then act runs the generated
// workflows as GitHub would, with no edit to any generated file:
// proofgate.yml on the push of the merge to main (the action runs the
// contract's checks in the ecosystem's image pulled through the registry
// mirror, the fetch check downloading the real dependencies, takes its
// approval from the merged pull request, signs and uploads the bundle to
// act's artifact server), then release-gate.yml on the push of a tag,
// whose verify step finds that artifact through the fake GitHub's REST API
// and verifies it against the committed trust store; the release job runs
// only after it. A tampered artifact makes the gate refuse and the release
// job never run.
//
// act's host mode (-P ubuntu-latest=-self-hosted) runs the run steps on
// this machine and the action as a container; see actArgs for what act
// v0.2.87 gets wrong there and the flags that make up for it.
func TestE2EFirstDayAct(t *testing.T) {
	image := e2eImage(t)
	act := actBinary(t)
	registrytest.Mirror(t)
	cli, actions := proofgateCLI(t), localAction(t, image)
	for _, p := range actProjects {
		t.Run(p.name, func(t *testing.T) {
			// The sources and init side by side; act one at a time.
			t.Parallel()
			d := newActDay(t, p, act, cli, actions)
			d.firstDay()
			d.pushAndRelease()
		})
	}
}

// actProject is a third-party project and where its source comes from.
type actProject struct {
	name, owner, repo string
	source            thirdparty.Source
}

var actProjects = []actProject{
	{"go-cobra", "spf13", "cobra", thirdparty.GoModule("github.com/spf13/cobra@v1.10.1")},
	{"node-fastq", "mcollina", "fastq", thirdparty.NpmPackage("fastq@1.20.3")},
}

// releaseTag is the tag the release gate runs on.
const releaseTag = "v9.9.9-proofgate"

// pushAndRelease runs proofgate.yml on the push of the merge to main, then
// release-gate.yml on a tag of it, then again with the artifact tampered.
func (d *actDay) pushAndRelease() {
	t := d.t
	out := d.act("push", "proofgate.yml", d.pushEvent("refs/heads/main"), 0)
	runWall := d.wall
	runID, state := actStepLine(t, out, `\| run (\S+): ([A-Z_]+)\n`)
	if state != "COMPLETE" || !strings.Contains(out, "Job succeeded") {
		t.Fatalf("proofgate.yml on push: run %s %s\n%s", runID, state, out)
	}
	if st := d.gh.Statuses(d.p.owner, d.p.repo, d.merge); len(st) == 0 || st[len(st)-1].State != "success" || st[len(st)-1].Context != "proofgate" {
		t.Fatalf("commit statuses on the merge: %+v", st)
	}
	name := ArtifactPrefix + d.merge
	zip, err := os.ReadFile(filepath.Join(d.artifacts, "1", name, name+".zip"))
	if err != nil {
		t.Fatalf("act's artifact server holds no %s: %v\n%s", name, err, out)
	}
	// GitHub lists a run's artifacts in its REST API; act's artifact
	// server has none, so the fake lists the zip act stored, for the
	// commit the run was for.
	d.gh.AddArtifact(d.p.owner, d.p.repo, githubtest.Artifact{Name: name, HeadSHA: d.merge, Data: zip})

	git(t, d.ws, "tag", releaseTag, d.merge)
	out = d.act("push", "release-gate.yml", d.pushEvent("refs/tags/"+releaseTag), 0)
	gateWall := d.wall
	if gotRun, verdict := actStepLine(t, out, `\| verified run (\S+) \((\w+)\)\n`); gotRun != runID || verdict != "accepted" ||
		!strings.Contains(out, "| release "+releaseTag) {
		t.Fatalf("release gate: run %q verdict %q, want %s accepted and the release job\n%s", gotRun, verdict, runID, out)
	}
	t.Logf("ACT-FIRSTDAY %s: act push (proofgate.yml) %.1f s, act push of a tag (release-gate.yml) %.1f s",
		d.p.name, runWall.Seconds(), gateWall.Seconds())
	d.policyGate(runID)
	d.tampered(zip, name)
}

// policyGate runs the generated release-gate.yml with its approvals in a
// gate policy file (input policy, ADR 0049) instead of input
// require-approvals: a policy asking two refuses the run of one approval,
// one accepts it. The workflow and the policy file are edited in the work
// tree (act copies it) and put back.
func (d *actDay) policyGate(runID string) {
	t := d.t
	wf := filepath.Join(d.ws, ".github", "workflows", "release-gate.yml")
	orig, err := os.ReadFile(wf)
	if err != nil {
		t.Fatal(err)
	}
	withPolicy := strings.Replace(string(orig), `require-approvals: "1"`, "policy: .proofgate/gate-policy.json", 1)
	if withPolicy == string(orig) {
		t.Fatalf("release-gate.yml has no require-approvals input to replace:\n%s", orig)
	}
	policy := filepath.Join(d.ws, ".proofgate", "gate-policy.json")
	defer func() {
		writeFile(t, wf, string(orig))
		os.Remove(policy)
	}()
	writeFile(t, wf, withPolicy)
	writeFile(t, policy, `{"bundle":{"require_approvals":2,"profile":""}}`)
	out := d.act("push", "release-gate.yml", d.pushEvent("refs/tags/"+releaseTag), 1)
	if strings.Contains(out, "release "+releaseTag) || !strings.Contains(out, "::set-output:: reason=insufficient-approvals") {
		t.Fatalf("release gate under a policy of two approvals:\n%s", out)
	}
	writeFile(t, policy, `{"bundle":{"require_approvals":1,"profile":""}}`)
	out = d.act("push", "release-gate.yml", d.pushEvent("refs/tags/"+releaseTag), 0)
	if gotRun, verdict := actStepLine(t, out, `\| verified run (\S+) \((\w+)\)\n`); gotRun != runID || verdict != "accepted" {
		t.Fatalf("release gate under a policy of one approval: run %q verdict %q\n%s", gotRun, verdict, out)
	}
}

// tampered runs the release gate on a tampered artifact: refused, no
// release; and checks that nothing was cloned.
func (d *actDay) tampered(zip []byte, name string) {
	t := d.t
	bad := bytes.Clone(zip)
	bad[len(bad)/2] ^= 0x55
	d.gh.TamperBlob(name, bad)
	out := d.act("push", "release-gate.yml", d.pushEvent("refs/tags/"+releaseTag), 1)
	if strings.Contains(out, "release "+releaseTag) || !strings.Contains(out, "::set-output:: verdict=refused") {
		t.Fatalf("release gate on a tampered artifact:\n%s", out)
	}
	// Everything went to the fake: no clone of an action was tried (act
	// clones from GITHUB_SERVER_URL), the gate listed the artifacts.
	if n := d.gh.Count("GET", "/info/refs"); n != 0 {
		t.Fatalf("act tried to clone an action (%d requests)", n)
	}
	if d.gh.Count("GET", "/actions/artifacts") == 0 {
		t.Fatalf("requests to the fake GitHub: %+v", d.gh.Requests())
	}
}

// actBinary is nektos/act: $PROOFGATE_ACT, else act on PATH or in
// $(go env GOPATH)/bin (scripts/test.sh installs v0.2.87 there). Missing,
// the test fails under PROOFGATE_REQUIRE_ACT=1 and is skipped otherwise.
func actBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("PROOFGATE_ACT"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("PROOFGATE_ACT: %v", err)
		}
		return p
	}
	if p, err := exec.LookPath("act"); err == nil {
		return p
	}
	if gp, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		p := filepath.Join(strings.TrimSpace(string(gp)), "bin", "act")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if os.Getenv("PROOFGATE_REQUIRE_ACT") == "1" {
		t.Fatal("PROOFGATE_REQUIRE_ACT=1 but no act binary (go install github.com/nektos/act@v0.2.87)")
	}
	t.Skip("no act binary: go install github.com/nektos/act@v0.2.87")
	return ""
}

// actDay is one project's repository, fake GitHub and act directories.
type actDay struct {
	t          *testing.T
	p          actProject
	actBin     string
	cli        string // the proofgate CLI the maintainer runs
	gh         *githubtest.Server
	ws         string // the repository (act's working directory)
	env        []string
	signingKey string // the private key init named for `gh secret set`
	actions    string // the action repository's stand-in (localAction)
	cache      string // act's action cache: its host workspaces live here
	runnerTemp string
	artifacts  string // act's artifact server storage
	home       string
	base, head string        // main before the pull request, its head
	merge      string        // the merge commit pushed to main
	wall       time.Duration // the last act run's
}

func newActDay(t *testing.T, p actProject, act, cli, actions string) *actDay {
	t.Helper()
	tok := make([]byte, 16)
	rand.Read(tok)
	d := &actDay{t: t, p: p, actBin: act, cli: cli, actions: actions, gh: githubtest.New(t),
		cache: t.TempDir(), runnerTemp: t.TempDir(), artifacts: t.TempDir(), home: t.TempDir()}
	d.gh.Token = "ghs_" + hex.EncodeToString(tok)
	d.ws = filepath.Join(t.TempDir(), p.repo)
	d.env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Alice", "GIT_AUTHOR_EMAIL=alice@example.com", "GIT_COMMITTER_NAME=Alice", "GIT_COMMITTER_EMAIL=alice@example.com")
	return d
}

// proofgateCLI is the binary scripts/e2e.sh put in the action image
// ($PROOFGATE_E2E_CLI), else one built now.
func proofgateCLI(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("PROOFGATE_E2E_CLI"); p != "" {
		return p
	}
	p := filepath.Join(t.TempDir(), "proofgate")
	if out, err := exec.Command("go", "build", "-o", p, "../../../cmd/proofgate").CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/proofgate: %v\n%s", err, out)
	}
	return p
}

// localAction is the ProofGate repository as a release pins it: this
// repository's action.yml and verify/action.yml with the image the
// runner builds replaced by the prebuilt image (docs/action.md
// "Releasing the action"), here the offline e2e image, which must exist.
func localAction(t *testing.T, image string) string {
	t.Helper()
	// Missing, act would pull it, from Docker Hub past the mirror.
	if out, err := exec.Command("docker", "image", "inspect", "--format", "{{.Id}}", image).CombinedOutput(); err != nil {
		t.Fatalf("the action image %s is not in the Docker daemon (scripts/e2e.sh builds it): %v %s", image, err, out)
	}
	dir := t.TempDir()
	for file, from := range map[string]string{"action.yml": "image: Dockerfile\n", "verify/action.yml": "image: ../Dockerfile\n"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "..", file))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Count(b, []byte(from)) != 1 {
			t.Fatalf("%s: want exactly one %q", file, from)
		}
		writeFile(t, filepath.Join(dir, file), strings.Replace(string(b), from, "image: docker://"+image+"\n", 1))
	}
	return dir
}

// run runs a command in the repository with the maintainer's environment.
func (d *actDay) run(name string, args ...string) string {
	d.t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = d.ws, d.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		d.t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
	return string(out)
}

// firstDay makes the repository and walks init's instructions on a branch
// that a reviewed pull request merges into main.
func (d *actDay) firstDay() {
	t := d.t
	d.p.source(t, d.ws)
	d.run("git", "init", "-q", "-b", "main")
	d.run("git", "remote", "add", "origin", "https://github.com/"+d.p.owner+"/"+d.p.repo+".git")
	d.run("git", "add", "-A")
	d.run("git", "commit", "-q", "-m", "upstream source")
	d.base = git(t, d.ws, "rev-parse", "HEAD")
	d.run("git", "switch", "-q", "-c", "proofgate")

	out := d.run(d.cli, "init", "--workflow", "--action", "proofgate/proofgate@"+actionSHA)
	d.followInit(out)
	d.head = git(t, d.ws, "rev-parse", "HEAD")
	if st := git(t, d.ws, "status", "--porcelain"); st != "" {
		t.Fatalf("not clean after init's commands:\n%s", st)
	}
	d.run("git", "switch", "-q", "main")
	d.run("git", "merge", "-q", "--no-ff", "-m", "Merge pull request #1 from alice/proofgate", "proofgate")
	d.merge = git(t, d.ws, "rev-parse", "HEAD")

	bob := githubtest.User{Login: "bob", ID: 202}
	d.gh.AddRepo(d.p.owner, d.p.repo)
	d.gh.AddPR(d.p.owner, d.p.repo, githubtest.PR{Number: 1, Author: alice, HeadSHA: d.head, HeadRef: "proofgate",
		BaseSHA: d.base, BaseRef: "main", MergeCommitSHA: d.merge, Title: "ProofGate"})
	for _, c := range strings.Fields(git(t, d.ws, "rev-list", d.base+".."+d.head)) {
		d.gh.AddCommit(d.p.owner, d.p.repo, 1, githubtest.Commit{SHA: c, Author: &alice, Committer: &alice})
	}
	d.gh.SetPermission(d.p.owner, d.p.repo, "bob", githubtest.Permission{Permission: "write", RoleName: "write"})
	d.gh.AddReview(d.p.owner, d.p.repo, 1, githubtest.Review{User: bob, State: "APPROVED", CommitID: d.head})
}

// actionSHA is the release of the action the workflows pin.
var actionSHA = strings.Repeat("5a", 20)

// followInit runs the commands init printed, as a maintainer copies them:
// every `proofgate ...` and `git ...` line but `proofgate run` (the
// Action runs the checks here), and takes the key file of `gh secret set
// PROOFGATE_SIGNING_KEY < FILE` for act's secret file.
func (d *actDay) followInit(out string) {
	t := d.t
	var ran int
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if f, ok := strings.CutPrefix(line, "gh secret set PROOFGATE_SIGNING_KEY < "); ok {
			d.signingKey = f
			continue
		}
		if line == "proofgate run" || !(strings.HasPrefix(line, "proofgate ") || strings.HasPrefix(line, "git ")) {
			continue
		}
		cmd := exec.Command("sh", "-c", line)
		cmd.Dir = d.ws
		cmd.Env = append(d.env, "PATH="+filepath.Dir(d.cli)+":"+os.Getenv("PATH"))
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("init said %q: %v\n%s\ninit's output:\n%s", line, err, b, out)
		}
		ran++
	}
	if ran < 4 || d.signingKey == "" {
		t.Fatalf("init printed %d commands to follow and key %q:\n%s", ran, d.signingKey, out)
	}
}

// pushEvent writes a push event of the merge commit to ref.
func (d *actDay) pushEvent(ref string) string {
	d.t.Helper()
	ev := map[string]any{
		"ref": ref, "before": d.base, "after": d.merge, "deleted": false, "created": true,
		"head_commit": map[string]any{"id": d.merge},
		"repository":  map[string]any{"full_name": d.p.owner + "/" + d.p.repo, "name": d.p.repo, "owner": map[string]any{"login": d.p.owner}, "default_branch": "main"},
		"pusher":      map[string]any{"name": "bob"},
	}
	b, _ := json.Marshal(ev)
	p := filepath.Join(d.t.TempDir(), "push.json")
	writeFile(d.t, p, string(b))
	return p
}

// actMu runs one act at a time: act names a job's containers after the
// workflow's and the job's names only (run_context.go jobContainerName,
// createContainerName), so two runs of proofgate.yml on one daemon would
// remove each other's action container before creating their own.
var actMu sync.Mutex

// act runs `act EVENT` with one generated workflow and the event file,
// and fails the test unless act exits with want. It returns act's output.
func (d *actDay) act(event, workflow, eventPath string, want int) string {
	d.t.Helper()
	actMu.Lock()
	defer actMu.Unlock()
	start := time.Now()
	defer func() { d.wall = time.Since(start) }()
	cmd := exec.Command(d.actBin, append([]string{event}, d.actArgs(workflow, eventPath)...)...)
	cmd.Dir = d.ws
	// Only what act needs: a CI runner's own GITHUB_*/ACTIONS_* variables
	// must not reach act (it would use ACTIONS_RUNTIME_URL) nor, through
	// host mode, the job.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + d.home, "XDG_CONFIG_HOME=" + filepath.Join(d.home, ".config"),
		"XDG_CACHE_HOME=" + filepath.Join(d.home, ".cache"), "ACT_DISABLE_VERSION_CHECK=1"}
	if h := os.Getenv("DOCKER_HOST"); h != "" {
		cmd.Env = append(cmd.Env, "DOCKER_HOST="+h)
	}
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		d.t.Fatalf("act: %v", err)
	}
	if (want == 0) != (code == 0) {
		d.t.Fatalf("act %s %s: exit %d, want %d\n%s", event, workflow, code, want, buf.String())
	}
	return buf.String()
}

// actArgs are act's flags for one run. Nothing leaves loopback: the
// version check is off (ACT_DISABLE_VERSION_CHECK, act's cmd/notices.go),
// actions/checkout of this repository is not cloned (act copies the work
// tree: isLocalCheckout, step_action_remote.go), the ProofGate action
// comes from a local directory (--local-repository), GITHUB_SERVER_URL,
// from which act would clone any other action, is the fake GitHub, no
// cache server starts, the artifact server listens on 127.0.0.1 and no
// image is pulled (--pull=false; the action image exists, the check's
// image comes through the registry mirror).
//
// Host mode in act v0.2.87 gives a docker action the host's paths in
// GITHUB_WORKSPACE, GITHUB_EVENT_PATH, GITHUB_OUTPUT and
// GITHUB_STEP_SUMMARY (run_context.go getGithubContext: HostEnvironment's
// ToContainerPath; step.go: its act path) while it binds those directories
// elsewhere in the container (GetBindsAndMounts: the workspace at the
// repository's path, the act path at /var/run/act), and starts it on the
// "default" network (action.go newStepContainer), which reaches no
// 127.0.0.1 service. --container-options binds the action cache, where
// those host paths live, at the same path, and uses the host network as a
// runner's job network reaches its services; it also mounts a runner temp
// at /github/runner_temp as GitHub's runner does (act mounts none), where
// the action keeps the contract's caches.
func (d *actDay) actArgs(workflow, eventPath string) []string {
	secrets := filepath.Join(d.t.TempDir(), "secrets.yml")
	key, err := os.ReadFile(d.signingKey)
	if err != nil {
		d.t.Fatal(err)
	}
	s, _ := json.Marshal(map[string]string{"PROOFGATE_SIGNING_KEY": string(key), "GITHUB_TOKEN": d.gh.Token})
	if err := os.WriteFile(secrets, s, 0o600); err != nil {
		d.t.Fatal(err)
	}
	none := filepath.Join(d.t.TempDir(), "none")
	return []string{
		"-C", d.ws, "-W", filepath.Join(d.ws, ".github", "workflows", workflow), "-e", eventPath,
		"-P", "ubuntu-latest=-self-hosted", "--defaultbranch", "main",
		"--local-repository", "proofgate/proofgate@" + actionSHA + "=" + d.actions,
		"--action-cache-path", d.cache, "--pull=false", "--rebuild=false", "--no-cache-server",
		"--artifact-server-path", d.artifacts, "--artifact-server-addr", "127.0.0.1", "--artifact-server-port", freePort(d.t),
		"--secret-file", secrets, "--env-file", none, "--var-file", none, "--input-file", none,
		"--env", "GITHUB_SERVER_URL=" + d.gh.URL, "--env", "GITHUB_API_URL=" + d.gh.URL,
		"--container-options", fmt.Sprintf("--network host -v %s:%s -v %s:/github/runner_temp", d.cache, d.cache, d.runnerTemp),
	}
}

// actStepLine returns the two submatches of re's first match in act's
// output, or fails.
func actStepLine(t *testing.T, out, re string) (string, string) {
	t.Helper()
	m := regexp.MustCompile(re).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("act's output has no line %q:\n%s", re, out)
	}
	return m[1], m[2]
}

// freePort returns a TCP port free on 127.0.0.1 a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}
