package bundle

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/proofgate/proofgate/bundle/archive"
	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/internal/sigtest"
	"github.com/proofgate/proofgate/bundle/trust"
	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/record"
)

var (
	_ envelope.MaterialSigner    = (*sigtest.KeylessSigner)(nil)
	_ envelope.MaterialVerifiers = (*sigtest.KeylessVerifiers)(nil)
	_ envelope.WitnessedKey      = (*sigtest.WitnessedKey)(nil)
)

// keylessRun is a real run, its last event time and a CA.
type keylessRun struct {
	f    *fixture
	last time.Time // the run's last event: the default signed_at
	ca   *sigtest.CA
}

func newKeylessRun(t *testing.T, o runOpts) *keylessRun {
	t.Helper()
	f := makeRun(t, o)
	var buf bytes.Buffer
	xr, err := Export(f.runDir, sigtest.NewSigner(1), &buf, ExportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return &keylessRun{f: f, last: xr.SignedAt, ca: sigtest.NewCA(0xca)}
}

func (r *keylessRun) export(t *testing.T, s envelope.MaterialSigner, opts ExportOptions) ([]byte, *ExportResult) {
	t.Helper()
	var buf bytes.Buffer
	xr, err := ExportWith(r.f.runDir, s, &buf, opts)
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), xr
}

func (r *keylessRun) verify(b []byte, store envelope.Verifiers, mv envelope.MaterialVerifiers, popts ...PolicyOption) (*Result, error) {
	p, err := NewPolicy(WithoutSourceBindingUnsafe(), WithoutContractBindingUnsafe(), popts...)
	if err != nil {
		return nil, err
	}
	var vo []VerifierOption
	if mv != nil {
		vo = append(vo, WithMaterialVerifiers(mv))
	}
	vo = append(vo, WithCurrentTime(r.last.Add(24*time.Hour)))
	return NewVerifier(store, vo...).Verify(bytes.NewReader(b), p)
}

// member returns the content of the named archive member.
func member(t *testing.T, b []byte, name string) []byte {
	t.Helper()
	for _, f := range files(t, b) {
		if f.Name == name {
			return f.Data
		}
	}
	t.Fatalf("no member %s", name)
	return nil
}

// resignKeyless replaces the statement and signs it with s, replacing the
// attestation and the material.
func resignKeyless(t *testing.T, fs []archive.File, s envelope.MaterialSigner, mutate func(*Statement)) []archive.File {
	t.Helper()
	var material []byte
	fs = edit(fs, AttestationFile, func(b []byte) []byte {
		env, m, err := envelope.SignWithMaterial(t.Context(), s, PayloadType, restate(t, b, mutate))
		if err != nil {
			t.Fatal(err)
		}
		material = m
		return env
	})
	return edit(fs, envelope.MaterialFile, func([]byte) []byte { return material })
}

