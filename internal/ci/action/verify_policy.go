package action

import (
	"errors"
	"slices"
	"strings"

	"github.com/proofgate/proofgate/bundle/vsa"
	"github.com/proofgate/proofgate/internal/app"
	"github.com/proofgate/proofgate/internal/bounded"
	"github.com/proofgate/proofgate/internal/ci/event"
	"github.com/proofgate/proofgate/internal/ci/gate"
)

// Input policy (ADR 0049) names a gate policy file in the workspace: the
// gate's requirements as a checked-in document, the one bundle verify
// --policy reads (app.GatePolicy). Each member of its description stands
// for the verify input its bundle.PolicyDescription tag names, its
// identities for the identity inputs of the same names; a member and its
// input both given is refused, never "the last one wins". An input at its
// action.yml default counts as not given. The members that describe one
// release rather than a gate (the commit, tree, contract, repository and
// witness time) and the unsafe opt-outs cannot be set here: the action
// derives the first from the release commit and GITHUB_REPOSITORY, and
// takes no opt-out.

// policyDerived are the description members input policy may not hold,
// and why.
var policyDerived = map[string]string{
	"commit":        "the release commit is input commit (default: the workflow's commit), never a checked-in file's",
	"tree":          "the action requires the release commit's tree (input match: tree)",
	"contract_hash": "the action requires the contract at the release commit (input contract)",
	"repo":          "the action requires GITHUB_REPOSITORY",
	"witnessed_at":  "the action takes the witness time from the artifact's created_at",
	"unsafe":        "the action takes no unsafe opt-out",
}

// inputDefaults are the defaults verify/action.yml gives the inputs a
// policy member can set: an input at its default is not given.
var inputDefaults = map[string]string{"require-approvals": "1", "require-sandbox": "false"}

// identityInputs are the inputs a policy file's identities set.
var identityInputs = []string{"certificate-oidc-issuer", "signer-workflow", "source-repo", "source-ref"}

// readPolicy reads input policy: the inputs its members set (g.input
// returns them), its required product digests and its trust pins.
func (g *verifyJob) readPolicy() *gate.Refusal {
	path := g.f.input("policy")
	if path == "" {
		return nil
	}
	if !event.CleanRel(path) {
		return gate.Usage("input policy: %q is not a clean path relative to the workspace", path)
	}
	b, err := bounded.ReadFile(g.abs(path), vsa.MaxPayload)
	if err != nil {
		return gate.Usage("input policy: %v", err)
	}
	doc, err := app.ParseGatePolicy(b)
	if err != nil {
		return gate.Usage("input policy %s: %v", path, err)
	}
	g.gatePolicy, g.overlay = doc, map[string]string{}
	for _, r := range doc.Bundle.Requirements() {
		switch why, derived := policyDerived[r.Member]; {
		case !doc.Has(r.Member):
		case derived:
			return gate.Usage("input policy %s sets %s, which it cannot: %s", path, r.Member, why)
		case r.Member == "require_subjects":
			if g.f.input("subject") != "" {
				return gate.Usage("input policy %s sets require_subjects, and input subject is given too: give the products in one place", path)
			}
		default:
			if r := g.setInput(path, r.Member, r.Input, strings.Join(r.Values, ",")); r != nil {
				return r
			}
		}
	}
	for name, v := range doc.Identities {
		if !slices.Contains(identityInputs, name) {
			return gate.Usage("input policy %s: identities: %q is not one of %v", path, name, identityInputs)
		}
		if r := g.setInput(path, "identities."+name, name, v); r != nil {
			return r
		}
	}
	return nil
}

// setInput makes input name read v, unless the workflow gives it too.
func (g *verifyJob) setInput(path, member, name, v string) *gate.Refusal {
	if given := g.f.input(name); given != "" && given != inputDefaults[name] {
		return gate.Usage("input policy %s sets %s, and input %s is given too: give it in one place", path, member, name)
	}
	g.overlay[name] = v
	return nil
}

// input is the workflow's input name, or what input policy sets it to.
func (g *verifyJob) input(name string) string {
	if v, ok := g.overlay[name]; ok {
		return v
	}
	return g.f.input(name)
}

// checkPins refuses trust material that is not what input policy pins:
// each pinned name must be the base name of input trust-store or
// trusted-root, with the pinned SHA-256.
func (g *verifyJob) checkPins() *gate.Refusal {
	if g.gatePolicy == nil {
		return nil
	}
	root := ""
	if g.ids.TrustedRoot != "" {
		root = g.abs(g.ids.TrustedRoot)
	}
	err := g.gatePolicy.CheckTrust(g.abs(g.in.trustStore), root)
	var pe *app.TrustPinError
	switch {
	case errors.As(err, &pe) && pe.Path == "":
		return gate.Usage("input policy pins trust material %q, which neither input trust-store nor trusted-root names", pe.Name)
	case err != nil:
		return gate.Usage("input policy: %v", err)
	}
	return nil
}

// policySubjects are the product digests input policy requires.
func (g *verifyJob) policySubjects() []string {
	if g.gatePolicy == nil {
		return nil
	}
	return g.gatePolicy.Bundle.RequireSubjects
}
