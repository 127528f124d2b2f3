package bundle

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"testing/fstest"
	"time"

	"github.com/proofgate/proofgate/bundle/archive"
	"github.com/proofgate/proofgate/bundle/checkpoint"
	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/trust"
	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/strictjson"
	"github.com/proofgate/proofgate/kernel/approval"
	"github.com/proofgate/proofgate/kernel/eventlog"
	"github.com/proofgate/proofgate/kernel/exit"
	"github.com/proofgate/proofgate/kernel/replay"
)

// Reason is the typed cause of a refused bundle (or export).
type Reason string

// Refusal reasons, in the order verify checks them.
const (
	ArchiveUnsafe          Reason = "archive-unsafe"
	ArchiveTooLarge        Reason = "archive-too-large"
	Malformed              Reason = "malformed"
	UnknownKey             Reason = Reason(trust.UnknownKey)
	SignatureInvalid       Reason = "signature-invalid"
	KeyRevoked             Reason = Reason(trust.KeyRevoked)
	KeyNotValid            Reason = Reason(trust.KeyNotValidAtTime)
	IdentityMismatch       Reason = Reason(trust.IdentityMismatch)
	MissingFile            Reason = "missing-file"
	ExtraFile              Reason = "extra-file"
	SubjectMismatch        Reason = "subject-mismatch"
	ChainBroken            Reason = "chain-broken"
	AuditFailed            Reason = "audit-failed"
	NotComplete            Reason = "not-complete"
	ChainMismatch          Reason = "chain-mismatch"
	PredicateMismatch      Reason = "predicate-mismatch"
	CheckpointInvalid      Reason = Reason(checkpoint.Invalid)
	CheckpointRewritten    Reason = Reason(checkpoint.Rewritten)
	CheckpointTruncated    Reason = Reason(checkpoint.Truncated)
	CheckpointForeignRun   Reason = Reason(checkpoint.ForeignRun)
	CommitMismatch         Reason = "commit-mismatch"
	TreeMismatch           Reason = "tree-mismatch"
	RepoMismatch           Reason = "repo-mismatch"
	ProfileMismatch        Reason = "profile-mismatch"
	ContractMismatch       Reason = "contract-mismatch"
	DirtySource            Reason = "dirty-source"
	SigningTimeImplausible Reason = "signing-time-implausible"
	UnsandboxedCheck       Reason = "unsandboxed-check" // WithRequireSandbox (sandbox.go)
	InsufficientApprovals  Reason = "insufficient-approvals"
	// NotAProduct (WithSubject, product.go) is checked last.
)

// Refusal reasons of keyless bundles' verification material (step 2),
// the strings bundle/sigstore's refusals carry (see refusalReason).
const (
	CertificateInvalid Reason = "certificate-invalid"
	TimestampInvalid   Reason = "timestamp-invalid"
	TlogInvalid        Reason = "tlog-invalid"
	MaterialMismatch   Reason = "material-mismatch"
)

// MaxClockSkew is how far past the verification time (or the witness
// time) a signature's signed_at may lie.
const MaxClockSkew = 5 * time.Minute

// VerifyError is a refused bundle. It is of class exit.Refused.
type VerifyError struct {
	Reason Reason
	Detail string
	RunID  string // known once the signature verified
	Err    error
}

func (e *VerifyError) Error() string {
	return fmt.Sprintf("bundle refused: %s: %s", e.Reason, e.Detail)
}

// Unwrap returns the underlying error.
func (e *VerifyError) Unwrap() error { return e.Err }

// Is reports whether target is exit.Refused, the class of a refusal.
func (e *VerifyError) Is(target error) bool { return target == exit.Refused }

// Result is an accepted bundle.
type Result struct {
	RunID string
	KeyID string
	// SignedAt is the predicate's signed_at for a key-signed bundle and
	// the witnessed time (Witnessed) for a keyless one.
	SignedAt time.Time
	// Signer and Witnessed are a keyless bundle's signing identity (the
	// certificate's, e.g. the workflow at its ref) and the earliest time
	// a witness attests its signature; empty and zero for key bundles.
	Signer     string
	Witnessed  time.Time
	Run        RunSummary
	Approvals  int
	Files      int
	Checkpoint *checkpoint.Verified
	// StatementOnly is set by VerifyStatement: only the signed statement
	// was verified, the event log was not replayed (ADR 0040).
	StatementOnly bool
}

