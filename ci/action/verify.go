package action

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/trust"
	"github.com/proofgate/proofgate/ci/artifact"
	"github.com/proofgate/proofgate/ci/event"
	"github.com/proofgate/proofgate/ci/ghapi"
	"github.com/proofgate/proofgate/kernel/contract"
)

// Bounds of the verify step.
const (
	// MaxCandidates bounds how many artifacts one verify downloads.
	MaxCandidates = 10
	// MaxArtifactBytes bounds a downloaded artifact zip.
	MaxArtifactBytes = 512 << 20
	// maxScanPages bounds the recent-artifacts scan (100 per page).
	maxScanPages = 3
	// DefaultTrustStore is the trust-store input's default.
	DefaultTrustStore = ".proofgate/trust.json"
)

// Reasons of a refusal that happens before a bundle is verified. Bundle
// refusals use bundle.Reason values.
const (
	ReasonNotFound   = "artifact-not-found"
	ReasonExpired    = "artifact-expired"
	ReasonOther      = "artifact-for-other-commit"
	ReasonBadZip     = "artifact-malformed"
	ReasonGitHubAPI  = "github-api"
	ReasonNoContract = "contract-unavailable"
	VerdictAccepted  = "accepted"
	VerdictRefused   = "refused"
	verifyMatchTree  = "tree"
	verifyMatchCommt = "commit"
)

// Attempt is one bundle the verify step looked at.
type Attempt struct {
	Artifact string // "name (id N, head <sha>)" or the local file
	Verdict  string
	Reason   string
	Detail   string
}

// VerifyResult is what Verify decided.
type VerifyResult struct {
	Code    int
	Verdict string // accepted | refused
	Reason  string
	Detail  string
	RunID   string
	Commit  string // the release commit
	Match   string // commit | tree
	Tree    string // the release commit's tree when matching by tree
	// Contract is the hash of the contract the run had to use: the
	// contract file at the release commit, resolved with the profile.
	Contract string
	Accepted *bundle.Result
	Attempts []Attempt
	Outputs  map[string]string
}

// profileName is the contract's syntax of a profile name.
var profileName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)