// TestKeylessExportAndVerify: a keyless bundle carries the material after
// the attestation, names the keyless keyid in the predicate, and verifies
// with the witnessed time standing for the signing time.
func TestKeylessExportAndVerify(t *testing.T) {
	r := newKeylessRun(t, runOpts{approve: []string{"alice"}})
	w := r.last.Add(time.Minute)
	s := r.ca.NewKeylessSigner(2, w)
	b, xr := r.export(t, s, ExportOptions{})
	if !strings.HasPrefix(xr.KeyID, envelope.KeylessPrefix) || xr.KeyID != s.KeyID() || s.Calls() != 1 {
		t.Fatalf("key id %s, %d calls", xr.KeyID, s.Calls())
	}
	fs := files(t, b)
	names := []string{}
	for _, f := range fs {
		names = append(names, f.Name)
	}
	if names[0] != AttestationFile || names[1] != envelope.MaterialFile || xr.Files != len(fs) {
		t.Fatalf("members %v, %d files", names, xr.Files)
	}
	if !bytes.Equal(member(t, b, envelope.MaterialFile), xr.Material) || !bytes.Equal(member(t, b, AttestationFile), xr.Envelope) {
		t.Fatal("ExportResult.Material / Envelope are not the members")
	}
	_, payload, _ := envelope.Parse(xr.Envelope, PayloadType, "a")
	var st Statement
	json.Unmarshal(payload, &st)
	if st.Predicate.KeyID != s.KeyID() {
		t.Fatalf("predicate key_id %s", st.Predicate.KeyID)
	}
	for _, sub := range st.Subject {
		if sub.Name == envelope.MaterialFile {
			t.Fatal("the material is a subject")
		}
	}
	// Deterministic: the same run and signer give the same bytes.
	if again, _ := r.export(t, s, ExportOptions{}); !bytes.Equal(again, b) {
		t.Fatal("keyless export is not deterministic for a deterministic signer")
	}

	mv := r.ca.Verifiers()
	policyWitness := w.Add(time.Hour)
	res, err := r.verify(b, nil, mv, WithWitnessTime(policyWitness))
	if err != nil {
		t.Fatal(err)
	}
	if res.KeyID != s.KeyID() || res.Signer != s.Signer || !res.Witnessed.Equal(w) || !res.SignedAt.Equal(w) || res.Files != len(fs) {
		t.Fatalf("result %+v", res)
	}
	v := res.Verdict()
	if v.Signer != s.Signer || v.WitnessedAt != w.UTC().Format(time.RFC3339Nano) || v.SignedAt != v.WitnessedAt {
		t.Fatalf("verdict %+v", v)
	}
	ks := mv.Keys()
	if len(ks) != 1 {
		t.Fatalf("%d keys", len(ks))
	}
	times, ids := ks[0].CheckedAt()
	if len(times) != 1 || !times[0].Equal(r.last) || ids[0] != "repo:acme/widget" {
		t.Fatalf("CheckAt %v %q", times, ids)
	}
	if got := ks[0].Witnessed(); len(got) != 2 || !got[0].Equal(w) || !got[1].Equal(policyWitness) {
		t.Fatalf("CheckWitnessed %v, want the key's witnessed time then the policy's", got)
	}

	// A key-signed bundle's result and verdict have neither.
	k := newKey(t)
	kr, err := r.verify(export(t, r.f, k, ExportOptions{}), storeWith(t, k), mv)
	if err != nil || kr.Signer != "" || !kr.Witnessed.IsZero() || kr.Verdict().Signer != "" || kr.Verdict().WitnessedAt != "" {
		t.Fatalf("key bundle: %v %+v", err, kr)
	}
}

