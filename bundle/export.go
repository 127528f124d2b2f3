package bundle

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/proofgate/proofgate/bundle/archive"
	"github.com/proofgate/proofgate/bundle/checkpoint"
	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/internal/asynchash"
	"github.com/proofgate/proofgate/internal/bounded"
	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/durable"
	"github.com/proofgate/proofgate/internal/strictjson"
	"github.com/proofgate/proofgate/kernel/eventlog"
	"github.com/proofgate/proofgate/kernel/exit"
	"github.com/proofgate/proofgate/kernel/replay"
)

// ExportError is a run that may not be exported. It is of class
// exit.Refused.
type ExportError struct {
	Reason Reason // NotComplete or AuditFailed
	RunID  string
	Detail string
	Err    error
}

func (e *ExportError) Error() string {
	return fmt.Sprintf("export of run %s refused: %s: %s", e.RunID, e.Reason, e.Detail)
}

// Unwrap returns the underlying audit error, if any.
func (e *ExportError) Unwrap() error { return e.Err }

// Is reports whether target is exit.Refused, the class of a refused export.
func (e *ExportError) Is(target error) bool { return target == exit.Refused }

// ExportOptions adjust Export.
type ExportOptions struct {
	// SignedAt is the signing time asserted in the predicate. The zero
	// value uses the time of the run's last event, which keeps export
	// deterministic: the same run and key give the same bytes.
	SignedAt time.Time
	// Replace lets ExportFile replace an existing file; without it an
	// existing file is refused with fs.ErrExist and left alone.
	Replace bool
	// OpenRun opens the implementation run a successor names, by id; nil:
	// the directory of that name beside the run directory. The CLI passes
	// internal/run's ReadDir, which reads a pruned run from its verified
	// archive (set it when runDir is the extraction of an archived run).
	// An opener, not the retention code itself: this package verifies, and
	// needs none of the writer's packages (kernel/replay's deps test).
	OpenRun RunOpener
}

// RunOpener returns a directory holding run id's files, and done, which
// releases it (a temporary extraction of an archived run is removed).
type RunOpener func(id string) (dir string, done func(), err error)

// beside is the RunOpener of the runs directory runs, without archives.
func beside(runs string) RunOpener {
	return func(id string) (string, func(), error) { return filepath.Join(runs, id), func() {}, nil }
}

// ExportResult describes a written bundle.
type ExportResult struct {
	RunID    string    `json:"run_id"`
	KeyID    string    `json:"key_id"`
	SignedAt time.Time `json:"signed_at"`
	Files    int       `json:"files"`
	Size     int64     `json:"size"`
	// SHA256 is the archive's SHA-256 (lowercase hex), as written.
	SHA256 string `json:"sha256"`
	// Products are the run's products (ADR 0039), each a subject of the
	// statement; absent when none.
	Products []ProductVerdict `json:"products,omitempty"`
	// Envelope is the archive's attestation.dsse.json, byte for byte (for
	// the companion Sigstore bundle, package bundle/sigstore).
	Envelope []byte `json:"-"`
	// Material is the archive's attestation.sigstore.json of a keyless
	// bundle (ExportWith), byte for byte: the companion Sigstore bundle.
	// Nil for a key-signed bundle.
	Material []byte `json:"-"`
}

// maxSmallFile bounds run.json, events.ndjson and contract.json.
const maxSmallFile = 1 << 30

// Export writes the evidence bundle of the run in runDir to w. Only a run
// that reconciles (replay.AuditFS) as COMPLETE exports. The bytes audited are
// the bytes packed: the small files are read once, and every blob is
// re-hashed while it is copied and must match its name.
func Export(runDir string, s envelope.Signer, w io.Writer, opts ExportOptions) (*ExportResult, error) {
	return exportSigned(runDir, s.KeyID(), w, opts, func(payload []byte) ([]byte, []byte, error) {
		env, err := envelope.Sign(s, PayloadType, payload)
		return env, nil, err
	})
}

// ExportWith is Export with a keyless signer: the predicate's key_id and
// the envelope's keyid are s.KeyID() (envelope.KeylessPrefix and 64 hex),
// and the verification material s returns is the archive member
// envelope.MaterialFile, written after attestation.dsse.json, and
// ExportResult.Material (the companion Sigstore bundle's bytes).
func ExportWith(runDir string, s envelope.MaterialSigner, w io.Writer, opts ExportOptions) (*ExportResult, error) {
	if !envelope.Keyless(s.KeyID()) {
		return nil, fmt.Errorf("export: keyid %q is not %s and 64 lowercase hex", clip(s.KeyID()), envelope.KeylessPrefix)
	}
	return exportSigned(runDir, s.KeyID(), w, opts, func(payload []byte) ([]byte, []byte, error) {
		return envelope.SignWithMaterial(context.Background(), s, PayloadType, payload)
	})
}

// signFunc signs the statement and returns the envelope and, for a
// keyless signer, the verification material.
type signFunc func(payload []byte) (env, material []byte, err error)

