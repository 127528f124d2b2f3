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
	"github.com/proofgate/proofgate/kernel/bounded"
	"github.com/proofgate/proofgate/kernel/replay"
	"github.com/proofgate/proofgate/kernel/strictjson"
)

// Shard signing (docs/SPEC.md "Shards", ADR 0026): a shard job signs its
// shard directory's shard.json into shard.sig, a DSSE envelope whose
// payload is shard.json's exact bytes, with the bundle signers: a key
// (envelope.Signer) or keyless (envelope.MaterialSigner, whose
// verification material goes to shard.sigstore.json). The merge job
// verifies it with a ShardVerifier before it reads a byte of the shard.

// ShardPayloadType is the DSSE payload type of shard.sig.
const ShardPayloadType = "application/vnd.proofgate.shard+json"

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
	env, material, err := envelope.SignWithMaterial(ctx, ms, ShardPayloadType, m)
	if err != nil {
		return fmt.Errorf("sign shard %s: %w", dir, err)
	}
	if err := writeNew(filepath.Join(dir, replay.ShardMaterialFile), material); err != nil {
		return err
	}
	return writeNew(filepath.Join(dir, replay.ShardSignatureFile), env)
}

func readShardManifest(dir string) ([]byte, error) {
	p := filepath.Join(dir, replay.ShardManifestFile)
	f, err := os.Open(p)
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
// shards of its kind. It implements kernel/shard's Verifier.
type ShardVerifier struct {
	Keys    envelope.Verifiers
	Keyless envelope.MaterialVerifiers
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

// VerifyShard checks that signature is a DSSE envelope (payload type
// ShardPayloadType) over exactly manifest by a signer v trusts: for a
// key, valid at the manifest's finished time; keyless, vouched for by
// material and valid at its witnessed time.
func (v *ShardVerifier) VerifyShard(manifest, signature, material []byte) error {
	env, _, err := envelope.Parse(signature, ShardPayloadType, replay.ShardSignatureFile)
	if err != nil {
		return &ShardSignatureError{Reason: Malformed, Detail: err.Error(), Err: err}
	}
	var payload []byte
	if id := env.Signatures[0].KeyID; envelope.Keyless(id) {
		payload, err = v.openKeyless(signature, material)
	} else {
		payload, err = v.openKey(signature, manifest)
	}
	if err != nil {
		return err
	}
	if string(payload) != string(manifest) {
		return &ShardSignatureError{Reason: SubjectMismatch, Detail: "shard.sig signs another shard.json"}
	}
	return nil
}

func (v *ShardVerifier) openKey(signature, manifest []byte) ([]byte, error) {
	if v.Keys == nil {
		return nil, &ShardSignatureError{Reason: UnknownKey, Detail: "the shard is key-signed and no trust store was given"}
	}
	payload, k, err := envelope.Open(signature, ShardPayloadType, replay.ShardSignatureFile, v.Keys)
	if err != nil {
		return nil, shardEnvelopeError(err)
	}
	var m replay.ShardManifest
	if err := strictjson.Decode(payload, &m); err != nil {
		return nil, &ShardSignatureError{Reason: Malformed, Detail: "shard.json: " + err.Error(), Err: err}
	}
	at, err := time.Parse(time.RFC3339Nano, m.Finished)
	if err != nil {
		return nil, &ShardSignatureError{Reason: Malformed, Detail: "shard.json finished: not RFC 3339", Err: err}
	}
	if err := k.CheckAt(at, ""); err != nil {
		return nil, shardKeyError(err)
	}
	return payload, nil
}

func (v *ShardVerifier) openKeyless(signature, material []byte) ([]byte, error) {
	switch {
	case v.Keyless == nil:
		return nil, &ShardSignatureError{Reason: UnknownKey, Detail: "the shard is keyless and no Sigstore trusted root was given"}
	case material == nil:
		return nil, &ShardSignatureError{Reason: MissingFile, Detail: replay.ShardMaterialFile + " is missing: the shard is keyless"}
	}
	payload, wk, err := envelope.OpenWithMaterial(signature, ShardPayloadType, replay.ShardSignatureFile, material, v.Keyless)
	if err != nil {
		return nil, shardEnvelopeError(err)
	}
	at := wk.WitnessedAt()
	if err := wk.CheckAt(at, ""); err != nil {
		return nil, shardKeyError(err)
	}
	if err := wk.CheckWitnessed(at); err != nil {
		return nil, shardKeyError(err)
	}
	return payload, nil
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
