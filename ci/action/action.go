// Package action is ProofGate's GitHub Action: the orchestration behind
// `proofgate action` (action.yml) and `proofgate action verify`
// (verify/action.yml).
//
// Run plans a run from the contract of the pull request's base commit (never
// the head), executes its checks in the Docker sandbox (or as processes),
// reads the pull request's review state, records each counted approval
// through the kernel, and, once the run is COMPLETE, exports the signed
// evidence bundle and uploads it as a workflow artifact. Without enough
// approval the run ends AWAITING_APPROVAL and the job summary says who may
// approve and what is missing.
//
// Verify finds the bundle for a release commit (by commit, or by tree for
// merge and squash commits), verifies it offline against a trust store and
// fails the job on refusal.
//
// Inputs and context come from the environment the runner gives a container
// action (INPUT_*, GITHUB_*, ACTIONS_*); outputs and the job summary go to the
// runner's file commands, guarded so that a local run without them works.
package action

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"

	"github.com/google/go-github/v62/github"
	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/key"
	"github.com/proofgate/proofgate/ci/artifact"
	"github.com/proofgate/proofgate/ci/event"
	"github.com/proofgate/proofgate/ci/ghapi"
	"github.com/proofgate/proofgate/ci/review"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/run"
	"github.com/proofgate/proofgate/kernel/runtime"
	"github.com/proofgate/proofgate/kernel/runtime/docker"
	"github.com/proofgate/proofgate/kernel/runtime/process"
	"github.com/proofgate/proofgate/kernel/source"
)

// Exit codes, as the CLI defines them (DESIGN.md "CLI").
const (
	ExitOK       = 0
	ExitRefused  = 1 // a check failed, a verification was refused
	ExitUsage    = 2 // bad input: contract, inputs, key
	ExitAwaiting = 3 // awaiting approval (on-pending: fail)
	ExitEnv      = 4 // environment: no Docker, GitHub API unreachable, no artifact service
)

// Defaults of the inputs.
const (
	DefaultContract = ".proofgate/contract.yaml"
	DefaultStateDir = ".proofgate"
	// ArtifactPrefix starts the default artifact name, "proofgate-<head sha>".
	ArtifactPrefix = "proofgate-"
	// SigningKeyEnv is read when the signing-key input is empty.
	SigningKeyEnv = "PROOFGATE_SIGNING_KEY"
)

