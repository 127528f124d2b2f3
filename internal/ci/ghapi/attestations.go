package ghapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/google/go-github/v62/github"
)

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

// Attestations lists the Sigstore bundles owner/repo's attestation store
// holds for a subject digest ("sha256:<hex>") with predicate type
// predicateType (GET /repos/{owner}/{repo}/attestations/{digest}), at most
// limit of them. Its error is Get's, unwrapped.
func Attestations(ctx context.Context, gh *github.Client, owner, repo, digest, predicateType string, limit int) ([]json.RawMessage, error) {
	var list struct {
		Attestations []struct {
			Bundle json.RawMessage `json:"bundle"`
		} `json:"attestations"`
	}
	u := fmt.Sprintf("repos/%s/%s/attestations/%s?per_page=%d&predicate_type=%s", url.PathEscape(owner), url.PathEscape(repo),
		digest, limit, url.QueryEscape(predicateType))
	if _, err := Get(ctx, gh, u, &list); err != nil {
		return nil, err
	}
	var out []json.RawMessage
	for i, a := range list.Attestations {
		if i == limit {
			break
		}
		out = append(out, a.Bundle)
	}
	return out, nil
}