var hex64 = regexp.MustCompile(`^[0-9a-f]{64}$`)

// Verifier checks the integrity of bundles against a trust store, then the
// caller's Policy.
type Verifier struct {
	store    envelope.Verifiers
	material envelope.MaterialVerifiers
	limits   archive.Limits
	now      time.Time
}

// VerifierOption adjusts a Verifier.
type VerifierOption func(*Verifier)

// WithLimits bounds the archive (default archive.DefaultLimits).
func WithLimits(l archive.Limits) VerifierOption { return func(v *Verifier) { v.limits = l } }

// WithCurrentTime sets the verification time (default time.Now() at each
// Verify): signed_at may not lie more than MaxClockSkew after it.
func WithCurrentTime(t time.Time) VerifierOption { return func(v *Verifier) { v.now = t } }

// NewVerifier returns a verifier of bundles signed by keys of store (the
// trust store, or any other envelope.Verifiers). A nil store trusts no key
// (every key-signed bundle and checkpoint is refused): for a verifier of
// keyless bundles only (WithMaterialVerifiers).
func NewVerifier(store envelope.Verifiers, opts ...VerifierOption) *Verifier {
	if store == nil {
		store = noKeys{}
	}
	v := &Verifier{store: store, limits: archive.DefaultLimits}
	for _, o := range opts {
		o(v)
	}
	return v
}

// Verify checks a bundle offline against store with the policy opts
// describes, failing closed: NewVerifier(store, …).Verify(r, opts.Policy()).
func Verify(r io.Reader, store envelope.Verifiers, opts VerifyOptions) (*Result, error) {
	p, err := opts.Policy()
	if err != nil {
		return nil, err
	}
	return NewVerifier(store, opts.verifierOptions()...).Verify(r, p)
}

// Verify checks a bundle, failing closed. The order is fixed: the policy
// (a *PolicyError before anything is read); safe archive read; the DSSE
// signature over the raw payload with a trusted key before anything in the
// payload is used; the statement; the key's status and validity at the
// signing time and at the witness time; every subject digest, no file
// missing or extra; replay.AuditFS over the files; the predicate against the
// audit; a plausible signing time; the checkpoint, if carried; the source,
// clean work tree, repository, profile and contract binding; the
// approvals. Every refusal is a *VerifyError.
func (v *Verifier) Verify(r io.Reader, p *Policy) (*Result, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	b, err := readArchive(r, v.limits)
	if err != nil {
		return nil, err
	}
	k, err := b.openStatement(v.store, v.material, p.witnessed)
	if err != nil {
		return nil, err
	}
	if err := b.checkSubjects(); err != nil {
		return nil, err
	}
	if err := b.audit(); err != nil {
		return nil, err
	}
	if err := b.checkPredicate(v.now, p.witnessed); err != nil {
		return nil, err
	}
	if err := b.checkProductSubjects(); err != nil {
		return nil, err
	}
	res := &Result{RunID: b.rep.RunID, KeyID: k.KeyID(), SignedAt: b.signedAt.UTC(), Run: b.summary, Files: len(b.list)}
	if b.wk != nil {
		res.Witnessed = b.wk.WitnessedAt().UTC()
		res.SignedAt, res.Signer = res.Witnessed, b.wk.Signer()
	}
	if res.Checkpoint, err = b.checkCheckpoint(v.store, p.witnessed); err != nil {
		return nil, err
	}
	if err := p.checkRun(b, res); err != nil {
		return nil, err
	}
	return res, nil
}

// unpacked is a bundle as verification proceeds: the files, then what the
// signed statement says, then what the audit of the files found.
type unpacked struct {
	list     []archive.File
	files    map[string][]byte
	st       Statement
	id       string // the run id the predicate names, once it is signed
	signedAt time.Time
	subj     map[string]string // subject name -> sha256 hex
	rep      *replay.Report
	summary  RunSummary // Summarize(rep)
	// impl summarises the carried implementation run, once audited.
	impl *ImplementationSummary
	// wk is a keyless bundle's key, vouched for by its verification
	// material (envelope.MaterialFile); nil for a key-signed bundle.
	wk envelope.WitnessedKey
}

