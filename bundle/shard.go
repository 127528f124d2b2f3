package bundle

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/proofgate/proofgate/bundle/archive"
	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/internal/bounded"
	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/strictjson"
	"github.com/proofgate/proofgate/kernel/replay"
)

// Shard signing (docs/SPEC.md "Shards", ADR 0026): a shard job signs its
// shard directory's shard.json into shard.sig with the bundle signers. A
// key (envelope.Signer) signs a DSSE envelope of payload type
// ShardPayloadType whose payload is shard.json's exact bytes. Keyless
// (envelope.MaterialSigner, whose verification material goes to
// shard.sigstore.json) signs an in-toto Statement v1 (payload type
// PayloadType, as keyless bundles and hand-offs: sigstore-go verifies no
// other DSSE payload type), canonical JSON
//
//	{"_type":"https://in-toto.io/Statement/v1",
//	 "subject":[{"name":"shard.json","digest":{"sha256":"<hex of shard.json>"}}],
//	 "predicateType":"https://proofgate.dev/shard/v1",
//	 "predicate":{"run":"<run id>","shard":I,"of":N}}
//
// whose subject binds shard.json's bytes and whose predicate type tells it
// from a bundle's statement signed under the same identity. The merge job
// verifies it with a ShardVerifier before it reads a byte of the shard.

// ShardPayloadType is the DSSE payload type of a key-signed shard.sig.
const ShardPayloadType = "application/vnd.proofgate.shard+json"

// ShardPredicateType is the predicate type of a keyless shard.sig's
// in-toto statement.
const ShardPredicateType = "https://proofgate.dev/shard/v1"

// ShardStatement is the in-toto statement a keyless shard.sig signs.
type ShardStatement struct {
	Type          string         `json:"_type"`
	Subject       []Subject      `json:"subject"`
	PredicateType string         `json:"predicateType"`
	Predicate     ShardPredicate `json:"predicate"`
}

// ShardPredicate names the shard the statement's subject is the manifest
// of: it must equal shard.json's run, shard and of.
type ShardPredicate struct {
	Run   string `json:"run"`
	Shard int    `json:"shard"`
	Of    int    `json:"of"`
}

// ShardMismatch refuses a merged bundle whose shard logs do not hold
// (replay.ReasonShard): a shard log or manifest altered, missing, or not
// the one the run's log recorded.
const ShardMismatch Reason = "shard-mismatch"

// maxShardManifest bounds the shard.json SignShard signs.
const maxShardManifest = 1 << 20

// SignShard signs dir's shard.json with the key signer s into shard.sig.
// An existing shard.sig is refused (fs.ErrExist).
func SignShard(dir string, s envelope.Signer) error {
	return SignShardContext(context.Background(), dir, s)
}

// SignShardContext is SignShard with a context for the signer.
func SignShardContext(ctx context.Context, dir string, s envelope.Signer) error {
	m, err := readShardManifest(dir)
	if err != nil {
		return err
	}
	env, err := envelope.SignContext(ctx, s, ShardPayloadType, m)
	if err != nil {
		return fmt.Errorf("sign shard %s: %w", dir, err)
	}
	return writeNew(filepath.Join(dir, replay.ShardSignatureFile), env)
}

// SignShardWith signs dir's shard.json with the keyless signer ms into
// shard.sig and writes its verification material to shard.sigstore.json.
func SignShardWith(ctx context.Context, dir string, ms envelope.MaterialSigner) error {
	m, err := readShardManifest(dir)
	if err != nil {
		return err
	}
	st, err := shardStatement(m)
	if err != nil {
		return fmt.Errorf("sign shard %s: %w", dir, err)
	}
	env, material, err := envelope.SignWithMaterial(ctx, ms, PayloadType, st)
	if err != nil {
		return fmt.Errorf("sign shard %s: %w", dir, err)
	}
	if err := writeNew(filepath.Join(dir, replay.ShardMaterialFile), material); err != nil {
		return err
	}
	return writeNew(filepath.Join(dir, replay.ShardSignatureFile), env)
}

