package bundle

import (
	"reflect"
	"slices"
	"strconv"
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
//
// This type is the one definition of a gate requirement. Each member's
// tags say how the other surfaces spell it: `flag` is bundle verify's
// flag (a gate policy file member sets it; "-": set another way, see
// cmd/proofgate/gatepolicy.go), `input` the verify action's input ("-":
// the action derives it, never from an input: the repository from
// GITHUB_REPOSITORY, the witness time from the artifact, and no unsafe
// opt-out at all). Tests hold the flags, the inputs (verify/action.yml)
// and docs/SPEC.md §9 to these tags (Requirements).
type PolicyDescription struct {
	Commit           string   `json:"commit,omitempty" flag:"commit" input:"commit"`
	Tree             string   `json:"tree,omitempty" flag:"tree" input:"match"`
	ContractHash     string   `json:"contract_hash,omitempty" flag:"contract-hash" input:"contract"`
	Repo             string   `json:"repo,omitempty" flag:"repo" input:"-"`
	Profile          *string  `json:"profile,omitempty" flag:"profile" input:"profile"`
	RequireApprovals int      `json:"require_approvals" flag:"require-approvals" input:"require-approvals"`
	WitnessedAt      string   `json:"witnessed_at,omitempty" flag:"witnessed-at" input:"-"`
	Unsafe           []string `json:"unsafe,omitempty" flag:"-" input:"-"`
	// RequireAuthorizations are the targets WithRequireAuthorization
	// named, in order; absent when none.
	RequireAuthorizations []string `json:"require_authorizations,omitempty" flag:"require-authorization" input:"require-authorization"`
	// RequireSandbox is WithRequireSandbox.
	RequireSandbox bool `json:"require_sandbox,omitempty" flag:"require-sandbox" input:"require-sandbox"`
	// RequireRules are the rules WithRequireRule named, in order.
	RequireRules []string `json:"require_rules,omitempty" flag:"require-rule" input:"require-rule"`
	// RequireSubjects are the file digests WithSubject named, in order.
	// The flag and the input name files; the member holds their digests.
	RequireSubjects []string `json:"require_subjects,omitempty" flag:"-" input:"subject"`
}

// A Requirement is one member of a PolicyDescription as the surfaces that
// set it see it.
type Requirement struct {
	Member string   // the JSON member
	Flag   string   // bundle verify's flag, "-" when set another way
	Input  string   // the verify action's input, "-" when derived
	Values []string // the member's value as flag values (one per element of a list)
}

// Requirements lists d's members in declaration order, with their values.
func (d PolicyDescription) Requirements() []Requirement {
	v := reflect.ValueOf(d)
	t := v.Type()
	out := make([]Requirement, 0, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		member, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		out = append(out, Requirement{Member: member, Flag: f.Tag.Get("flag"), Input: f.Tag.Get("input"), Values: flagValues(v.Field(i))})
	}
	return out
}

// flagValues is a member's value as a flag would be given it.
func flagValues(v reflect.Value) []string {
	switch v.Kind() {
	case reflect.String:
		return []string{v.String()}
	case reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		return flagValues(v.Elem())
	case reflect.Int:
		return []string{strconv.FormatInt(v.Int(), 10)}
	case reflect.Bool:
		return []string{strconv.FormatBool(v.Bool())}
	case reflect.Slice:
		out := make([]string, v.Len())
		for i := range out {
			out[i] = v.Index(i).String()
		}
		return out
	}
	panic("bundle: PolicyDescription member of kind " + v.Kind().String())
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
