package sigstore

import (
	"crypto/x509"
	"encoding/asn1"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/sigstore/sigstore-go/pkg/fulcio/certificate"
)

// DefaultIssuer is the OIDC issuer of GitHub Actions tokens, which an
// Identity with no Issuer requires.
const DefaultIssuer = "https://token.actions.githubusercontent.com"

// MaxSigningDelay bounds how long before its witnessed time a keyless
// statement may claim to have been signed (signed_at).
const MaxSigningDelay = 10 * time.Minute

// maxClockSkew bounds how far after its witnessed time a keyless
// statement may claim to have been signed.
const maxClockSkew = 5 * time.Minute

// Reason is the typed cause of a refused keyless material.
type Reason string

// Reasons VerifierFor (and the WitnessedKey's checks) refuse material, in
// the order they are checked.
const (
	Malformed              Reason = "malformed"                // not a cert-carrying v0.3 bundle, key+cert both, oversize, dup members
	MaterialMismatch       Reason = "material-mismatch"        // its envelope != archive's, or cert key hash != keyid
	TlogInvalid            Reason = "tlog-invalid"             // tampered / unverifiable tlog entry
	TimestampInvalid       Reason = "timestamp-invalid"        // none, tampered, outside cert validity
	CertificateInvalid     Reason = "certificate-invalid"      // untrusted CA, not valid at witnessed time
	SignatureInvalid       Reason = "signature-invalid"        // the certificate's key does not verify the envelope
	IdentityMismatch       Reason = "identity-mismatch"        // no Identity matches the certificate (or repo binding)
	SigningTimeImplausible Reason = "signing-time-implausible" // signed_at too far from the witnessed time
)

// VerifyError is a refused keyless material.
type VerifyError struct {
	Reason Reason
	Detail string
	Err    error // the underlying (sigstore-go, parser, Identity.Valid) error, if any
}

func (e *VerifyError) Error() string {
	s := "keyless material: " + string(e.Reason) + ": " + e.Detail
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the underlying error.
func (e *VerifyError) Unwrap() error { return e.Err }

func refuse(r Reason, err error, format string, args ...any) *VerifyError {
	return &VerifyError{Reason: r, Detail: fmt.Sprintf(format, args...), Err: err}
}

// Identity is one identity policy a certificate may match. Empty fields
// match anything except Issuer (default DefaultIssuer). HOST below is the
// host of the certificate's URI Subject Alternative Name (github.com for
// GitHub), which Fulcio derives from the issuer's configuration; every
// comparison is exact and case-sensitive.
type Identity struct {
	Name   string // label in errors, e.g. "flags" or "trust.json identities[0]"
	Issuer string // the Fulcio issuer extension (1.3.6.1.4.1.57264.1.8)
	// SignerWorkflow is "OWNER/REPO/.github/workflows/F.yml" or the same
	// with "@REF": the SAN and the Build Signer URI (…57264.1.9) must both
	// be "https://HOST/"+SignerWorkflow, followed by "@" and any ref when
	// it has no "@REF". It is GitHub's job_workflow_ref: the reusable
	// workflow that ran the job, not the caller (workflow_ref).
	SignerWorkflow string
	// SourceRepo is "OWNER/REPO": the Source Repository URI (…57264.1.12)
	// must be "https://HOST/OWNER/REPO".
	SourceRepo string
	// SourceRef is the Source Repository Ref (…57264.1.14) exactly, e.g.
	// "refs/heads/main".
	SourceRef string
	// SourceDigest is the Source Repository Digest (…57264.1.13) exactly:
	// the commit the workflow ran on (GitHub's sha claim).
	SourceDigest string
	// Valid, when non-nil, refuses the identity for a signature witnessed
	// at t (a trust store's status and window; returns e.g. *trust.KeyError).
	Valid func(witnessed time.Time) error
}

func (id *Identity) label() string {
	if id.Name == "" {
		return "identity"
	}
	return id.Name
}

func (id *Identity) issuer() string {
	if id.Issuer == "" {
		return DefaultIssuer
	}
	return id.Issuer
}

// check refuses an identity that is not well formed or that would match
// every workflow of every repository.
func (id *Identity) check() error {
	if id.SignerWorkflow == "" && id.SourceRepo == "" {
		return fmt.Errorf("%s: neither a signer workflow nor a source repository: it would match every repository", id.label())
	}
	if w := id.SignerWorkflow; w != "" {
		path, ref, hasRef := strings.Cut(w, "@")
		parts := strings.Split(path, "/")
		if len(parts) < 5 || parts[0] == "" || parts[1] == "" || parts[2] != ".github" || parts[3] != "workflows" || parts[len(parts)-1] == "" || (hasRef && ref == "") {
			return fmt.Errorf("%s: signer workflow %q is not OWNER/REPO/.github/workflows/FILE[@REF]", id.label(), clip(w))
		}
	}
	if r := id.SourceRepo; r != "" {
		owner, repo, ok := strings.Cut(r, "/")
		if !ok || owner == "" || repo == "" || strings.Contains(repo, "/") {
			return fmt.Errorf("%s: source repository %q is not OWNER/REPO", id.label(), clip(r))
		}
	}
	return nil
}

// sanHost returns the host of the certificate's SAN, which must be an
// https URI.
func sanHost(s *certificate.Summary) (string, error) {
	u, err := url.Parse(s.SubjectAlternativeName)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return "", fmt.Errorf("the certificate's SAN %q is not an https URI", clip(s.SubjectAlternativeName))
	}
	return u.Host, nil
}

