package bundle

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	itpb "github.com/in-toto/attestation/go/v1"
	"github.com/proofgate/proofgate/bundle/archive"
	"github.com/proofgate/proofgate/bundle/checkpoint"
	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/trust"
	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/record"
	"github.com/proofgate/proofgate/kernel/eventlog"
	"google.golang.org/protobuf/encoding/protojson"
)

func export(t testing.TB, f *fixture, k *signingKey, opts ExportOptions) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := Export(f.runDir, k.s, &buf, opts); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func reasonOf(err error) Reason {
	var ve *VerifyError
	if errors.As(err, &ve) {
		return ve.Reason
	}
	return ""
}

// files decodes a bundle (trusted test output) into ordered entries.
func files(t testing.TB, b []byte) []archive.File {
	t.Helper()
	fs, err := archive.Read(bytes.NewReader(b), archive.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

// repack writes entries as-is (no sorting, any header) into a tar.gz.
func repack(t testing.TB, fs []archive.File, extra ...func(*tar.Writer)) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, f := range fs {
		tw.WriteHeader(&tar.Header{Name: f.Name, Typeflag: tar.TypeReg, Size: int64(len(f.Data)), Mode: 0o644})
		tw.Write(f.Data)
	}
	for _, x := range extra {
		x(tw)
	}
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

func edit(fs []archive.File, name string, fn func([]byte) []byte) []archive.File {
	out := make([]archive.File, 0, len(fs))
	for _, f := range fs {
		if f.Name == name || (name == "blob" && strings.HasPrefix(f.Name, BlobPrefix) && len(f.Data) > 0 && fn != nil) {
			d := fn(append([]byte{}, f.Data...))
			if d == nil {
				continue
			}
			out = append(out, archive.File{Name: f.Name, Data: d})
			if name == "blob" {
				name = "\x00done"
			}
			continue
		}
		out = append(out, f)
	}
	return out
}

func flip(b []byte) []byte { b[len(b)/2] ^= 0x01; return b }

// restate returns the canonical statement of attestation b after mutate.
func restate(t testing.TB, b []byte, mutate func(*Statement)) []byte {
	t.Helper()
	_, payload, err := envelope.Parse(b, PayloadType, "a")
	if err != nil {
		t.Fatal(err)
	}
	var st Statement
	if err := json.Unmarshal(payload, &st); err != nil {
		t.Fatal(err)
	}
	mutate(&st)
	p, err := canon.Marshal(&st)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// resign replaces the statement and signs it with k.
func resign(t testing.TB, fs []archive.File, k *signingKey, mutate func(*Statement)) []archive.File {
	t.Helper()
	return edit(fs, AttestationFile, func(b []byte) []byte {
		env, err := envelope.Sign(k.s, PayloadType, restate(t, b, mutate))
		if err != nil {
			t.Fatal(err)
		}
		return env
	})
}

func subjectsFor(fs []archive.File) []Subject {
	var out []Subject
	for _, f := range fs {
		if f.Name != AttestationFile {
			out = append(out, Subject{Name: f.Name, Digest: map[string]string{"sha256": sum(f.Data)}})
		}
	}
	return out
}

func TestExportVerifyAndMutations(t *testing.T) {
	f := makeRun(t, runOpts{approve: []string{"alice"}})
	k := newKey(t)
	other := newKey(t)
	st := storeWith(t, k, other)
	good := export(t, f, k, ExportOptions{})

	res, err := Verify(bytes.NewReader(good), st, VerifyOptions{AnyContract: true, Commit: f.commit, RequireApprovals: 1})
	if err != nil {
		t.Fatalf("good bundle refused: %v", err)
	}
	if res.RunID != f.id || res.Approvals != 1 || res.Run.State != "COMPLETE" || res.Run.Repo != "acme/widget" {
		t.Fatalf("result %+v", res)
	}
	// Determinism: same run + same key = same bytes.
	if again := export(t, f, k, ExportOptions{}); !bytes.Equal(good, again) {
		t.Fatal("export is not deterministic")
	}

	fs := files(t, good)
	otherRun := makeRun(t, runOpts{approve: []string{"bob"}, script: "echo other"})
	otherBundle := files(t, export(t, otherRun, k, ExportOptions{}))
	var otherSig string
	for _, f := range otherBundle {
		if f.Name == AttestationFile {
			var env envelope.Envelope
			json.Unmarshal(f.Data, &env)
			otherSig = env.Signatures[0].Sig
		}
	}
	envEdit := func(fn func(*envelope.Envelope)) []byte {
		return repack(t, edit(fs, AttestationFile, func(b []byte) []byte {
			var env envelope.Envelope
			json.Unmarshal(b, &env)
			fn(&env)
			out, _ := json.Marshal(&env)
			return out
		}))
	}
	// events.ndjson with a line edited and the whole chain recomputed.
	rechained := repack(t, edit(fs, EventsFile, func(b []byte) []byte { return rechainEvents(t, b) }))
	unknown := newKey(t)
	at := func(s string) time.Time { tm, _ := time.Parse(time.RFC3339, s); return tm }
	signedAt := func(b []byte) time.Time {
		for _, f := range files(t, b) {
			if f.Name == AttestationFile {
				_, p, _ := envelope.Parse(f.Data, PayloadType, "a")
				var s Statement
				json.Unmarshal(p, &s)
				tm, _ := time.Parse(time.RFC3339Nano, s.Predicate.SignedAt)
				return tm
			}
		}
		return time.Time{}
	}(good)

	revokedBefore := storeWith(t, k)
	rb := signedAt.Add(-time.Hour)
	revokedBefore.Revoke(k.s.ID, &rb)
	revokedAfter := storeWith(t, k)
	ra := signedAt.Add(time.Hour)
	revokedAfter.Revoke(k.s.ID, &ra)
	revokedAll := storeWith(t, k)
	revokedAll.Revoke(k.s.ID, nil)
	retired := storeWith(t, k)
	retired.Retire(k.s.ID, signedAt.Add(time.Minute))
	retiredBefore := storeWith(t, k)
	retiredBefore.Retire(k.s.ID, signedAt.Add(-time.Minute))
	window := trust.New()
	nb, na := at("2000-01-01T00:00:00Z"), at("2001-01-01T00:00:00Z")
	window.Add(k.pubPEM, "", &nb, &na)
	identity := trust.New()
	identity.Add(k.pubPEM, "repo:acme/other", nil, nil)
	identityOK := trust.New()
	identityOK.Add(k.pubPEM, "repo:acme/widget", nil, nil)

	type tc struct {
		name  string
		in    []byte
		store *trust.Store
		opts  VerifyOptions
		want  Reason // "" = accepted
	}
	cases := []tc{
		{"flip run.json", repack(t, edit(fs, RunFile, flip)), st, anyRun, SubjectMismatch},
		{"flip events.ndjson", repack(t, edit(fs, EventsFile, flip)), st, anyRun, SubjectMismatch},
		{"flip contract.json", repack(t, edit(fs, ContractFile, flip)), st, anyRun, SubjectMismatch},
		{"flip a blob", repack(t, edit(fs, "blob", flip)), st, anyRun, SubjectMismatch},
		{"flip a signature byte", envEdit(func(e *envelope.Envelope) {
			sig, _ := base64.StdEncoding.DecodeString(e.Signatures[0].Sig)
			sig[10] ^= 0x01
			e.Signatures[0].Sig = base64.StdEncoding.EncodeToString(sig)
		}), st, anyRun, SignatureInvalid},
		{"flip a payload byte", envEdit(func(e *envelope.Envelope) {
			p, _ := base64.StdEncoding.DecodeString(e.Payload)
			p[len(p)/2] ^= 0x01
			e.Payload = base64.StdEncoding.EncodeToString(p)
		}), st, anyRun, SignatureInvalid},
		{"attestation not JSON", repack(t, edit(fs, AttestationFile, func(b []byte) []byte { b[0] = '['; return b })), st, anyRun, Malformed},
		{"remove events.ndjson", repack(t, edit(fs, EventsFile, func([]byte) []byte { return nil })), st, anyRun, MissingFile},
		{"remove attestation", repack(t, edit(fs, AttestationFile, func([]byte) []byte { return nil })), st, anyRun, MissingFile},
		{"add a file", repack(t, append(append([]archive.File{}, fs...), archive.File{Name: "extra.txt", Data: []byte("x")})), st, anyRun, ExtraFile},
		{"rename a file", repack(t, func() []archive.File {
			out := append([]archive.File{}, fs...)
			for i := range out {
				if out[i].Name == RunFile {
					out[i].Name = "run2.json"
				}
			}
			return out
		}()), st, anyRun, MissingFile},
		{"edit envelope payload", envEdit(func(e *envelope.Envelope) {
			p, _ := base64.StdEncoding.DecodeString(e.Payload)
			p = bytes.Replace(p, []byte(`"approved"`), []byte(`"approveD"`), 1)
			e.Payload = base64.StdEncoding.EncodeToString(p)
		}), st, anyRun, SignatureInvalid},
		{"signature from another bundle", envEdit(func(e *envelope.Envelope) { e.Signatures[0].Sig = otherSig }), st, anyRun, SignatureInvalid},
		{"keyid changed to another trusted key", envEdit(func(e *envelope.Envelope) { e.Signatures[0].KeyID = other.s.ID }), st, anyRun, SignatureInvalid},
		{"keyid changed to garbage", envEdit(func(e *envelope.Envelope) { e.Signatures[0].KeyID = "00" }), st, anyRun, Malformed},
		{"keyid changed to an unknown key id", envEdit(func(e *envelope.Envelope) { e.Signatures[0].KeyID = strings.Repeat("0", 64) }), st, anyRun, UnknownKey},
		{"key not in store", good, storeWith(t, other), anyRun, UnknownKey},
		{"signed by an untrusted key", repack(t, resign(t, fs, unknown, func(*Statement) {})), st, anyRun, UnknownKey},
		{"key revoked before signing", good, revokedBefore, anyRun, KeyRevoked},
		{"key revoked after signing", good, revokedAfter, anyRun, ""},
		{"key revoked without time", good, revokedAll, anyRun, KeyRevoked},
		{"key retired after signing", good, retired, anyRun, ""},
		{"key retired before signing", good, retiredBefore, anyRun, KeyNotValid},
		{"signing time outside validity", good, window, anyRun, KeyNotValid},
		{"identity mismatch", good, identity, anyRun, IdentityMismatch},
		{"identity match", good, identityOK, anyRun, ""},
		{"commit mismatch", good, st, VerifyOptions{AnyContract: true, Commit: strings.Repeat("b", 40)}, CommitMismatch},
		{"tree match", good, st, VerifyOptions{AnyContract: true, Tree: f.tree}, ""},
		{"tree mismatch", good, st, VerifyOptions{AnyContract: true, Tree: strings.Repeat("c", 40)}, TreeMismatch},
		{"insufficient approvals", good, st, VerifyOptions{AnySource: true, AnyContract: true, RequireApprovals: 2}, InsufficientApprovals},
		{"events rechained", rechained, st, anyRun, SubjectMismatch},
		{"events rechained and re-signed by trusted key", repack(t, resign(t, edit(fs, EventsFile, func(b []byte) []byte { return rechainEvents(t, b) }), k, func(s *Statement) {
			s.Subject = subjectsFor(edit(fs, EventsFile, func(b []byte) []byte { return rechainEvents(t, b) }))
		})), st, anyRun, AuditFailed},
		{"predicate lies about approvals", repack(t, resign(t, fs, k, func(s *Statement) {
			s.Predicate.Run.Decisions = append(s.Predicate.Run.Decisions, s.Predicate.Run.Decisions[0])
			s.Predicate.Run.Decisions[1].Actor = "bob"
		})), st, anyRun, PredicateMismatch},
		{"predicate lies about chain", repack(t, resign(t, fs, k, func(s *Statement) { s.Predicate.Run.Chain.Length++ })), st, anyRun, ChainMismatch},
		{"predicate lies about commit", repack(t, resign(t, fs, k, func(s *Statement) { s.Predicate.Run.Source.Commit = strings.Repeat("d", 40) })), st, VerifyOptions{AnyContract: true, Commit: strings.Repeat("d", 40)}, PredicateMismatch},
		{"blob dropped from subjects and archive", repack(t, resign(t, edit(fs, "blob", func([]byte) []byte { return nil }), k, func(s *Statement) {
			s.Subject = subjectsFor(edit(fs, "blob", func([]byte) []byte { return nil }))
		})), st, anyRun, MissingFile},
		{"path ../x", repack(t, fs, func(tw *tar.Writer) {
			tw.WriteHeader(&tar.Header{Name: "../x", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644})
			tw.Write([]byte("x"))
		}), st, anyRun, ArchiveUnsafe},
		{"path /etc/x", repack(t, fs, func(tw *tar.Writer) {
			tw.WriteHeader(&tar.Header{Name: "/etc/x", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644})
			tw.Write([]byte("x"))
		}), st, anyRun, ArchiveUnsafe},
		{"symlink", repack(t, fs, func(tw *tar.Writer) {
			tw.WriteHeader(&tar.Header{Name: "l", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd", Mode: 0o777})
		}), st, anyRun, ArchiveUnsafe},
		{"hardlink", repack(t, fs, func(tw *tar.Writer) {
			tw.WriteHeader(&tar.Header{Name: "h", Typeflag: tar.TypeLink, Linkname: RunFile, Mode: 0o644})
		}), st, anyRun, ArchiveUnsafe},
		{"device", repack(t, fs, func(tw *tar.Writer) {
			tw.WriteHeader(&tar.Header{Name: "d", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 3, Mode: 0o644})
		}), st, anyRun, ArchiveUnsafe},
		{"duplicate entry", repack(t, append(append([]archive.File{}, fs...), fs[len(fs)-1])), st, anyRun, ArchiveUnsafe},
		{"entry declaring 2 GiB", func() []byte {
			var buf bytes.Buffer
			zw := gzip.NewWriter(&buf)
			tw := tar.NewWriter(zw)
			tw.WriteHeader(&tar.Header{Name: "big", Typeflag: tar.TypeReg, Size: 2 << 30, Mode: 0o644})
			tw.Flush()
			zw.Close()
			return buf.Bytes()
		}(), st, anyRun, ArchiveTooLarge},
		{"gzip bomb", func() []byte {
			var buf bytes.Buffer
			zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
			tw := tar.NewWriter(zw)
			tw.WriteHeader(&tar.Header{Name: RunFile, Typeflag: tar.TypeReg, Size: 32 << 20, Mode: 0o644})
			tw.Write(make([]byte, 32<<20))
			tw.Close()
			zw.Close()
			return buf.Bytes()
		}(), st, anyRun, ArchiveTooLarge},
		{"truncated archive", good[:len(good)*2/3], st, anyRun, Malformed},
		{"not an archive", []byte("hello"), st, anyRun, Malformed},
	}
	if len(cases) < 25 {
		t.Fatalf("only %d cases", len(cases))
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Verify(bytes.NewReader(c.in), c.store, c.opts)
			if got := reasonOf(err); got != c.want {
				t.Fatalf("reason %q (%v), want %q", got, err, c.want)
			}
			if c.want != "" && reasonOf(err) == "" {
				t.Fatalf("untyped error %v", err)
			}
		})
	}
}

// rechainEvents rewrites the data of the check.finished line's exit code
// and recomputes every hash and link after it: a valid chain.
func rechainEvents(t testing.TB, b []byte) []byte {
	t.Helper()
	events, err := eventlog.Read(bytes.NewReader(b), nil)
	if err != nil {
		t.Fatal(err)
	}
	k := -1
	for i, e := range events {
		if e.Type == "check.finished" {
			k = i
			events[i].Data = json.RawMessage(bytes.Replace(e.Data, []byte(`"duration_ms":`), []byte(`"duration_ms":1`), 1))
		}
	}
	if k < 0 {
		t.Fatal("no check.finished")
	}
	var out bytes.Buffer
	for i := range events {
		if i >= k {
			if i > 0 {
				p := events[i-1].Hash
				events[i].Prev = &p
			}
			events[i].Hash, _ = eventlog.Hash(events[i])
		}
		line, _ := canon.Marshal(events[i])
		out.Write(append(line, '\n'))
	}
	if _, err := eventlog.Read(bytes.NewReader(out.Bytes()), nil); err != nil {
		t.Fatalf("rechained log invalid: %v", err)
	}
	return out.Bytes()
}

func TestExportRefusesIncompleteRuns(t *testing.T) {
	k := newKey(t)
	for name, o := range map[string]runOpts{
		"awaiting approval": {},
		"rejected":          {reject: true},
		"blocked":           {script: "exit 3", approve: nil},
	} {
		t.Run(name, func(t *testing.T) {
			f := makeRun(t, o)
			out := filepath.Join(t.TempDir(), "b.tgz")
			_, err := ExportFile(f.runDir, out, k.s, ExportOptions{})
			var xe *ExportError
			if !errors.As(err, &xe) || xe.Reason != NotComplete {
				t.Fatalf("export: %v", err)
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Fatal("a refused export left a file")
			}
			ents, _ := os.ReadDir(filepath.Dir(out))
			if len(ents) != 0 {
				t.Fatalf("temp files left: %v", ents)
			}
		})
	}
}

func TestStatementIsInTotoV1(t *testing.T) {
	f := makeRun(t, runOpts{approve: []string{"alice"}})
	k := newKey(t)
	for _, fl := range files(t, export(t, f, k, ExportOptions{})) {
		if fl.Name != AttestationFile {
			continue
		}
		_, payload, err := envelope.Parse(fl.Data, PayloadType, "a")
		if err != nil {
			t.Fatal(err)
		}
		var s itpb.Statement
		if err := protojson.Unmarshal(payload, &s); err != nil {
			t.Fatal(err)
		}
		if err := s.Validate(); err != nil {
			t.Fatal(err)
		}
		if s.GetType() != itpb.StatementTypeUri || s.GetPredicateType() != PredicateType || len(s.GetSubject()) < 4 {
			t.Fatalf("statement %v", &s)
		}
		for _, sub := range s.GetSubject() {
			if len(sub.GetDigest()["sha256"]) != 64 {
				t.Fatalf("subject %v", sub)
			}
		}
		return
	}
	t.Fatal("no attestation")
}

// TestOpenSSLVerifiesBundleSignature: an independent implementation checks
// the signature over the PAE bytes with the public key from the trust store.
func TestOpenSSLVerifiesBundleSignature(t *testing.T) {
	f := makeRun(t, runOpts{approve: []string{"alice"}})
	k := newKey(t)
	st := storeWith(t, k)
	dir := t.TempDir()
	for _, fl := range files(t, export(t, f, k, ExportOptions{})) {
		if fl.Name != AttestationFile {
			continue
		}
		env, payload, err := envelope.Parse(fl.Data, PayloadType, "a")
		if err != nil {
			t.Fatal(err)
		}
		sig, _ := base64.StdEncoding.DecodeString(env.Signatures[0].Sig)
		os.WriteFile(filepath.Join(dir, "sig.bin"), sig, 0o644)
		os.WriteFile(filepath.Join(dir, "pae.bin"), envelope.PAE(PayloadType, payload), 0o644)
		os.WriteFile(filepath.Join(dir, "pub.pem"), []byte(st.Find(env.Signatures[0].KeyID).PublicKey), 0o644)
		out, err := exec.Command("openssl", "pkeyutl", "-verify", "-rawin", "-pubin", "-inkey", filepath.Join(dir, "pub.pem"),
			"-sigfile", filepath.Join(dir, "sig.bin"), "-in", filepath.Join(dir, "pae.bin")).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "Signature Verified Successfully") {
			t.Fatalf("openssl: %v\n%s", err, out)
		}
		return
	}
	t.Fatal("no attestation")
}

func TestOpenSSLKeySignsBundle(t *testing.T) {
	f := makeRun(t, runOpts{approve: []string{"alice"}})
	dir := t.TempDir()
	p := filepath.Join(dir, "k.pem")
	if out, err := exec.Command("openssl", "genpkey", "-algorithm", "ed25519", "-out", p).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	pub, err := exec.Command("openssl", "pkey", "-in", p, "-pubout").Output()
	if err != nil {
		t.Fatal(err)
	}
	s, err := loadKey(p)
	if err != nil {
		t.Fatal(err)
	}
	st := trust.New()
	if _, err := st.Add(pub, "", nil, nil); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := Export(f.runDir, s, &buf, ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(&buf, st, VerifyOptions{AnySource: true, AnyContract: true, RequireApprovals: 1}); err != nil {
		t.Fatal(err)
	}
}

func TestCheckpointCarriedAndChecked(t *testing.T) {
	f := makeRun(t, runOpts{approve: []string{"alice"}})
	k := newKey(t)
	st := storeWith(t, k)
	rec, err := record.Checkpoint(f.state, f.id, k.s, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	b := export(t, f, k, ExportOptions{})
	res, err := Verify(bytes.NewReader(b), st, anyRun)
	if err != nil {
		t.Fatal(err)
	}
	if res.Checkpoint == nil || res.Checkpoint.Length != rec.Length {
		t.Fatalf("checkpoint not carried: %+v", res.Checkpoint)
	}
	// A checkpoint signed by a key outside the store is refused even though
	// the bundle's own signature is fine.
	stranger := newKey(t)
	fs := files(t, b)
	var cpLen int
	fs2 := edit(fs, CheckpointFile, func(old []byte) []byte {
		_, p, _ := envelope.Parse(old, checkpoint.PayloadType, "cp")
		var c checkpoint.Checkpoint
		json.Unmarshal(p, &c)
		cpLen = c.Length
		out, _ := checkpoint.Sign(stranger.s, c)
		return out
	})
	_ = cpLen
	forged := repack(t, resign(t, fs2, k, func(s *Statement) { s.Subject = subjectsFor(fs2) }))
	if _, err := Verify(bytes.NewReader(forged), st, anyRun); reasonOf(err) != CheckpointInvalid {
		t.Fatalf("foreign checkpoint: %v", err)
	}
}