// readArchive reads the archive safely. The run's blobs are hashed; only
// the small ones are held (keptBlob), for the rebuild of the log's message
// manifests: every blob a manifest names is small (a tool call's arguments
// are at most tool.MaxArgs, 64 KiB, in all). The implementation run's
// blobs are held (within the archive's bounds): its manifests are rebuilt
// from them.
func readArchive(r io.Reader, lim archive.Limits) (*unpacked, error) {
	var held int64
	keep := func(name string, size int64) bool {
		if !isBlobName(name) {
			return true
		}
		if size > maxKeptBlob || held+size > maxKeptBlobs {
			return false
		}
		held += size
		return true
	}
	list, err := archive.ReadKeepSized(r, lim, keep)
	if err != nil {
		return nil, refuse(archiveReason(err), err.Error(), "", err)
	}
	files := make(map[string][]byte, len(list))
	for _, f := range list {
		files[f.Name] = f.Data
	}
	return &unpacked{list: list, files: files}, nil
}

// Bounds on the run's blobs Verify holds for manifest rebuilds: each at
// most maxKeptBlob bytes, maxKeptBlobs in all (the rest are only hashed).
const (
	maxKeptBlob  = 64 << 10
	maxKeptBlobs = 64 << 20
)

// manifestBlob returns the held bytes of the run's blob d, for
// input.Rebuild (which checks them against d).
func (b *unpacked) manifestBlob(d string) ([]byte, error) {
	hexd, ok := strings.CutPrefix(d, "sha256:")
	if !ok || !hex64.MatchString(hexd) {
		return nil, fmt.Errorf("blob digest %q is not sha256:<64 hex>", clip(d))
	}
	data, ok := b.files[BlobPrefix+hexd]
	switch {
	case !ok:
		return nil, fmt.Errorf("evidence %s is missing", d)
	case data == nil && b.blobSize(BlobPrefix+hexd) > 0:
		return nil, fmt.Errorf("blob %s is larger than the %d bytes (or past the %d bytes in all) the verifier holds for manifest inputs", d, maxKeptBlob, maxKeptBlobs)
	}
	return data, nil
}

func (b *unpacked) blobSize(name string) int64 {
	for _, f := range b.list {
		if f.Name == name {
			return f.Size
		}
	}
	return 0
}

// openEnvelope checks the DSSE signature of the attestation, before a byte
// of the payload is trusted, and returns the payload and the key: a key of
// store (envelope.Open), or for a keyless keyid the key the verification
// material vouches for (openKeyless).
func (b *unpacked) openEnvelope(store envelope.Verifiers, mv envelope.MaterialVerifiers) ([]byte, envelope.TrustedKey, error) {
	att, ok := b.files[AttestationFile]
	if !ok {
		return nil, nil, refuse(MissingFile, AttestationFile+" is missing", "", nil)
	}
	if id := keyIDOf(att); envelope.Keyless(id) {
		payload, wk, err := openKeyless(att, id, b.files, mv)
		if err != nil {
			return nil, nil, err
		}
		b.wk = wk
		return payload, wk, nil
	}
	return openAttestation(att, store)
}

// openStatement checks the attestation's signature, decodes the statement
// it signs and checks the signing key's status (steps 2 and 3), and returns
// the key.
func (b *unpacked) openStatement(store envelope.Verifiers, mv envelope.MaterialVerifiers, witnessed time.Time) (envelope.TrustedKey, error) {
	payload, k, err := b.openEnvelope(store, mv)
	if err != nil {
		return nil, err
	}
	if err := b.readStatement(payload, k.KeyID()); err != nil {
		return nil, err
	}
	if err := b.checkKey(k, witnessed); err != nil {
		return nil, err
	}
	return k, nil
}

