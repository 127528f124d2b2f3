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
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"

	"github.com/google/go-github/v62/github"
	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/archive"
	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/key"
	"github.com/proofgate/proofgate/internal/app"
	"github.com/proofgate/proofgate/internal/bounded"
	"github.com/proofgate/proofgate/internal/ci/artifact"
	"github.com/proofgate/proofgate/internal/ci/event"
	"github.com/proofgate/proofgate/internal/ci/ghapi"
	"github.com/proofgate/proofgate/internal/ci/jobsummary"
	"github.com/proofgate/proofgate/internal/ci/keyless"
	"github.com/proofgate/proofgate/internal/ci/review"
	"github.com/proofgate/proofgate/internal/ci/shardjob"
	"github.com/proofgate/proofgate/internal/ci/status"
	"github.com/proofgate/proofgate/internal/progress"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/internal/shard"
	"github.com/proofgate/proofgate/internal/source"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/exit"
	"github.com/proofgate/proofgate/kernel/replay"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// Exit codes, one per class of kernel/exit, as the CLI defines them.
const (
	ExitOK       = exit.OK
	ExitRefused  = int(exit.Refused)     // a check failed, a verification was refused
	ExitUsage    = int(exit.Usage)       // bad input: contract, inputs, key
	ExitAwaiting = int(exit.Awaiting)    // awaiting approval (on-pending: fail)
	ExitEnv      = int(exit.Environment) // environment: no Docker, GitHub API unreachable, no artifact service
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

// usage is a failure of the job's input (exit.Usage).
func usage(format string, args ...any) error {
	return exit.Wrap(exit.Usage, fmt.Errorf(format, args...))
}

// environment is a failure of what the job runs on (exit.Environment).
func environment(format string, args ...any) error {
	return exit.Wrap(exit.Environment, fmt.Errorf(format, args...))
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
	State              replay.State
	VerificationDigest string
	ContractOrigin     string
	ContractChanged    bool
	Fork               bool
	Decision           *review.Decision
	// Recorded is how many approvals were recorded through the kernel.
	Recorded     int
	BundlePath   string
	SigstorePath string // the companion Sigstore bundle
	BundleSHA256 string
	Signer       string // keyless: the certificate's identity
	ArtifactName string
	ArtifactID   int64
	// AttestationID is the id GitHub's attestation store gave the
	// companion (input attest), 0 when not stored.
	AttestationID int64
	// Products are the run's products (ADR 0039), written to ProductsDir
	// (relative to the workspace) and uploaded as ProductsArtifact.
	Products         []bundle.ProductVerdict
	ProductsDir      string
	ProductsArtifact string
	// StatusPosted is the state of the last status posted ("" for none).
	StatusPosted string
	// Imported is true when the review job imported the pull_request
	// job's verified run instead of re-running the checks; FastPathRefusal
	// says why it did not (a handoff.Reason), "" when it did or never tried.
	Imported        bool
	FastPathRefusal string
	// ShardRefusal is why a plan, shard or merge job refused (a
	// shardjob.Reason), "" when it did not.
	ShardRefusal string
	// QueueRefusal is why a merge group run was not linked to its pull
	// request (a review.QueueReason), "" when it was or is not a merge group.
	QueueRefusal string
	// Outputs are the step outputs set.
	Outputs map[string]string
}

// DefaultRuntimes connects the process provider and, when a check needs it,
// the Docker provider through the daemon named by the environment (inside a
// container action: the host's socket mounted at /var/run/docker.sock). It
// collects no garbage: from inside a container no harness can be proved
// dead (app.ConnectOptions).
func DefaultRuntimes(ctx context.Context, c *contract.Resolved) (map[string]runtime.Runtime, map[string]string, func()) {
	rts := app.Connect(ctx, c, app.ConnectOptions{})
	unavailable := map[string]string{}
	if err := rts.Unavailable["docker"]; err != nil {
		unavailable["docker"] = fmt.Sprintf("no Docker daemon (is /var/run/docker.sock mounted?): %v", err)
	}
	return rts.Providers, unavailable, rts.Close
}

type inputs struct {
	contract, profile, signingKey, token, artifactName, onPending, stateDir string
	jobs                                                                    int
	signing                                                                 signingInputs
	trustedRoot                                                             string // keyless hand-off: trusted root path at the base commit
	mode                                                                    string // input mode: run, plan or merge (shard.go)
	shard                                                                   *shard.Spec
	attest                                                                  bool // input attest (attest.go)
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
		trustedRoot:  f.input("trusted-root"),
	}
	// Mask before anything else can print them.
	f.mask(in.signingKey)
	f.mask(in.token)
	f.mask(f.getenv("ACTIONS_RUNTIME_TOKEN"))
	f.mask(f.getenv(idTokenTokenEnv))
	var err error
	if in.signing, err = readSigning(f); err != nil {
		return in, err
	}
	switch {
	case in.signing.mode == SigningKeyless && in.signingKey != "":
		return in, errors.New("input signing-key is set but input signing is keyless: a keyless bundle is signed by an ephemeral key Fulcio certifies; remove signing-key (or set signing: key)")
	case in.signing.mode == SigningKey && in.signingKey == "":
		in.signingKey = strings.TrimSpace(f.getenv(SigningKeyEnv))
		f.mask(in.signingKey)
	}
	if in.contract == "" {
		in.contract = DefaultContract
	}
	if !event.CleanRel(in.contract) {
		return in, fmt.Errorf("input contract: %q is not a clean path relative to the repository root", in.contract)
	}
	if in.attest, err = readAttest(f, in.signing.mode == SigningKeyless); err != nil {
		return in, err
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
	if err := readShardInputs(f, &in); err != nil {
		return in, err
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

// Run is `proofgate action`. It always returns a Result whose Code is the
// job's exit code; err explains a failure (Code 1, 2 or 4).
func Run(ctx context.Context, o Options) (*Result, error) {
	o.fill()
	f := newWorkflow(o.Getenv, o.Stdout)
	j := &job{o: &o, f: f, s: &jobsummary.Run{}, res: &Result{Outputs: f.outputs}}
	defer func() { f.summary(j.s.Markdown()) }()
	code, err := j.run(ctx)
	if err != nil {
		res, err := j.finish(err)
		j.reportFinal(ctx)
		return res, err
	}
	j.res.Code = code
	j.reportFinal(ctx)
	return j.res, nil
}

// job is one `proofgate action`: what it read and what it has done, for
// the steps of Run.
type job struct {
	o   *Options
	f   *workflow
	s   *jobsummary.Run
	res *Result

	in                inputs
	ev                *event.Context
	repo, owner, name string // GITHUB_REPOSITORY and its parts
	ws, stateDir      string
	gh                *github.Client  // nil without input github-token
	signer            envelope.Signer // nil without input signing-key (and in keyless mode)
	keyless           bool            // input signing: keyless
	c                 *contract.Resolved
	r                 *run.Run
	closed            bool
	statusMode        string               // input status
	wrun              shardjob.WorkflowRun // sharded runs: GITHUB_RUN_ID and GITHUB_RUN_ATTEMPT
}

// run plans, executes and decides the run, and publishes it once
// COMPLETE. It returns the job's exit code, or an error of a class.
func (j *job) run(ctx context.Context) (int, error) {
	if err := j.setup(ctx); err != nil {
		return 0, err
	}
	if err := j.loadContract(ctx); err != nil {
		return 0, err
	}
	if err := j.checkMergeGroup(ctx); err != nil {
		return 0, err
	}
	if j.in.mode != ModeRun || j.in.shard != nil {
		return j.runSharded(ctx)
	}
	imported := j.tryFastPath(ctx)
	if !imported {
		j.report(ctx, status.Pending, "running the checks of the base contract")
		if err := j.plan(ctx); err != nil {
			return 0, err
		}
	}
	defer j.closeRun()
	if !imported {
		rts, unavailable, closeRts := j.o.Runtimes(ctx, j.c)
		defer closeRts()
		if err := j.execute(ctx, rts, unavailable); err != nil {
			return 0, err
		}
	}
	return j.decide(ctx)
}

// decide counts approvals of the executed (or imported, or merged) run in
// j.r, hands an AWAITING_APPROVAL pull_request run off, and publishes a
// COMPLETE one.
func (j *job) decide(ctx context.Context) (int, error) {
	code := ExitOK
	switch j.s.Report.State {
	case replay.AwaitingApproval:
		code = j.approve(ctx)
	case replay.Complete:
		j.s.Notes = append(j.s.Notes, "The contract requires no approval (approval.required: 0).")
	default:
		code = ExitRefused
	}
	rep := j.r.Report()
	j.s.Report = rep
	j.res.State = rep.State
	j.f.output("state", string(rep.State))
	if rep.State == replay.AwaitingApproval {
		j.handoff(ctx)
	}
	if rep.State != replay.Complete {
		return code, nil
	}
	j.closeRun()
	return j.publish(ctx)
}

// finish ends a failed job: the exit code of err's class (an unclassified
// error is the environment's), the summary, an annotation and the state.
func (j *job) finish(err error) (*Result, error) {
	var ae *exit.Error
	if !errors.As(err, &ae) {
		ae = exit.Wrap(exit.Environment, err)
	}
	j.res.Code = ae.Class.Code()
	j.s.Failure = ae.Err.Error()
	j.f.annotate("error", "ProofGate", ae.Err.Error())
	if j.res.State != "" {
		j.f.output("state", string(j.res.State))
	}
	return j.res, ae
}

// setup reads the inputs, the event, the repository, the signing key, the
// workspace and the GitHub client.
func (j *job) setup(ctx context.Context) error {
	var err error
	if j.in, err = readInputs(j.f); err != nil {
		return exit.Wrap(exit.Usage, err)
	}
	if j.ev, err = event.Load(j.o.Getenv); err != nil {
		return usage("event context: %w", err)
	}
	j.s.Event = j.ev
	j.res.Fork = j.ev.Fork
	j.repo = j.o.Getenv("GITHUB_REPOSITORY")
	if j.repo == "" {
		j.repo = j.ev.Repository
	}
	var ok bool
	if j.owner, j.name, ok = event.SplitRepo(j.repo); !ok {
		return usage("GITHUB_REPOSITORY %q is not owner/name", j.repo)
	}
	j.s.Repo = j.repo
	if err := j.loadSigner(); err != nil {
		return err
	}
	if j.ws, err = workspace(ctx, j.o); err != nil {
		return exit.Wrap(exit.Usage, err)
	}
	j.stateDir = j.in.stateDir
	if !filepath.IsAbs(j.stateDir) {
		j.stateDir = filepath.Join(j.ws, j.stateDir)
	}
	if j.in.token != "" {
		if j.gh, err = ghapi.NewClient(ctx, j.in.token, j.o.Getenv("GITHUB_API_URL")); err != nil {
			return usage("github client: %w", err)
		}
	}
	if j.statusMode, err = readStatusMode(j.f); err != nil {
		return exit.Wrap(exit.Usage, err)
	}
	return nil
}

// loadSigner parses input signing-key; without one, it says why no bundle
// will be exported.
func (j *job) loadSigner() error {
	if j.in.signing.mode == SigningKeyless {
		j.keyless = true
		j.keylessReady()
		return nil
	}
	switch {
	case j.in.signingKey != "":
		pk, err := key.ParsePrivate([]byte(j.in.signingKey), "input signing-key")
		if err != nil {
			return exit.Wrap(exit.Usage, err)
		}
		if j.signer, err = key.NewSigner(pk); err != nil {
			return usage("input signing-key: %w", err)
		}
	case j.ev.Fork:
		j.s.Notes = append(j.s.Notes, "This pull request comes from a fork: GitHub gives fork runs no secrets and a read-only token, so there is no signing key. The checks run and the review state is read, but no signed bundle can be exported for this head; a release gate will find no evidence for it.")
		j.f.annotate("warning", "ProofGate fork pull request", "no signing key in a fork PR run: checks run, but no signed evidence bundle will be exported")
	default:
		j.f.annotate("warning", "ProofGate no signing key", "input signing-key is empty (and "+SigningKeyEnv+" unset): a COMPLETE run cannot be exported")
	}
	return nil
}

// loadContract reads and resolves the contract: the base commit's on
// pull-request events, so a PR cannot relax the rules that govern it.
func (j *job) loadContract(ctx context.Context) error {
	data, origin, err := j.contractData(ctx)
	if err != nil {
		return err
	}
	j.res.ContractOrigin = origin
	j.s.Origin = origin
	if j.c, err = contract.Parse(j.in.contract, data, j.in.profile); err != nil {
		return exit.Wrap(exit.Usage, err)
	}
	j.s.Contract = j.c
	return nil
}

// contractData returns the contract's bytes and origin.
func (j *job) contractData(ctx context.Context) ([]byte, string, error) {
	path := j.in.contract
	local := filepath.Join(j.ws, filepath.FromSlash(path))
	if (!j.ev.IsPullRequest() && j.ev.MergeGroup == nil) || j.ev.BaseSHA == "" {
		data, err := bounded.ReadFile(local, contract.MaxFileSize) // a committed link to /dev/zero is refused
		if err != nil {
			return nil, "", usage("contract %s: %w", path, err)
		}
		return data, "file:" + filepath.ToSlash(path), nil
	}
	base := j.ev.BaseSHA
	data, err := event.ContractAt(ctx, j.ws, j.gh, j.owner, j.name, base, path)
	if errors.Is(err, event.ErrNotInBase) {
		return nil, "", usage("the base commit %s has no %s: a pull request runs under its base branch's contract, so add the contract on the base branch first", event.ShortSHA(base), path)
	}
	if err != nil {
		return nil, "", environment("read the base contract: %w", err)
	}
	changed, err := event.ContractChanged(data, local)
	if err != nil {
		return nil, "", environment("compare the contract with the base: %w", err)
	}
	j.res.ContractChanged = changed
	if changed {
		j.s.Notes = append(j.s.Notes, fmt.Sprintf("This pull request changes %s. The run used the base branch's version (commit %s); the change takes effect once merged, and a release of the merged commit needs a run under it (see docs/action.md).", jobsummary.Code(path), jobsummary.Code(event.ShortSHA(base))))
		j.f.annotate("notice", "ProofGate contract changed", "this pull request changes "+path+"; the checks ran under the base branch's contract")
	}
	return data, "git:" + base + ":" + path, nil
}

// plan plans the run; a dirty checkout is bad input.
func (j *job) plan(ctx context.Context) error {
	r, err := run.Plan(ctx, run.PlanOptions{RepoDir: j.ws, StateDir: j.stateDir, Contract: j.c, Origin: j.res.ContractOrigin, Repo: j.repo})
	if err != nil {
		var de *run.DirtyError
		if errors.As(err, &de) {
			return usage("plan: %w (the checkout must be clean)", err)
		}
		return environment("plan: %w", err)
	}
	j.r = r
	j.res.RunID = r.ID
	j.f.output("run-id", r.ID)
	j.f.logf("proofgate: run %s planned, %d checks, contract %s", r.ID, len(j.c.Checks), j.res.ContractOrigin)
	return nil
}

// closeRun releases the run's writer lock, once.
func (j *job) closeRun() {
	if !j.closed {
		j.closed = true
		j.r.Close()
	}
}

// execute runs the checks and reports them.
func (j *job) execute(ctx context.Context, rts map[string]runtime.Runtime, unavailable map[string]string) error {
	hb, err := progress.Heartbeat(j.o.Getenv)
	if err != nil {
		return usage("%w", err)
	}
	caches, err := j.cacheStore()
	if err != nil {
		return err
	}
	err = j.r.Exec(ctx, run.ExecOptions{RepoDir: j.ws, StateDir: j.stateDir, Runtimes: rts, Unavailable: unavailable, Jobs: j.in.jobs,
		Progress: progress.NewText(j.o.Stdout), Heartbeat: hb, Caches: caches})
	rep := j.r.Report()
	j.s.Report = rep
	j.res.State, j.res.VerificationDigest = rep.State, rep.VerificationDigest
	if err != nil {
		return environment("execute: %w", err)
	}
	showChecks(j.f, j.r.Dir, rep)
	if rep.VerificationDigest != "" {
		j.f.output("verification-digest", rep.VerificationDigest)
	}
	return nil
}

// approve reads the review state and records counted approvals. It returns
// the exit code for a run that stays AWAITING_APPROVAL (per on-pending) or
// ExitOK once COMPLETE.
func (j *job) approve(ctx context.Context) int {
	if j.gh == nil && j.ev.IsPullRequest() {
		return j.failed("ProofGate", exit.Usage, "input github-token is empty: the review state cannot be read")
	}
	t, code := j.reviewed(ctx)
	if t == nil {
		return code
	}
	dec, err := review.DecideWith(ctx, j.gh, j.owner, j.name, t.pr, t.head, j.r.Contract.Approval, review.Options{AgentSession: agentFetcher{j: j, pin: j.r.Contract.Approval.AgentSessions}})
	j.res.Decision = &dec
	j.s.Decision = &dec
	var moved *review.HeadMovedError
	switch {
	case errors.As(err, &moved):
		return j.pending(fmt.Sprintf("the pull request head moved to %s while the checks ran; the run for the new head decides", event.ShortSHA(moved.Got)))
	case err != nil:
		return j.failed("ProofGate GitHub API", exit.Environment, "reading the review state failed: "+err.Error())
	case !dec.Satisfied:
		return j.pending(dec.Summary)
	}
	return j.record(ctx, &dec, t)
}

// reviewTarget is the pull request whose reviews decide, and its head.
type reviewTarget struct {
	pr   int
	head string
}

// reviewed returns the pull request whose reviews decide, or nil and the
// exit code when there is none.
func (j *job) reviewed(ctx context.Context) (*reviewTarget, int) {
	ev := j.ev
	switch {
	case ev.IsPullRequest() && ev.PR != 0 && ev.HeadSHA != "":
		return &reviewTarget{ev.PR, ev.HeadSHA}, ExitOK
	case ev.MergeGroup != nil:
		return j.queued(ctx)
	case ev.Name == "push" && j.gh == nil:
		return nil, j.pending("approval comes from pull-request reviews, and without input github-token this push run cannot find the pull request merged into it")
	case ev.Name == "push":
		// A push of a merge commit (the default branch after a merge):
		// the reviews of the pull request GitHub records as merged into
		// exactly this commit decide, under the same rules as on the PR.
		commit := j.r.Report().Source.Commit
		m, err := review.FindMerged(ctx, j.gh, j.owner, j.name, commit)
		if errors.Is(err, review.ErrNotMerged) {
			return nil, j.pending(fmt.Sprintf("approval comes from pull-request reviews, and no single pull request was merged into %s (a direct push)", event.ShortSHA(commit)))
		}
		if err != nil {
			return nil, j.failed("ProofGate GitHub API", exit.Environment, "finding the merged pull request failed: "+err.Error())
		}
		j.s.Notes = append(j.s.Notes, fmt.Sprintf("This push run takes its approvals from pull request #%d, merged into %s: reviews of its head %s count.", m.Number, jobsummary.Code(event.ShortSHA(commit)), jobsummary.Code(event.ShortSHA(m.Head))))
		return &reviewTarget{m.Number, m.Head}, ExitOK
	}
	return nil, j.pending(fmt.Sprintf("approval comes from pull-request reviews, and this %s run is not about a pull request", ev.Name))
}

// record records the counted approvals of dec through the kernel.
func (j *job) record(ctx context.Context, dec *review.Decision, t *reviewTarget) int {
	tree := event.CommitTree(ctx, j.ws, j.gh, j.owner, j.name, t.head)
	fresh := run.Freshness{RepoDir: j.ws, StateDir: j.stateDir}
	// With approval rules every credited approval is recorded (held until
	// the last): the decision then proves each rule the evaluation found
	// satisfied, even when approval.required is lower than the approvers.
	all := dec.Rules != nil
	for i, a := range dec.Counted {
		if j.r.State() != replay.AwaitingApproval {
			break
		}
		err := j.r.Decide(ctx, run.DecisionOptions{
			Hold:  all && i < len(dec.Counted)-1,
			Actor: a.Login,
			GitHub: &replay.GitHubReview{
				Login: a.Login, UserID: a.UserID, ReviewID: a.ReviewID, Commit: a.Commit, Tree: tree,
				Permission: a.Permission, SubmittedAt: a.SubmittedAt.UTC().Format("2006-01-02T15:04:05Z"), PullRequest: t.pr,
				Rules: a.Rules,
			},
			Fresh: fresh,
		})
		if err != nil {
			return j.failed("ProofGate approval refused", exit.Refused, fmt.Sprintf("recording the approval of %s was refused: %v", a.Login, err))
		}
		j.res.Recorded++
	}
	if j.r.State() != replay.Complete {
		return j.pending(fmt.Sprintf("%d approval(s) recorded, the run is %s", j.res.Recorded, j.r.State()))
	}
	return ExitOK
}

// pending reports a run still awaiting approval, and returns the exit code
// on-pending asks for.
func (j *job) pending(why string) int {
	j.s.Pending = why
	if j.in.onPending == "neutral" {
		j.f.annotate("notice", "ProofGate awaiting approval", why)
		return ExitOK
	}
	j.f.annotate("error", "ProofGate awaiting approval", why)
	return ExitAwaiting
}

// failed reports a failure of class c that ends the job without an error
// of Run, and returns its exit code.
func (j *job) failed(title string, c exit.Class, msg string) int {
	j.s.Failure = msg
	j.f.annotate("error", title, msg)
	return c.Code()
}

// publish exports the bundle of a COMPLETE run and uploads it.
func (j *job) publish(ctx context.Context) (int, error) {
	if j.keyless && j.ev.Fork && j.o.Getenv(idTokenURLEnv) == "" {
		return j.unsignedFork("a fork pull request run has no OIDC token"), nil
	}
	if j.signer == nil && !j.keyless {
		if j.ev.Fork {
			return j.unsignedFork("a fork pull request run has no signing key"), nil
		}
		return 0, usage("the run is COMPLETE but input signing-key is empty: set it to ${{ secrets.PROOFGATE_SIGNING_KEY }} (see docs/action.md)")
	}
	files, err := j.export(ctx)
	if err != nil {
		return 0, err
	}
	code, err := j.upload(ctx, files)
	if err == nil {
		j.attest(ctx, files[artifact.CompanionName(j.res.RunID+".bundle.tar.gz")])
	}
	return code, err
}

// unsignedFork ends a COMPLETE fork run that cannot sign (why), per
// on-pending.
func (j *job) unsignedFork(why string) int {
	j.s.Pending = "the run is COMPLETE, but " + why + ": no bundle was exported"
	j.f.annotate("warning", "ProofGate unsigned", j.s.Pending)
	if j.in.onPending == "neutral" {
		return ExitOK
	}
	return ExitAwaiting
}

// export writes the signed bundle and its companion Sigstore bundle, and
// returns the artifact's files by name.
func (j *job) export(ctx context.Context) (map[string][]byte, error) {
	o, err := j.exportOptions(ctx)
	if err != nil {
		return nil, err
	}
	x, err := app.Export(o)
	if err != nil {
		// A run that may not be exported is refused; the rest is the
		// environment's.
		c, ok := exit.Of(err)
		if !ok {
			c = exit.Environment
		}
		return nil, exit.Wrap(c, fmt.Errorf("export: %w", err))
	}
	b, err := bounded.ReadFile(o.Out, archive.DefaultLimits.MaxTotalSize)
	if err != nil {
		return nil, environment("read the bundle back: %w", err)
	}
	j.res.BundleSHA256 = "sha256:" + x.SHA256
	j.s.Export, j.s.BundleSHA256 = x.ExportResult, j.res.BundleSHA256
	// Outputs name paths as later steps see them: relative to the workspace.
	j.res.BundlePath, j.res.SigstorePath = j.rel(o.Out), j.rel(o.Sigstore)
	j.f.output("bundle-path", j.res.BundlePath)
	j.f.output("sigstore-path", j.res.SigstorePath)
	j.f.output("bundle-sha256", j.res.BundleSHA256)
	if err := j.writeProducts(x.ExportResult); err != nil {
		return nil, err
	}
	signedBy := "key " + x.KeyID
	if j.keyless {
		if j.res.Signer, err = keyless.CertificateIdentity(x.Sigstore); err != nil {
			return nil, environment("keyless material: %w", err)
		}
		j.s.Signer = j.res.Signer
		j.f.output("signer", j.res.Signer)
		signedBy = "certificate for " + j.res.Signer
	}
	j.f.logf("proofgate: exported %s (%d bytes, %s, %s) and %s", j.res.BundlePath, x.Size, j.res.BundleSHA256, signedBy, j.res.SigstorePath)
	return map[string][]byte{filepath.Base(o.Out): b, filepath.Base(o.Sigstore): x.Sigstore}, nil
}

// exportOptions says where the run's bundle goes and who signs it: the
// job's key, or (keyless) an ephemeral key certified for the job's OIDC
// token.
func (j *job) exportOptions(ctx context.Context) (app.ExportOptions, error) {
	o := app.ExportOptions{RunDir: j.r.Dir, Key: j.signer}
	if j.keyless {
		ms, err := j.keylessSigner(ctx)
		if err != nil {
			return o, err
		}
		o.Key, o.Keyless = nil, ms
	}
	// Next to the run directories: the planner leaves <state>/runs out of the
	// work-tree digest, so a bundle never makes a later run's checkout dirty.
	dir := filepath.Join(j.stateDir, "runs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return o, environment("bundle directory: %w", err)
	}
	o.Out = filepath.Join(dir, j.res.RunID+".bundle.tar.gz")
	o.Sigstore = filepath.Join(dir, artifact.CompanionName(filepath.Base(o.Out)))
	return o, nil
}

// rel names p relative to the workspace when it lies inside it.
func (j *job) rel(p string) string {
	if rel, err := filepath.Rel(j.ws, p); err == nil && !strings.HasPrefix(rel, "..") {
		return filepath.ToSlash(rel)
	}
	return p
}

// upload uploads the bundle and its companion (files by name) as the workflow
// artifact.
func (j *job) upload(ctx context.Context, files map[string][]byte) (int, error) {
	getenv := j.o.Getenv
	name := j.in.artifactName
	if name == "" {
		head := j.ev.HeadSHA
		if head == "" {
			head = getenv("GITHUB_SHA")
		}
		if head == "" {
			head = j.s.Report.Source.Commit
		}
		name = ArtifactPrefix + head
	}
	j.res.ArtifactName = name
	j.s.ArtifactName = name
	tok, results := getenv("ACTIONS_RUNTIME_TOKEN"), getenv("ACTIONS_RESULTS_URL")
	if tok == "" || results == "" {
		if getenv("GITHUB_ACTIONS") == "true" {
			return 0, environment("ACTIONS_RUNTIME_TOKEN or ACTIONS_RESULTS_URL is missing: the artifact service is unavailable (is the runner older than artifact v4 support?)")
		}
		j.f.logf("proofgate: not in GitHub Actions: bundle not uploaded")
		return ExitOK, nil
	}
	id, err := uploadArtifact(ctx, j.f, tok, results, name, files)
	if err != nil {
		return 0, environment("upload artifact %s: %w", name, err)
	}
	j.res.ArtifactID = id
	j.s.ArtifactID = id
	j.f.output("artifact-id", strconv.FormatInt(id, 10))
	if err := j.uploadProducts(ctx, tok, results, name); err != nil {
		return 0, err
	}
	return ExitOK, nil
}
