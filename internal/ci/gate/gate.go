// Package gate is the release gate: find the evidence bundle for a release
// commit among the repository's workflow artifacts or its attestation
// store, and verify it under the gate's policy, recording each attempt.
//
// It takes plain options (the GitHub client, the repository, the trust
// store, the policy with its material verifiers, the search) and returns a
// Result; the verify action (internal/ci/action) reads its inputs into
// them and renders the Result.
package gate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"strings"

	"github.com/google/go-github/v62/github"
	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/archive"
	"github.com/proofgate/proofgate/bundle/trust"
	"github.com/proofgate/proofgate/internal/bounded"
	"github.com/proofgate/proofgate/internal/ci/artifact"
	"github.com/proofgate/proofgate/internal/ci/event"
	"github.com/proofgate/proofgate/kernel/exit"
)

// Reason is why the verify step refused before, beside or after a bundle
// verification: finding the artifact, the release contract, the
// companion Sigstore bundle, the summary. A bundle's own refusals are
// bundle.Reason values; a verdict's reason (bundle.Verdict.Reason, the
// action's reason output) is either kind, as a string.
type Reason string

// The reasons, as docs/action.md's reason output lists them.
const (
	ReasonNotFound   Reason = "artifact-not-found"
	ReasonExpired    Reason = "artifact-expired"
	ReasonOther      Reason = "artifact-for-other-commit"
	ReasonBadZip     Reason = "artifact-malformed"
	ReasonGitHubAPI  Reason = "github-api"
	ReasonNoContract Reason = "contract-unavailable"
	ReasonUsage      Reason = "usage"
	// ReasonCompanion refuses an artifact whose companion Sigstore bundle
	// does not carry the archive's envelope (or, keyless, is not the
	// archive's material byte for byte): what Sigstore tooling would
	// verify differs from what the gate verified.
	ReasonCompanion Reason = "companion-mismatch"
	// ReasonVSAUnwritten refuses an accepted bundle whose verification
	// summary could not be written: a gate asked for one fails closed.
	ReasonVSAUnwritten Reason = "vsa-unwritten"
)

// Reasons returns every Reason, in declaration order.
func Reasons() []Reason {
	return []Reason{ReasonNotFound, ReasonExpired, ReasonOther, ReasonBadZip, ReasonGitHubAPI,
		ReasonNoContract, ReasonUsage, ReasonCompanion, ReasonVSAUnwritten}
}

// noArtifactsAPIHint follows a failure of the REST artifacts API: runners
// without it (act, Gitea, Forgejo) can still verify a bundle file.
const noArtifactsAPIHint = "; where the REST artifacts API is missing (act, Gitea, Forgejo), download the bundle in the workflow and pass its path as input bundle"

// Attempt is one bundle the gate looked at.
type Attempt struct {
	Artifact string // "name (id N, head <sha>)", the local file or the stored statement
	Verdict  string
	Reason   string
	Detail   string
}

// Refusal is why the gate refuses, with the class of the exit.
type Refusal struct {
	Class          exit.Class
	Reason, Detail string
}

// Usage is the refusal of bad input.
func Usage(format string, args ...any) *Refusal {
	return &Refusal{exit.Usage, string(ReasonUsage), fmt.Sprintf(format, args...)}
}

// Repo is the repository the gate releases from.
type Repo struct {
	GitHub      *github.Client // nil: the checkout only
	Owner, Name string
	Workspace   string // the checkout
}

// Options are what the gate looks for and verifies with.
type Options struct {
	Repo
	// ServerURL is GITHUB_SERVER_URL, for an artifact's web address
	// ("": https://github.com).
	ServerURL string
	Store     *trust.Store
	// Policy is what the gate requires; with Material set, keyless
	// bundles verify too, and the attestation store is searched.
	Policy bundle.VerifyOptions
	Search artifact.Search
	// Verified, when set, is called with each bundle archive verified.
	Verified func(Bundle)
}

// Bundle is a bundle archive the gate verified, as a verification summary
// names it.
type Bundle struct {
	Data []byte
	Name string // the archive's file name
	URI  string // the artifact's web address; "" for a file
	// Policy is what it was verified under, with the artifact's witness
	// time.
	Policy  bundle.VerifyOptions
	Verdict bundle.Verdict
}

