package action

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/archive"
	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/trust"
	"github.com/proofgate/proofgate/internal/bounded"
	"github.com/proofgate/proofgate/internal/ci/artifact"
	"github.com/proofgate/proofgate/internal/ci/event"
	"github.com/proofgate/proofgate/internal/ci/ghapi"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/exit"
)

// DefaultTrustStore is the trust-store input's default.
const DefaultTrustStore = ".proofgate/trust.json"

// Reasons of a refusal that happens before a bundle is verified. Bundle
// refusals use bundle.Reason values. They are untyped: a verdict's reason
// (bundle.Verdict.Reason, the action's reason output) is either kind, as a
// string.
const (
	ReasonNotFound    = "artifact-not-found"
	ReasonExpired     = "artifact-expired"
	ReasonOther       = "artifact-for-other-commit"
	ReasonBadZip      = "artifact-malformed"
	ReasonGitHubAPI   = "github-api"
	ReasonNoContract  = "contract-unavailable"
	ReasonUsage       = "usage"
	VerdictAccepted   = bundle.VerdictAccepted
	VerdictRefused    = bundle.VerdictRefused
	verifyMatchTree   = "tree"
	verifyMatchCommit = "commit"
)

// Attempt is one bundle the verify step looked at.
type Attempt struct {
	Artifact string // "name (id N, head <sha>)" or the local file
	Verdict  string
	Reason   string
	Detail   string
}

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
	Attempts  []Attempt
	Outputs   map[string]string
}

// BundleVerdict returns the verdict as a document of its own.
func (r *VerifyResult) BundleVerdict() bundle.Verdict { return r.verdict }

// profileName is the contract's syntax of a profile name.
var profileName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

type verifyInputs struct {
	commit, match, trustStore, artifactName, bundle, token, profile, contract string
	approvals                                                                 int
	requireSandbox                                                            bool
	requireRules                                                              []string // verify_rules.go
	requireAuthorizations                                                     []string // verify_authorization.go
	subjects                                                                  []string // verify_subject.go
}

// Verify is `proofgate action verify`: it finds the evidence bundle for the
// release commit and verifies it like `proofgate bundle verify`.
//
// Finding the bundle. With match: commit, the artifact is the newest
// unexpired one named artifact-name (default "proofgate-<commit>") whose
// workflow run's head is the commit. With match: tree (the default), the
// release commit is usually a merge or squash commit that no ProofGate run
// saw: the run tested the pull request's test merge, and its artifact is named
// after the PR head. Candidates are then, in order: an artifact for the
// commit itself; the artifacts for the heads of the pull requests GitHub
// associates with the commit (commits/{sha}/pulls); and, when those give
// none, the newest unexpired artifacts whose name is artifact-name (or starts
// with "proofgate-"), at most artifact.MaxCandidates in all. Each candidate is
// verified with the commit's tree required; the first accepted wins. The
// name is only a hint: a bundle is accepted because its signed, verified
// tree equals the release commit's tree, never because of its name.
//
// The run must have used exactly the contract profile named by input
// profile (its default, "", requires the base contract), and exactly the
// contract that input contract names at the release commit, read from git
// (or the contents API) at that commit — never the workspace's file, which
// the job's checkout could have changed. A run made under another file or
// an edited copy is refused (contract-mismatch).
//
// Time: a downloaded artifact's created_at, which GitHub records and the
// signer cannot choose, witnesses when the bundle existed: a key retired
// or revoked before it is refused whatever signed_at says.
func Verify(ctx context.Context, o Options) (*VerifyResult, error) {
	o.fill()
	f := newWorkflow(o.Getenv, o.Stdout)
	g := &gate{o: &o, f: f, res: &VerifyResult{Outputs: f.outputs}}
	defer func() { f.summary(renderVerify(g.res)) }()
	r := g.verify(ctx)
	if vr := g.writeVSA(ctx, r == nil); vr != nil {
		r = vr
	}
	if r != nil {
		return g.conclude(r.class, bundle.Refusal(r.reason, r.detail, g.res.RunID))
	}
	return g.conclude(exit.OK, g.res.Accepted.Verdict())
}