// readStatement decodes the signed statement, which must be the canonical
// form of itself and name the signing key.
func (b *unpacked) readStatement(payload []byte, keyID string) error {
	st := &b.st
	if err := strictjson.Decode(payload, st); err != nil {
		return refuse(Malformed, "statement: "+err.Error(), "", err)
	}
	// The signed bytes must be the canonical form of what was decoded:
	// duplicate keys (Go keeps the last), keys matched case-insensitively
	// or other spellings would read differently in another verifier.
	if c, err := canon.Marshal(st); err != nil || !bytes.Equal(c, payload) {
		return refuse(Malformed, "statement: the payload is not the canonical JSON of the statement (duplicate, unknown-case or non-canonical keys)", "", err)
	}
	if st.Type != StatementType || st.PredicateType != PredicateType {
		return refuse(Malformed, fmt.Sprintf("statement: _type %q / predicateType %q", clip(st.Type), clip(st.PredicateType)), "", nil)
	}
	pred := &st.Predicate
	b.id = pred.Run.RunID
	if pred.KeyID != keyID {
		return refuse(Malformed, fmt.Sprintf("predicate key_id %q is not the signature's keyid", clip(pred.KeyID)), b.id, nil)
	}
	signedAt, err := time.Parse(time.RFC3339Nano, pred.SignedAt)
	if err != nil {
		return refuse(Malformed, "predicate signed_at: not RFC 3339", b.id, err)
	}
	b.signedAt = signedAt
	return nil
}

// checkKey checks the key's status, validity and identity at the signing
// time and, when witnessed is set, that it was neither retired nor revoked
// by then.
func (b *unpacked) checkKey(k envelope.TrustedKey, witnessed time.Time) error {
	if b.wk != nil {
		if err := b.checkWitnessedKey(); err != nil {
			return err
		}
	}
	identity := ""
	if repo := b.st.Predicate.Run.Repo; repo != "" {
		identity = "repo:" + repo
	}
	if err := k.CheckAt(b.signedAt, identity); err != nil {
		return refuseKey(err, b.id)
	}
	if !witnessed.IsZero() {
		if err := k.CheckWitnessed(witnessed); err != nil {
			return refuseKey(err, b.id)
		}
	}
	return nil
}

// checkSubjects requires the subjects to be exactly the files, with their
// digests.
func (b *unpacked) checkSubjects() error {
	subj, err := b.subjects()
	if err != nil {
		return err
	}
	b.subj = subj
	if err := b.checkMaterialMember(); err != nil {
		return err
	}
	for _, name := range sortedKeys(subj) {
		if _, ok := b.files[name]; !ok && !strings.HasPrefix(name, ProductPrefix) {
			return refuse(MissingFile, name+" is a subject but not in the archive", b.id, nil)
		}
	}
	for _, f := range b.list {
		if b.unsigned(f.Name) {
			continue
		}
		if _, ok := subj[f.Name]; !ok {
			return refuse(ExtraFile, f.Name+" is in the archive but not a subject", b.id, nil)
		}
		if _, _, impl := splitImplementation(f.Name); !impl && f.Name != RunFile && f.Name != EventsFile && f.Name != ContractFile && f.Name != CheckpointFile && !isBlobName(f.Name) && !isShardFile(f.Name) {
			return refuse(ExtraFile, f.Name+" is not a bundle file", b.id, nil)
		}
	}
	for _, f := range b.list {
		if b.unsigned(f.Name) {
			continue
		}
		got := hex.EncodeToString(f.SHA256[:])
		if got != subj[f.Name] {
			return refuse(SubjectMismatch, fmt.Sprintf("%s hashes to %s, the statement says %s", f.Name, got, subj[f.Name]), b.id, nil)
		}
		if (isBlobName(f.Name) || isImplementationBlob(f.Name)) && got != f.Name[len(f.Name)-64:] {
			return refuse(SubjectMismatch, f.Name+" is not named by its digest", b.id, nil)
		}
	}
	return nil
}

// subjects returns the statement's subjects by name, each well-formed, and
// the required files among them.
func (b *unpacked) subjects() (map[string]string, error) {
	subj := map[string]string{}
	for i, s := range b.st.Subject {
		d, ok := s.Digest["sha256"]
		if len(s.Digest) != 1 || !ok || !hex64.MatchString(d) {
			return nil, refuse(Malformed, fmt.Sprintf("subject[%d]: digest must be exactly {sha256: <64 hex>}", i), b.id, nil)
		}
		if err := checkSubjectName(s.Name); err != nil {
			return nil, refuse(Malformed, fmt.Sprintf("subject[%d]: name %q", i, clip(s.Name)), b.id, err)
		}
		if _, dup := subj[s.Name]; dup {
			return nil, refuse(Malformed, fmt.Sprintf("subject[%d]: duplicate name %q", i, s.Name), b.id, nil)
		}
		subj[s.Name] = d
	}
	for _, req := range []string{RunFile, EventsFile, ContractFile} {
		if _, ok := subj[req]; !ok {
			return nil, refuse(MissingFile, req+" is not a subject", b.id, nil)
		}
	}
	return subj, nil
}

