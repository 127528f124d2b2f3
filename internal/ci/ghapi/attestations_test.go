package ghapi_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-github/v62/github"

	"github.com/proofgate/proofgate/internal/ci/ghapi"
	"github.com/proofgate/proofgate/internal/githubtest"
)

const (
	owner = "acme"
	repo  = "widget"
)

// TestFakeAttestationStoreRefuses: the fake refuses what GitHub's
// documented endpoint refuses (422) and what the action never sends.
func TestFakeAttestationStoreRefuses(t *testing.T) {
	srv := githubtest.New(t)
	srv.AddRepo(owner, repo)
	srv.Token = "ghs_attest"
	gh, err := ghapi.NewClient(context.Background(), srv.Token, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, comp string
		status     int
	}{
		{"not a bundle", `{"mediaType":"application/json"}`, 422},
		{"no certificate", `{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json","verificationMaterial":{"publicKey":{"hint":"x"}},"dsseEnvelope":{"payloadType":"application/vnd.in-toto+json","payload":"e30="}}`, 422},
		{"no envelope", `{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json","verificationMaterial":{"certificate":{"rawBytes":"AA=="}}}`, 422},
		{"duplicate member", `{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json","mediaType":"x"}`, 400},
	} {
		_, err := ghapi.PostAttestation(context.Background(), gh, owner, repo, []byte(c.comp))
		var ge *github.ErrorResponse
		if !errors.As(err, &ge) || ge.Response.StatusCode != c.status {
			t.Errorf("%s: %v, want %d", c.name, err, c.status)
		}
	}
	if _, err := ghapi.PostAttestation(context.Background(), gh, owner, repo, []byte("{")); err == nil {
		t.Error("posted a companion that is not JSON")
	}
}
