package action

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/proofgate/proofgate/internal/ci/ghapi"
)

// readAttest reads input attest: "true" stores the keyless companion
// Sigstore bundle in GitHub's attestation store (ADR 0040), which needs
// signing: keyless (the store holds bundles with a signing certificate).
func readAttest(f *workflow, keyless bool) (bool, error) {
	switch v := f.input("attest"); v {
	case "", "false":
		return false, nil
	case "true":
		if !keyless {
			return false, errors.New("input attest: true needs signing: keyless (GitHub's attestation store holds Sigstore bundles with a signing certificate; a key-signed companion has none)")
		}
		return true, nil
	default:
		return false, fmt.Errorf("input attest: %q is not true or false", v)
	}
}

// attest stores the companion of the exported bundle when input attest is
// true; a failure is a warning, never the job's.
func (j *job) attest(ctx context.Context, comp []byte) {
	if !j.in.attest || comp == nil {
		return
	}
	if j.gh == nil {
		j.f.annotate("warning", "ProofGate attestation not stored", "input attest: true, but there is no github-token")
		return
	}
	id, err := ghapi.PostAttestation(ctx, j.gh, j.owner, j.name, comp)
	if err != nil {
		j.f.annotate("warning", "ProofGate attestation not stored", err.Error())
		return
	}
	j.res.AttestationID = id
	j.f.output("attestation-id", strconv.FormatInt(id, 10))
	j.f.logf("proofgate: stored the companion Sigstore bundle in %s's attestation store (id %d): gh attestation verify FILE --repo %s finds it by any subject's digest", j.repo, id, j.repo)
}