// shardStatement is the canonical in-toto statement over manifest.
func shardStatement(manifest []byte) ([]byte, error) {
	var m replay.ShardManifest
	if err := strictjson.Decode(manifest, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", replay.ShardManifestFile, err)
	}
	return canon.Marshal(&ShardStatement{Type: StatementType, PredicateType: ShardPredicateType,
		Subject:   []Subject{{Name: replay.ShardManifestFile, Digest: map[string]string{"sha256": sum(manifest)}}},
		Predicate: ShardPredicate{Run: m.Run, Shard: m.Shard, Of: m.Of}})
}

func readShardManifest(dir string) ([]byte, error) {
	p := filepath.Join(dir, replay.ShardManifestFile)
	f, err := bounded.Open(p)
	if err != nil {
		return nil, fmt.Errorf("sign shard: %w (the shard has not finished)", err)
	}
	defer f.Close()
	b, err := bounded.ReadAll(f, maxShardManifest)
	if err != nil {
		return nil, fmt.Errorf("sign shard: %s: %w", p, err)
	}
	return b, nil
}

func writeNew(p string, b []byte) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if err != nil {
		return fmt.Errorf("sign shard: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("sign shard: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("sign shard: %w", err)
	}
	return f.Close()
}

// ShardVerifier verifies shard signatures: key-signed ones against Keys
// (a trust store), keyless ones with Keyless (bundle/sigstore's
// Verifiers: a trusted root and an identity policy). A nil field refuses
// shards of its kind. It implements internal/shard's Verifier.
//
// The key's status is judged at the merge (Now, the verifier's own clock:
// the shard existed by then), not only at the finished time the signer
// wrote: a key revoked (or retired) before the merge is refused whatever
// finished says, and a finished time after Now+MaxClockSkew is
// implausible. The merge bounds finished below by the run's planned log.
type ShardVerifier struct {
	Keys    envelope.Verifiers
	Keyless envelope.MaterialVerifiers
	// Now is the merge time; nil is time.Now.
	Now func() time.Time
}

func (v *ShardVerifier) now() time.Time {
	if v.Now != nil {
		return v.Now()
	}
	return time.Now()
}

// ShardSignatureError is a refused shard signature; Reason is one of
// the bundle reasons (unknown-key, signature-invalid, key-revoked,
// key-not-valid-at-time, malformed, ...).
type ShardSignatureError struct {
	Reason Reason
	Detail string
	Err    error
}

func (e *ShardSignatureError) Error() string {
	return fmt.Sprintf("shard signature refused: %s: %s", e.Reason, e.Detail)
}

// Unwrap returns the underlying error.
func (e *ShardSignatureError) Unwrap() error { return e.Err }

// VerifyShard checks that signature is a DSSE envelope over manifest by a
// signer v trusts. Key-signed: payload type ShardPayloadType, the payload
// exactly manifest, the key valid at the manifest's finished time.
// Keyless: payload type PayloadType, an in-toto statement (ShardStatement)
// whose one subject is shard.json with manifest's digest, vouched for by
// material (v.Keyless pins the identity) and witnessed within
// MaxKeylessSigningDelay after (MaxClockSkew before) the finished time.
func (v *ShardVerifier) VerifyShard(manifest, signature, material []byte) error {
	keyless, err := shardSignatureKind(signature)
	if err != nil {
		return err
	}
	if keyless {
		return v.verifyKeyless(manifest, signature, material)
	}
	payload, err := v.openKey(signature, manifest)
	if err != nil {
		return err
	}
	if string(payload) != string(manifest) {
		return &ShardSignatureError{Reason: SubjectMismatch, Detail: "shard.sig signs another shard.json"}
	}
	return nil
}

// shardSignatureKind reports whether shard.sig is keyless: a keyless keyid
// over an in-toto statement; a key's keyid signs ShardPayloadType. Any
// other pairing, or an envelope Parse refuses, is malformed.
func shardSignatureKind(signature []byte) (keyless bool, err error) {
	env, _, err := envelope.Parse(signature, ShardPayloadType, replay.ShardSignatureFile)
	if err == nil {
		if envelope.Keyless(env.Signatures[0].KeyID) {
			return false, &ShardSignatureError{Reason: Malformed, Detail: "shard.sig: a keyless signature signs an in-toto statement (payloadType " + PayloadType + "), not " + ShardPayloadType}
		}
		return false, nil
	}
	kenv, _, kerr := envelope.Parse(signature, PayloadType, replay.ShardSignatureFile)
	switch {
	case kerr != nil:
		return false, &ShardSignatureError{Reason: Malformed, Detail: err.Error(), Err: err}
	case !envelope.Keyless(kenv.Signatures[0].KeyID):
		return false, &ShardSignatureError{Reason: Malformed, Detail: "shard.sig: a key signature signs payloadType " + ShardPayloadType + ", not " + PayloadType}
	}
	return true, nil
}

