package action

import (
	"strings"

	"github.com/proofgate/proofgate/kernel/replay"
)

// readRequireAuthorizations reads input require-authorization: tracking
// authorization targets, separated by commas or new lines, each of which
// the bundle's run must authorize (bundle.WithRequireAuthorization: an
// approved authorization.recorded for the target and no rejected one).
// Empty requires none.
func readRequireAuthorizations(f *workflow, in *verifyInputs) *refusal {
	v := f.input("require-authorization")
	for _, t := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == '\n' }) {
		t = strings.TrimSpace(t)
		if t == "" {
			continue
		}
		if !replay.ValidTarget(t) {
			return refuseUsage("input require-authorization: %q is not an authorization target (1-200 of A-Z a-z 0-9 . _ : / # @ + -)", t)
		}
		in.requireAuthorizations = append(in.requireAuthorizations, t)
	}
	return nil
}
