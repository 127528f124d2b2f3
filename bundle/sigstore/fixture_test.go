package sigstore_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"math/big"
	"net/url"
	"testing"
	"time"

	"github.com/digitorus/timestamp"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protodsse "github.com/sigstore/protobuf-specs/gen/pb-go/dsse"
	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	"github.com/sigstore/sigstore-go/pkg/fulcio/certificate"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"
	"github.com/sigstore/sigstore-go/pkg/tlog"

	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/sigstore"
)

// testCA is a Fulcio-like CA: a root and the intermediate that issues
// leaves, made with sigstore-go's virtual Sigstore helpers.
type testCA struct {
	root, inter *x509.Certificate
	interKey    *ecdsa.PrivateKey
}

func newTestCA(t testing.TB) *testCA {
	t.Helper()
	r, rk, err := ca.GenerateRootCa()
	if err != nil {
		t.Fatal(err)
	}
	in, ik, err := ca.GenerateFulcioIntermediate(r, rk)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{root: r, inter: in, interKey: ik}
}

// world is a test Sigstore: a trusted Fulcio CA, a TSA (its own
// intermediate and leaf under a separate root), and the virtual Sigstore's
// Rekor, all in one trusted_root.json.
type world struct {
	fulcio      *testCA
	tsaLeaf     *x509.Certificate
	tsaKey      *ecdsa.PrivateKey
	rekor       *ca.VirtualSigstore
	trustedRoot []byte
}

func newWorld(t testing.TB) *world {
	t.Helper()
	w := &world{fulcio: newTestCA(t)}
	tr, trk, err := ca.GenerateRootCa()
	if err != nil {
		t.Fatal(err)
	}
	ti, tik, err := ca.GenerateTSAIntermediate(tr, trk)
	if err != nil {
		t.Fatal(err)
	}
	w.tsaKey, _ = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	w.tsaLeaf, err = ca.GenerateTSALeafCert(time.Now().Add(-5*time.Minute), w.tsaKey, ti, tik)
	if err != nil {
		t.Fatal(err)
	}
	if w.rekor, err = ca.NewVirtualSigstore(); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	fca := &root.FulcioCertificateAuthority{Root: w.fulcio.root, Intermediates: []*x509.Certificate{w.fulcio.inter},
		ValidityPeriodStart: now.Add(-5 * time.Hour), ValidityPeriodEnd: now.Add(time.Hour), URI: "https://fulcio.test"}
	tsa := &root.SigstoreTimestampingAuthority{Root: tr, Intermediates: []*x509.Certificate{ti}, Leaf: w.tsaLeaf,
		ValidityPeriodStart: now.Add(-5 * time.Hour), ValidityPeriodEnd: now.Add(time.Hour), URI: "https://tsa.test"}
	trusted, err := root.NewTrustedRoot(root.TrustedRootMediaType01, []root.CertificateAuthority{fca},
		rawIDs(t, w.rekor.CTLogs()), []root.TimestampingAuthority{tsa}, rawIDs(t, w.rekor.RekorLogs()))
	if err != nil {
		t.Fatal(err)
	}
	if w.trustedRoot, err = trusted.MarshalJSON(); err != nil {
		t.Fatal(err)
	}
	return w
}

// rawIDs gives the virtual Sigstore's logs their raw key ids (it keeps
// the hex string's bytes, which a trusted_root.json would carry as is).
func rawIDs(t testing.TB, logs map[string]*root.TransparencyLog) map[string]*root.TransparencyLog {
	t.Helper()
	for _, l := range logs {
		id, err := hex.DecodeString(string(l.ID))
		if err != nil {
			t.Fatal(err)
		}
		l.ID = id
	}
	return logs
}

