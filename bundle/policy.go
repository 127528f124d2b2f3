package bundle

import (
	"fmt"
	"regexp"
	"time"

	"github.com/proofgate/proofgate/bundle/archive"
	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/kernel/exit"
)

// A bundle is checked in two parts, as sigstore-go separates its Verifier
// from its Policy. Integrity is always checked and takes no options: the
// archive, the signature with a trusted key, the subjects, the event
// chain and the replay of the run, the predicate against that replay.
// Policy is what the caller requires of the run that integrity proved: its
// source and its contract (both required, each with an explicit unsafe
// opt-out), and optionally its repository, profile, a clean work tree,
// approvals and a witness time.

// Policy is what a caller requires of a bundle beyond its integrity. Make
// one with NewPolicy (or VerifyOptions.Policy); the zero value and nil are
// refused with a *PolicyError.
type Policy struct {
	source     SourcePolicy
	contract   ContractPolicy
	repo       string
	profile    *string
	approvals  int
	allowDirty bool
	witnessed  time.Time
	// requireSandbox is WithRequireSandbox (bundle/sandbox.go).
	requireSandbox bool
	// requireRules is WithRequireRule (bundle/rules.go).
	requireRules []string
	// requireAuthorizations is WithRequireAuthorization (bundle/authorization.go).
	requireAuthorizations []string
	// requireSubjects is WithSubject (bundle/product.go).
	requireSubjects []string
}

// SourcePolicy says which source the run must have verified. It is
// required: WithCommit, WithTree, or the explicit WithoutSourceBindingUnsafe.
type SourcePolicy struct {
	commit, tree string
	any, set     bool
}

// WithCommit requires the run's source commit (full hex SHA, any case).
func WithCommit(sha string) SourcePolicy { return SourcePolicy{commit: sha, set: true} }

// WithTree requires the run's source tree (full hex SHA, any case): a merge
// or squash commit whose tree equals the verified head's.
func WithTree(sha string) SourcePolicy { return SourcePolicy{tree: sha, set: true} }

// WithoutSourceBindingUnsafe accepts a run of any commit and tree. Unsafe
// for a gate: a bundle of any other commit of the repository would pass.
func WithoutSourceBindingUnsafe() SourcePolicy { return SourcePolicy{any: true, set: true} }

// ContractPolicy says which contract the run must have used. It is
// required: WithContractHash, or the explicit WithoutContractBindingUnsafe.
type ContractPolicy struct {
	hash     string
	any, set bool
}

// WithContractHash requires the hash ("sha256:<64 hex>") of the resolved
// contract the run used, computed by the caller from a contract a pull
// request cannot change (the release commit's).
func WithContractHash(h string) ContractPolicy { return ContractPolicy{hash: h, set: true} }

// WithoutContractBindingUnsafe accepts a run under any contract. Unsafe for
// a gate: a run under a weakened contract would pass.
func WithoutContractBindingUnsafe() ContractPolicy { return ContractPolicy{any: true, set: true} }

// PolicyOption adds an optional requirement to a Policy.
type PolicyOption func(*Policy)

// WithRepo requires the repository (owner/name, compared without case, as
// GitHub does) the run was made for.
func WithRepo(ownerName string) PolicyOption { return func(p *Policy) { p.repo = ownerName } }

// WithProfile requires the contract profile the run used, compared
// exactly; "" requires the base contract. Without it a run under any
// profile of the contract passes, including one with shorter timeouts.
func WithProfile(name string) PolicyOption { return func(p *Policy) { p.profile = &name } }

// WithApprovals requires at least n distinct approving people.
func WithApprovals(n int) PolicyOption { return func(p *Policy) { p.approvals = n } }

// WithWitnessTime gives a time the bundle is known to have existed by, from
// a source its signer does not control (the workflow artifact's created_at
// as GitHub reports it). A key retired or revoked before it is refused
// whatever signed_at says, and signed_at may not lie more than
// MaxClockSkew after it.
func WithWitnessTime(t time.Time) PolicyOption { return func(p *Policy) { p.witnessed = t } }