// checkSubjectName refuses a subject name that is neither a safe archive
// name (nor the attestation or its material, which sign the rest) nor a
// product's: products/<check id>/<clean path>.
func checkSubjectName(name string) error {
	if rest, ok := strings.CutPrefix(name, ProductPrefix); ok {
		check, path, _ := strings.Cut(rest, "/")
		if check == "" || !replay.ValidProductPath(path) {
			return errors.New("not products/<check id>/<clean relative path>")
		}
		return nil
	}
	if name == AttestationFile || name == envelope.MaterialFile {
		return errors.New("the attestation is not its own subject")
	}
	return archive.CheckName(name)
}

// checkProductSubjects requires the product subjects to be exactly the
// products of the audited run's checks, with their digests (ADR 0039).
func (b *unpacked) checkProductSubjects() error {
	want := productSubjects(&b.summary)
	for name, d := range b.subj {
		if !strings.HasPrefix(name, ProductPrefix) {
			continue
		}
		w, ok := want[name]
		if !ok {
			return refuse(SubjectMismatch, name+" is a subject, but no passed check of the log produced it", b.id, nil)
		}
		if w != d {
			return refuse(SubjectMismatch, fmt.Sprintf("%s: the statement says %s, the log recorded %s", name, d, w), b.id, nil)
		}
	}
	for _, name := range sortedKeys(want) {
		if _, ok := b.subj[name]; !ok {
			return refuse(SubjectMismatch, name+" is a product of the log but not a subject", b.id, nil)
		}
	}
	return nil
}

// audit re-audits the run from the files, and requires every blob to be
// evidence the log references.
func (b *unpacked) audit() error {
	mem := fstest.MapFS{}
	for _, f := range b.list {
		if _, _, impl := splitImplementation(f.Name); !b.unsigned(f.Name) && f.Name != CheckpointFile && !impl {
			mem[f.Name] = &fstest.MapFile{Data: f.Data, Mode: 0o444}
		}
	}
	rep, err := replay.AuditFS(mem, replay.BlobsVerified(), replay.ManifestBlobs(b.manifestBlob))
	if err != nil {
		return refuseAudit(err, b.id)
	}
	blobs := map[string]bool{}
	for _, d := range rep.Blobs {
		blobs[BlobPrefix+strings.TrimPrefix(d, "sha256:")] = true
	}
	for _, f := range b.list {
		if isBlobName(f.Name) && !blobs[f.Name] {
			return refuse(ExtraFile, f.Name+" is not referenced by the event log", b.id, nil)
		}
	}
	b.rep = rep
	return b.auditImplementation()
}

// refuseAudit refuses a run that does not reconcile, with the bundle
// reason its audit reason maps to.
func refuseAudit(err error, runID string) error {
	var ae *replay.AuditError
	if errors.As(err, &ae) {
		if r, ok := auditReasons[ae.Reason]; ok {
			return refuse(r, ae.Error(), runID, err)
		}
	}
	return refuse(AuditFailed, err.Error(), runID, err)
}

// checkPredicate requires the predicate to be what the files say, the run
// to be COMPLETE and the signing time to be plausible.
func (b *unpacked) checkPredicate(now, witnessed time.Time) error {
	rep, pred := b.rep, &b.st.Predicate
	if rep.RunID != pred.Run.RunID || rep.ChainHead != pred.Run.Chain.Head || rep.ChainLength != pred.Run.Chain.Length {
		return refuse(ChainMismatch, fmt.Sprintf("the log is run %s with %d events ending %s; the predicate says run %s, %d events ending %s",
			rep.RunID, rep.ChainLength, rep.ChainHead, clip(pred.Run.RunID), pred.Run.Chain.Length, clip(pred.Run.Chain.Head)), b.id, nil)
	}
	if rep.State != replay.Complete {
		return refuse(NotComplete, fmt.Sprintf("the log says the run is %s", rep.State), b.id, nil)
	}
	b.summary = Summarize(rep)
	b.summary.ImplementedBy = b.impl
	if field := diffSummary(&b.summary, &pred.Run); field != "" {
		return refuse(PredicateMismatch, fmt.Sprintf("predicate field %q disagrees with the audited run", field), b.id, nil)
	}
	if err := checkSigningTime(b.signedAt, rep.LastEventTime, now, witnessed); err != nil {
		return refuse(SigningTimeImplausible, err.Error(), b.id, nil)
	}
	return nil
}