// gate is one `proofgate action verify`: its inputs and what it found, for
// the steps of Verify.
type gate struct {
	o   *Options
	f   *workflow
	res *VerifyResult

	in          verifyInputs
	ids         identityInputs
	ws          string
	store       *trust.Store
	mv          envelope.MaterialVerifiers // nil without input trusted-root
	gh          *github.Client             // nil without input github-token
	owner, name string                     // of GITHUB_REPOSITORY
	opts        bundle.VerifyOptions
	vsa         *vsaGate // nil without input vsa-key or vsa-signing: keyless
}

// refusal is why the gate refuses, with the class of the exit.
type refusal struct {
	class          exit.Class
	reason, detail string
}

// refuseUsage refuses bad input.
func refuseUsage(format string, args ...any) *refusal {
	return &refusal{exit.Usage, ReasonUsage, fmt.Sprintf(format, args...)}
}

// conclude sets the verdict, its outputs and annotation; a refusal is an
// error of class c.
func (g *gate) conclude(c exit.Class, v bundle.Verdict) (*VerifyResult, error) {
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
	if v.Verdict == VerdictAccepted {
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
func (g *gate) verify(ctx context.Context) *refusal {
	if r := g.readInputs(); r != nil {
		return r
	}
	if r := g.readVSAInputs(); r != nil {
		return r
	}
	if r := g.connect(ctx); r != nil {
		return r
	}
	if r := g.policy(ctx); r != nil {
		return r
	}
	if g.in.bundle != "" {
		return g.verifyFile()
	}
	return g.verifyArtifacts(ctx)
}

// readInputs reads and checks the inputs.
func (g *gate) readInputs() *refusal {
	f := g.f
	in := verifyInputs{
		commit:       f.input("commit"),
		match:        strings.ToLower(f.input("match")),
		trustStore:   f.input("trust-store"),
		artifactName: f.input("artifact-name"),
		bundle:       f.input("bundle"),
		token:        f.input("github-token"),
		profile:      f.input("profile"),
		contract:     f.input("contract"),
		approvals:    1,
	}
	f.mask(in.token)
	if in.commit == "" {
		in.commit = g.o.Getenv("GITHUB_SHA")
	}
	in.commit = strings.ToLower(in.commit)
	g.res.Commit = in.commit
	if !event.IsHexSHA(in.commit) {
		return refuseUsage("input commit: %q is not a full commit SHA", in.commit)
	}
	switch in.match {
	case "":
		in.match = verifyMatchTree
	case verifyMatchTree, verifyMatchCommit:
	default:
		return refuseUsage("input match: %q is not commit or tree", in.match)
	}
	g.res.Match = in.match
	if v := f.input("require-approvals"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 100 {
			return refuseUsage("input require-approvals: %q is not a number from 0 to 100", v)
		}
		in.approvals = n
	}
	switch v := f.input("require-sandbox"); v {
	case "", "false":
	case "true":
		in.requireSandbox = true
	default:
		return refuseUsage("input require-sandbox: %q is not true or false", v)
	}
	if r := readRequireRules(f, &in); r != nil {
		return r
	}
	if r := readRequireAuthorizations(f, &in); r != nil {
		return r
	}
	if r := readSubjects(f, &in); r != nil {
		return r
	}
	g.in = in
	g.ids = readIdentityInputs(f)
	return g.checkPaths()
}

// checkPaths checks the inputs that name a profile, a contract or an
// artifact.
func (g *gate) checkPaths() *refusal {
	in := &g.in
	if in.profile != "" && !profileName.MatchString(in.profile) {
		return refuseUsage("input profile: %q is not a profile name (%s), or empty for the base contract", in.profile, profileName)
	}
	if in.contract == "" {
		in.contract = DefaultContract
	}
	if !event.CleanRel(in.contract) {
		return refuseUsage("input contract: %q is not a clean path relative to the repository root", in.contract)
	}
	if in.artifactName != "" {
		if err := artifact.ValidateName(in.artifactName); err != nil {
			return refuseUsage("input artifact-name: %v", err)
		}
	}
	if in.trustStore == "" {
		in.trustStore = DefaultTrustStore
	}
	return nil
}

// connect loads the trust store and makes the GitHub client.
func (g *gate) connect(ctx context.Context) *refusal {
	g.ws = g.o.Getenv("GITHUB_WORKSPACE")
	if g.ws == "" {
		g.ws = g.o.Dir
	}
	if g.ws == "" {
		g.ws, _ = os.Getwd()
	}
	if r := g.loadTrust(); r != nil {
		return r
	}
	var err error
	g.owner, g.name, _ = event.SplitRepo(g.o.Getenv("GITHUB_REPOSITORY"))
	if g.in.token != "" {
		if g.gh, err = ghapi.NewClient(ctx, g.in.token, g.o.Getenv("GITHUB_API_URL")); err != nil {
			return refuseUsage("github client: %v", err)
		}
	}
	return nil
}

// abs resolves p against the workspace.
func (g *gate) abs(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(g.ws, p)
}

// policy is what the gate requires. It releases this repository: a bundle
// signed for another one (a key trusted without an identity) does not
// count. The profile is always required: a run under another profile of
// the contract (a workflow, which a pull request can edit, picks it) does
// not count; the input's default "" requires the base contract.
func (g *gate) policy(ctx context.Context) *refusal {
	in := &g.in
	g.opts = bundle.VerifyOptions{RequireApprovals: in.approvals, Repo: g.o.Getenv("GITHUB_REPOSITORY"), Profile: &in.profile,
		RequireSandbox: in.requireSandbox, RequireRules: in.requireRules, RequireAuthorizations: in.requireAuthorizations}
	subjects, r := g.subjectDigests()
	if r != nil {
		return r
	}
	g.opts.RequireSubjects = subjects
	hash, r := releaseContract(ctx, g.ws, g.gh, g.owner, g.name, *in)
	if r != nil {
		return r
	}
	g.opts.ContractHash, g.res.Contract = hash, hash
	if in.match == verifyMatchCommit {
		g.opts.Commit = in.commit
		return nil
	}
	g.res.Tree = event.CommitTree(ctx, g.ws, g.gh, g.owner, g.name, in.commit)
	if g.res.Tree == "" {
		return &refusal{exit.Environment, ReasonGitHubAPI,
			fmt.Sprintf("cannot resolve the tree of commit %s: not in the checkout and not readable through the API", in.commit)}
	}
	g.opts.Tree = g.res.Tree
	return nil
}

// verifyFile verifies input bundle.
func (g *gate) verifyFile() *refusal {
	p := g.abs(g.in.bundle)
	data, err := bounded.ReadFile(p, archive.DefaultLimits.MaxTotalSize)
	if err != nil {
		return refuseUsage("input bundle: %v", err)
	}
	var comp *companionFile
	if strings.HasSuffix(p, ".tar.gz") {
		cp := artifact.CompanionName(p)
		if b, err := bounded.ReadFile(cp, archive.DefaultLimits.MaxTotalSize); err == nil {
			comp = &companionFile{name: filepath.Base(cp), data: b}
		} else if !errors.Is(err, fs.ErrNotExist) {
			return refuseUsage("input bundle's companion %s: %v", cp, err)
		}
	}
	a := g.verifyOne(data, comp, g.opts, "file "+g.in.bundle)
	g.noteVSA(data, filepath.Base(g.in.bundle), "", g.opts, a)
	if a.Verdict == VerdictAccepted {
		return nil
	}
	return &refusal{exit.Refused, a.Reason, a.Detail}
}

// verifyArtifacts finds the candidate artifacts and verifies each, the
// first accepted winning; all refused, the first refusal is the gate's.
func (g *gate) verifyArtifacts(ctx context.Context) *refusal {
	if g.gh == nil {
		return refuseUsage("input github-token is empty: it is needed to find the artifact (or set input bundle)")
	}
	if g.owner == "" {
		return refuseUsage("GITHUB_REPOSITORY %q is not owner/name", g.o.Getenv("GITHUB_REPOSITORY"))
	}
	cands, findErr := artifact.Candidates(ctx, g.gh, g.owner, g.name, g.search())
	if len(cands) == 0 {
		miss := g.notFound(findErr)
		if miss.class != exit.Refused {
			return miss
		}
		return g.verifyStore(ctx, miss)
	}
	var first *Attempt
	for _, a := range cands {
		att := g.tryArtifact(ctx, a)
		if att.Verdict == VerdictAccepted {
			return nil
		}
		if first == nil {
			first = &att
		}
	}
	return &refusal{exit.Refused, first.Reason, first.Detail}
}

// search is what the gate looks for: the artifacts named input
// artifact-name, else ArtifactPrefix and the head. A run hand-off
// (RunArtifactPrefix) and a run's products (ProductsArtifactPrefix) are
// never a bundle.
func (g *gate) search() artifact.Search {
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

// notFound is the refusal when no candidate artifact was found.
func (g *gate) notFound(findErr error) *refusal {
	switch {
	case errors.Is(findErr, artifact.ErrExpired):
		return &refusal{exit.Refused, ReasonExpired, findErr.Error()}
	case errors.Is(findErr, artifact.ErrOtherCommit):
		return &refusal{exit.Refused, ReasonOther, findErr.Error()}
	case errors.Is(findErr, artifact.ErrNotFound) || findErr == nil:
		return &refusal{exit.Refused, ReasonNotFound,
			fmt.Sprintf("no unexpired ProofGate artifact for %s %s in %s/%s", g.in.match, g.in.commit, g.owner, g.name)}
	}
	return &refusal{exit.Environment, ReasonGitHubAPI, findErr.Error() + noArtifactsAPIHint}
}

// noArtifactsAPIHint follows a failure of the REST artifacts API: runners
// without it (act, Gitea, Forgejo) can still verify a bundle file.
const noArtifactsAPIHint = "; where the REST artifacts API is missing (act, Gitea, Forgejo), download the bundle in the workflow and pass its path as input bundle"

// tryArtifact downloads artifact a and verifies its bundle, witnessed at
// the artifact's created_at.
func (g *gate) tryArtifact(ctx context.Context, a *artifact.Artifact) Attempt {
	label := fmt.Sprintf("%s (id %d, head %s)", a.Name, a.ID, short(a.Run.HeadSHA))
	zipData, err := artifact.Download(ctx, g.gh, g.owner, g.name, a.ID, artifact.MaxBundleBytes)
	if err != nil {
		att := Attempt{Artifact: label, Verdict: VerdictRefused, Reason: ReasonGitHubAPI, Detail: err.Error()}
		g.res.Attempts = append(g.res.Attempts, att)
		return att
	}
	b, err := artifact.BundleFromZip(zipData, artifact.MaxBundleBytes, artifact.CompanionName)
	if err != nil {
		att := Attempt{Artifact: label, Verdict: VerdictRefused, Reason: ReasonBadZip, Detail: err.Error()}
		g.res.Attempts = append(g.res.Attempts, att)
		return att
	}
	var comp *companionFile
	if b.Companion != "" {
		comp = &companionFile{name: b.Companion, data: b.CompanionData}
	}
	witnessed := g.opts
	witnessed.Witnessed = a.CreatedAt
	att := g.verifyOne(b.Data, comp, witnessed, label)
	g.noteVSA(b.Data, path.Base(b.Name), g.artifactURI(a.Run.ID, a.ID), witnessed, att)
	return att
}

// releaseContract resolves the contract the run had to use: input
// contract at the release commit, with input profile. It returns the
// refusal when it cannot.
func releaseContract(ctx context.Context, ws string, gh *github.Client, owner, name string, in verifyInputs) (string, *refusal) {
	data, err := event.ContractAt(ctx, ws, gh, owner, name, in.commit, in.contract)
	switch {
	case errors.Is(err, event.ErrNotInBase):
		return "", &refusal{exit.Refused, ReasonNoContract, fmt.Sprintf("the release commit %s has no %s: no run can be bound to a contract (input contract names another path)", short(in.commit), in.contract)}
	case err != nil:
		return "", &refusal{exit.Environment, ReasonGitHubAPI, fmt.Errorf("read %s at the release commit %s: %w", in.contract, short(in.commit), err).Error()}
	}
	c, err := contract.Parse(in.contract, data, in.profile)
	if err != nil {
		return "", &refusal{exit.Refused, ReasonNoContract, fmt.Sprintf("the contract at the release commit %s does not resolve: %v", short(in.commit), err)}
	}
	h, err := c.Hash()
	if err != nil {
		return "", &refusal{exit.Refused, ReasonNoContract, err.Error()}
	}
	return h, nil
}

func renderVerify(r *VerifyResult) string {
	var b strings.Builder
	verdict := r.Verdict
	if verdict == "" {
		verdict = "error"
	}
	fmt.Fprintf(&b, "## ProofGate verify: %s\n\n", verdict)
	fmt.Fprintf(&b, "| | |\n|---|---|\n| commit | %s |\n| match | %s |\n", code(r.Commit), cell(r.Match))
	if r.Tree != "" {
		fmt.Fprintf(&b, "| tree | %s |\n", code(r.Tree))
	}
	if r.Contract != "" {
		fmt.Fprintf(&b, "| required contract | %s |\n", code(r.Contract))
	}
	if r.Reason != "" {
		fmt.Fprintf(&b, "| reason | %s |\n", code(r.Reason))
	}
	if r.Detail != "" {
		fmt.Fprintf(&b, "| detail | %s |\n", cell(r.Detail))
	}
	if a := r.Accepted; a != nil {
		profile := "base contract"
		if a.Run.Profile != "" {
			profile = code(a.Run.Profile)
		}
		worktree := "clean"
		if a.Run.Worktree.Dirty {
			worktree = "**dirty** (uncommitted changes)"
		}
		fmt.Fprintf(&b, "| run | %s |\n| source | commit %s, tree %s, %s work tree |\n| repository | %s |\n| profile | %s |\n| approvals | %d |\n| signed | key %s at %s |\n| verification digest | %s |\n",
			code(a.RunID), code(a.Run.Source.Commit), code(a.Run.Source.Tree), worktree, code(a.Run.Repo), profile, a.Approvals,
			code(a.KeyID), a.SignedAt.UTC().Format(time.RFC3339), code(a.Run.VerificationDigest))
		if r.Signer != "" {
			fmt.Fprintf(&b, "| keyless signer | %s, witnessed %s |\n", code(r.Signer), witnessedText(r.Witnessed))
		}
		if ids := bundle.Unsandboxed(&a.Run); len(ids) > 0 {
			fmt.Fprintf(&b, "| unsandboxed checks | %s |\n", cell(strings.Join(ids, ", ")))
		}
	}
	if p := r.Outputs["vsa"]; p != "" {
		fmt.Fprintf(&b, "| verification summary (VSA) | %s |\n", code(p))
	}
	if len(r.Attempts) > 0 {
		b.WriteString("\n| bundle | verdict | reason |\n|---|---|---|\n")
		for _, a := range r.Attempts {
			fmt.Fprintf(&b, "| %s | %s | %s |\n", cell(a.Artifact), a.Verdict, cell(strings.TrimSpace(a.Reason+" "+a.Detail)))
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