func (v *ShardVerifier) openKey(signature, manifest []byte) ([]byte, error) {
	if v.Keys == nil {
		return nil, &ShardSignatureError{Reason: UnknownKey, Detail: "the shard is key-signed and no trust store was given"}
	}
	payload, k, err := envelope.Open(signature, ShardPayloadType, replay.ShardSignatureFile, v.Keys)
	if err != nil {
		return nil, shardEnvelopeError(err)
	}
	at, err := shardFinished(payload)
	if err != nil {
		return nil, err
	}
	now := v.now()
	if at.After(now.Add(MaxClockSkew)) {
		return nil, &ShardSignatureError{Reason: SigningTimeImplausible, Detail: fmt.Sprintf("shard.json finished %s, after the merge at %s",
			at.UTC().Format(time.RFC3339Nano), now.UTC().Format(time.RFC3339Nano))}
	}
	if err := k.CheckAt(at, ""); err != nil {
		return nil, shardKeyError(err)
	}
	if err := k.CheckWitnessed(now); err != nil {
		return nil, shardKeyError(err)
	}
	return payload, nil
}

// shardFinished is the manifest's finished time.
func shardFinished(manifest []byte) (time.Time, error) {
	var m replay.ShardManifest
	if err := strictjson.Decode(manifest, &m); err != nil {
		return time.Time{}, &ShardSignatureError{Reason: Malformed, Detail: "shard.json: " + err.Error(), Err: err}
	}
	at, err := time.Parse(time.RFC3339Nano, m.Finished)
	if err != nil {
		return time.Time{}, &ShardSignatureError{Reason: Malformed, Detail: "shard.json finished: not RFC 3339", Err: err}
	}
	return at, nil
}

func (v *ShardVerifier) verifyKeyless(manifest, signature, material []byte) error {
	switch {
	case v.Keyless == nil:
		return &ShardSignatureError{Reason: UnknownKey, Detail: "the shard is keyless and no Sigstore trusted root was given"}
	case material == nil:
		return &ShardSignatureError{Reason: MissingFile, Detail: replay.ShardMaterialFile + " is missing: the shard is keyless"}
	}
	payload, wk, err := envelope.OpenWithMaterial(signature, PayloadType, replay.ShardSignatureFile, material, v.Keyless)
	if err != nil {
		return shardEnvelopeError(err)
	}
	if err := checkShardStatement(payload, manifest); err != nil {
		return err
	}
	finished, err := shardFinished(manifest)
	if err != nil {
		return err
	}
	w := wk.WitnessedAt()
	if w.IsZero() {
		return &ShardSignatureError{Reason: TimestampInvalid, Detail: replay.ShardMaterialFile + ": no witnessed time"}
	}
	if finished.Before(w.Add(-MaxKeylessSigningDelay)) || finished.After(w.Add(MaxClockSkew)) {
		return &ShardSignatureError{Reason: SigningTimeImplausible, Detail: fmt.Sprintf("shard.json finished %s, the signature was witnessed at %s: not within [-%s, +%s]",
			finished.UTC().Format(time.RFC3339Nano), w.UTC().Format(time.RFC3339Nano), MaxKeylessSigningDelay, MaxClockSkew)}
	}
	if err := wk.CheckAt(finished, ""); err != nil {
		return shardKeyError(err)
	}
	if err := wk.CheckWitnessed(w); err != nil {
		return shardKeyError(err)
	}
	return nil
}