// exportSigned audits and packs the run, signs its statement naming keyID, and
// writes the archive.
func exportSigned(runDir, keyID string, w io.Writer, opts ExportOptions, sign signFunc) (*ExportResult, error) {
	id := filepath.Base(runDir)
	mem, rep, events, err := auditForExport(runDir, id)
	if err != nil {
		return nil, err
	}
	subjects, entries, err := packRun(runDir, id, mem, rep, events)
	if err != nil {
		return nil, err
	}
	open := opts.OpenRun
	if open == nil {
		open = beside(filepath.Dir(runDir))
	}
	impl, entries, done, err := packImplementation(open, rep, subjects, entries)
	if err != nil {
		return nil, err
	}
	defer done()
	signedAt := opts.SignedAt
	if signedAt.IsZero() {
		signedAt, err = time.Parse(time.RFC3339Nano, events[len(events)-1].Time)
		if err != nil {
			return nil, &ExportError{Reason: AuditFailed, RunID: id, Detail: "last event time: " + err.Error()}
		}
	}
	summary := Summarize(rep)
	maps.Copy(subjects, productSubjects(&summary))
	st := Statement{
		Type:          StatementType,
		PredicateType: PredicateType,
		Subject:       subjectList(subjects),
		Predicate: Predicate{
			SignedAt: signedAt.UTC().Format(time.RFC3339Nano),
			KeyID:    keyID,
			Run:      summary,
		},
	}
	st.Predicate.Run.ImplementedBy = impl
	payload, err := canon.Marshal(&st)
	if err != nil {
		return nil, err
	}
	env, material, err := sign(payload)
	if err != nil {
		return nil, err
	}
	entries = append(entries, archive.BytesEntry(AttestationFile, env))
	if material != nil {
		entries = append(entries, archive.BytesEntry(envelope.MaterialFile, material))
	}

	cw := &countWriter{w: w, h: asynchash.New(sha256.New())}
	defer cw.h.Sum()
	if err := archive.Write(cw, entries); err != nil {
		return nil, err
	}
	return &ExportResult{RunID: id, KeyID: keyID, SignedAt: signedAt.UTC(), Files: len(entries),
		Size: cw.n, SHA256: hex.EncodeToString(cw.h.Sum()), Products: Products(&summary), Envelope: env, Material: material}, nil
}

// auditForExport reads the run's small files once and audits the run from
// those bytes (its blobs from disk): only a COMPLETE run with a non-empty
// log passes. It returns the bytes read, the report and the events.
func auditForExport(runDir, id string) (map[string][]byte, *replay.Report, []eventlog.Event, error) {
	mem := map[string][]byte{}
	for _, name := range []string{RunFile, EventsFile, ContractFile} {
		b, err := readRunFile(runDir, name)
		if err != nil {
			return nil, nil, nil, &ExportError{Reason: MissingFile, RunID: id, Detail: err.Error(), Err: err}
		}
		mem[name] = b
	}
	if err := readShardFiles(runDir, mem); err != nil {
		return nil, nil, nil, &ExportError{Reason: MissingFile, RunID: id, Detail: err.Error(), Err: err}
	}
	rep, err := replay.AuditFS(replay.Overlay(runDir, mem), replay.BlobsVerified())
	if err != nil {
		err = replay.Located(runDir, err)
		return nil, nil, nil, &ExportError{Reason: AuditFailed, RunID: id, Detail: err.Error(), Err: err}
	}
	if rep.RunID != id {
		return nil, nil, nil, &ExportError{Reason: AuditFailed, RunID: id, Detail: fmt.Sprintf("the log belongs to run %s", rep.RunID)}
	}
	if rep.State != replay.Complete {
		return nil, nil, nil, &ExportError{Reason: NotComplete, RunID: id,
			Detail: fmt.Sprintf("the run is %s; only a COMPLETE run exports", rep.State)}
	}
	events, err := eventlog.Read(bytes.NewReader(mem[EventsFile]), nil)
	if err != nil || len(events) == 0 {
		return nil, nil, nil, &ExportError{Reason: AuditFailed, RunID: id, Detail: fmt.Sprintf("events: %v", err), Err: err}
	}
	return mem, rep, events, nil
}

// packRun lists every file of the bundle but the attestation, with its
// sha256 by name: the small files as audited, the latest checkpoint (if
// any, and only one the log agrees with) and each referenced blob.
func packRun(runDir, id string, mem map[string][]byte, rep *replay.Report, events []eventlog.Event) (map[string]string, []archive.Entry, error) {
	subjects := map[string]string{}
	var entries []archive.Entry
	for _, name := range []string{RunFile, EventsFile, ContractFile} {
		b := mem[name]
		subjects[name] = sum(b)
		entries = append(entries, archive.BytesEntry(name, b))
	}
	entries = packShardFiles(mem, subjects, entries)

	cp, _, err := checkpoint.Latest(runDir)
	if err != nil {
		return nil, nil, &ExportError{Reason: AuditFailed, RunID: id, Detail: err.Error(), Err: err}
	}
	if cp != nil {
		if err := checkCheckpointShape(cp, events); err != nil {
			return nil, nil, &ExportError{Reason: AuditFailed, RunID: id, Detail: err.Error(), Err: err}
		}
		subjects[CheckpointFile] = sum(cp)
		entries = append(entries, archive.BytesEntry(CheckpointFile, cp))
	}

	for _, d := range rep.Blobs {
		e, err := blobEntry(runDir, id, d[len("sha256:"):])
		if err != nil {
			return nil, nil, err
		}
		subjects[e.Name] = d[len("sha256:"):]
		entries = append(entries, e)
	}
	return subjects, entries, nil
}