type verifyInputs struct {
	commit, match, trustStore, artifactName, bundle, token, profile, contract string
	approvals                                                                 int
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
// with "proofgate-"), at most MaxCandidates in all. Each candidate is
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
	res := &VerifyResult{Outputs: f.outputs}
	defer func() { f.summary(renderVerify(res)) }()

	conclude := func(code int, verdict, reason, detail string) (*VerifyResult, error) {
		res.Code, res.Verdict, res.Reason, res.Detail = code, verdict, reason, detail
		f.output("verdict", verdict)
		f.output("reason", reason)
		f.output("run-id", res.RunID)
		if verdict == VerdictAccepted {
			f.annotate("notice", "ProofGate evidence accepted", fmt.Sprintf("run %s for %s %s", res.RunID, res.Match, res.Commit))
			return res, nil
		}
		msg := "refused: " + reason
		if detail != "" {
			msg += ": " + detail
		}
		f.annotate("error", "ProofGate evidence refused", msg)
		return res, &Error{Code: code, Err: errors.New(msg)}
	}
	usage := func(format string, args ...any) (*VerifyResult, error) {
		return conclude(ExitUsage, VerdictRefused, "usage", fmt.Sprintf(format, args...))
	}

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
		in.commit = o.Getenv("GITHUB_SHA")
	}
	in.commit = strings.ToLower(in.commit)
	res.Commit = in.commit
	if !event.IsHexSHA(in.commit) {
		return usage("input commit: %q is not a full commit SHA", in.commit)
	}
	switch in.match {
	case "":
		in.match = verifyMatchTree
	case verifyMatchTree, verifyMatchCommt:
	default:
		return usage("input match: %q is not commit or tree", in.match)
	}
	res.Match = in.match
	if v := f.input("require-approvals"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 100 {
			return usage("input require-approvals: %q is not a number from 0 to 100", v)
		}
		in.approvals = n
	}
	if in.profile != "" && !profileName.MatchString(in.profile) {
		return usage("input profile: %q is not a profile name (%s), or empty for the base contract", in.profile, profileName)
	}
	if in.contract == "" {
		in.contract = DefaultContract
	}
	if !cleanRel(in.contract) {
		return usage("input contract: %q is not a clean path relative to the repository root", in.contract)
	}
	if in.artifactName != "" {
		if err := artifact.ValidateName(in.artifactName); err != nil {
			return usage("input artifact-name: %v", err)
		}
	}
	if in.trustStore == "" {
		in.trustStore = DefaultTrustStore
	}
	ws := o.Getenv("GITHUB_WORKSPACE")
	if ws == "" {
		ws = o.Dir
	}
	if ws == "" {
		ws, _ = os.Getwd()
	}
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(ws, p)
	}
	store, err := trust.Load(abs(in.trustStore))
	if err != nil {
		return usage("input trust-store: %v", err)
	}

	var gh *github.Client
	owner, name, _ := splitRepo(o.Getenv("GITHUB_REPOSITORY"))
	if in.token != "" {
		if gh, err = ghapi.NewClient(ctx, in.token, o.Getenv("GITHUB_API_URL")); err != nil {
			return usage("github client: %v", err)
		}
	}

	// The gate releases this repository: a bundle signed for another one
	// (a key trusted without an identity) does not count. The profile is
	// always required: a run under another profile of the contract (a
	// workflow, which a pull request can edit, picks it) does not count;
	// the input's default "" requires the base contract.
	opts := bundle.VerifyOptions{RequireApprovals: in.approvals, Repo: o.Getenv("GITHUB_REPOSITORY"), Profile: &in.profile}
	hash, code, reason, err := releaseContract(ctx, ws, gh, owner, name, in)
	if err != nil {
		return conclude(code, VerdictRefused, reason, err.Error())
	}
	opts.ContractHash, res.Contract = hash, hash
	if in.match == verifyMatchCommt {
		opts.Commit = in.commit
	} else {
		res.Tree = commitTree(ctx, ws, gh, owner, name, in.commit)
		if res.Tree == "" {
			return conclude(ExitEnv, VerdictRefused, ReasonGitHubAPI,
				fmt.Sprintf("cannot resolve the tree of commit %s: not in the checkout and not readable through the API", in.commit))
		}
		opts.Tree = res.Tree
	}

	if in.bundle != "" {
		data, err := os.ReadFile(abs(in.bundle))
		if err != nil {
			return usage("input bundle: %v", err)
		}
		a := verifyOne(data, store, opts, res, "file "+in.bundle)
		if a.Verdict == VerdictAccepted {
			return conclude(ExitOK, VerdictAccepted, "", "")
		}
		return conclude(ExitRefused, VerdictRefused, a.Reason, a.Detail)
	}

	if gh == nil {
		return usage("input github-token is empty: it is needed to find the artifact (or set input bundle)")
	}
	if owner == "" {
		return usage("GITHUB_REPOSITORY %q is not owner/name", o.Getenv("GITHUB_REPOSITORY"))
	}
	nameFor := func(head string) string {
		if in.artifactName != "" {
			return in.artifactName
		}
		return ArtifactPrefix + head
	}

	cands, findErr := candidates(ctx, gh, owner, name, in, nameFor)
	if len(cands) == 0 {
		switch {
		case errors.Is(findErr, artifact.ErrExpired):
			return conclude(ExitRefused, VerdictRefused, ReasonExpired, findErr.Error())
		case errors.Is(findErr, artifact.ErrOtherCommit):
			return conclude(ExitRefused, VerdictRefused, ReasonOther, findErr.Error())
		case errors.Is(findErr, artifact.ErrNotFound) || findErr == nil:
			return conclude(ExitRefused, VerdictRefused, ReasonNotFound,
				fmt.Sprintf("no unexpired ProofGate artifact for %s %s in %s/%s", in.match, in.commit, owner, name))
		}
		return conclude(ExitEnv, VerdictRefused, ReasonGitHubAPI, findErr.Error())
	}

	var first *Attempt
	for _, a := range cands {
		label := fmt.Sprintf("%s (id %d, head %s)", a.Name, a.ID, short(a.Run.HeadSHA))
		zipData, err := artifact.Download(ctx, gh, owner, name, a.ID, MaxArtifactBytes)
		var att Attempt
		if err != nil {
			att = Attempt{Artifact: label, Verdict: VerdictRefused, Reason: ReasonGitHubAPI, Detail: err.Error()}
			res.Attempts = append(res.Attempts, att)
		} else if data, derr := bundleFromZip(zipData); derr != nil {
			att = Attempt{Artifact: label, Verdict: VerdictRefused, Reason: ReasonBadZip, Detail: derr.Error()}
			res.Attempts = append(res.Attempts, att)
		} else {
			witnessed := opts
			witnessed.Witnessed = a.CreatedAt
			att = verifyOne(data, store, witnessed, res, label)
		}
		if att.Verdict == VerdictAccepted {
			return conclude(ExitOK, VerdictAccepted, "", "")
		}
		if first == nil {
			first = &att
		}
	}
	return conclude(ExitRefused, VerdictRefused, first.Reason, first.Detail)
}

