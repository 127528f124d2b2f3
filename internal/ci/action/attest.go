package action

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/google/go-github/v62/github"
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

// AttestPermissionError is an attestation the token may not store (HTTP
// 403): the job warns and goes on, since the evidence is uploaded anyway.
type AttestPermissionError struct{}

func (*AttestPermissionError) Error() string {
	return "the token may not store attestations (HTTP 403): give the job `permissions: attestations: write`"
}

// PostAttestation stores the Sigstore bundle comp in owner/repo's
// attestation store (POST /repos/{owner}/{repo}/attestations, body
// {"bundle": comp}) and returns its id.
func PostAttestation(ctx context.Context, gh *github.Client, owner, repo string, comp []byte) (int64, error) {
	if !json.Valid(comp) {
		return 0, errors.New("the companion Sigstore bundle is not JSON")
	}
	body := map[string]json.RawMessage{"bundle": bytes.TrimSpace(comp)}
	req, err := gh.NewRequest(http.MethodPost, fmt.Sprintf("repos/%s/%s/attestations", url.PathEscape(owner), url.PathEscape(repo)), body)
	if err != nil {
		return 0, err
	}
	var created struct {
		ID int64 `json:"id"`
	}
	_, err = gh.Do(ctx, req, &created)
	var ge *github.ErrorResponse
	if errors.As(err, &ge) && ge.Response != nil && ge.Response.StatusCode == http.StatusForbidden {
		return 0, &AttestPermissionError{}
	}
	return created.ID, err
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
	id, err := PostAttestation(ctx, j.gh, j.owner, j.name, comp)
	if err != nil {
		j.f.annotate("warning", "ProofGate attestation not stored", err.Error())
		return
	}
	j.res.AttestationID = id
	j.f.output("attestation-id", strconv.FormatInt(id, 10))
	j.f.logf("proofgate: stored the companion Sigstore bundle in %s's attestation store (id %d): gh attestation verify FILE --repo %s finds it by any subject's digest", j.repo, id, j.repo)
}