// Error is a failure with the exit code the job should end with.
type Error struct {
	Code int
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

func fail(code int, format string, args ...any) *Error {
	return &Error{Code: code, Err: fmt.Errorf(format, args...)}
}

// RuntimesFunc connects the runtime providers a contract needs. It returns
// the providers by contract runtime name, why missing ones are unavailable,
// and a function releasing them.
type RuntimesFunc func(ctx context.Context, c *contract.Resolved) (map[string]runtime.Runtime, map[string]string, func())

// Options configure Run and Verify.
type Options struct {
	// Getenv reads the environment (nil = os.Getenv).
	Getenv func(string) string
	// Stdout receives the log and workflow commands (nil = os.Stdout).
	Stdout io.Writer
	// Runtimes overrides DefaultRuntimes.
	Runtimes RuntimesFunc
	// Dir is the workspace when GITHUB_WORKSPACE is unset ("" = working directory).
	Dir string
}

func (o *Options) fill() {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if o.Runtimes == nil {
		o.Runtimes = DefaultRuntimes
	}
}

// Result is what Run did.
type Result struct {
	// Code is the exit code the job ends with.
	Code               int
	RunID              string
	State              run.State
	VerificationDigest string
	ContractOrigin     string
	ContractChanged    bool
	Fork               bool
	Decision           *review.Decision
	// Recorded is how many approvals were recorded through the kernel.
	Recorded     int
	BundlePath   string
	BundleSHA256 string
	ArtifactName string
	ArtifactID   int64
	// Outputs are the step outputs set.
	Outputs map[string]string
}

// DefaultRuntimes connects the process provider and, when a check needs it,
// the Docker provider through the daemon named by the environment (inside a
// container action: the host's socket mounted at /var/run/docker.sock).
func DefaultRuntimes(ctx context.Context, c *contract.Resolved) (map[string]runtime.Runtime, map[string]string, func()) {
	rts := map[string]runtime.Runtime{"process": process.New()}
	unavailable := map[string]string{}
	closeAll := func() {}
	for _, ch := range c.Checks {
		if ch.Runtime != "docker" {
			continue
		}
		d, err := docker.New(ctx)
		if err != nil {
			unavailable["docker"] = fmt.Sprintf("no Docker daemon (is /var/run/docker.sock mounted?): %v", err)
		} else {
			rts["docker"] = d
			closeAll = func() { d.Close() }
		}
		break
	}
	return rts, unavailable, closeAll
}

type inputs struct {
	contract, profile, signingKey, token, artifactName, onPending, stateDir string
	jobs                                                                    int
}

func readInputs(f *workflow) (inputs, error) {
	in := inputs{
		contract:     f.input("contract"),
		profile:      f.input("profile"),
		signingKey:   f.input("signing-key"),
		token:        f.input("github-token"),
		artifactName: f.input("artifact-name"),
		onPending:    strings.ToLower(f.input("on-pending")),
		stateDir:     f.input("state-dir"),
	}
	if in.signingKey == "" {
		in.signingKey = strings.TrimSpace(f.getenv(SigningKeyEnv))
	}
	// Mask before anything else can print them.
	f.mask(in.signingKey)
	f.mask(in.token)
	f.mask(f.getenv("ACTIONS_RUNTIME_TOKEN"))
	if in.contract == "" {
		in.contract = DefaultContract
	}
	if !cleanRel(in.contract) {
		return in, fmt.Errorf("input contract: %q is not a clean path relative to the repository root", in.contract)
	}
	if in.stateDir == "" {
		in.stateDir = DefaultStateDir
	}
	switch in.onPending {
	case "":
		in.onPending = "fail"
	case "fail", "neutral":
	default:
		return in, fmt.Errorf("input on-pending: %q is not fail or neutral", in.onPending)
	}
	in.jobs = goruntime.NumCPU()
	if j := f.input("jobs"); j != "" {
		n, err := strconv.Atoi(j)
		if err != nil || n < 1 || n > 256 {
			return in, fmt.Errorf("input jobs: %q is not a number from 1 to 256", j)
		}
		in.jobs = n
	}
	if in.artifactName != "" {
		if err := artifact.ValidateName(in.artifactName); err != nil {
			return in, fmt.Errorf("input artifact-name: %w", err)
		}
	}
	return in, nil
}

// workspace returns the repository directory: GITHUB_WORKSPACE, else o.Dir,
// else the working directory.
func workspace(ctx context.Context, o *Options) (string, error) {
	dir := o.Getenv("GITHUB_WORKSPACE")
	if dir == "" {
		dir = o.Dir
	}
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		dir = wd
	}
	root, err := source.Root(ctx, dir)
	if err != nil {
		return "", fmt.Errorf("%s is not a git checkout (run actions/checkout before ProofGate): %w", dir, err)
	}
	return root, nil
}

// cleanRel reports whether p is a clean relative slash path inside the tree.
func cleanRel(p string) bool {
	return p != "" && !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "-") && !strings.Contains(p, "\\") &&
		path.Clean(p) == p && filepath.IsLocal(p)
}

func splitRepo(full string) (string, string, bool) {
	owner, name, ok := strings.Cut(full, "/")
	if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
		return "", "", false
	}
	return owner, name, true
}

