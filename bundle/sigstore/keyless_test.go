package sigstore_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"

	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/sigstore"
)

var _ envelope.MaterialVerifiers = (*sigstore.Verifiers)(nil)
var _ envelope.MaterialSigner = (*sigstore.KeylessSigner)(nil)

// pinned is the identity of the reusable workflow, pinned to its tag,
// for the caller's repository and branch.
func pinned() sigstore.Identity {
	return sigstore.Identity{Name: "flags", SignerWorkflow: reusable, SourceRepo: "octo/app", SourceRef: "refs/heads/main"}
}

func verifiers(t testing.TB, w *world, ids ...sigstore.Identity) *sigstore.Verifiers {
	t.Helper()
	if len(ids) == 0 {
		ids = []sigstore.Identity{pinned()}
	}
	v, err := sigstore.NewVerifiers(w.trustedRoot, ids)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// refused asserts err is a *VerifyError with reason r whose text contains
// want.
func refused(t *testing.T, err error, r sigstore.Reason, want string) {
	t.Helper()
	var ve *sigstore.VerifyError
	if !errors.As(err, &ve) {
		t.Fatalf("got %v, want a *VerifyError %s", err, r)
	}
	if ve.Reason != r || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %s (%v), want %s containing %q", ve.Reason, err, r, want)
	}
}

