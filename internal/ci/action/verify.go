package action

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/trust"
	"github.com/proofgate/proofgate/internal/app"
	"github.com/proofgate/proofgate/internal/bounded"
	"github.com/proofgate/proofgate/internal/ci/artifact"
	"github.com/proofgate/proofgate/internal/ci/event"
	"github.com/proofgate/proofgate/internal/ci/gate"
	"github.com/proofgate/proofgate/internal/ci/ghapi"
	"github.com/proofgate/proofgate/internal/ci/jobsummary"
	"github.com/proofgate/proofgate/internal/ci/keyless"
	"github.com/proofgate/proofgate/kernel/exit"
	"github.com/proofgate/proofgate/kernel/replay"
)

// DefaultTrustStore is the trust-store input's default.
const DefaultTrustStore = ".proofgate/trust.json"

// The values of input match.
const (
	verifyMatchTree   = "tree"
	verifyMatchCommit = "commit"
)

// verdict is embedded in VerifyResult under a name that leaves its
// members (Verdict, Reason, Detail, RunID, …) promoted.
type verdict = bundle.Verdict

// VerifyResult is what Verify decided: the verdict, the same document
// `proofgate bundle verify --json` prints (Verdict, Reason, Detail, RunID
// and, once accepted, what was accepted), and how the gate found it.
// Commit and Tree name the release commit; the accepted run's are in
// Accepted (and BundleVerdict).
type VerifyResult struct {
	Code int
	verdict
	Commit string // the release commit
	Match  string // commit | tree
	Tree   string // the release commit's tree when matching by tree
	// Contract is the hash of the contract the run had to use: the
	// contract file at the release commit, resolved with the profile.
	Contract string
	Accepted *bundle.Result
	// Signer and Witnessed are, for an accepted keyless bundle, the
	// certificate's identity and the earliest verified witness time.
	Signer    string
	Witnessed time.Time
	Attempts  []gate.Attempt
	Outputs   map[string]string
}

// BundleVerdict returns the verdict as a document of its own.
func (r *VerifyResult) BundleVerdict() bundle.Verdict { return r.verdict }

// Syntax of the contract's names: a profile, an approval rule.
var (
	profileName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)
	ruleName    = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)
)

type verifyInputs struct {
	commit, match, trustStore, artifactName, bundle, token, profile, contract string
	approvals                                                                 int
	requireSandbox                                                            bool
	requireRules, requireAuthorizations, subjects                             []string // readLists
}

// Verify is `proofgate action verify`: it finds the evidence bundle for the
// release commit and verifies it like `proofgate bundle verify`, through
// the release gate (gate.Find says where it looks, with match: commit or
// tree; gate.File takes input bundle instead).
//
// The run must have used exactly the contract profile named by input
// profile (its default, "", requires the base contract), and exactly the
// contract that input contract names at the release commit, read from git
// (or the contents API) at that commit — never the workspace's file, which
// the job's checkout could have changed. A run made under another file or
// an edited copy is refused (contract-mismatch).
func Verify(ctx context.Context, o Options) (*VerifyResult, error) {
	o.fill()
	f := newWorkflow(o.Getenv, o.Stdout)
	g := &verifyJob{o: &o, f: f, res: &VerifyResult{Outputs: f.outputs}}
	defer func() { f.summary(renderVerify(g.res)) }()
	r := g.verify(ctx)
	if vr := g.writeVSA(ctx, r == nil); vr != nil {
		r = vr
	}
	if r != nil {
		return g.conclude(r.Class, bundle.Refusal(r.Reason, r.Detail, g.res.RunID))
	}
	return g.conclude(exit.OK, g.res.Accepted.Verdict())
}

// verifyJob is one `proofgate action verify`: its inputs and what it
// found, for the steps of Verify.
type verifyJob struct {
	o   *Options
	f   *workflow
	res *VerifyResult

	in    verifyInputs
	ids   keyless.Pins // the identity inputs
	repo  gate.Repo    // the workspace, the GitHub client (nil without input github-token), GITHUB_REPOSITORY
	store *trust.Store
	mv    envelope.MaterialVerifiers // nil without input trusted-root
	opts  bundle.VerifyOptions
	vsa   *vsaGate // nil without input vsa-key or vsa-signing: keyless

	gatePolicy *app.GatePolicy   // input policy, or nil (verify_policy.go)
	overlay    map[string]string // the inputs input policy sets
}