// blobEntry is the archive entry of the blob with hex digest hexd, which is
// re-hashed while it is copied and must match its name.
func blobEntry(runDir, id, hexd string) (archive.Entry, error) {
	name := BlobPrefix + hexd
	p := filepath.Join(runDir, filepath.FromSlash(name))
	fi, err := os.Stat(p)
	if err != nil {
		return archive.Entry{}, &ExportError{Reason: MissingFile, RunID: id, Detail: err.Error(), Err: err}
	}
	if !fi.Mode().IsRegular() {
		return archive.Entry{}, &ExportError{Reason: AuditFailed, RunID: id, Detail: name + " is not a regular file"}
	}
	return archive.Entry{Name: name, Size: fi.Size(), Open: func() (io.ReadCloser, error) {
		f, err := bounded.Open(p)
		if err != nil {
			return nil, err
		}
		return &digestReader{f: f, h: sha256.New(), want: hexd, name: name}, nil
	}}, nil
}

// subjectList is the statement's subjects, sorted by name.
func subjectList(subjects map[string]string) []Subject {
	names := make([]string, 0, len(subjects))
	for n := range subjects {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []Subject
	for _, n := range names {
		out = append(out, Subject{Name: n, Digest: map[string]string{"sha256": subjects[n]}})
	}
	return out
}

// ExportFile exports to path atomically: nothing is left at path unless
// the whole bundle was written and fsynced. An existing file is refused
// (fs.ErrExist) unless opts.Replace.
func ExportFile(runDir, outPath string, s envelope.Signer, opts ExportOptions) (*ExportResult, error) {
	return exportFile(outPath, opts, func(w io.Writer) (*ExportResult, error) { return Export(runDir, s, w, opts) })
}

// ExportFileWith is ExportFile with a keyless signer (ExportWith).
func ExportFileWith(runDir, outPath string, s envelope.MaterialSigner, opts ExportOptions) (*ExportResult, error) {
	return exportFile(outPath, opts, func(w io.Writer) (*ExportResult, error) { return ExportWith(runDir, s, w, opts) })
}

func exportFile(outPath string, opts ExportOptions, exp func(io.Writer) (*ExportResult, error)) (*ExportResult, error) {
	write := durable.WriteExclusive
	if opts.Replace {
		write = durable.Write
	} else if _, err := os.Lstat(outPath); err == nil {
		return nil, fmt.Errorf("%s: %w", outPath, fs.ErrExist)
	}
	var res *ExportResult
	err := write(outPath, 0o644, func(w io.Writer) error {
		var err error
		res, err = exp(w)
		return err
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// checkCheckpointShape refuses to pack a checkpoint the log contradicts.
// Its signature is checked by verify, against the verifier's trust store.
func checkCheckpointShape(b []byte, events []eventlog.Event) error {
	_, payload, err := envelope.Parse(b, checkpoint.PayloadType, CheckpointFile)
	if err != nil {
		return err
	}
	var c checkpoint.Checkpoint
	if err := strictjson.Decode(payload, &c); err != nil {
		return fmt.Errorf("%s: %w", CheckpointFile, err)
	}
	if c.Length < 1 {
		return fmt.Errorf("%s: length %d", CheckpointFile, c.Length)
	}
	return checkpoint.Match(&c, events)
}

// readRunFile reads one of a run directory's small files; the log is the
// whole chain (its sealed segments, then the active file, concatenated: a
// bundle holds one events.ndjson member whatever the run's segments).
func readRunFile(dir, name string) ([]byte, error) {
	if name == EventsFile {
		b, err := replay.ReadChain(dir, maxSmallFile)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, name), err)
		}
		return b, nil
	}
	return readFileBounded(filepath.Join(dir, name), maxSmallFile)
}

func readFileBounded(p string, max int64) ([]byte, error) {
	f, err := bounded.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := bounded.ReadAll(f, max)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return b, nil
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// digestReader hashes a blob as it is copied; Close fails on a mismatch.
type digestReader struct {
	f    *os.File
	h    hash.Hash
	want string
	name string
}

func (d *digestReader) Read(p []byte) (int, error) {
	n, err := d.f.Read(p)
	d.h.Write(p[:n])
	return n, err
}

func (d *digestReader) Close() error {
	d.f.Close()
	if got := hex.EncodeToString(d.h.Sum(nil)); got != d.want {
		return fmt.Errorf("%s changed on disk: content hashes to %s", d.name, got)
	}
	return nil
}

// countWriter counts and hashes what it writes to w.
type countWriter struct {
	w io.Writer
	h *asynchash.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	c.h.Write(p[:n])
	return n, err
}