// Result is what the gate found and decided.
type Result struct {
	Attempts []Attempt
	Accepted *bundle.Result // nil unless accepted
	// RunID is the accepted run's, else the first refused archive's that
	// names one.
	RunID   string
	Refusal *Refusal // nil when accepted
}

// companion is a companion Sigstore bundle found beside an archive.
type companion struct {
	name string
	data []byte
}

// search is one gate's attempts.
type search struct {
	o   Options
	res Result
}

// File verifies the bundle archive at path (input names it as given) and,
// when one lies beside it, its companion.
func File(o Options, path, input string) *Result {
	s := &search{o: o}
	s.res.Refusal = s.file(path, input)
	return &s.res
}

func (s *search) file(p, input string) *Refusal {
	data, err := bounded.ReadFile(p, archive.DefaultLimits.MaxTotalSize)
	if err != nil {
		return Usage("input bundle: %v", err)
	}
	var comp *companion
	if strings.HasSuffix(p, ".tar.gz") {
		cp := artifact.CompanionName(p)
		if b, err := bounded.ReadFile(cp, archive.DefaultLimits.MaxTotalSize); err == nil {
			comp = &companion{name: filepath.Base(cp), data: b}
		} else if !errors.Is(err, fs.ErrNotExist) {
			return Usage("input bundle's companion %s: %v", cp, err)
		}
	}
	a := s.verifyOne(Bundle{Data: data, Name: filepath.Base(input), Policy: s.o.Policy}, comp, "file "+input)
	if a.Verdict == bundle.VerdictAccepted {
		return nil
	}
	return &Refusal{exit.Refused, a.Reason, a.Detail}
}

// Find finds the candidate artifacts of o.Search (artifact.Candidates) and
// verifies each, the first accepted winning; all refused, the first
// refusal is the gate's. None found, the attestation store is the last
// resort (verifyStore).
//
// With Search.ByCommit (match: commit), the artifact is the newest
// unexpired one named Search.NameFor(commit) (the verify action's:
// artifact-name, default "proofgate-<commit>") whose workflow run's head
// is the commit. Otherwise (match: tree), the release commit is usually a
// merge or squash commit that no ProofGate run saw: the run tested the
// pull request's test merge, and its artifact is named after the PR head.
// Candidates are then, in order: an artifact for the commit itself; the
// artifacts for the heads of the pull requests GitHub associates with the
// commit (commits/{sha}/pulls); and, when those give none, the newest
// unexpired artifacts whose name is Search.Name (or starts with
// Search.Prefix), at most artifact.MaxCandidates in all. Each candidate is
// verified under o.Policy, which then requires the commit's tree. The
// name is only a hint: a bundle is accepted because its signed, verified
// tree equals the release commit's tree, never because of its name.
//
// Time: a downloaded artifact's created_at, which GitHub records and the
// signer cannot choose, witnesses when the bundle existed: a key retired
// or revoked before it is refused whatever signed_at says.
func Find(ctx context.Context, o Options) *Result {
	s := &search{o: o}
	s.res.Refusal = s.find(ctx)
	return &s.res
}

func (s *search) find(ctx context.Context) *Refusal {
	cands, findErr := artifact.Candidates(ctx, s.o.GitHub, s.o.Owner, s.o.Name, s.o.Search)
	if len(cands) == 0 {
		miss := s.notFound(findErr)
		if miss.Class != exit.Refused {
			return miss
		}
		return s.verifyStore(ctx, miss)
	}
	return firstAccepted(cands, func(_ int, a *artifact.Artifact) Attempt { return s.tryArtifact(ctx, a) })
}

// firstAccepted tries each candidate until one is accepted (nil); all
// refused, it returns the first refusal.
func firstAccepted[T any](cands []T, try func(int, T) Attempt) *Refusal {
	var first *Attempt
	for i, c := range cands {
		att := try(i, c)
		if att.Verdict == bundle.VerdictAccepted {
			return nil
		}
		if first == nil {
			first = &att
		}
	}
	return &Refusal{exit.Refused, first.Reason, first.Detail}
}