// Run is `proofgate action`. It always returns a Result whose Code is the
// job's exit code; err explains a failure (Code 1, 2 or 4).
func Run(ctx context.Context, o Options) (*Result, error) {
	o.fill()
	f := newWorkflow(o.Getenv, o.Stdout)
	res := &Result{Outputs: f.outputs}
	s := &summary{}
	defer func() { f.summary(s.render()) }()

	finish := func(err error) (*Result, error) {
		var ae *Error
		if !errors.As(err, &ae) {
			ae = &Error{Code: ExitEnv, Err: err}
		}
		res.Code = ae.Code
		s.failure = ae.Err.Error()
		f.annotate("error", "ProofGate", ae.Err.Error())
		if res.State != "" {
			f.output("state", string(res.State))
		}
		return res, ae
	}

	in, err := readInputs(f)
	if err != nil {
		return finish(&Error{ExitUsage, err})
	}
	ev, err := event.Load(o.Getenv)
	if err != nil {
		return finish(fail(ExitUsage, "event context: %w", err))
	}
	s.event = ev
	res.Fork = ev.Fork
	repoFull := o.Getenv("GITHUB_REPOSITORY")
	if repoFull == "" {
		repoFull = ev.Repository
	}
	owner, name, ok := splitRepo(repoFull)
	if !ok {
		return finish(fail(ExitUsage, "GITHUB_REPOSITORY %q is not owner/name", repoFull))
	}
	s.repo = repoFull

	var signer envelope.Signer // nil: no signing key, no export
	if in.signingKey != "" {
		pk, err := key.ParsePrivate([]byte(in.signingKey), "input signing-key")
		if err != nil {
			return finish(fail(ExitUsage, "%w", err))
		}
		if signer, err = key.NewSigner(pk); err != nil {
			return finish(fail(ExitUsage, "input signing-key: %w", err))
		}
	} else if ev.Fork {
		s.notes = append(s.notes, "This pull request comes from a fork: GitHub gives fork runs no secrets and a read-only token, so there is no signing key. The checks run and the review state is read, but no signed bundle can be exported for this head; a release gate will find no evidence for it.")
		f.annotate("warning", "ProofGate fork pull request", "no signing key in a fork PR run: checks run, but no signed evidence bundle will be exported")
	} else {
		f.annotate("warning", "ProofGate no signing key", "input signing-key is empty (and "+SigningKeyEnv+" unset): a COMPLETE run cannot be exported")
	}

	ws, err := workspace(ctx, &o)
	if err != nil {
		return finish(&Error{ExitUsage, err})
	}
	stateDir := in.stateDir
	if !filepath.IsAbs(stateDir) {
		stateDir = filepath.Join(ws, stateDir)
	}

	var gh *github.Client
	if in.token != "" {
		if gh, err = ghapi.NewClient(ctx, in.token, o.Getenv("GITHUB_API_URL")); err != nil {
			return finish(fail(ExitUsage, "github client: %w", err))
		}
	}

	// The contract: the base commit's on pull-request events, so a PR cannot
	// relax the rules that govern it.
	var data []byte
	origin := "file:" + filepath.ToSlash(in.contract)
	if ev.IsPullRequest() && ev.BaseSHA != "" {
		data, err = event.ContractAt(ctx, ws, gh, owner, name, ev.BaseSHA, in.contract)
		if errors.Is(err, event.ErrNotInBase) {
			return finish(fail(ExitUsage, "the base commit %s has no %s: a pull request runs under its base branch's contract, so add the contract on the base branch first", short(ev.BaseSHA), in.contract))
		}
		if err != nil {
			return finish(fail(ExitEnv, "read the base contract: %w", err))
		}
		origin = "git:" + ev.BaseSHA + ":" + in.contract
		changed, err := event.ContractChanged(data, filepath.Join(ws, filepath.FromSlash(in.contract)))
		if err != nil {
			return finish(fail(ExitEnv, "compare the contract with the base: %w", err))
		}
		res.ContractChanged = changed
		if changed {
			s.notes = append(s.notes, fmt.Sprintf("This pull request changes %s. The run used the base branch's version (commit %s); the change takes effect once merged, and a release of the merged commit needs a run under it (see docs/action.md).", code(in.contract), code(short(ev.BaseSHA))))
			f.annotate("notice", "ProofGate contract changed", "this pull request changes "+in.contract+"; the checks ran under the base branch's contract")
		}
	} else {
		p := filepath.Join(ws, filepath.FromSlash(in.contract))
		if data, err = os.ReadFile(p); err != nil {
			return finish(fail(ExitUsage, "contract %s: %w", in.contract, err))
		}
	}
	res.ContractOrigin = origin
	s.origin = origin
	c, err := contract.Parse(in.contract, data, in.profile)
	if err != nil {
		return finish(fail(ExitUsage, "%w", err))
	}
	s.contract = c

	r, err := run.Plan(ctx, run.PlanOptions{RepoDir: ws, StateDir: stateDir, Contract: c, Origin: origin, Repo: repoFull})
	if err != nil {
		var de *run.DirtyError
		if errors.As(err, &de) {
			return finish(fail(ExitUsage, "plan: %w (the checkout must be clean)", err))
		}
		return finish(fail(ExitEnv, "plan: %w", err))
	}
	closed := false
	closeRun := func() {
		if !closed {
			closed = true
			r.Close()
		}
	}
	defer closeRun()
	res.RunID = r.ID
	f.output("run-id", r.ID)
	f.logf("proofgate: run %s planned, %d checks, contract %s", r.ID, len(c.Checks), origin)

	rts, unavailable, closeRts := o.Runtimes(ctx, c)
	defer closeRts()
	err = r.Exec(ctx, run.ExecOptions{RepoDir: ws, StateDir: stateDir, Runtimes: rts, Unavailable: unavailable, Jobs: in.jobs, Progress: o.Stdout})
	rep := r.Report()
	s.report = rep
	res.State, res.VerificationDigest = rep.State, rep.VerificationDigest
	if err != nil {
		return finish(fail(ExitEnv, "execute: %w", err))
	}
	showChecks(f, r.Dir, rep)
	if rep.VerificationDigest != "" {
		f.output("verification-digest", rep.VerificationDigest)
	}

	code := ExitOK
	switch rep.State {
	case run.AwaitingApproval:
		code = approve(ctx, f, s, res, r, ev, gh, owner, name, ws, stateDir, in)
	case run.Complete:
		s.notes = append(s.notes, "The contract requires no approval (approval.required: 0).")
	default:
		code = ExitRefused
	}
	rep = r.Report()
	s.report = rep
	res.State = rep.State
	f.output("state", string(rep.State))

	if rep.State == run.Complete {
		closeRun()
		if code, err = publish(ctx, f, s, res, r.Dir, stateDir, ws, ev, signer, in, o.Getenv); err != nil {
			return finish(&Error{code, err})
		}
	}
	res.Code = code
	return res, nil
}

