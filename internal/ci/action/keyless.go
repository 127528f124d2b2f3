package action

// Keyless signing (docs/adr/0010-keyless-signing.md): with input signing:
// keyless the job asks the runner for its GitHub OIDC token (audience
// "sigstore"), Fulcio certifies an ephemeral key for the workflow the token
// names, a timestamp authority (and, when rekor-url is set, a transparency
// log) witnesses the signature, and the archive carries the resulting
// Sigstore bundle as its attestation.sigstore.json member. No secret is
// involved, so the job needs `permissions: id-token: write` instead.

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/proofgate/proofgate/bundle/archive"
	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/sigstore"
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
		if err := checkServiceURL(u.v); err != nil {
			return s, fmt.Errorf("input %s: %w", u.name, err)
		}
	}
	return s, nil
}

// checkServiceURL accepts an https URL, or an http URL of a loopback host
// (a local test instance): the OIDC token goes to Fulcio, and must never
// cross a network in the clear. Credentials, queries and fragments in the
// URL are refused.
func checkServiceURL(v string) error {
	u, err := url.Parse(v)
	if err != nil {
		return fmt.Errorf("%q is not a URL: %w", v, err)
	}
	switch {
	case u.Host == "" || u.Opaque != "":
		return fmt.Errorf("%q is not an absolute http(s) URL", v)
	case u.User != nil:
		return fmt.Errorf("%q carries credentials", u.Redacted())
	case u.RawQuery != "" || u.Fragment != "":
		return fmt.Errorf("%q has a query or fragment", v)
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && isLoopback(u.Hostname()):
		return nil
	case u.Scheme == "http":
		return fmt.Errorf("%q is plain http to a host that is not loopback: use https", v)
	}
	return fmt.Errorf("%q: scheme %q is not https", v, u.Scheme)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// keylessReady reports, before the checks run, whether a keyless bundle
// can be signed: the runner passes the OIDC token endpoint only to jobs
// with id-token: write, and never to fork pull request runs.
func (j *job) keylessReady() {
	if j.o.Getenv(idTokenURLEnv) != "" && j.o.Getenv(idTokenTokenEnv) != "" {
		return
	}
	if j.ev.Fork {
		j.s.notes = append(j.s.notes, "This pull request comes from a fork: GitHub gives fork runs no OIDC token (id-token: write is not granted), so no keyless signature can be made. The checks run and the review state is read, but no signed bundle can be exported for this head; a release gate will find no evidence for it.")
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

// companionName is the companion Sigstore bundle's name beside the archive
// name: without .tar.gz, plus .sigstore.json (as `bundle export` names it).
func companionName(archiveName string) string {
	return strings.TrimSuffix(archiveName, ".tar.gz") + ".sigstore.json"
}

// attestationMembers reads an archive and returns its envelope and its
// Sigstore material members, when present.
func attestationMembers(archiveBytes []byte) (map[string][]byte, error) {
	keep := func(name string) bool { return name == envelopeFile || name == envelope.MaterialFile }
	files, err := archive.ReadKeep(bytes.NewReader(archiveBytes), archive.DefaultLimits, keep)
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for _, f := range files {
		if keep(f.Name) {
			out[f.Name] = f.Data
		}
	}
	return out, nil
}

// envelopeFile is the archive member holding the DSSE envelope.
const envelopeFile = "attestation.dsse.json"

// certificateIdentity returns the identity of the leaf certificate of a
// Sigstore bundle: its first URI SAN (for GitHub, the job's workflow at
// its ref), else its first email SAN. It reports only: the material was
// made by this job's signer, and verification judges it.
func certificateIdentity(material []byte) (string, error) {
	if len(material) > sigstore.MaxSize {
		return "", fmt.Errorf("sigstore bundle: %d bytes, over the %d-byte limit", len(material), sigstore.MaxSize)
	}
	var b protobundle.Bundle
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(material, &b); err != nil {
		return "", fmt.Errorf("sigstore bundle: %w", err)
	}
	vm := b.GetVerificationMaterial()
	der := vm.GetCertificate().GetRawBytes()
	if chain := vm.GetX509CertificateChain().GetCertificates(); der == nil && len(chain) > 0 {
		der = chain[0].GetRawBytes()
	}
	if der == nil {
		return "", errors.New("sigstore bundle: no certificate")
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		return "", fmt.Errorf("sigstore bundle certificate: %w", err)
	}
	switch {
	case len(c.URIs) > 0:
		return c.URIs[0].String(), nil
	case len(c.EmailAddresses) > 0:
		return c.EmailAddresses[0], nil
	}
	return "", errors.New("sigstore bundle certificate: no URI or email subject alternative name")
}