// WithDirtySourceUnsafe accepts a run planned on a work tree with
// uncommitted changes (--allow-dirty), whose checks ran on content no
// commit names. Without it such a run is refused (DirtySource).
func WithDirtySourceUnsafe() PolicyOption { return func(p *Policy) { p.allowDirty = true } }

// NewPolicy returns the policy requiring src, c and opts, or a
// *PolicyError when one of them is malformed.
func NewPolicy(src SourcePolicy, c ContractPolicy, opts ...PolicyOption) (*Policy, error) {
	p := &Policy{source: src, contract: c}
	for _, o := range opts {
		o(p)
	}
	if err := p.check(); err != nil {
		return nil, err
	}
	return p, nil
}

// PolicyField names the part of a policy a *PolicyError is about.
type PolicyField string

// The parts of a policy.
const (
	PolicyMissing      PolicyField = "policy"        // no policy at all
	PolicySource       PolicyField = "source"        // not exactly one of a commit, a tree, any source
	PolicyCommit       PolicyField = "commit"        // not a full SHA
	PolicyTree         PolicyField = "tree"          // not a full SHA
	PolicyContract     PolicyField = "contract"      // not exactly one of a contract hash, any contract
	PolicyContractHash PolicyField = "contract-hash" // not sha256:<64 lowercase hex>
	PolicyApprovals    PolicyField = "approvals"     // negative
	PolicyRepo         PolicyField = "repo"          // not owner/name
)

// PolicyError is a policy that does not say what the caller requires, or
// says it malformed: a gate must name the source and the contract it
// accepts, or opt out of each explicitly. It is of class exit.Usage.
type PolicyError struct {
	Field  PolicyField
	Detail string
}

func (e *PolicyError) Error() string { return "bundle verify policy: " + e.Detail }

// Is reports whether target is exit.Usage, the class of a policy error.
func (e *PolicyError) Is(target error) bool { return target == exit.Usage }

var (
	fullSHA      = regexp.MustCompile(`^([0-9a-fA-F]{40}|[0-9a-fA-F]{64})$`)
	contractHash = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
	repoName     = regexp.MustCompile(`^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$`)
)

// check refuses a policy that leaves the source or the contract unsaid or
// gives a malformed requirement.
func (p *Policy) check() error {
	if p == nil {
		return &PolicyError{PolicyMissing, "no policy: make one with NewPolicy"}
	}
	s, c := p.source, p.contract
	if !s.set {
		return &PolicyError{PolicySource, "give exactly one of a commit, a tree, or any source"}
	}
	if s.tree == "" && !s.any && !fullSHA.MatchString(s.commit) {
		return shaError(PolicyCommit, s.commit)
	}
	if s.tree != "" && !fullSHA.MatchString(s.tree) {
		return shaError(PolicyTree, s.tree)
	}
	if !c.set {
		return &PolicyError{PolicyContract, "give exactly one of a contract hash or any contract"}
	}
	if !c.any && !contractHash.MatchString(c.hash) {
		return &PolicyError{PolicyContractHash, fmt.Sprintf("contract hash %q: want sha256:<64 lowercase hex>", clip(c.hash))}
	}
	if p.approvals < 0 {
		return &PolicyError{PolicyApprovals, fmt.Sprintf("%d approvals: want at least 0", p.approvals)}
	}
	if p.repo != "" && !repoName.MatchString(p.repo) {
		return &PolicyError{PolicyRepo, fmt.Sprintf("repo %q: want owner/name", clip(p.repo))}
	}
	if err := p.checkSubjectDigests(); err != nil {
		return err
	}
	return p.checkAuthorizationTargets()
}

func shaError(f PolicyField, v string) error {
	return &PolicyError{f, fmt.Sprintf("%s %q: give the full 40-hex SHA (64-hex in SHA-256 repositories, e.g. from git rev-parse HEAD), not a short or symbolic one", f, clip(v))}
}