// approve reads the review state and records counted approvals. It returns
// the exit code for a run that stays AWAITING_APPROVAL (per on-pending) or
// ExitOK once COMPLETE.
func approve(ctx context.Context, f *workflow, s *summary, res *Result, r *run.Run, ev *event.Context, gh *github.Client,
	owner, name, ws, stateDir string, in inputs) int {
	pending := func(why string) int {
		s.pending = why
		if in.onPending == "neutral" {
			f.annotate("notice", "ProofGate awaiting approval", why)
			return ExitOK
		}
		f.annotate("error", "ProofGate awaiting approval", why)
		return ExitAwaiting
	}
	if gh == nil && ev.IsPullRequest() {
		s.failure = "input github-token is empty: the review state cannot be read"
		f.annotate("error", "ProofGate", s.failure)
		return ExitUsage
	}
	pr, head := ev.PR, ev.HeadSHA
	switch {
	case ev.IsPullRequest() && pr != 0 && head != "":
	case ev.Name == "push" && gh == nil:
		return pending("approval comes from pull-request reviews, and without input github-token this push run cannot find the pull request merged into it")
	case ev.Name == "push":
		// A push of a merge commit (the default branch after a merge):
		// the reviews of the pull request GitHub records as merged into
		// exactly this commit decide, under the same rules as on the PR.
		commit := r.Report().Source.Commit
		m, err := review.FindMerged(ctx, gh, owner, name, commit)
		if errors.Is(err, review.ErrNotMerged) {
			return pending(fmt.Sprintf("approval comes from pull-request reviews, and no single pull request was merged into %s (a direct push)", short(commit)))
		}
		if err != nil {
			s.failure = "finding the merged pull request failed: " + err.Error()
			f.annotate("error", "ProofGate GitHub API", s.failure)
			return ExitEnv
		}
		pr, head = m.Number, m.Head
		s.notes = append(s.notes, fmt.Sprintf("This push run takes its approvals from pull request #%d, merged into %s: reviews of its head %s count.", pr, code(short(commit)), code(short(head))))
	default:
		return pending(fmt.Sprintf("approval comes from pull-request reviews, and this %s run is not about a pull request", ev.Name))
	}
	dec, err := review.Decide(ctx, gh, owner, name, pr, head, r.Contract.Approval)
	res.Decision = &dec
	s.decision = &dec
	var moved *review.HeadMovedError
	switch {
	case errors.As(err, &moved):
		return pending(fmt.Sprintf("the pull request head moved to %s while the checks ran; the run for the new head decides", short(moved.Got)))
	case err != nil:
		s.failure = "reading the review state failed: " + err.Error()
		f.annotate("error", "ProofGate GitHub API", s.failure)
		return ExitEnv
	case !dec.Satisfied:
		return pending(dec.Summary)
	}

	tree := commitTree(ctx, ws, gh, owner, name, head)
	fresh := run.Freshness{RepoDir: ws, StateDir: stateDir}
	for _, a := range dec.Counted {
		if r.State() != run.AwaitingApproval {
			break
		}
		err := r.Decide(ctx, run.DecisionOptions{
			Actor: a.Login,
			GitHub: &run.GitHubReview{
				Login: a.Login, UserID: a.UserID, ReviewID: a.ReviewID, Commit: a.Commit, Tree: tree,
				Permission: a.Permission, SubmittedAt: a.SubmittedAt.UTC().Format("2006-01-02T15:04:05Z"), PullRequest: pr,
			},
			Fresh: fresh,
		})
		if err != nil {
			s.failure = fmt.Sprintf("recording the approval of %s was refused: %v", a.Login, err)
			f.annotate("error", "ProofGate approval refused", s.failure)
			return ExitRefused
		}
		res.Recorded++
	}
	if r.State() != run.Complete {
		return pending(fmt.Sprintf("%d approval(s) recorded, the run is %s", res.Recorded, r.State()))
	}
	return ExitOK
}