// checkCheckpoint verifies a carried checkpoint and requires it to agree
// with the log (its time not before the event it covers); it returns nil
// when the bundle carries none. Its key is judged at its time and, when
// witnessed is set, at the witness time as the bundle's key is.
func (b *unpacked) checkCheckpoint(store envelope.Verifiers, witnessed time.Time) (*checkpoint.Verified, error) {
	cp, ok := b.files[CheckpointFile]
	if !ok {
		return nil, nil
	}
	v, err := checkpoint.Verify(cp, store)
	if err == nil {
		var events []eventlog.Event
		events, err = eventlog.Read(bytes.NewReader(b.files[EventsFile]), nil)
		if err == nil {
			err = checkpoint.Match(&v.Checkpoint, events)
		}
	}
	if err == nil && !witnessed.IsZero() {
		err = checkWitnessedKey(store, v.KeyID, witnessed)
	}
	if err != nil {
		var ce *checkpoint.Error
		if errors.As(err, &ce) {
			return nil, refuse(Reason(ce.Reason), ce.Error(), b.id, err)
		}
		return nil, refuse(CheckpointInvalid, err.Error(), b.id, err)
	}
	return v, nil
}

// bind applies the policy's bindings to the audited run: source, repository,
// clean work tree, profile and contract, in that order.
func (p *Policy) bind(rep *replay.Report, id string) error {
	if c := p.source.commit; c != "" && !strings.EqualFold(c, rep.Source.Commit) {
		return refuse(CommitMismatch, fmt.Sprintf("the run verified commit %s, not %s", rep.Source.Commit, c), id, nil)
	}
	if t := p.source.tree; t != "" && !strings.EqualFold(t, rep.Source.Tree) {
		return refuse(TreeMismatch, fmt.Sprintf("the run verified tree %s, not %s", rep.Source.Tree, t), id, nil)
	}
	if p.repo != "" && !strings.EqualFold(p.repo, rep.Repo) {
		return refuse(RepoMismatch, fmt.Sprintf("the run was made for repository %q, not %q", rep.Repo, p.repo), id, nil)
	}
	if rep.Worktree == nil || rep.Worktree.Dirty && !p.allowDirty {
		return refuse(DirtySource, "the run was planned on a work tree with uncommitted changes (--allow-dirty): its checks ran on content no commit names", id, nil)
	}
	if p.profile != nil && *p.profile != rep.Profile {
		return refuse(ProfileMismatch, fmt.Sprintf("the run used %s, not %s", profileName(rep.Profile), profileName(*p.profile)), id, nil)
	}
	if h := p.contract.hash; h != "" && h != rep.ContractHash {
		return refuse(ContractMismatch, fmt.Sprintf("the run used contract %s, the gate requires %s", rep.ContractHash, h), id, nil)
	}
	return nil
}

// countApprovals counts distinct approving people that no later decision
// of theirs withdrew, grouped by kernel/approval as the kernel's replay
// groups them: the actor and the GitHub login, each trimmed and case
// folded, and the GitHub numeric user id; decisions sharing any identity
// are one person, so one reviewer cannot count twice under another
// spelling or login.
func countApprovals(ds []replay.Decision) int {
	var t approval.Tally
	for _, d := range ds {
		t.Add(d.Identity(), approval.Decision(d.Decision))
	}
	return len(t.Approvers())
}

// checkWitnessedKey refuses a checkpoint whose key was revoked or retired
// by the time the bundle was witnessed.
func checkWitnessedKey(store envelope.Verifiers, id string, witnessed time.Time) error {
	k, err := store.Verifier(id)
	if err == nil {
		err = k.CheckWitnessed(witnessed)
	}
	if err != nil {
		return &checkpoint.Error{Reason: checkpoint.Invalid, Detail: err.Error(), Err: err}
	}
	return nil
}