// claims are what Fulcio copies from a GitHub token into the certificate.
type claims struct {
	Issuer         string // default sigstore.DefaultIssuer
	IssuerV1       string // the deprecated issuer extension; default Issuer
	JobWorkflowRef string // SAN and Build Signer URI
	BuildSigner    string // the Build Signer URI's path, if not JobWorkflowRef
	WorkflowRef    string // Build Config URI (the caller)
	Repository     string
	Ref            string
	NotBefore      time.Time // default now-1m
	NotAfter       time.Time // default NotBefore+10m
}

const (
	reusable = "proofgate/proofgate/.github/workflows/proofgate.yml@refs/tags/v1"
	caller   = "octo/app/.github/workflows/ci.yml@refs/heads/main"
)

func defaultClaims() claims {
	return claims{JobWorkflowRef: reusable, WorkflowRef: caller, Repository: "octo/app", Ref: "refs/heads/main"}
}

func derUTF8(t testing.TB, s string) []byte {
	b, err := asn1.MarshalWithParams(s, "utf8")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// issue makes a GitHub-style Fulcio leaf for pub.
func (c *testCA) issue(t testing.TB, pub crypto.PublicKey, cl claims) *x509.Certificate {
	t.Helper()
	if cl.Issuer == "" {
		cl.Issuer = sigstore.DefaultIssuer
	}
	if cl.BuildSigner == "" {
		cl.BuildSigner = cl.JobWorkflowRef
	}
	if cl.IssuerV1 == "" {
		cl.IssuerV1 = cl.Issuer
	}
	if cl.NotBefore.IsZero() {
		cl.NotBefore = time.Now().Add(-time.Minute)
	}
	if cl.NotAfter.IsZero() {
		cl.NotAfter = cl.NotBefore.Add(10 * time.Minute)
	}
	san := mustURL(t, "https://github.com/"+cl.JobWorkflowRef)
	ext := func(oid asn1.ObjectIdentifier, v string) pkix.Extension {
		return pkix.Extension{Id: oid, Value: derUTF8(t, v)}
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		NotBefore:    cl.NotBefore,
		NotAfter:     cl.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning},
		URIs:         san,
		ExtraExtensions: []pkix.Extension{
			{Id: asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, 1}, Value: []byte(cl.IssuerV1)},
			ext(certificate.OIDIssuerV2, cl.Issuer),
			ext(certificate.OIDBuildSignerURI, "https://github.com/"+cl.BuildSigner),
			ext(certificate.OIDSourceRepositoryURI, "https://github.com/"+cl.Repository),
			ext(certificate.OIDSourceRepositoryRef, cl.Ref),
			ext(certificate.OIDBuildConfigURI, "https://github.com/"+cl.WorkflowRef),
		},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.inter, pub, c.interKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// timestampFor is the TSA's RFC 3161 response for sig at time at.
func (w *world) timestampFor(t testing.TB, sig []byte, at time.Time) []byte {
	t.Helper()
	h := sha256.Sum256(sig)
	return w.respond(t, &timestamp.Request{HashAlgorithm: crypto.SHA256, HashedMessage: h[:]}, at)
}

func (w *world) respond(t testing.TB, req *timestamp.Request, at time.Time) []byte {
	t.Helper()
	ts := timestamp.Timestamp{HashAlgorithm: req.HashAlgorithm, HashedMessage: req.HashedMessage, Time: at,
		Policy: asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 2}}
	b, err := ts.CreateResponseWithOpts(w.tsaLeaf, w.tsaKey, crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// signed is one keyless signature: the archive's envelope, the material
// and its parts, for tests to tamper with.
type signed struct {
	keyID   string
	key     *ecdsa.PrivateKey
	cert    *x509.Certificate
	env     []byte // the archive's attestation.dsse.json
	payload []byte
	sig     []byte
	pb      *protobundle.Bundle
}

const payloadType = "application/vnd.in-toto+json"

var testPayload = []byte(`{"_type":"https://in-toto.io/Statement/v1","subject":[{"name":"a","digest":{"sha256":"00"}}],"predicateType":"https://proofgate.dev/x","predicate":{}}`)

// sign makes a keyless signature of testPayload with a leaf from c (the
// world's CA if nil), a TSA timestamp unless noTSA, and a tlog entry if
// tlog.
func (w *world) sign(t testing.TB, c *testCA, cl claims, noTSA, tlog bool) *signed {
	t.Helper()
	if c == nil {
		c = w.fulcio
	}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	s := &signed{key: key, payload: testPayload}
	s.cert = c.issue(t, key.Public(), cl)
	s.keyID = keyIDOf(t, key.Public())
	d := sha256.Sum256(envelope.PAE(payloadType, s.payload))
	var err error
	if s.sig, err = ecdsa.SignASN1(rand.Reader, key, d[:]); err != nil {
		t.Fatal(err)
	}
	s.env = archiveEnvelope(t, s.keyID, s.payload, s.sig)
	vm := &protobundle.VerificationMaterial{Content: &protobundle.VerificationMaterial_Certificate{
		Certificate: &protocommon.X509Certificate{RawBytes: s.cert.Raw}}}
	if !noTSA {
		vm.TimestampVerificationData = &protobundle.TimestampVerificationData{Rfc3161Timestamps: []*protocommon.RFC3161SignedTimestamp{
			{SignedTimestamp: w.timestampFor(t, s.sig, time.Now())}}}
	}
	if tlog {
		vm.TlogEntries = []*protorekor.TransparencyLogEntry{w.tlogEntry(t, s)}
	}
	s.pb = &protobundle.Bundle{MediaType: sigstore.MediaType, VerificationMaterial: vm,
		Content: &protobundle.Bundle_DsseEnvelope{DsseEnvelope: &protodsse.Envelope{
			Payload: s.payload, PayloadType: payloadType, Signatures: []*protodsse.Signature{{Sig: s.sig}}}}}
	return s
}

func (w *world) tlogEntry(t testing.TB, s *signed) *protorekor.TransparencyLogEntry {
	t.Helper()
	env := &dsse.Envelope{PayloadType: payloadType, Payload: base64.StdEncoding.EncodeToString(s.payload),
		Signatures: []dsse.Signature{{Sig: base64.StdEncoding.EncodeToString(s.sig)}}}
	now := time.Now().Unix()
	e, err := w.rekor.GenerateTlogEntry(s.cert, env, s.sig, now, true)
	if err != nil {
		t.Fatal(err)
	}
	// The entry keeps its SET and kind to itself: put them in the proto
	// (the virtual Rekor signs the SET as rekor does).
	tle := e.TransparencyLogEntry()
	logID, err := w.rekor.RekorLogID()
	if err != nil {
		t.Fatal(err)
	}
	set, err := w.rekor.RekorSignPayload(tlog.RekorPayload{LogID: logID, IntegratedTime: now, LogIndex: tle.LogIndex,
		Body: base64.StdEncoding.EncodeToString(tle.CanonicalizedBody)})
	if err != nil {
		t.Fatal(err)
	}
	tle.KindVersion = &protorekor.KindVersion{Kind: "dsse", Version: "0.0.1"}
	tle.InclusionPromise = &protorekor.InclusionPromise{SignedEntryTimestamp: set}
	return tle
}

// material is the Sigstore bundle JSON of s.
func (s *signed) material(t testing.TB) []byte {
	t.Helper()
	b, err := sigstore.Marshal(s.pb)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func archiveEnvelope(t testing.TB, keyID string, payload, sig []byte) []byte {
	t.Helper()
	b, err := json.Marshal(&envelope.Envelope{PayloadType: payloadType, Payload: base64.StdEncoding.EncodeToString(payload),
		Signatures: []envelope.Signature{{KeyID: keyID, Sig: base64.StdEncoding.EncodeToString(sig)}}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func keyIDOf(t testing.TB, pub crypto.PublicKey) string {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(der)
	return envelope.KeylessPrefix + hex.EncodeToString(sum[:])
}

func mustURL(t testing.TB, s string) []*url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return []*url.URL{u}
}