// releaseContract resolves the contract the run had to use: input
// contract at the release commit, with input profile. It returns the
// exit code and reason to refuse with when it cannot.
func releaseContract(ctx context.Context, ws string, gh *github.Client, owner, name string, in verifyInputs) (string, int, string, error) {
	data, err := event.ContractAt(ctx, ws, gh, owner, name, in.commit, in.contract)
	switch {
	case errors.Is(err, event.ErrNotInBase):
		return "", ExitRefused, ReasonNoContract, fmt.Errorf("the release commit %s has no %s: no run can be bound to a contract (input contract names another path)", short(in.commit), in.contract)
	case err != nil:
		return "", ExitEnv, ReasonGitHubAPI, fmt.Errorf("read %s at the release commit %s: %w", in.contract, short(in.commit), err)
	}
	c, err := contract.Parse(in.contract, data, in.profile)
	if err != nil {
		return "", ExitRefused, ReasonNoContract, fmt.Errorf("the contract at the release commit %s does not resolve: %w", short(in.commit), err)
	}
	h, err := c.Hash()
	if err != nil {
		return "", ExitRefused, ReasonNoContract, err
	}
	return h, 0, "", nil
}

// verifyOne verifies one bundle and records the attempt.
func verifyOne(data []byte, store *trust.Store, opts bundle.VerifyOptions, res *VerifyResult, label string) Attempt {
	r, err := bundle.Verify(bytes.NewReader(data), store, opts)
	att := Attempt{Artifact: label, Verdict: VerdictAccepted}
	var ve *bundle.VerifyError
	switch {
	case err == nil:
		res.Accepted, res.RunID = r, r.RunID
	case errors.As(err, &ve):
		att.Verdict, att.Reason, att.Detail = VerdictRefused, string(ve.Reason), ve.Detail
		if res.RunID == "" {
			res.RunID = ve.RunID
		}
	default:
		att.Verdict, att.Reason, att.Detail = VerdictRefused, string(bundle.Malformed), err.Error()
	}
	res.Attempts = append(res.Attempts, att)
	return att
}

// bundleFromZip returns the one .tar.gz bundle inside an artifact zip.
func bundleFromZip(zipData []byte) ([]byte, error) {
	files, err := artifact.Unzip(zipData, MaxArtifactBytes, MaxArtifactBytes)
	if err != nil {
		return nil, err
	}
	var found []byte
	n := 0
	for name, b := range files {
		if strings.HasSuffix(name, ".tar.gz") {
			found = b
			n++
		}
	}
	if n != 1 {
		return nil, fmt.Errorf("the artifact holds %d .tar.gz bundles, want exactly 1", n)
	}
	return found, nil
}