// TestKeylessRefusals: every hostile keyless case is refused with its
// typed reason.
func TestKeylessRefusals(t *testing.T) {
	r := newKeylessRun(t, runOpts{approve: []string{"alice"}})
	w := r.last.Add(time.Minute)
	s := r.ca.NewKeylessSigner(2, w)
	good, _ := r.export(t, s, ExportOptions{})
	fs := files(t, good)
	mv := r.ca.Verifiers()
	if _, err := r.verify(good, nil, mv); err != nil {
		t.Fatal(err)
	}

	k := newKey(t)
	keyBundle := export(t, r.f, k, ExportOptions{})
	material := member(t, good, envelope.MaterialFile)
	keyWithMaterial := repack(t, append(files(t, keyBundle), archive.File{Name: envelope.MaterialFile, Data: material}))

	other, _ := r.export(t, r.ca.NewKeylessSigner(3, w), ExportOptions{})
	later, _ := r.export(t, s, ExportOptions{SignedAt: r.last.Add(time.Second)})

	envEdit := func(fn func(*envelope.Envelope)) []byte {
		return repack(t, edit(fs, AttestationFile, func(b []byte) []byte {
			var e envelope.Envelope
			json.Unmarshal(b, &e)
			fn(&e)
			out, _ := canon.Marshal(&e)
			return out
		}))
	}
	// The attacker changes the payload and copies the change into the
	// material, keeping the CA-signed cert: only the signature catches it.
	var tampered []byte
	{
		var e envelope.Envelope
		json.Unmarshal(member(t, good, AttestationFile), &e)
		p, _ := base64.StdEncoding.DecodeString(e.Payload)
		p = bytes.Replace(p, []byte(`"actor":"alice"`), []byte(`"actor":"alicf"`), 1)
		e.Payload = base64.StdEncoding.EncodeToString(p)
		env, _ := canon.Marshal(&e)
		var m sigtest.Material
		json.Unmarshal(material, &m)
		m.Envelope.Payload = e.Payload
		mb, _ := canon.Marshal(&m)
		tampered = repack(t, edit(edit(fs, AttestationFile, func([]byte) []byte { return env }), envelope.MaterialFile, func([]byte) []byte { return mb }))
	}
	zeroWitness := r.ca.NewKeylessSigner(2, time.Time{})
	noWitness, _ := r.export(t, zeroWitness, ExportOptions{})
	otherRepo := r.ca.NewKeylessSigner(2, w)
	otherRepo.Repo = "evil/widget"
	wrongRepo, _ := r.export(t, otherRepo, ExportOptions{})
	early, _ := r.export(t, r.ca.NewKeylessSigner(2, r.last.Add(MaxKeylessSigningDelay+time.Second)), ExportOptions{})
	lateOK, _ := r.export(t, r.ca.NewKeylessSigner(2, r.last.Add(MaxKeylessSigningDelay-time.Second)), ExportOptions{})
	tooLate, _ := r.export(t, r.ca.NewKeylessSigner(2, r.last.Add(-MaxClockSkew-time.Second)), ExportOptions{})
	skewOK, _ := r.export(t, r.ca.NewKeylessSigner(2, r.last.Add(-MaxClockSkew+time.Second)), ExportOptions{})

	for _, c := range []struct {
		name  string
		b     []byte
		store envelope.Verifiers
		mv    envelope.MaterialVerifiers
		want  Reason
	}{
		{"material member missing", repack(t, edit(fs, envelope.MaterialFile, func([]byte) []byte { return nil })), nil, mv, MissingFile},
		{"material on a key-signed bundle", keyWithMaterial, storeWith(t, k), mv, ExtraFile},
		{"key-signed bundle without a trust store", keyBundle, nil, mv, UnknownKey},
		{"keyless keyid with no material verifiers", good, storeWith(t, k), nil, UnknownKey},
		{"untrusted CA", good, nil, sigtest.NewCA(0xcb).Verifiers(), CertificateInvalid},
		{"material not JSON", repack(t, edit(fs, envelope.MaterialFile, func([]byte) []byte { return []byte("{") })), nil, mv, Malformed},
		{"material replayed from another bundle", repack(t, edit(fs, envelope.MaterialFile, func([]byte) []byte { return member(t, other, envelope.MaterialFile) })), nil, mv, MaterialMismatch},
		{"material of the same key, another statement", repack(t, edit(fs, envelope.MaterialFile, func([]byte) []byte { return member(t, later, envelope.MaterialFile) })), nil, mv, MaterialMismatch},
		{"envelope signature swapped", envEdit(func(e *envelope.Envelope) {
			var o envelope.Envelope
			json.Unmarshal(member(t, other, AttestationFile), &o)
			e.Signatures[0].Sig = o.Signatures[0].Sig
		}), nil, mv, MaterialMismatch},
		{"payload tampered, material updated", tampered, nil, mv, SignatureInvalid},
		{"keyless signature oversize", envEdit(func(e *envelope.Envelope) {
			e.Signatures[0].Sig = base64.StdEncoding.EncodeToString(make([]byte, envelope.MaxMaterialSignature+1))
		}), nil, mv, Malformed},
		{"keyless keyid, uppercase hex", envEdit(func(e *envelope.Envelope) { e.Signatures[0].KeyID = strings.ToUpper(e.Signatures[0].KeyID) }), nil, mv, Malformed},
		{"keyid not the material's key", envEdit(func(e *envelope.Envelope) {
			e.Signatures[0].KeyID = envelope.KeylessPrefix + strings.Repeat("0", 64)
		}), nil, mv, MaterialMismatch},
		{"predicate key_id is not the keyid", repack(t, resignKeyless(t, fs, s, func(st *Statement) { st.Predicate.KeyID = k.s.ID })), nil, mv, Malformed},
		{"material listed as a subject", repack(t, resignKeyless(t, fs, s, func(st *Statement) {
			st.Subject = append(st.Subject, Subject{Name: envelope.MaterialFile, Digest: map[string]string{"sha256": strings.Repeat("0", 64)}})
		})), nil, mv, Malformed},
		{"no witnessed time", noWitness, nil, mv, TimestampInvalid},
		{"certificate for another repository", wrongRepo, nil, mv, IdentityMismatch},
		{"signed_at too early for the witness", early, nil, mv, SigningTimeImplausible},
		{"signed_at just within the delay", lateOK, nil, mv, ""},
		{"signed_at too late for the witness", tooLate, nil, mv, SigningTimeImplausible},
		{"signed_at just within the skew", skewOK, nil, mv, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := r.verify(c.b, c.store, c.mv)
			if got := reasonOf(err); got != c.want {
				t.Fatalf("reason %q (%v), want %q", got, err, c.want)
			}
			if c.name == "keyless keyid with no material verifiers" && !strings.Contains(err.Error(), "trusted root") {
				t.Fatalf("detail %v does not say a trusted root is needed", err)
			}
		})
	}
}

