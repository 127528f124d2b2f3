package main

import (
	"errors"
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/vsa"
	"github.com/proofgate/proofgate/internal/app"
	"github.com/proofgate/proofgate/internal/bounded"
	"github.com/proofgate/proofgate/internal/printable"
)

// A gate policy file (bundle verify --policy FILE, ADR 0043) is the
// policy document a verification summary names (bundle/vsa.Policy:
// {"bundle": <policy description>, "identities": {...}, "trust": [...]}),
// checked in beside the release workflow instead of a line of flags. Each
// member stands for the flag it describes; a member and its flag both
// given is a usage error, never "the last one wins".

// Each member of the policy description stands for the flag its `flag`
// tag names (bundle.PolicyDescription, the one definition of a gate
// requirement); the unsafe opt-outs and the product digests are set
// below. A flag that takes one value per use (a string array) is
// repeatable: a member that sets it, given on the command line too, is
// refused before its first element is set.

// repeatable reports whether flag takes one value per use.
func repeatable(c *cobra.Command, flag string) bool {
	f := c.Flags().Lookup(flag)
	return f != nil && f.Value.Type() == "stringArray"
}

// gatePolicyUnsafe are the unsafe opt-outs and their flags.
var gatePolicyUnsafe = map[string]string{
	bundle.UnsafeAnySource:   "any-source",
	bundle.UnsafeAnyContract: "any-contract",
	bundle.UnsafeDirtySource: "allow-dirty",
}

// gatePolicy is what a policy file gives beyond flags: the product digests
// it requires and the trust material it pins.
type gatePolicy struct {
	subjects []string
	doc      *app.GatePolicy
}

// applyPolicyFile reads the policy file at path and sets the flags its
// members stand for.
func applyPolicyFile(c *cobra.Command, path string) (*gatePolicy, error) {
	b, err := bounded.ReadFile(path, vsa.MaxPayload)
	if err != nil {
		return nil, usageErr(fmt.Errorf("--policy: %w", err))
	}
	doc, err := app.ParseGatePolicy(b)
	if err != nil {
		return nil, usageErr(fmt.Errorf("--policy %s: %w", path, err))
	}
	set := func(member, flag, value string) error {
		if c.Flags().Changed(flag) && !repeatable(c, flag) {
			return usageErr(fmt.Errorf("--policy %s sets %s, and --%s is given too: give it in one place", path, member, flag))
		}
		if err := c.Flags().Set(flag, value); err != nil {
			return usageErr(fmt.Errorf("--policy %s: %s: %w", path, member, err))
		}
		return nil
	}
	if err := applyDescription(doc, c, set); err != nil {
		return nil, err
	}
	for name, v := range doc.Identities {
		if !slices.Contains(identityFlags, name) {
			return nil, usageErr(fmt.Errorf("--policy %s: identities: %q is not one of %v", path, printable.Escape(name), identityFlags))
		}
		if err := set("identities."+name, name, v); err != nil {
			return nil, err
		}
	}
	// require_subjects are checked where every subject digest is: the
	// policy refuses one that is not 64 lowercase hex (PolicySubject).
	return &gatePolicy{subjects: doc.Bundle.RequireSubjects, doc: doc}, nil
}

// applyDescription sets the flags of the description's members the file
// holds; a repeatable flag given on the command line as well is refused.
func applyDescription(doc *app.GatePolicy, c *cobra.Command, set func(member, flag, value string) error) error {
	d := doc.Bundle
	for _, r := range d.Requirements() {
		if !doc.Has(r.Member) || r.Flag == "-" {
			continue
		}
		if repeatable(c, r.Flag) && c.Flags().Changed(r.Flag) {
			return usageErr(fmt.Errorf("--policy sets %s, and --%s is given too: give it in one place", r.Member, r.Flag))
		}
		for _, v := range r.Values {
			if err := set(r.Member, r.Flag, v); err != nil {
				return err
			}
		}
	}
	for _, u := range d.Unsafe {
		flag, ok := gatePolicyUnsafe[u]
		if !ok {
			return usageErr(fmt.Errorf("--policy: unsafe: %q is not one of any-source, any-contract, dirty-source", printable.Escape(u)))
		}
		if err := set("unsafe "+u, flag, "true"); err != nil {
			return err
		}
	}
	return nil
}

// checkTrust refuses trust material that is not what the policy pins: each
// pinned name must be a trust file given (--trust, --trusted-root; by base
// name) whose SHA-256 is the pinned one.
func (p *gatePolicy) checkTrust(given ...string) error {
	err := p.doc.CheckTrust(given...)
	var pe *app.TrustPinError
	switch {
	case errors.As(err, &pe) && pe.Path == "":
		return usageErr(fmt.Errorf("--policy pins trust material %q, which no --trust or --trusted-root names", printable.Escape(pe.Name)))
	case errors.As(err, &pe):
		return usageErr(fmt.Errorf("--policy pins %s at sha256 %s; %s has sha256 %s: the gate's trust material is not the one its policy names",
			printable.Escape(pe.Name), printable.Escape(pe.Want), pe.Path, pe.Got))
	case err != nil:
		return usageErr(fmt.Errorf("--policy: %w", err))
	}
	return nil
}

var errPolicyWithSubject = errors.New("--policy sets require_subjects, and --subject is given too: give the products in one place")
