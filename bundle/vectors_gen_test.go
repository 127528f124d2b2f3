package bundle

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proofgate/proofgate/bundle/archive"
	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/internal/sigtest"
	"github.com/proofgate/proofgate/bundle/key"
	"github.com/proofgate/proofgate/bundle/trust"
	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/strictjson"
)

// vectorSigner is failure-vector key n: its seed is the SHA-256 of a
// fixed label, so every regeneration signs with the same key.
func vectorSigner(t testing.TB, n int) (*key.Signer, []byte) {
	t.Helper()
	seed := sha256.Sum256([]byte("proofgate failure vector key " + string(rune('0'+n))))
	s, err := key.NewSigner(ed25519.NewKeyFromSeed(seed[:]))
	if err != nil {
		t.Fatal(err)
	}
	pub, err := key.PublicPEM(s.Public)
	if err != nil {
		t.Fatal(err)
	}
	return s, pub
}

// vectorBase is a real run's bundle: its members but the attestation, and
// the statement signed over them.
type vectorBase struct {
	members  []archive.File
	st       Statement
	signedAt time.Time
	s        *key.Signer
}

// loadVectorBase reads the base run back from the stored vector name, so
// that regenerating rewrites the same bytes, or, when there is none yet,
// makes a real run with o and exports it.
func loadVectorBase(t *testing.T, name string, o runOpts, s *key.Signer) *vectorBase {
	t.Helper()
	var tgz []byte
	if vc, err := parseVector(filepath.Join(vectorDir, name)); err == nil {
		tgz = vc.bundle
	} else if os.IsNotExist(err) {
		var buf bytes.Buffer
		if _, err := Export(makeRun(t, o).runDir, s, &buf, ExportOptions{}); err != nil {
			t.Fatal(err)
		}
		tgz = buf.Bytes()
	} else {
		t.Fatal(err)
	}
	b := &vectorBase{s: s}
	for _, f := range files(t, tgz) {
		if f.Name != AttestationFile {
			b.members = append(b.members, archive.File{Name: f.Name, Data: f.Data})
			continue
		}
		_, payload, err := envelope.Parse(f.Data, PayloadType, AttestationFile)
		if err != nil {
			t.Fatal(err)
		}
		if err := strictjson.Decode(payload, &b.st); err != nil {
			t.Fatal(err)
		}
	}
	var err error
	if b.signedAt, err = time.Parse(time.RFC3339Nano, b.st.Predicate.SignedAt); err != nil {
		t.Fatal(err)
	}
	return b
}