// checkShardStatement requires payload to be the canonical ShardStatement
// of manifest: its one subject shard.json with manifest's sha256
// (subject-mismatch otherwise), the predicate naming the manifest's run,
// shard and of.
func checkShardStatement(payload, manifest []byte) error {
	var st ShardStatement
	if err := strictjson.Decode(payload, &st); err != nil {
		return &ShardSignatureError{Reason: Malformed, Detail: "shard.sig statement: " + err.Error(), Err: err}
	}
	if st.Type != StatementType || st.PredicateType != ShardPredicateType {
		return &ShardSignatureError{Reason: Malformed, Detail: fmt.Sprintf("shard.sig statement: _type %q predicateType %q, want %q %q", clip(st.Type), clip(st.PredicateType), StatementType, ShardPredicateType)}
	}
	want, err := shardStatement(manifest)
	if err != nil {
		return &ShardSignatureError{Reason: Malformed, Detail: err.Error(), Err: err}
	}
	if string(payload) != string(want) {
		return &ShardSignatureError{Reason: SubjectMismatch, Detail: "shard.sig's statement is not over this shard.json (its subject digest or predicate differ)"}
	}
	return nil
}

func shardEnvelopeError(err error) error {
	var oe *envelope.Error
	if errors.As(err, &oe) {
		r := Reason(oe.Reason)
		if oe.Reason == envelope.MaterialRefused {
			if rr, ok := refusalReason(oe.Err); ok {
				r = rr
			}
		}
		return &ShardSignatureError{Reason: r, Detail: err.Error(), Err: err}
	}
	return &ShardSignatureError{Reason: Malformed, Detail: err.Error(), Err: err}
}

func shardKeyError(err error) error {
	var ve *VerifyError
	if errors.As(refuseKey(err, ""), &ve) {
		return &ShardSignatureError{Reason: ve.Reason, Detail: ve.Detail, Err: err}
	}
	return &ShardSignatureError{Reason: Malformed, Detail: err.Error(), Err: err}
}

// isShardFile reports whether name is a merged shard's file in a bundle:
// shards/<i>/ and one of events.ndjson, shard.json, shard.sig,
// shard.sigstore.json, with i a decimal in 1..replay.MaxShards.
func isShardFile(name string) bool {
	rest, ok := strings.CutPrefix(name, replay.ShardDir+"/")
	if !ok {
		return false
	}
	i, file, ok := strings.Cut(rest, "/")
	if !ok || i == "" || len(i) > 3 || i[0] == '0' || strings.Trim(i, "0123456789") != "" {
		return false
	}
	switch file {
	case replay.EventsFile, replay.ShardManifestFile, replay.ShardSignatureFile, replay.ShardMaterialFile:
		return true
	}
	return false
}

// shardEntries lists the files of merged shard i (as the run directory
// holds them) that exist.
func shardEntries(runDir string, i int) ([]string, error) {
	var names []string
	for _, n := range replay.ShardFiles(i) {
		_, err := os.Lstat(filepath.Join(runDir, filepath.FromSlash(n)))
		switch {
		case err == nil:
			names = append(names, n)
		case !errors.Is(err, fs.ErrNotExist):
			return nil, err
		}
	}
	return names, nil
}

// readShardFiles reads a merged run's shard files (shards/<i>/...) into
// mem before the audit, so that the bytes audited are the bytes packed.
func readShardFiles(runDir string, mem map[string][]byte) error {
	ents, err := os.ReadDir(filepath.Join(runDir, replay.ShardDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(ents) > replay.MaxShards {
		return fmt.Errorf("%s: %d entries, at most %d shards", replay.ShardDir, len(ents), replay.MaxShards)
	}
	for _, e := range ents {
		i, err := strconv.Atoi(e.Name())
		if err != nil || !e.IsDir() || !isShardFile(replay.ShardFiles(i)[0]) {
			return fmt.Errorf("%s/%s is not a merged shard", replay.ShardDir, e.Name())
		}
		names, err := shardEntries(runDir, i)
		if err != nil {
			return err
		}
		for _, n := range names {
			b, err := readFileBounded(filepath.Join(runDir, filepath.FromSlash(n)), maxSmallFile)
			if err != nil {
				return err
			}
			mem[n] = b
		}
	}
	return nil
}

// packShardFiles adds the shard files read into mem to the bundle.
func packShardFiles(mem map[string][]byte, subjects map[string]string, entries []archive.Entry) []archive.Entry {
	names := make([]string, 0)
	for n := range mem {
		if isShardFile(n) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		subjects[n] = sum(mem[n])
		entries = append(entries, archive.BytesEntry(n, mem[n]))
	}
	return entries
}