// conclude sets the verdict, its outputs and annotation; a refusal is an
// error of class c.
func (g *verifyJob) conclude(c exit.Class, v bundle.Verdict) (*VerifyResult, error) {
	res, f := g.res, g.f
	res.Code, res.verdict = int(c), v
	f.output("verdict", v.Verdict)
	f.output("reason", v.Reason)
	f.output("run-id", res.RunID)
	f.output("signer", res.Signer)
	f.output("unsandboxed", strings.Join(v.Unsandboxed, ","))
	if len(v.Products) > 0 {
		if b, err := json.Marshal(v.Products); err == nil {
			f.output("products", string(b))
		}
	}
	if v.Verdict == bundle.VerdictAccepted {
		if len(v.Unsandboxed) > 0 {
			f.annotate("warning", "ProofGate checks ran unsandboxed", fmt.Sprintf("checks %s did not run in the docker sandbox (input require-sandbox: true refuses them)", strings.Join(v.Unsandboxed, ", ")))
		}
		f.annotate("notice", "ProofGate evidence accepted", acceptedNotice(res))
		return res, nil
	}
	msg := "refused: " + v.Reason
	if v.Detail != "" {
		msg += ": " + v.Detail
	}
	f.annotate("error", "ProofGate evidence refused", msg)
	return res, exit.Wrap(c, errors.New(msg))
}

// verify runs the steps; nil means res.Accepted holds the accepted bundle.
func (g *verifyJob) verify(ctx context.Context) *gate.Refusal {
	g.setWorkspace()
	steps := []func() *gate.Refusal{g.readPolicy, g.readInputs, g.readVSAInputs,
		func() *gate.Refusal { return g.connect(ctx) }, func() *gate.Refusal { return g.policy(ctx) }}
	for _, step := range steps {
		if r := step(); r != nil {
			return r
		}
	}
	o := gate.Options{Repo: g.repo, ServerURL: g.o.Getenv("GITHUB_SERVER_URL"), Store: g.store, Policy: g.opts, Search: g.search(), Verified: g.noteVSA}
	var res *gate.Result
	switch {
	case g.in.bundle != "":
		res = gate.File(o, g.abs(g.in.bundle), g.in.bundle)
	case g.repo.GitHub == nil:
		return gate.Usage("input github-token is empty: it is needed to find the artifact (or set input bundle)")
	case g.repo.Owner == "":
		return gate.Usage("GITHUB_REPOSITORY %q is not owner/name", g.o.Getenv("GITHUB_REPOSITORY"))
	default:
		res = gate.Find(ctx, o)
	}
	g.res.Attempts, g.res.Accepted, g.res.RunID = res.Attempts, res.Accepted, res.RunID
	if a := res.Accepted; a != nil {
		g.res.Signer, g.res.Witnessed = a.Signer, a.Witnessed
		if a.StatementOnly {
			g.f.logf("proofgate: accepted the signed statement of run %s from the attestation store; its event log was not replayed (the workflow artifact is gone)", a.RunID)
		}
	}
	return res.Refusal
}

// readInputs reads and checks the inputs.
func (g *verifyJob) readInputs() *gate.Refusal {
	in := verifyInputs{
		commit:       g.input("commit"),
		match:        strings.ToLower(g.input("match")),
		trustStore:   g.input("trust-store"),
		artifactName: g.input("artifact-name"),
		bundle:       g.input("bundle"),
		token:        g.input("github-token"),
		profile:      g.input("profile"),
		contract:     g.input("contract"),
		approvals:    1,
	}
	g.f.mask(in.token)
	if in.commit == "" {
		in.commit = g.o.Getenv("GITHUB_SHA")
	}
	in.commit = strings.ToLower(in.commit)
	g.res.Commit = in.commit
	if !event.IsHexSHA(in.commit) {
		return gate.Usage("input commit: %q is not a full commit SHA", in.commit)
	}
	switch in.match {
	case "":
		in.match = verifyMatchTree
	case verifyMatchTree, verifyMatchCommit:
	default:
		return gate.Usage("input match: %q is not commit or tree", in.match)
	}
	g.res.Match = in.match
	if v := g.input("require-approvals"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 100 {
			return gate.Usage("input require-approvals: %q is not a number from 0 to 100", v)
		}
		in.approvals = n
	}
	switch v := g.input("require-sandbox"); v {
	case "", "false":
	case "true":
		in.requireSandbox = true
	default:
		return gate.Usage("input require-sandbox: %q is not true or false", v)
	}
	if r := readLists(g.input, &in); r != nil {
		return r
	}
	g.in = in
	g.ids = readIdentityInputs(g.input)
	if r := g.checkPaths(); r != nil {
		return r
	}
	return g.checkPins()
}