// loadImplementedBase is loadVectorBase for a successor run and its
// implementation run (makeImplemented).
func loadImplementedBase(t *testing.T, name string, s *key.Signer) *vectorBase {
	t.Helper()
	if _, err := os.Stat(filepath.Join(vectorDir, name)); os.IsNotExist(err) {
		var buf bytes.Buffer
		if _, err := Export(makeImplemented(t).runDir, s, &buf, ExportOptions{}); err != nil {
			t.Fatal(err)
		}
		vc := map[string]string{"expect": "accepted", "now": "2000-01-01T00:00:00Z"}
		if err := os.WriteFile(filepath.Join(vectorDir, name), formatVector(vc, nil, files(t, buf.Bytes()), nil), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return loadVectorBase(t, name, runOpts{}, s)
}

// implementationPrefixOf is the implementation/<id>/ directory of members.
func implementationPrefixOf(t *testing.T, members []archive.File) string {
	t.Helper()
	for _, m := range members {
		if id, _, ok := splitImplementation(m.Name); ok {
			return ImplementationPrefix + id + "/"
		}
	}
	t.Fatal("no implementation run among the members")
	return ""
}

// signed returns members with an attestation over payload.
func (b *vectorBase) signed(t *testing.T, members []archive.File, payload []byte) []archive.File {
	t.Helper()
	env, err := envelope.Sign(b.s, PayloadType, payload)
	if err != nil {
		t.Fatal(err)
	}
	return append(append([]archive.File{}, members...), archive.File{Name: AttestationFile, Data: env})
}

// resigned returns members with an attestation over the base statement
// changed by mutate (nil: unchanged) and subjects recomputed.
func (b *vectorBase) resigned(t *testing.T, members []archive.File, mutate func(*Statement)) []archive.File {
	t.Helper()
	st := b.st
	st.Predicate.Run.Decisions = append(st.Predicate.Run.Decisions[:0:0], st.Predicate.Run.Decisions...)
	st.Subject = subjectsFor(members)
	if mutate != nil {
		mutate(&st)
	}
	p, err := canon.Marshal(&st)
	if err != nil {
		t.Fatal(err)
	}
	return b.signed(t, members, p)
}

// signedStatement returns the base members with an attestation over the
// base statement as exported (its subjects, products included, kept)
// changed by mutate (nil: unchanged).
func (b *vectorBase) signedStatement(t *testing.T, mutate func(*Statement)) []archive.File {
	t.Helper()
	st := b.st
	st.Subject = append([]Subject(nil), b.st.Subject...)
	if mutate != nil {
		mutate(&st)
	}
	p, err := canon.Marshal(&st)
	if err != nil {
		t.Fatal(err)
	}
	return b.signed(t, b.members, p)
}

// policy is the gate's policy for the base: its commit and contract, one
// approval, verified an hour after signing.
func (b *vectorBase) policy(comment string) map[string]string {
	return map[string]string{"comment": comment, "commit": b.st.Predicate.Run.Source.Commit,
		"contract": b.st.Predicate.Run.ContractHash, "require-approvals": "1", "now": stamp(b.signedAt.Add(time.Hour))}
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// trustJSON is a trust store holding the public keys, changed by mutate.
func trustJSON(t *testing.T, mutate func(*trust.Store), pubs ...[]byte) []byte {
	t.Helper()
	st := trust.New()
	for _, p := range pubs {
		if _, err := st.Add(p, "", nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	if mutate != nil {
		mutate(st)
	}
	b, err := st.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rawArchive is a deterministic .tar.gz of one entry that the bundle
// writer would refuse to make.
func rawArchive(t *testing.T, hdr *tar.Header, body []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zw.Header = gzip.Header{OS: 255}
	tw := tar.NewWriter(zw)
	hdr.ModTime, hdr.Format = time.Unix(0, 0), tar.FormatUSTAR
	if err := tw.WriteHeader(hdr); err != nil {
		t.Fatal(err)
	}
	tw.Write(body)
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	zw.Close()
	return buf.Bytes()
}

func editMember(ms []archive.File, name string, fn func([]byte) []byte) []archive.File {
	out := []archive.File{}
	for _, m := range ms {
		if m.Name == name {
			if m.Data = fn(append([]byte{}, m.Data...)); m.Data == nil {
				continue
			}
		}
		out = append(out, m)
	}
	return out
}

// TestWriteFailureVectors regenerates testdata/vectors when
// PROOFGATE_WRITE_VECTORS=1 (docs/SPEC.md, "Failure vectors"). Keys are
// fixed; times are the base run's signed_at and fixed offsets from it.
func TestWriteFailureVectors(t *testing.T) {
	if os.Getenv("PROOFGATE_WRITE_VECTORS") != "1" {
		t.Skip("set PROOFGATE_WRITE_VECTORS=1 to regenerate " + vectorDir)
	}
	s, pub := vectorSigner(t, 1)
	_, strangerPub := vectorSigner(t, 2)
	b := loadVectorBase(t, "accepted.txtar", runOpts{approve: []string{"alice"}, script: "echo ok"}, s)
	dirty := loadVectorBase(t, "dirty-source.txtar", runOpts{approve: []string{"alice"}, script: "echo ok", dirty: true}, s)
	good := b.resigned(t, b.members, nil)
	trusted := trustJSON(t, nil, pub)
	at := b.signedAt
	if err := os.MkdirAll(vectorDir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, expect string, h map[string]string, trustJSON []byte, members []archive.File, raw []byte) {
		h["expect"] = expect
		if err := os.WriteFile(filepath.Join(vectorDir, name+".txtar"), formatVector(h, trustJSON, members, raw), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	with := func(h map[string]string, kv ...string) map[string]string {
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] == "" {
				delete(h, kv[i])
			} else {
				h[kv[i]] = kv[i+1]
			}
		}
		return h
	}

	write("accepted", "accepted", b.policy("a COMPLETE run approved by one person, verified against its commit and contract"), trusted, good, nil)

	// The signature and the key.
	write("signature-invalid", string(SignatureInvalid), b.policy("one byte of the signed payload flipped after signing"), trusted,
		editMember(good, AttestationFile, func(env []byte) []byte {
			e, payload, err := envelope.Parse(env, PayloadType, AttestationFile)
			if err != nil {
				t.Fatal(err)
			}
			payload[len(payload)/2] ^= 0x01
			e.Payload = base64.StdEncoding.EncodeToString(payload)
			out, _ := canon.Marshal(e)
			return out
		}), nil)
	write("unknown-key", string(UnknownKey), b.policy("the trust store holds another key only"), trustJSON(t, nil, strangerPub), good, nil)
	write("key-revoked", string(KeyRevoked), b.policy("the key was revoked an hour before signed_at"),
		trustJSON(t, func(st *trust.Store) { r := at.Add(-time.Hour); st.Revoke(s.ID, &r) }, pub), good, nil)
	write("key-retired-before-signing", string(KeyNotValid), b.policy("the key was retired a minute before signed_at"),
		trustJSON(t, func(st *trust.Store) { st.Retire(s.ID, at.Add(-time.Minute)) }, pub), good, nil)
	write("key-retired-before-witness", string(KeyNotValid),
		with(b.policy("the key was retired a minute after signed_at, but the bundle was first witnessed a minute after that"), "witnessed", stamp(at.Add(2*time.Minute))),
		trustJSON(t, func(st *trust.Store) { st.Retire(s.ID, at.Add(time.Minute)) }, pub), good, nil)
	write("identity-mismatch", string(IdentityMismatch), b.policy("the key may sign only for another repository"),
		trustJSON(t, func(st *trust.Store) { st.Keys[0].Identity = "repo:acme/other" }, pub), good, nil)
	write("malformed-duplicate-member", string(Malformed), b.policy("the signed statement repeats signed_at; a reader keeping the first would check the key at 2000-01-01"), trusted,
		func() []archive.File {
			p, _ := canon.Marshal(func() *Statement { st := b.st; st.Subject = subjectsFor(b.members); return &st }())
			old := `"signed_at":"` + b.st.Predicate.SignedAt + `"`
			return b.signed(t, b.members, bytes.Replace(p, []byte(old), []byte(`"signed_at":"2000-01-01T00:00:00Z",`+old), 1))
		}(), nil)

	// The archive and its members.
	write("archive-path-traversal", string(ArchiveUnsafe), b.policy("an entry named ../x"), trusted, nil,
		rawArchive(t, &tar.Header{Name: "../x", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644}, []byte("x")))
	write("archive-symlink", string(ArchiveUnsafe), b.policy("a symbolic link entry"), trusted, nil,
		rawArchive(t, &tar.Header{Name: "l", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd", Mode: 0o777}, nil))
	write("subject-mismatch", string(SubjectMismatch), b.policy("one byte of run.json flipped after signing"), trusted,
		editMember(good, RunFile, flip), nil)
	var blob string
	for _, m := range b.members {
		if isBlobName(m.Name) && len(m.Data) > 0 {
			blob = m.Name
		}
	}
	write("missing-file", string(MissingFile), b.policy("the check's stdout blob removed; the statement still lists it"), trusted,
		editMember(good, blob, func([]byte) []byte { return nil }), nil)
	write("extra-file", string(ExtraFile), b.policy("a file the statement does not list"), trusted,
		append(append([]archive.File{}, good...), archive.File{Name: "extra.txt", Data: []byte("x\n")}), nil)
	broken := editMember(b.members, EventsFile, func(ev []byte) []byte {
		return bytes.Replace(ev, []byte(`"exit_code":0`), []byte(`"exit_code":1`), 1)
	})
	write("chain-broken", string(ChainBroken), b.policy("an event edited without recomputing its hash, then signed over"), trusted,
		b.resigned(t, broken, nil), nil)
	write("predicate-mismatch", string(PredicateMismatch), b.policy("the signed predicate claims a second approval the log does not hold"), trusted,
		b.resigned(t, b.members, func(st *Statement) {
			d := st.Predicate.Run.Decisions[0]
			d.Actor = "bob"
			st.Predicate.Run.Decisions = append(st.Predicate.Run.Decisions, d)
		}), nil)

	// The policy.
	write("commit-mismatch", string(CommitMismatch), with(b.policy("the gate asks for another commit"), "commit", strings.Repeat("0", 40)), trusted, good, nil)
	write("tree-mismatch", string(TreeMismatch), with(b.policy("the gate asks for another tree"), "commit", "", "tree", strings.Repeat("0", 40)), trusted, good, nil)
	write("contract-mismatch", string(ContractMismatch), with(b.policy("the gate asks for another contract"), "contract", "sha256:"+strings.Repeat("0", 64)), trusted, good, nil)
	write("dirty-source", string(DirtySource), dirty.policy("a run planned with --allow-dirty on a work tree with an uncommitted file"), trusted,
		dirty.resigned(t, dirty.members, nil), nil)
	write("signing-time-implausible", string(SigningTimeImplausible), with(b.policy("verified an hour before signed_at"), "now", stamp(at.Add(-time.Hour))), trusted, good, nil)
	write("insufficient-approvals", string(InsufficientApprovals), with(b.policy("one approval, the gate requires two"), "require-approvals", "2"), trusted, good, nil)

	// A successor run carrying its implementation run (ADR 0017): a third
	// real run, with a recorded agent session (a manifest input among its
	// calls, so a verifier must rebuild it).
	impl := loadImplementedBase(t, "implementation-accepted.txtar", s)
	write("implementation-accepted", "accepted", impl.policy("a COMPLETE successor run carrying its implementation run and its session (allow, approval, a manifest input, block) under implementation/<id>/"), trusted,
		impl.resigned(t, impl.members, nil), nil)
	rechained, _ := rewriteMembers(t, impl.members, implementationPrefixOf(t, impl.members), editData(t, "session.ended", 0, func(d map[string]any) { d["reason"] = "rewritten" }))
	write("implementation-mismatch", string(ImplementationMismatch), impl.policy("the implementation run's log edited and re-chained (its run.json rewritten to match) and signed over: it replays, but its chain is not the one implemented_by binds"), trusted,
		impl.resigned(t, rechained, nil), nil)

	// Products (ADR 0039): a check that produced dist/app, its subject
	// products/hello/dist/app; the gate holds a file (subject line: its
	// sha256) and asks whether a passed check produced it.
	prod := loadVectorBase(t, "product-accepted.txtar", runOpts{approve: []string{"alice"}, produces: []string{"dist/app"},
		script: "mkdir -p dist && printf 'app v1' > dist/app && echo built"}, s)
	appSum := sha256.Sum256([]byte("app v1"))
	app := hex.EncodeToString(appSum[:])
	prodGood := prod.signedStatement(t, nil)
	write("product-accepted", "accepted", with(prod.policy("the gate's file is dist/app, a product of the passed check hello"), "subject", app), trusted, prodGood, nil)
	other := sha256.Sum256([]byte("app v2"))
	write("not-a-product", string(NotAProduct), with(prod.policy("the gate's file (app v2) is no product of the run"), "subject", hex.EncodeToString(other[:])), trusted, prodGood, nil)
	write("product-subject-swapped", string(SubjectMismatch), with(prod.policy("the signer swapped the product subject's digest for the gate's file (app v2); the log recorded app v1"), "subject", hex.EncodeToString(other[:])), trusted,
		prod.signedStatement(t, func(st *Statement) {
			for i := range st.Subject {
				if st.Subject[i].Name == ProductPrefix+"hello/dist/app" {
					st.Subject[i].Digest = map[string]string{"sha256": hex.EncodeToString(other[:])}
				}
			}
		}), nil)

	// Keyless bundles (ADR 0010), decided before any material is checked:
	// the material is the test pair's (bundle/internal/sigtest), not a
	// Sigstore bundle, and no verifier needs to read it.
	keyless := b.keylessSigned(t, sigtest.NewCA(0xca).NewKeylessSigner(3, at.Add(time.Minute)))
	var material []byte
	for _, m := range keyless {
		if m.Name == envelope.MaterialFile {
			material = m.Data
		}
	}
	write("keyless-without-trusted-root", string(UnknownKey), b.policy("a keyless attestation (keyid keyless:<hex>) with its attestation.sigstore.json, verified with a trust store only: nothing vouches for its key"), trusted, keyless, nil)
	write("keyless-material-missing", string(MissingFile), b.policy("a keyless attestation whose attestation.sigstore.json was removed"), trusted,
		editMember(keyless, envelope.MaterialFile, func([]byte) []byte { return nil }), nil)
	write("extra-file-material-in-key-bundle", string(ExtraFile), b.policy("a key-signed bundle carrying attestation.sigstore.json"), trusted,
		append(append([]archive.File{}, good...), archive.File{Name: envelope.MaterialFile, Data: material}), nil)
}

// keylessSigned returns the base members with the base statement signed
// by the keyless signer s: the attestation and the material.
func (b *vectorBase) keylessSigned(t *testing.T, s envelope.MaterialSigner) []archive.File {
	t.Helper()
	st := b.st
	st.Subject = subjectsFor(b.members)
	st.Predicate.KeyID = s.KeyID()
	p, err := canon.Marshal(&st)
	if err != nil {
		t.Fatal(err)
	}
	env, material, err := envelope.SignWithMaterial(t.Context(), s, PayloadType, p)
	if err != nil {
		t.Fatal(err)
	}
	return append(append([]archive.File{}, b.members...), archive.File{Name: AttestationFile, Data: env},
		archive.File{Name: envelope.MaterialFile, Data: material})
}