// reasonVerifiers refuse every material with err.
type reasonVerifiers struct{ err error }

func (v reasonVerifiers) VerifierFor(string, []byte, []byte) (envelope.WitnessedKey, error) {
	return nil, v.err
}

// TestKeylessRefusalReasonsPropagate: each reason a material refusal
// names is the bundle's reason; an unnamed or unknown one is unknown-key.
func TestKeylessRefusalReasonsPropagate(t *testing.T) {
	r := newKeylessRun(t, runOpts{approve: []string{"alice"}})
	w := r.last.Add(time.Minute)
	good, _ := r.export(t, r.ca.NewKeylessSigner(2, w), ExportOptions{})
	for reason, want := range map[string]Reason{
		"certificate-invalid": CertificateInvalid, "timestamp-invalid": TimestampInvalid, "tlog-invalid": TlogInvalid,
		"material-mismatch": MaterialMismatch, "identity-mismatch": IdentityMismatch,
		"signing-time-implausible": SigningTimeImplausible, "malformed": Malformed, "something-new": UnknownKey,
	} {
		refusal := &sigtest.Refused{Reason: reason, Detail: "by the test"}
		_, err := r.verify(good, nil, reasonVerifiers{err: refusal})
		var ve *VerifyError
		if !errors.As(err, &ve) || ve.Reason != want || !errors.Is(err, refusal) {
			t.Errorf("%s: %v, want %s wrapping the refusal", reason, err, want)
		}
		// A key's CheckAt refusal is mapped the same way.
		mv := r.ca.Verifiers()
		mv.CheckAtErr = refusal
		if want == UnknownKey {
			want = Malformed // an unclassified CheckAt error
		}
		if _, err := r.verify(good, nil, mv); reasonOf(err) != want {
			t.Errorf("CheckAt %s: %v, want %s", reason, err, want)
		}
	}
	if _, err := r.verify(good, nil, reasonVerifiers{err: errors.New("plain")}); reasonOf(err) != UnknownKey {
		t.Errorf("plain error: %v", err)
	}
}

// TestKeylessIdentityLifecycle: a trust store identity is judged at the
// witnessed time, and at the policy's witness time when one is given.
func TestKeylessIdentityLifecycle(t *testing.T) {
	r := newKeylessRun(t, runOpts{approve: []string{"alice"}})
	w := r.last.Add(time.Minute)
	good, _ := r.export(t, r.ca.NewKeylessSigner(2, w), ExportOptions{})
	st := trust.New()
	if err := st.AddIdentity(trust.Identity{ID: "release", SignerWorkflow: "acme/widget/.github/workflows/release.yml"}); err != nil {
		t.Fatal(err)
	}
	id := st.FindIdentity("release")
	mv := r.ca.Verifiers()
	mv.Valid = id.CheckWitnessed
	check := func(name string, want Reason, popts ...PolicyOption) {
		t.Helper()
		if _, err := r.verify(good, nil, mv, popts...); reasonOf(err) != want {
			t.Errorf("%s: %v, want %q", name, err, want)
		}
	}
	check("active", "")
	before, after := w.Add(-time.Second), w.Add(time.Second)
	id.NotBefore = &after
	check("not yet valid when witnessed", KeyNotValid)
	id.NotBefore = nil
	if err := st.RevokeIdentity("release", &after); err != nil {
		t.Fatal(err)
	}
	check("revoked after the witnessed time", "")
	check("revoked before the policy's witness time", KeyRevoked, WithWitnessTime(after.Add(time.Minute)))
	if err := st.RevokeIdentity("release", &before); err != nil {
		t.Fatal(err)
	}
	check("revoked before the witnessed time", KeyRevoked)
	st.Identities[0] = trust.Identity{ID: "release", SourceRepo: "acme/widget", Status: trust.Retired, RetiredAt: &before}
	id = &st.Identities[0]
	mv.Valid = id.CheckWitnessed
	check("retired before the witnessed time", KeyNotValid)
	_, err := r.verify(good, nil, mv)
	if err == nil || !strings.Contains(err.Error(), "identity release") {
		t.Fatalf("detail of %v does not name the identity", err)
	}
}