// readLists reads the inputs that list values, separated by commas or new
// lines; empty requires none. require-rule: approval rule names the
// bundle's approval must have satisfied (bundle.WithRequireRule).
// require-authorization: tracking authorization targets the run must
// authorize (bundle.WithRequireAuthorization: an approved
// authorization.recorded for the target and no rejected one). subject:
// files, relative to the workspace, each of which must be a product of the
// verified run (bundle.WithSubject).
func readLists(input func(string) string, in *verifyInputs) *gate.Refusal {
	for _, l := range []struct {
		name, value string
		valid       func(string) bool
		what        string
		dst         *[]string
	}{
		{"require-rule", input("require-rule"), ruleName.MatchString, "an approval rule name (" + ruleName.String() + ")", &in.requireRules},
		{"require-authorization", input("require-authorization"), replay.ValidTarget,
			"an authorization target (1-200 of A-Z a-z 0-9 . _ : / # @ + -)", &in.requireAuthorizations},
		{"subject", input("subject"), event.CleanRel, "a clean path relative to the workspace", &in.subjects},
	} {
		for _, v := range strings.FieldsFunc(l.value, func(r rune) bool { return r == ',' || r == '\n' }) {
			if v = strings.TrimSpace(v); v == "" {
				continue
			}
			if !l.valid(v) {
				return gate.Usage("input %s: %q is not %s", l.name, v, l.what)
			}
			*l.dst = append(*l.dst, v)
		}
	}
	return nil
}

// checkPaths checks the inputs that name a profile, a contract or an
// artifact.
func (g *verifyJob) checkPaths() *gate.Refusal {
	in := &g.in
	if in.profile != "" && !profileName.MatchString(in.profile) {
		return gate.Usage("input profile: %q is not a profile name (%s), or empty for the base contract", in.profile, profileName)
	}
	if in.contract == "" {
		in.contract = DefaultContract
	}
	if !event.CleanRel(in.contract) {
		return gate.Usage("input contract: %q is not a clean path relative to the repository root", in.contract)
	}
	if in.artifactName != "" {
		if err := artifact.ValidateName(in.artifactName); err != nil {
			return gate.Usage("input artifact-name: %v", err)
		}
	}
	if in.trustStore == "" {
		in.trustStore = DefaultTrustStore
	}
	return nil
}

// setWorkspace finds the workspace: GITHUB_WORKSPACE, else Options.Dir,
// else the working directory.
func (g *verifyJob) setWorkspace() {
	r := &g.repo
	if r.Workspace = g.o.Getenv("GITHUB_WORKSPACE"); r.Workspace == "" {
		r.Workspace = g.o.Dir
	}
	if r.Workspace == "" {
		r.Workspace, _ = os.Getwd()
	}
}

// connect loads the trust store and makes the GitHub client.
func (g *verifyJob) connect(ctx context.Context) *gate.Refusal {
	r := &g.repo
	if r := g.loadTrust(); r != nil {
		return r
	}
	var err error
	r.Owner, r.Name, _ = event.SplitRepo(g.o.Getenv("GITHUB_REPOSITORY"))
	if g.in.token != "" {
		if r.GitHub, err = ghapi.NewClient(ctx, g.in.token, g.o.Getenv("GITHUB_API_URL")); err != nil {
			return gate.Usage("github client: %v", err)
		}
	}
	return nil
}

// abs resolves p against the workspace.
func (g *verifyJob) abs(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(g.repo.Workspace, p)
}

// policy is what the gate requires. It releases this repository: a bundle
// signed for another one (a key trusted without an identity) does not
// count. The profile is always required: a run under another profile of
// the contract (a workflow, which a pull request can edit, picks it) does
// not count; the input's default "" requires the base contract.
func (g *verifyJob) policy(ctx context.Context) *gate.Refusal {
	in := &g.in
	g.opts = bundle.VerifyOptions{RequireApprovals: in.approvals, Repo: g.o.Getenv("GITHUB_REPOSITORY"), Profile: &in.profile,
		RequireSandbox: in.requireSandbox, RequireRules: in.requireRules, RequireAuthorizations: in.requireAuthorizations, Material: g.mv}
	for _, p := range in.subjects {
		d, err := bounded.SHA256File(g.abs(p))
		if err != nil {
			return gate.Usage("input subject: %v", err)
		}
		g.opts.RequireSubjects = append(g.opts.RequireSubjects, d)
	}
	g.opts.RequireSubjects = append(g.opts.RequireSubjects, g.policySubjects()...)
	hash, r := gate.ReleaseContract(ctx, g.repo, in.commit, in.contract, in.profile)
	if r != nil {
		return r
	}
	g.opts.ContractHash, g.res.Contract = hash, hash
	if in.match == verifyMatchCommit {
		g.opts.Commit = in.commit
		return nil
	}
	g.res.Tree = event.CommitTree(ctx, g.repo.Workspace, g.repo.GitHub, g.repo.Owner, g.repo.Name, in.commit)
	if g.res.Tree == "" {
		return &gate.Refusal{Class: exit.Environment, Reason: string(gate.ReasonGitHubAPI),
			Detail: fmt.Sprintf("cannot resolve the tree of commit %s: not in the checkout and not readable through the API", in.commit)}
	}
	g.opts.Tree = g.res.Tree
	return nil
}