// notFound is the refusal when no candidate artifact was found.
func (s *search) notFound(findErr error) *Refusal {
	switch {
	case errors.Is(findErr, artifact.ErrExpired):
		return &Refusal{exit.Refused, string(ReasonExpired), findErr.Error()}
	case errors.Is(findErr, artifact.ErrOtherCommit):
		return &Refusal{exit.Refused, string(ReasonOther), findErr.Error()}
	case errors.Is(findErr, artifact.ErrNotFound) || findErr == nil:
		match := "tree"
		if s.o.Search.ByCommit {
			match = "commit"
		}
		return &Refusal{exit.Refused, string(ReasonNotFound),
			fmt.Sprintf("no unexpired ProofGate artifact for %s %s in %s/%s", match, s.o.Search.Commit, s.o.Owner, s.o.Name)}
	}
	return &Refusal{exit.Environment, string(ReasonGitHubAPI), findErr.Error() + noArtifactsAPIHint}
}

// tryArtifact downloads artifact a and verifies its bundle, witnessed at
// the artifact's created_at.
func (s *search) tryArtifact(ctx context.Context, a *artifact.Artifact) Attempt {
	label := fmt.Sprintf("%s (id %d, head %s)", a.Name, a.ID, event.ShortSHA(a.Run.HeadSHA))
	zipData, err := artifact.Download(ctx, s.o.GitHub, s.o.Owner, s.o.Name, a.ID, artifact.MaxBundleBytes)
	if err != nil {
		return s.record(label, bundle.Refusal(string(ReasonGitHubAPI), err.Error(), ""), nil)
	}
	b, err := artifact.BundleFromZip(zipData, artifact.MaxBundleBytes, artifact.CompanionName)
	if err != nil {
		return s.record(label, bundle.Refusal(string(ReasonBadZip), err.Error(), ""), nil)
	}
	var comp *companion
	if b.Companion != "" {
		comp = &companion{name: b.Companion, data: b.CompanionData}
	}
	witnessed := s.o.Policy
	witnessed.Witnessed = a.CreatedAt
	return s.verifyOne(Bundle{Data: b.Data, Name: path.Base(b.Name), URI: s.artifactURI(a), Policy: witnessed}, comp, label)
}

// artifactURI is the web address of an artifact, the summary's resourceUri.
func (s *search) artifactURI(a *artifact.Artifact) string {
	server := strings.TrimSuffix(s.o.ServerURL, "/")
	if server == "" {
		server = "https://github.com"
	}
	return fmt.Sprintf("%s/%s/%s/actions/runs/%d/artifacts/%d", server, s.o.Owner, s.o.Name, a.Run.ID, a.ID)
}

// verifyOne verifies one bundle archive (and its companion, when there is
// one), records the attempt and passes the bundle to Options.Verified.
func (s *search) verifyOne(b Bundle, comp *companion, label string) Attempt {
	r, err := bundle.Verify(bytes.NewReader(b.Data), s.o.Store, b.Policy)
	v := verdictOf(r, err)
	if v.Verdict == bundle.VerdictAccepted && comp != nil {
		if err := artifact.CheckCompanion(b.Data, comp.data); err != nil {
			v = bundle.Refusal(string(ReasonCompanion), fmt.Sprintf("%s: %v", comp.name, err), r.RunID)
		}
	}
	if v.Verdict != bundle.VerdictAccepted && s.res.RunID == "" {
		s.res.RunID = v.RunID
	}
	att := s.record(label, v, r)
	if s.o.Verified != nil {
		b.Verdict = bundle.Refusal(att.Reason, att.Detail, s.res.RunID)
		if att.Verdict == bundle.VerdictAccepted {
			b.Verdict = s.res.Accepted.Verdict()
		}
		s.o.Verified(b)
	}
	return att
}

// verdictOf is bundle.VerdictOf, an error that is no refusal refused as
// malformed.
func verdictOf(r *bundle.Result, err error) bundle.Verdict {
	v, err := bundle.VerdictOf(r, err)
	if err != nil {
		return bundle.Refusal(string(bundle.Malformed), err.Error(), "")
	}
	return v
}

// record records the attempt at label with verdict v, and r when v
// accepts it.
func (s *search) record(label string, v bundle.Verdict, r *bundle.Result) Attempt {
	if v.Verdict == bundle.VerdictAccepted {
		s.res.Accepted, s.res.RunID = r, r.RunID
	}
	att := Attempt{Artifact: label, Verdict: v.Verdict, Reason: v.Reason, Detail: v.Detail}
	s.res.Attempts = append(s.res.Attempts, att)
	return att
}
