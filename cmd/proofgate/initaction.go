package main

import (
	"fmt"
	"regexp"

	"github.com/proofgate/proofgate/internal/starter"
)

// actionPin is --action: OWNER/REPO@<40 hex>, a full commit SHA (a tag or
// branch can be moved to other code).
var actionPin = regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9-]{0,38})/([A-Za-z0-9._-]{1,100})@([0-9a-f]{40})$`)

// checkActionFlag validates --action; "" keeps the placeholder.
func checkActionFlag(ref string, workflow bool) error {
	if ref == "" {
		return nil
	}
	if !workflow {
		return usageErr(fmt.Errorf("--action pins the action in the workflows that --workflow writes: pass both"))
	}
	m := actionPin.FindStringSubmatch(ref)
	if m == nil || m[3] == starter.ActionPlaceholderSHA || m[1] == "OWNER" || m[2] == ".." || m[2] == "." {
		return usageErr(fmt.Errorf("--action %q: want OWNER/REPO@<full 40-hex commit SHA> of the ProofGate release you reviewed, e.g. proofgate/proofgate@<sha> (a tag or branch can be moved: see docs/action.md)", ref))
	}
	return nil
}