// fulcioIssuer is the certificate's issuer extension (…57264.1.8), which
// the deprecated one (…57264.1.1), when present, must equal.
func fulcioIssuer(c *x509.Certificate) (string, error) {
	var v1, v2 *string
	for _, e := range c.Extensions {
		switch {
		case e.Id.Equal(oidIssuerV1):
			s := string(e.Value)
			v1 = &s
		case e.Id.Equal(certificate.OIDIssuerV2):
			var s string
			if err := certificate.ParseDERString(e.Value, &s); err != nil {
				return "", fmt.Errorf("issuer extension: %w", err)
			}
			v2 = &s
		}
	}
	switch {
	case v2 == nil:
		return "", fmt.Errorf("the certificate has no issuer extension (%s)", certificate.OIDIssuerV2)
	case v1 != nil && *v1 != *v2:
		return "", fmt.Errorf("the certificate's issuer extensions differ (%q, %q)", clip(*v1), clip(*v2))
	}
	return *v2, nil
}

// oidIssuerV1 is Fulcio's deprecated issuer extension.
var oidIssuerV1 = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, 1}

// match reports why the certificate summarised by s, whose issuer is
// issuer, does not match id.
func (id *Identity) match(s *certificate.Summary, issuer, host string) error {
	if issuer != id.issuer() {
		return fmt.Errorf("issuer %q, want %q", clip(issuer), id.issuer())
	}
	base := "https://" + host + "/"
	if w := id.SignerWorkflow; w != "" {
		want := base + w
		san := s.SubjectAlternativeName
		ok := san == want
		if !strings.Contains(w, "@") {
			ok = strings.HasPrefix(san, want+"@") && len(san) > len(want)+1
		}
		if !ok || s.BuildSignerURI != san {
			return fmt.Errorf("signer workflow %q (build signer %q), want %s", clip(san), clip(s.BuildSignerURI), clip(w))
		}
	}
	if r := id.SourceRepo; r != "" && s.SourceRepositoryURI != base+r {
		return fmt.Errorf("source repository %q, want %q", clip(s.SourceRepositoryURI), base+r)
	}
	if ref := id.SourceRef; ref != "" && s.SourceRepositoryRef != ref {
		return fmt.Errorf("source ref %q, want %q", clip(s.SourceRepositoryRef), ref)
	}
	if d := id.SourceDigest; d != "" && s.SourceRepositoryDigest != d {
		return fmt.Errorf("source digest %q, want %q", clip(s.SourceRepositoryDigest), d)
	}
	return nil
}

// matchIdentities returns the identities the certificate matches, or an
// IdentityMismatch naming why each did not.
func matchIdentities(ids []Identity, c *x509.Certificate, s *certificate.Summary) ([]*Identity, error) {
	host, err := sanHost(s)
	if err != nil {
		return nil, refuse(IdentityMismatch, nil, "%s", err.Error())
	}
	issuer, err := fulcioIssuer(c)
	if err != nil {
		return nil, refuse(IdentityMismatch, nil, "%s", err.Error())
	}
	var matched []*Identity
	var why []string
	for i := range ids {
		if err := ids[i].match(s, issuer, host); err != nil {
			why = append(why, ids[i].label()+": "+err.Error())
			continue
		}
		matched = append(matched, &ids[i])
	}
	if len(matched) == 0 {
		return nil, refuse(IdentityMismatch, nil, "the certificate for %s matches no identity (%s)", clip(s.SubjectAlternativeName), strings.Join(why, "; "))
	}
	return matched, nil
}

// RefusalReason is the reason as a string: the method bundle reads
// refusals through, without importing this package.
func (e *VerifyError) RefusalReason() string { return string(e.Reason) }