// VerifyOptions are a Policy and the integrity options as one struct, for
// callers that fill it from flags or inputs. Every requirement is
// explicit: one of Commit, Tree and AnySource, and one of ContractHash and
// AnyContract, must be set, or Verify returns a *PolicyError before
// reading the bundle. Each field says which option it stands for.
type VerifyOptions struct {
	Commit string // WithCommit: the run's source commit (full hex SHA)
	Tree   string // WithTree: the run's source tree (full hex SHA)
	// AnySource is WithoutSourceBindingUnsafe: a run of any commit and tree.
	AnySource bool
	// ContractHash is WithContractHash ("sha256:<64 hex>").
	ContractHash string
	// AnyContract is WithoutContractBindingUnsafe: a run under any contract.
	AnyContract bool
	// AllowDirty is WithDirtySourceUnsafe: a run planned on a dirty tree.
	AllowDirty bool
	// Now is WithCurrentTime, the verification time (zero: time.Now()).
	Now time.Time
	// Witnessed, when non-zero, is WithWitnessTime.
	Witnessed time.Time
	// Repo, when set, is WithRepo.
	Repo string
	// Profile, when non-nil, is WithProfile.
	Profile *string
	// RequireApprovals is WithApprovals.
	RequireApprovals int
	// RequireSandbox is WithRequireSandbox.
	RequireSandbox bool
	// RequireRules are WithRequireRule, one per name.
	RequireRules []string
	// RequireAuthorizations are WithRequireAuthorization, one per target.
	RequireAuthorizations []string
	// RequireSubjects are WithSubject, one per file digest (64 hex).
	RequireSubjects []string
	// Limits, when non-nil, is WithLimits (nil: archive.DefaultLimits).
	Limits *archive.Limits
	// Material, when non-nil, is WithMaterialVerifiers: keyless bundles
	// are verified with it (bundle/sigstore's Verifiers).
	Material envelope.MaterialVerifiers
}

// Policy returns the policy o describes, or a *PolicyError.
func (o VerifyOptions) Policy() (*Policy, error) {
	var src SourcePolicy
	switch {
	case count(o.Commit != "", o.Tree != "", o.AnySource) != 1:
	case o.AnySource:
		src = WithoutSourceBindingUnsafe()
	case o.Tree != "":
		src = WithTree(o.Tree)
	default:
		src = WithCommit(o.Commit)
	}
	var c ContractPolicy
	switch {
	case (o.ContractHash != "") == o.AnyContract:
	case o.AnyContract:
		c = WithoutContractBindingUnsafe()
	default:
		c = WithContractHash(o.ContractHash)
	}
	opts := []PolicyOption{WithApprovals(o.RequireApprovals), WithRepo(o.Repo)}
	if o.Profile != nil {
		opts = append(opts, WithProfile(*o.Profile))
	}
	if o.AllowDirty {
		opts = append(opts, WithDirtySourceUnsafe())
	}
	if !o.Witnessed.IsZero() {
		opts = append(opts, WithWitnessTime(o.Witnessed))
	}
	if o.RequireSandbox {
		opts = append(opts, WithRequireSandbox())
	}
	for _, r := range o.RequireRules {
		opts = append(opts, WithRequireRule(r))
	}
	for _, t := range o.RequireAuthorizations {
		opts = append(opts, WithRequireAuthorization(t))
	}
	for _, d := range o.RequireSubjects {
		opts = append(opts, WithSubject(d))
	}
	return NewPolicy(src, c, opts...)
}

// verifierOptions are o's integrity options.
func (o VerifyOptions) verifierOptions() []VerifierOption {
	var opts []VerifierOption
	if o.Limits != nil {
		opts = append(opts, WithLimits(*o.Limits))
	}
	if !o.Now.IsZero() {
		opts = append(opts, WithCurrentTime(o.Now))
	}
	if o.Material != nil {
		opts = append(opts, WithMaterialVerifiers(o.Material))
	}
	return opts
}

func count(bs ...bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}