// candidates lists the artifacts to try, most specific first (see Verify).
func candidates(ctx context.Context, gh *github.Client, owner, repo string, in verifyInputs, nameFor func(string) string) ([]*artifact.Artifact, error) {
	var out []*artifact.Artifact
	seen := map[int64]bool{}
	add := func(a *artifact.Artifact) {
		if a != nil && !seen[a.ID] && len(out) < MaxCandidates {
			seen[a.ID] = true
			out = append(out, a)
		}
	}
	a, firstErr := artifact.Find(ctx, gh, owner, repo, nameFor(in.commit), in.commit)
	add(a)
	if in.match == verifyMatchCommt {
		return out, firstErr
	}
	if !isFindMiss(firstErr) {
		return out, firstErr
	}
	// Heads of the pull requests GitHub associates with the commit.
	var prs []struct {
		Head struct {
			SHA string `json:"sha"`
		} `json:"head"`
	}
	_, err := ghapi.Get(ctx, gh, fmt.Sprintf("repos/%s/%s/commits/%s/pulls?per_page=100", url.PathEscape(owner), url.PathEscape(repo), url.PathEscape(in.commit)), &prs)
	if err != nil {
		var ge *github.ErrorResponse
		if !errors.As(err, &ge) || ge.Response == nil || ge.Response.StatusCode != http.StatusNotFound && ge.Response.StatusCode != http.StatusUnprocessableEntity {
			return out, fmt.Errorf("pull requests for %s: %w", in.commit, err)
		}
	}
	for _, p := range prs {
		h := p.Head.SHA
		if !event.IsHexSHA(h) || h == in.commit {
			continue
		}
		a, err := artifact.Find(ctx, gh, owner, repo, nameFor(h), h)
		if err != nil && !isFindMiss(err) {
			return out, err
		}
		add(a)
	}
	if len(out) > 0 {
		return out, nil
	}
	// The newest unexpired ProofGate artifacts: the verified tree decides.
	recent, err := listRecent(ctx, gh, owner, repo, in.artifactName)
	if err != nil {
		return out, err
	}
	for _, a := range recent {
		add(a)
	}
	return out, firstErr
}

func isFindMiss(err error) bool {
	return err == nil || errors.Is(err, artifact.ErrNotFound) || errors.Is(err, artifact.ErrExpired) || errors.Is(err, artifact.ErrOtherCommit)
}

// listRecent lists the newest unexpired artifacts named name (or, when name
// is empty, starting with ArtifactPrefix), newest first.
func listRecent(ctx context.Context, gh *github.Client, owner, repo, name string) ([]*artifact.Artifact, error) {
	var out []*artifact.Artifact
	for page := 1; page != 0 && page <= maxScanPages; {
		q := url.Values{"per_page": {"100"}, "page": {strconv.Itoa(page)}}
		if name != "" {
			q.Set("name", name)
		}
		var list struct {
			Artifacts []*artifact.Artifact `json:"artifacts"`
		}
		resp, err := ghapi.Get(ctx, gh, fmt.Sprintf("repos/%s/%s/actions/artifacts?%s", url.PathEscape(owner), url.PathEscape(repo), q.Encode()), &list)
		if err != nil {
			return nil, fmt.Errorf("list artifacts in %s/%s: %w", owner, repo, err)
		}
		for _, a := range list.Artifacts {
			if a == nil || a.Expired {
				continue
			}
			if (name != "" && a.Name == name) || (name == "" && strings.HasPrefix(a.Name, ArtifactPrefix)) {
				out = append(out, a)
			}
		}
		page = resp.NextPage
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.After(out[j].CreatedAt)
		}
		return out[i].ID > out[j].ID
	})
	return out, nil
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
	}
	if len(r.Attempts) > 0 {
		b.WriteString("\n| bundle | verdict | reason |\n|---|---|---|\n")
		for _, a := range r.Attempts {
			fmt.Fprintf(&b, "| %s | %s | %s |\n", cell(a.Artifact), a.Verdict, cell(strings.TrimSpace(a.Reason+" "+a.Detail)))
		}
	}
	return b.String()
}