// TestKeylessCheckpointUsesTheKeyStore: a keyless bundle's checkpoint is
// a key's, verified with the trust store.
func TestKeylessCheckpointUsesTheKeyStore(t *testing.T) {
	f := makeRun(t, runOpts{approve: []string{"alice"}})
	k := newKey(t)
	if _, err := record.Checkpoint(f.state, f.id, k.s, time.Now()); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	xr, err := Export(f.runDir, sigtest.NewSigner(1), &buf, ExportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := &keylessRun{f: f, last: xr.SignedAt, ca: sigtest.NewCA(0xca)}
	b, _ := r.export(t, r.ca.NewKeylessSigner(2, r.last.Add(time.Minute)), ExportOptions{})
	res, err := r.verify(b, storeWith(t, k), r.ca.Verifiers())
	if err != nil || res.Checkpoint == nil || res.Checkpoint.KeyID != k.s.ID {
		t.Fatalf("%v %+v", err, res)
	}
	if _, err := r.verify(b, nil, r.ca.Verifiers()); reasonOf(err) != CheckpointInvalid {
		t.Fatalf("without the key store: %v", err)
	}
}

// TestExportWithRefusesAKeyKeyid: ExportWith signs only keyless keyids.
func TestExportWithRefusesAKeyKeyid(t *testing.T) {
	f := makeRun(t, runOpts{approve: []string{"alice"}})
	var buf bytes.Buffer
	if _, err := ExportWith(f.runDir, badKeyless{}, &buf, ExportOptions{}); err == nil || buf.Len() != 0 {
		t.Fatalf("exported with keyid %q: %v", badKeyless{}.KeyID(), err)
	}
}

type badKeyless struct{}

func (badKeyless) KeyID() string { return strings.Repeat("a", 64) }
func (badKeyless) SignEnvelope(context.Context, string, []byte) ([]byte, []byte, error) {
	return nil, nil, errors.New("unreachable")
}

// TestKeylessVectorIsGenuine: the keyless failure vector is refused only
// for want of a trusted root: the test pair's verifiers accept it.
func TestKeylessVectorIsGenuine(t *testing.T) {
	vc, err := parseVector("testdata/vectors/keyless-without-trusted-root.txtar")
	if err != nil {
		t.Fatal(err)
	}
	st, err := trust.Parse(vc.trust, "trust.json")
	if err != nil {
		t.Fatal(err)
	}
	vc.opts.Material = sigtest.NewCA(0xca).Verifiers()
	res, err := Verify(bytes.NewReader(vc.bundle), st, vc.opts)
	if err != nil || res.Signer == "" || !strings.HasPrefix(res.KeyID, envelope.KeylessPrefix) {
		t.Fatalf("with the test CA: %v %+v", err, res)
	}
	vc.opts.Material = sigtest.NewCA(0xcb).Verifiers()
	if _, err := Verify(bytes.NewReader(vc.bundle), st, vc.opts); reasonOf(err) != CertificateInvalid {
		t.Fatalf("with another CA: %v", err)
	}
}

// FuzzVerifyKeyless feeds arbitrary bytes to a verifier of keyless
// bundles, seeded with a real one: no panic, a typed reason on every
// refusal.
func FuzzVerifyKeyless(f *testing.F) {
	fx := makeRun(f, runOpts{approve: []string{"alice"}})
	ca := sigtest.NewCA(0xca)
	var buf bytes.Buffer
	xr, err := Export(fx.runDir, sigtest.NewSigner(1), &buf, ExportOptions{})
	if err != nil {
		f.Fatal(err)
	}
	buf.Reset()
	if _, err := ExportWith(fx.runDir, ca.NewKeylessSigner(2, xr.SignedAt.Add(time.Minute)), &buf, ExportOptions{}); err != nil {
		f.Fatal(err)
	}
	good := buf.Bytes()
	f.Add(good)
	f.Add(good[:len(good)/2])
	lim := archive.Limits{MaxEntries: 64, MaxEntrySize: 1 << 20, MaxTotalSize: 4 << 20, MaxRatio: 200, RatioSlack: 1 << 20}
	mv := ca.Verifiers()
	f.Fuzz(func(t *testing.T, b []byte) {
		_, err := Verify(bytes.NewReader(b), nil, VerifyOptions{AnySource: true, AnyContract: true, Limits: &lim, Material: mv})
		if err != nil && reasonOf(err) == "" {
			t.Fatalf("untyped refusal: %v", err)
		}
	})
}