// checkSigningTime refuses a signed_at before the run's last event (the
// run could not have been signed before it ended) or after the
// verification time or the witness time, each plus MaxClockSkew.
func checkSigningTime(signedAt time.Time, lastEvent string, now, witnessed time.Time) error {
	last, err := time.Parse(time.RFC3339Nano, lastEvent)
	if err != nil {
		return fmt.Errorf("the log's last event time %q is not RFC 3339", clip(lastEvent))
	}
	at := signedAt.UTC().Format(time.RFC3339Nano)
	if signedAt.Before(last) {
		return fmt.Errorf("signed_at %s is before the run's last event at %s", at, last.UTC().Format(time.RFC3339Nano))
	}
	if now.IsZero() {
		now = time.Now()
	}
	if signedAt.After(now.Add(MaxClockSkew)) {
		return fmt.Errorf("signed_at %s is after the verification time %s (+%s)", at, now.UTC().Format(time.RFC3339), MaxClockSkew)
	}
	if !witnessed.IsZero() && signedAt.After(witnessed.Add(MaxClockSkew)) {
		return fmt.Errorf("signed_at %s is after the bundle was witnessed at %s (+%s)", at, witnessed.UTC().Format(time.RFC3339Nano), MaxClockSkew)
	}
	return nil
}

// refuseKey refuses a key a CheckAt or CheckWitnessed refused: with a
// trust store's reason, or the reason a keyless key's refusal names.
func refuseKey(err error, runID string) error {
	var ke *trust.KeyError
	if errors.As(err, &ke) {
		if ke.Identity != "" {
			return refuse(Reason(ke.Reason), fmt.Sprintf("identity %s: %s", ke.Identity, ke.Detail), runID, err)
		}
		return refuse(Reason(ke.Reason), fmt.Sprintf("key %s: %s", ke.KeyID, ke.Detail), runID, err)
	}
	if r, ok := refusalReason(err); ok {
		return refuse(r, err.Error(), runID, err)
	}
	return refuse(Malformed, err.Error(), runID, err)
}

func diffSummary(a, b *RunSummary) string {
	ab, err1 := canon.Marshal(a)
	bb, err2 := canon.Marshal(b)
	if err1 == nil && err2 == nil && bytes.Equal(ab, bb) {
		return ""
	}
	fields := map[string]func(*RunSummary) any{
		"state": func(s *RunSummary) any { return s.State }, "source": func(s *RunSummary) any { return s.Source },
		"repo": func(s *RunSummary) any { return s.Repo }, "profile": func(s *RunSummary) any { return s.Profile },
		"worktree":            func(s *RunSummary) any { return s.Worktree },
		"contract_hash":       func(s *RunSummary) any { return s.ContractHash },
		"verification_digest": func(s *RunSummary) any { return s.VerificationDigest },
		"checks":              func(s *RunSummary) any { return s.Checks }, "decisions": func(s *RunSummary) any { return s.Decisions },
		"implemented_by": func(s *RunSummary) any { return s.ImplementedBy },
		"authorizations": func(s *RunSummary) any { return s.Authorizations },
	}
	for _, name := range []string{"state", "source", "worktree", "repo", "profile", "contract_hash", "verification_digest", "checks", "decisions", "implemented_by", "authorizations"} {
		x, _ := canon.Marshal(fields[name](a))
		y, _ := canon.Marshal(fields[name](b))
		if !bytes.Equal(x, y) {
			return name
		}
	}
	return "run"
}

// profileName names a profile for a refusal: the base contract has none.
func profileName(p string) string {
	if p == "" {
		return "the base contract"
	}
	return fmt.Sprintf("profile %q", clip(p))
}

func isBlobName(name string) bool {
	return strings.HasPrefix(name, BlobPrefix) && hex64.MatchString(name[len(BlobPrefix):])
}

func archiveReason(err error) Reason {
	switch {
	case errors.Is(err, archive.ErrUnsafe):
		return ArchiveUnsafe
	case errors.Is(err, archive.ErrTooLarge):
		return ArchiveTooLarge
	}
	return Malformed
}

func refuse(r Reason, detail, runID string, err error) error {
	return &VerifyError{Reason: r, Detail: detail, RunID: runID, Err: err}
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func clip(s string) string {
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return strings.ToValidUTF8(s, "?")
}