func TestVerifyKeylessAccepts(t *testing.T) {
	w := newWorld(t)
	for _, tc := range []struct {
		name        string
		noTSA, tlog bool
	}{{"timestamp", false, false}, {"timestamp and tlog", false, true}, {"tlog only", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			s := w.sign(t, nil, defaultClaims(), tc.noTSA, tc.tlog)
			before := time.Now().Add(-2 * time.Second)
			k, err := verifiers(t, w).VerifierFor(s.keyID, s.env, s.material(t))
			if err != nil {
				t.Fatal(err)
			}
			if k.KeyID() != s.keyID || k.Signer() != "https://github.com/"+reusable {
				t.Fatalf("key %s signer %s", k.KeyID(), k.Signer())
			}
			if at := k.WitnessedAt(); at.Before(before) || at.After(time.Now().Add(time.Second)) {
				t.Fatalf("witnessed at %s", at)
			}
			pae := envelope.PAE(payloadType, s.payload)
			if !k.Verify(pae, s.sig) || k.Verify(append(pae, 'x'), s.sig) {
				t.Fatal("Verify does not check the signature over PAE")
			}
			if err := k.CheckAt(k.WitnessedAt().Add(-time.Minute), "repo:octo/app"); err != nil {
				t.Fatal(err)
			}
			if err := k.CheckWitnessed(k.WitnessedAt()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestVerifyKeylessIdentities(t *testing.T) {
	w := newWorld(t)
	other := func(f func(*claims)) claims { c := defaultClaims(); f(&c); return c }
	for _, tc := range []struct {
		name string
		cl   claims
		id   sigstore.Identity
		want string
	}{
		{"another workflow", other(func(c *claims) {
			c.JobWorkflowRef = "proofgate/proofgate/.github/workflows/evil.yml@refs/tags/v1"
		}), pinned(), "signer workflow"},
		{"another workflow, any ref", other(func(c *claims) {
			c.JobWorkflowRef = "proofgate/proofgate/.github/workflows/proofgate.yml.evil@refs/tags/v1"
		}), sigstore.Identity{SignerWorkflow: "proofgate/proofgate/.github/workflows/proofgate.yml"}, "signer workflow"},
		{"build signer other than the SAN", other(func(c *claims) {
			c.BuildSigner = "proofgate/proofgate/.github/workflows/evil.yml@refs/tags/v1"
		}), pinned(), "build signer"},
		{"another repository", other(func(c *claims) { c.Repository = "evil/app" }), pinned(), "source repository"},
		{"another ref", other(func(c *claims) { c.Ref = "refs/heads/dev" }), pinned(), "source ref"},
		{"another workflow ref", other(func(c *claims) {
			c.JobWorkflowRef = "proofgate/proofgate/.github/workflows/proofgate.yml@refs/heads/dev"
		}), pinned(), "signer workflow"},
		{"caller workflow instead of the reusable one", defaultClaims(),
			sigstore.Identity{SignerWorkflow: "octo/app/.github/workflows/ci.yml"}, "signer workflow"},
		{"other issuer", other(func(c *claims) { c.Issuer = "https://issuer.evil.test" }), pinned(), "issuer"},
		{"other issuer in the v2 extension only", other(func(c *claims) {
			c.Issuer, c.IssuerV1 = "https://issuer.evil.test", sigstore.DefaultIssuer
		}), pinned(), "issuer extensions differ"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := w.sign(t, nil, tc.cl, false, false)
			_, err := verifiers(t, w, tc.id).VerifierFor(s.keyID, s.env, s.material(t))
			refused(t, err, sigstore.IdentityMismatch, tc.want)
		})
	}
	// The reusable workflow at any ref matches an identity without @REF;
	// a second identity matching lets the first's refusal go.
	s := w.sign(t, nil, defaultClaims(), false, false)
	anyRef := sigstore.Identity{Name: "any ref", SignerWorkflow: "proofgate/proofgate/.github/workflows/proofgate.yml"}
	if _, err := verifiers(t, w, sigstore.Identity{SourceRepo: "a/b"}, anyRef).VerifierFor(s.keyID, s.env, s.material(t)); err != nil {
		t.Fatal(err)
	}
}

func TestVerifyKeylessRepoBindingAndTimes(t *testing.T) {
	w := newWorld(t)
	s := w.sign(t, nil, defaultClaims(), false, false)
	revoked := errors.New("identity revoked at 2020-01-01")
	id := pinned()
	id.Valid = func(at time.Time) error {
		if at.After(time.Now().Add(-time.Hour)) {
			return revoked
		}
		return nil
	}
	k, err := verifiers(t, w, id).VerifierFor(s.keyID, s.env, s.material(t))
	if err != nil {
		t.Fatal(err)
	}
	at := k.WitnessedAt()
	refused(t, k.CheckAt(at, "repo:evil/app"), sigstore.IdentityMismatch, "source repository")
	refused(t, k.CheckAt(at, "octo/app"), sigstore.IdentityMismatch, "source repository")
	refused(t, k.CheckAt(at.Add(-sigstore.MaxSigningDelay-time.Second), ""), sigstore.SigningTimeImplausible, "signed_at")
	refused(t, k.CheckAt(at.Add(6*time.Minute), ""), sigstore.SigningTimeImplausible, "signed_at")
	if err := k.CheckWitnessed(at); !errors.Is(err, revoked) || !strings.Contains(err.Error(), "flags") {
		t.Fatalf("CheckWitnessed: %v, want the identity's error", err)
	}
	if err := k.CheckAt(at, "repo:octo/app"); !errors.Is(err, revoked) {
		t.Fatalf("CheckAt: %v, want the identity's error", err)
	}
	if err := k.CheckWitnessed(at.Add(-2 * time.Hour)); err != nil {
		t.Fatal(err)
	}
}

func TestVerifyKeylessWitnesses(t *testing.T) {
	w := newWorld(t)
	v := verifiers(t, w)
	expired := defaultClaims()
	expired.NotBefore = time.Now().Add(-2 * time.Hour)

	s := w.sign(t, nil, expired, true, false)
	_, err := v.VerifierFor(s.keyID, s.env, s.material(t))
	refused(t, err, sigstore.TimestampInvalid, "no witnessed time")

	s = w.sign(t, nil, expired, false, false)
	_, err = v.VerifierFor(s.keyID, s.env, s.material(t))
	refused(t, err, sigstore.TimestampInvalid, "outside the certificate's validity")

	s = w.sign(t, nil, defaultClaims(), false, false)
	ts := s.pb.VerificationMaterial.TimestampVerificationData.Rfc3161Timestamps[0]
	ts.SignedTimestamp[len(ts.SignedTimestamp)-3] ^= 1
	_, err = v.VerifierFor(s.keyID, s.env, s.material(t))
	refused(t, err, sigstore.TimestampInvalid, "RFC 3161")

	// A genuine timestamp of another signature (replayed).
	s = w.sign(t, nil, defaultClaims(), false, false)
	s.pb.VerificationMaterial.TimestampVerificationData.Rfc3161Timestamps[0].SignedTimestamp = w.timestampFor(t, []byte("another"), time.Now())
	_, err = v.VerifierFor(s.keyID, s.env, s.material(t))
	refused(t, err, sigstore.TimestampInvalid, "RFC 3161")

	// A tampered timestamp beside a good tlog entry still refuses.
	s = w.sign(t, nil, defaultClaims(), false, true)
	ts = s.pb.VerificationMaterial.TimestampVerificationData.Rfc3161Timestamps[0]
	ts.SignedTimestamp[len(ts.SignedTimestamp)-3] ^= 1
	_, err = v.VerifierFor(s.keyID, s.env, s.material(t))
	refused(t, err, sigstore.TimestampInvalid, "RFC 3161")

	s = w.sign(t, nil, defaultClaims(), false, true)
	s.pb.VerificationMaterial.TlogEntries[0].IntegratedTime -= 30
	_, err = v.VerifierFor(s.keyID, s.env, s.material(t))
	refused(t, err, sigstore.TlogInvalid, "tlog")

	s = w.sign(t, nil, defaultClaims(), false, true)
	s.pb.VerificationMaterial.TlogEntries[0].InclusionProof.RootHash[0] ^= 1
	_, err = v.VerifierFor(s.keyID, s.env, s.material(t))
	refused(t, err, sigstore.TlogInvalid, "tlog")

	// A second entry of the same log beside a good one.
	s = w.sign(t, nil, defaultClaims(), false, true)
	dup := w.tlogEntry(t, s)
	dup.LogIndex, dup.InclusionProof.LogIndex = 7, 7
	s.pb.VerificationMaterial.TlogEntries = append(s.pb.VerificationMaterial.TlogEntries, dup)
	_, err = v.VerifierFor(s.keyID, s.env, s.material(t))
	refused(t, err, sigstore.TlogInvalid, "one entry per log")

	// An entry of a log the trusted root does not hold is unverifiable.
	other := newWorld(t)
	s = w.sign(t, nil, defaultClaims(), false, false)
	s.pb.VerificationMaterial.TlogEntries = append(s.pb.VerificationMaterial.TlogEntries, other.tlogEntry(t, s))
	_, err = v.VerifierFor(s.keyID, s.env, s.material(t))
	refused(t, err, sigstore.TlogInvalid, "tlog")
}

func TestVerifyKeylessCertificate(t *testing.T) {
	w := newWorld(t)
	v := verifiers(t, w)
	s := w.sign(t, newTestCA(t), defaultClaims(), false, false)
	_, err := v.VerifierFor(s.keyID, s.env, s.material(t))
	refused(t, err, sigstore.CertificateInvalid, "trusted Fulcio CA")

	// Another world's whole Sigstore (CA and TSA) is untrusted too.
	s = newWorld(t).sign(t, nil, defaultClaims(), false, false)
	_, err = v.VerifierFor(s.keyID, s.env, s.material(t))
	refused(t, err, sigstore.TimestampInvalid, "RFC 3161")
}

func TestVerifyKeylessMaterialMismatch(t *testing.T) {
	w := newWorld(t)
	v := verifiers(t, w)
	s := w.sign(t, nil, defaultClaims(), false, false)
	mat := s.material(t)

	otherPayload := archiveEnvelope(t, s.keyID, []byte(`{"other":1}`), s.sig)
	_, err := v.VerifierFor(s.keyID, otherPayload, mat)
	refused(t, err, sigstore.MaterialMismatch, "payload differs")

	alt := append([]byte(nil), s.sig...)
	alt[len(alt)-1] ^= 1
	_, err = v.VerifierFor(s.keyID, archiveEnvelope(t, s.keyID, s.payload, alt), mat)
	refused(t, err, sigstore.MaterialMismatch, "signature differs")

	// The keyid of another key: the certificate's key does not hash to it.
	k2, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	id2 := keyIDOf(t, k2.Public())
	_, err = v.VerifierFor(id2, archiveEnvelope(t, id2, s.payload, s.sig), mat)
	refused(t, err, sigstore.MaterialMismatch, "hashes to")

	_, err = v.VerifierFor(id2, s.env, mat)
	refused(t, err, sigstore.MaterialMismatch, "keyid")

	_, err = v.VerifierFor(strings.TrimPrefix(s.keyID, envelope.KeylessPrefix), s.env, mat)
	refused(t, err, sigstore.MaterialMismatch, "not a keyless key id")
}

func TestVerifyKeylessSignature(t *testing.T) {
	// Both envelopes carry the same payload the key did not sign: the
	// certificate's key refuses it.
	w := newWorld(t)
	s := w.sign(t, nil, defaultClaims(), false, false)
	forged := []byte(`{"_type":"https://in-toto.io/Statement/v1","subject":[],"predicateType":"x","predicate":{}}`)
	s.pb.GetDsseEnvelope().Payload = forged
	_, err := verifiers(t, w).VerifierFor(s.keyID, archiveEnvelope(t, s.keyID, forged, s.sig), s.material(t))
	refused(t, err, sigstore.SignatureInvalid, "does not verify")
}

func TestVerifyKeylessMalformed(t *testing.T) {
	w := newWorld(t)
	v := verifiers(t, w)
	s := w.sign(t, nil, defaultClaims(), false, false)
	good := s.material(t)
	edit := func(old, new string) []byte {
		if !bytes.Contains(good, []byte(old)) {
			t.Fatalf("no %q in the material", old)
		}
		return bytes.Replace(good, []byte(old), []byte(new), 1)
	}
	for _, tc := range []struct {
		name string
		mat  []byte
		want string
	}{
		{"key and certificate", edit(`"certificate": {`, `"publicKey": {"hint": "x"}, "certificate": {`), "both a public key and a certificate"},
		{"duplicate member", edit(`"mediaType": `, `"mediaType": "x", "mediaType": `), "duplicate"},
		{"case variant", edit(`"mediaType": `, `"MediaType": "x", "mediaType": `), "MediaType"},
		{"proto field name", edit(`"dsseEnvelope": `, `"dsse_envelope": {}, "dsseEnvelope": `), "dsse_envelope"},
		{"duplicate deep", edit(`"payloadType": `, `"payloadType": "x", "payloadType": `), "duplicate"},
		{"keyid in the envelope", edit(`"sig": `, `"keyid": "x", "sig": `), "keyid"},
		{"key bundle", keyBundle(t, s), "not one certificate"},
		{"oversize", append(append([]byte(nil), good...), bytes.Repeat([]byte(" "), sigstore.MaxSize)...), "limit"},
		{"not JSON", []byte("{"), "not a keyless"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := v.VerifierFor(s.keyID, s.env, tc.mat)
			refused(t, err, sigstore.Malformed, tc.want)
		})
	}
}

func keyBundle(t *testing.T, s *signed) []byte {
	pb := &protobundle.Bundle{MediaType: sigstore.MediaType, Content: s.pb.Content,
		VerificationMaterial: &protobundle.VerificationMaterial{Content: &protobundle.VerificationMaterial_PublicKey{
			PublicKey: &protocommon.PublicKeyIdentifier{Hint: s.keyID}}}}
	b, err := sigstore.Marshal(pb)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestLoadVerifiers(t *testing.T) {
	w := newWorld(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "trusted_root.json")
	if err := os.WriteFile(path, w.trustedRoot, 0o644); err != nil {
		t.Fatal(err)
	}
	v, err := sigstore.LoadVerifiers(path, []sigstore.Identity{pinned()})
	if err != nil {
		t.Fatal(err)
	}
	s := w.sign(t, nil, defaultClaims(), false, false)
	if _, err := v.VerifierFor(s.keyID, s.env, s.material(t)); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, bytes.Repeat([]byte(" "), sigstore.MaxTrustedRootSize+1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := sigstore.LoadVerifiers(big, []sigstore.Identity{pinned()}); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("oversize trusted root: %v", err)
	}
	if _, err := sigstore.LoadVerifiers(filepath.Join(dir, "none.json"), []sigstore.Identity{pinned()}); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing trusted root: %v", err)
	}
}

func TestNewVerifiersRefuses(t *testing.T) {
	w := newWorld(t)
	for _, tc := range []struct {
		name string
		root []byte
		ids  []sigstore.Identity
		want string
	}{
		{"no identity", w.trustedRoot, nil, "no identity"},
		{"identity matching every repository", w.trustedRoot, []sigstore.Identity{{Name: "x", SourceRef: "refs/heads/main"}}, "every repository"},
		{"bad workflow", w.trustedRoot, []sigstore.Identity{{SignerWorkflow: "octo/app/ci.yml"}}, "signer workflow"},
		{"bad repo", w.trustedRoot, []sigstore.Identity{{SourceRepo: "octo"}}, "source repository"},
		{"duplicate member in the root", append([]byte(`{"mediaType":"x",`), w.trustedRoot[1:]...), []sigstore.Identity{pinned()}, "duplicate"},
		{"not a root", []byte(`{}`), []sigstore.Identity{pinned()}, "trusted root"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := sigstore.NewVerifiers(tc.root, tc.ids); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// BenchmarkVerifierFor measures the verification of material with a
// timestamp and a tlog entry.
func BenchmarkVerifierFor(b *testing.B) {
	w := newWorld(b)
	v := verifiers(b, w)
	s := w.sign(b, nil, defaultClaims(), false, true)
	mat := s.material(b)
	b.SetBytes(int64(len(mat)))
	for b.Loop() {
		if _, err := v.VerifierFor(s.keyID, s.env, mat); err != nil {
			b.Fatal(err)
		}
	}
}