// search is what the gate looks for: the artifacts named input
// artifact-name, else ArtifactPrefix and the head. A run hand-off
// (RunArtifactPrefix) and a run's products (ProductsArtifactPrefix) are
// never a bundle.
func (g *verifyJob) search() artifact.Search {
	in := g.in
	return artifact.Search{Commit: in.commit, ByCommit: in.match == verifyMatchCommit, Name: in.artifactName,
		Prefix: ArtifactPrefix, Exclude: []string{RunArtifactPrefix, ProductsArtifactPrefix},
		NameFor: func(head string) string {
			if in.artifactName != "" {
				return in.artifactName
			}
			return ArtifactPrefix + head
		}}
}

func renderVerify(r *VerifyResult) string {
	var b strings.Builder
	verdict := r.Verdict
	if verdict == "" {
		verdict = "error"
	}
	fmt.Fprintf(&b, "## ProofGate verify: %s\n\n", verdict)
	fmt.Fprintf(&b, "| | |\n|---|---|\n| commit | %s |\n| match | %s |\n", jobsummary.Code(r.Commit), jobsummary.Cell(r.Match))
	if r.Tree != "" {
		fmt.Fprintf(&b, "| tree | %s |\n", jobsummary.Code(r.Tree))
	}
	if r.Contract != "" {
		fmt.Fprintf(&b, "| required contract | %s |\n", jobsummary.Code(r.Contract))
	}
	if r.Reason != "" {
		fmt.Fprintf(&b, "| reason | %s |\n", jobsummary.Code(r.Reason))
	}
	if r.Detail != "" {
		fmt.Fprintf(&b, "| detail | %s |\n", jobsummary.Cell(r.Detail))
	}
	if a := r.Accepted; a != nil {
		profile := "base contract"
		if a.Run.Profile != "" {
			profile = jobsummary.Code(a.Run.Profile)
		}
		worktree := "clean"
		if a.Run.Worktree.Dirty {
			worktree = "**dirty** (uncommitted changes)"
		}
		fmt.Fprintf(&b, "| run | %s |\n| source | commit %s, tree %s, %s work tree |\n| repository | %s |\n| profile | %s |\n| approvals | %d |\n| signed | key %s at %s |\n| verification digest | %s |\n",
			jobsummary.Code(a.RunID), jobsummary.Code(a.Run.Source.Commit), jobsummary.Code(a.Run.Source.Tree), worktree, jobsummary.Code(a.Run.Repo), profile, a.Approvals,
			jobsummary.Code(a.KeyID), a.SignedAt.UTC().Format(time.RFC3339), jobsummary.Code(a.Run.VerificationDigest))
		if r.Signer != "" {
			fmt.Fprintf(&b, "| keyless signer | %s, witnessed %s |\n", jobsummary.Code(r.Signer), witnessedText(r.Witnessed))
		}
		if ids := bundle.Unsandboxed(&a.Run); len(ids) > 0 {
			fmt.Fprintf(&b, "| unsandboxed checks | %s |\n", jobsummary.Cell(strings.Join(ids, ", ")))
		}
	}
	if p := r.Outputs["vsa"]; p != "" {
		fmt.Fprintf(&b, "| verification summary (VSA) | %s |\n", jobsummary.Code(p))
	}
	if len(r.Attempts) > 0 {
		b.WriteString("\n| bundle | verdict | reason |\n|---|---|---|\n")
		for _, a := range r.Attempts {
			fmt.Fprintf(&b, "| %s | %s | %s |\n", jobsummary.Cell(a.Artifact), a.Verdict, jobsummary.Cell(strings.TrimSpace(a.Reason+" "+a.Detail)))
		}
	}
	return b.String()
}

// acceptedNotice says which run was accepted for which release commit,
// and, with match: tree, the tree it matched by.
func acceptedNotice(res *VerifyResult) string {
	if res.Match == verifyMatchTree && res.Tree != "" {
		return fmt.Sprintf("run %s for commit %s, matched by its tree %s", res.RunID, res.Commit, res.Tree)
	}
	return fmt.Sprintf("run %s for commit %s", res.RunID, res.Commit)
}
