package action

// Keyless signing (docs/adr/0010-keyless-signing.md): with input signing:
// keyless the job asks the runner for its GitHub OIDC token (audience
// "sigstore"), Fulcio certifies an ephemeral key for the workflow the token
// names, a timestamp authority (and, when rekor-url is set, a transparency
// log) witnesses the signature, and the archive carries the resulting
// Sigstore bundle as its attestation.sigstore.json member. No secret is
// involved, so the job needs `permissions: id-token: write` instead.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/sigstore"
	"github.com/proofgate/proofgate/internal/ci/keyless"
)

// Values of input signing.
const (
	SigningKey     = "key"
	SigningKeyless = "keyless"
)

// OIDCAudience is the audience of the OIDC token Fulcio accepts.
const OIDCAudience = "sigstore"

// tokenTimeout bounds the runner's OIDC token request.
const tokenTimeout = 30 * time.Second

// The runner's OIDC token endpoint; it passes both only to jobs with
// `permissions: id-token: write`.
const (
	idTokenURLEnv   = "ACTIONS_ID_TOKEN_REQUEST_URL"
	idTokenTokenEnv = "ACTIONS_ID_TOKEN_REQUEST_TOKEN"
)

// errNoIDToken is the usage error of a keyless job without id-token: write.
var errNoIDToken = errors.New("signing: keyless needs the job's OIDC token, but " + idTokenURLEnv + " and " + idTokenTokenEnv +
	" are unset: give the job `permissions: id-token: write` (fork pull request runs never get it)")

// signingInputs are the inputs that choose how the bundle is signed.
type signingInputs struct {
	mode               string // SigningKey or SigningKeyless
	fulcio, tsa, rekor string // keyless service URLs ("" rekor: no tlog entry)
}

// readSigning reads input signing and the service URLs. An empty fulcio-url
// or tsa-url is the public-good instance; an empty rekor-url asks for no
// transparency log entry (action.yml defaults it to the public instance).
func readSigning(f *workflow) (signingInputs, error) {
	return readSigningInput(f, "signing")
}

// readSigningInput is readSigning with the mode in input name (the verify
// action's vsa-signing).
func readSigningInput(f *workflow, name string) (signingInputs, error) {
	s := signingInputs{
		mode:   strings.ToLower(f.input(name)),
		fulcio: f.input("fulcio-url"),
		tsa:    f.input("tsa-url"),
		rekor:  f.input("rekor-url"),
	}
	switch s.mode {
	case "":
		s.mode = SigningKey
	case SigningKey, SigningKeyless:
	default:
		return s, fmt.Errorf("input %s: %q is not key or keyless", name, s.mode)
	}
	if s.mode == SigningKey {
		return s, nil
	}
	if s.fulcio == "" {
		s.fulcio = sigstore.DefaultFulcioURL
	}
	if s.tsa == "" {
		s.tsa = sigstore.DefaultTSAURL
	}
	for _, u := range []struct{ name, v string }{{"fulcio-url", s.fulcio}, {"tsa-url", s.tsa}, {"rekor-url", s.rekor}} {
		if u.v == "" {
			continue
		}
		if err := keyless.CheckServiceURL(u.v); err != nil {
			return s, fmt.Errorf("input %s: %w", u.name, err)
		}
	}
	return s, nil
}

// keylessReady reports, before the checks run, whether a keyless bundle
// can be signed: the runner passes the OIDC token endpoint only to jobs
// with id-token: write, and never to fork pull request runs.
func (j *job) keylessReady() {
	if j.o.Getenv(idTokenURLEnv) != "" && j.o.Getenv(idTokenTokenEnv) != "" {
		return
	}
	if j.ev.Fork {
		j.s.Notes = append(j.s.Notes, "This pull request comes from a fork: GitHub gives fork runs no OIDC token (id-token: write is not granted), so no keyless signature can be made. The checks run and the review state is read, but no signed bundle can be exported for this head; a release gate will find no evidence for it.")
		j.f.annotate("warning", "ProofGate fork pull request", "no OIDC token in a fork PR run: checks run, but no signed evidence bundle will be exported")
		return
	}
	j.f.annotate("warning", "ProofGate no OIDC token", errNoIDToken.Error())
}

// keylessSigner fetches the job's OIDC token (just before signing: the
// token is short-lived, and checks may run for long), masks it, and makes
// the keyless signer.
func (j *job) keylessSigner(ctx context.Context) (envelope.MaterialSigner, error) {
	return newKeylessSigner(ctx, j.o, j.f, j.in.signing, errNoIDToken)
}

// newKeylessSigner fetches the OIDC token of the job (noToken when the
// runner gave it none), masks it, and makes a keyless signer for the
// services s names.
func newKeylessSigner(ctx context.Context, o *Options, f *workflow, s signingInputs, noToken error) (envelope.MaterialSigner, error) {
	if o.Getenv(idTokenURLEnv) == "" || o.Getenv(idTokenTokenEnv) == "" {
		return nil, usage("%w", noToken)
	}
	tctx, cancel := context.WithTimeout(ctx, tokenTimeout)
	defer cancel()
	tok, err := f.a.GetIDToken(tctx, OIDCAudience)
	if err != nil {
		// The error may quote the endpoint's answer; the request token is
		// masked already.
		return nil, environment("get the OIDC token (audience %s): %w", OIDCAudience, err)
	}
	tok = strings.TrimSpace(tok)
	f.mask(tok)
	if tok == "" {
		return nil, environment("get the OIDC token (audience %s): empty token", OIDCAudience)
	}
	ks, err := sigstore.NewKeylessSigner(sigstore.KeylessOptions{
		FulcioURL: s.fulcio,
		TSAURL:    s.tsa,
		RekorURL:  s.rekor,
		IDToken:   tok,
	})
	if err != nil {
		return nil, environment("keyless signer: %w", err)
	}
	return ks, nil
}