// publish exports the bundle of a COMPLETE run and uploads it.
func publish(ctx context.Context, f *workflow, s *summary, res *Result, runDir, stateDir, ws string, ev *event.Context,
	signer envelope.Signer, in inputs, getenv func(string) string) (int, error) {
	if signer == nil {
		if ev.Fork {
			s.pending = "the run is COMPLETE, but a fork pull request run has no signing key: no bundle was exported"
			f.annotate("warning", "ProofGate unsigned", s.pending)
			if in.onPending == "neutral" {
				return ExitOK, nil
			}
			return ExitAwaiting, nil
		}
		return ExitUsage, errors.New("the run is COMPLETE but input signing-key is empty: set it to ${{ secrets.PROOFGATE_SIGNING_KEY }} (see docs/action.md)")
	}
	// Next to the run directories: the planner leaves <state>/runs out of the
	// work-tree digest, so a bundle never makes a later run's checkout dirty.
	dir := filepath.Join(stateDir, "runs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return ExitEnv, fmt.Errorf("bundle directory: %w", err)
	}
	out := filepath.Join(dir, res.RunID+".bundle.tar.gz")
	x, err := bundle.ExportFile(runDir, out, signer, bundle.ExportOptions{})
	if err != nil {
		var xe *bundle.ExportError
		if errors.As(err, &xe) {
			return ExitRefused, fmt.Errorf("export: %w", err)
		}
		return ExitEnv, fmt.Errorf("export: %w", err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return ExitEnv, err
	}
	sum := sha256.Sum256(b)
	res.BundleSHA256 = "sha256:" + hex.EncodeToString(sum[:])
	s.export, s.bundleSHA256 = x, res.BundleSHA256
	// Outputs name paths as later steps see them: relative to the workspace.
	res.BundlePath = out
	if rel, err := filepath.Rel(ws, out); err == nil && !strings.HasPrefix(rel, "..") {
		res.BundlePath = filepath.ToSlash(rel)
	}
	f.output("bundle-path", res.BundlePath)
	f.logf("proofgate: exported %s (%d bytes, %s, key %s)", res.BundlePath, x.Size, res.BundleSHA256, x.KeyID)

	name := in.artifactName
	if name == "" {
		head := ev.HeadSHA
		if head == "" {
			head = getenv("GITHUB_SHA")
		}
		if head == "" {
			head = s.report.Source.Commit
		}
		name = ArtifactPrefix + head
	}
	res.ArtifactName = name
	s.artifactName = name
	tok, results := getenv("ACTIONS_RUNTIME_TOKEN"), getenv("ACTIONS_RESULTS_URL")
	if tok == "" || results == "" {
		if getenv("GITHUB_ACTIONS") == "true" {
			return ExitEnv, errors.New("ACTIONS_RUNTIME_TOKEN or ACTIONS_RESULTS_URL is missing: the artifact service is unavailable (is the runner older than artifact v4 support?)")
		}
		f.logf("proofgate: not in GitHub Actions: bundle not uploaded")
		return ExitOK, nil
	}
	id, err := artifact.Upload(ctx, tok, results, name, map[string][]byte{filepath.Base(out): b})
	if err != nil {
		return ExitEnv, fmt.Errorf("upload artifact %s: %w", name, err)
	}
	res.ArtifactID = id
	s.artifactID = id
	f.output("artifact-id", strconv.FormatInt(id, 10))
	return ExitOK, nil
}

// commitTree returns the tree of commit sha: from git when the checkout has
// the commit, else from the REST API, else "" (unknown).
func commitTree(ctx context.Context, ws string, gh *github.Client, owner, name, sha string) string {
	if !event.IsHexSHA(sha) {
		return ""
	}
	if t, err := gitTree(ctx, ws, sha); err == nil {
		return t
	}
	if gh == nil {
		return ""
	}
	var c struct {
		Tree struct {
			SHA string `json:"sha"`
		} `json:"tree"`
	}
	if _, err := ghapi.Get(ctx, gh, fmt.Sprintf("repos/%s/%s/git/commits/%s", url.PathEscape(owner), url.PathEscape(name), sha), &c); err != nil || !event.IsHexSHA(c.Tree.SHA) {
		return ""
	}
	return c.Tree.SHA
}

func gitTree(ctx context.Context, ws, sha string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", "-c", "safe.directory="+ws, "-C", ws, "rev-parse", "--verify", "--quiet", sha+"^{tree}")
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_NO_REPLACE_OBJECTS=1")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git rev-parse %s^{tree}: %w", sha, err)
	}
	t := strings.TrimSpace(string(out))
	if !event.IsHexSHA(t) {
		return "", fmt.Errorf("git rev-parse %s^{tree}: unexpected %q", sha, t)
	}
	return t, nil
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
