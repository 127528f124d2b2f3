package bundle

import (
	"slices"
	"strings"
	"time"
)

// The unsafe opt-outs a PolicyDescription names, in this order.
const (
	UnsafeAnySource   = "any-source"   // WithoutSourceBindingUnsafe
	UnsafeAnyContract = "any-contract" // WithoutContractBindingUnsafe
	UnsafeDirtySource = "dirty-source" // WithDirtySourceUnsafe
)

// PolicyDescription is a Policy as a document: everything a gate required
// of a bundle beyond its integrity, for a verification summary
// (bundle/vsa) to carry and hash. Its canonical JSON (canon.Marshal) is
// the same for the same requirements and differs when any requirement
// differs. Members:
//
//   - commit, tree: the required source (lowercase full SHA), at most one
//     of them, none with the any-source opt-out;
//   - contract_hash: the required contract ("sha256:<64 hex>"), absent
//     with the any-contract opt-out;
//   - repo: the required repository as given (compared without case);
//   - profile: present when a profile is required ("" is the base
//     contract), absent when any profile passes;
//   - require_approvals: always present;
//   - witnessed_at: the witness time (RFC 3339, UTC, nanoseconds), when
//     given;
//   - unsafe: the opt-outs taken, in the order any-source, any-contract,
//     dirty-source; absent when none was;
//   - require_sandbox: true when WithRequireSandbox, absent otherwise;
//   - require_rules: the rules WithRequireRule named, in order; absent
//     when none;
//   - require_authorizations: the targets WithRequireAuthorization named,
//     in order; absent when none;
//   - require_subjects: the file digests WithSubject named (64 hex), in
//     order; absent when none.
//
// Members absent when their requirement is not set keep the description
// (and the VSA policy digest) of a policy without them as it was before
// they were added. Every field of Policy must appear here: the
// reflection tests of policy_every_option_test.go fail for one that does
// not change the description.
type PolicyDescription struct {
	Commit           string   `json:"commit,omitempty"`
	Tree             string   `json:"tree,omitempty"`
	ContractHash     string   `json:"contract_hash,omitempty"`
	Repo             string   `json:"repo,omitempty"`
	Profile          *string  `json:"profile,omitempty"`
	RequireApprovals int      `json:"require_approvals"`
	WitnessedAt      string   `json:"witnessed_at,omitempty"`
	Unsafe           []string `json:"unsafe,omitempty"`
	// RequireAuthorizations are the targets WithRequireAuthorization
	// named, in order; absent when none.
	RequireAuthorizations []string `json:"require_authorizations,omitempty"`
	// RequireSandbox is WithRequireSandbox.
	RequireSandbox bool `json:"require_sandbox,omitempty"`
	// RequireRules are the rules WithRequireRule named, in order.
	RequireRules []string `json:"require_rules,omitempty"`
	// RequireSubjects are the file digests WithSubject named, in order.
	RequireSubjects []string `json:"require_subjects,omitempty"`
}

// Describe returns what p requires. A nil or unchecked policy describes
// itself as it is: Verify refuses it before a VSA could claim it.
func (p *Policy) Describe() PolicyDescription {
	if p == nil {
		return PolicyDescription{}
	}
	d := PolicyDescription{
		Commit:           strings.ToLower(p.source.commit),
		Tree:             strings.ToLower(p.source.tree),
		ContractHash:     p.contract.hash,
		Repo:             p.repo,
		RequireApprovals: p.approvals,
		RequireSandbox:   p.requireSandbox,
	}
	d.RequireAuthorizations = slices.Clone(p.requireAuthorizations)
	d.RequireRules = slices.Clone(p.requireRules)
	d.RequireSubjects = slices.Clone(p.requireSubjects)
	if p.profile != nil {
		prof := *p.profile
		d.Profile = &prof
	}
	if !p.witnessed.IsZero() {
		d.WitnessedAt = p.witnessed.UTC().Format(time.RFC3339Nano)
	}
	if p.source.any {
		d.Unsafe = append(d.Unsafe, UnsafeAnySource)
	}
	if p.contract.any {
		d.Unsafe = append(d.Unsafe, UnsafeAnyContract)
	}
	if p.allowDirty {
		d.Unsafe = append(d.Unsafe, UnsafeDirtySource)
	}
	return d
}
