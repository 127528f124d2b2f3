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
	"github.com/proofgate/proofgate/kernel/approval"
	"github.com/proofgate/proofgate/kernel/canon"
	"github.com/proofgate/proofgate/kernel/eventlog"
	"github.com/proofgate/proofgate/kernel/replay"
	"github.com/proofgate/proofgate/kernel/strictjson"
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
	InsufficientApprovals  Reason = "insufficient-approvals"
)

// MaxClockSkew is how far past the verification time (or the witness
// time) a signature's signed_at may lie.
const MaxClockSkew = 5 * time.Minute

// PolicyError is a VerifyOptions that does not say what the caller
// requires: a gate must name the source and the contract it accepts, or
// opt out of each explicitly.
type PolicyError struct{ Detail string }

func (e *PolicyError) Error() string { return "bundle verify policy: " + e.Detail }

// VerifyError is a refused bundle.
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

// VerifyOptions say what the caller requires beyond a valid bundle. Every
// requirement is explicit: one of Commit, Tree and AnySource, and one of
// ContractHash and AnyContract, must be set, or Verify returns a
// *PolicyError before reading the bundle.
type VerifyOptions struct {
	Commit string // the run's source commit must equal it (full hex SHA)
	Tree   string // the run's source tree must equal it (full hex SHA)
	// AnySource accepts a run of any commit and tree. Unsafe for a gate:
	// a bundle of any other commit of the repository would pass.
	AnySource bool
	// ContractHash ("sha256:<64 hex>") is the hash of the resolved
	// contract the run must have used, computed by the caller from a
	// contract a pull request cannot change (the release commit's).
	ContractHash string
	// AnyContract accepts a run under any contract. Unsafe for a gate: a
	// run under a weakened contract would pass.
	AnyContract bool
	// AllowDirty accepts a run planned on a work tree with uncommitted
	// changes (--allow-dirty), whose checks ran on content no commit
	// names. Without it such a run is refused (DirtySource).
	AllowDirty bool
	// Now is the verification time (zero: time.Now()). signed_at may not
	// lie more than MaxClockSkew after it.
	Now time.Time
	// Witnessed, when non-zero, is a time the bundle is known to have
	// existed by, from a source its signer does not control (the workflow
	// artifact's created_at as GitHub reports it). A key retired or
	// revoked before it is refused whatever signed_at says, and signed_at
	// may not lie more than MaxClockSkew after it.
	Witnessed time.Time
	// Repo, when set, is the repository (owner/name, compared without
	// case, as GitHub does) the run must have been made for.
	Repo string
	// Profile, when non-nil, is the contract profile the run must have
	// used, compared exactly; "" requires the base contract. Nil accepts
	// a run under any profile of the contract, including one with shorter
	// timeouts or smaller limits.
	Profile *string
	// RequireApprovals is the minimum number of distinct approving actors.
	RequireApprovals int
	// Limits bounds the archive; nil means archive.DefaultLimits.
	Limits *archive.Limits
}

// Result is an accepted bundle.
type Result struct {
	RunID      string
	KeyID      string
	SignedAt   time.Time
	Run        RunSummary
	Approvals  int
	Files      int
	Checkpoint *checkpoint.Verified
}

var hex64 = regexp.MustCompile(`^[0-9a-f]{64}$`)

// Verify checks a bundle offline against store, failing closed. The order
// is fixed: the policy in opts (a *PolicyError before anything is read);
// safe archive read; the DSSE signature over the raw payload with a trusted
// key before anything in the payload is used; the key's status and validity
// at the signing time and at the witness time; every subject digest, no
// file missing or extra; replay.AuditFS over the files; the predicate against
// the audit; a plausible signing time; the checkpoint, if carried; the
// source, clean work tree, repository, profile and contract binding; the
// approvals.
func Verify(r io.Reader, store envelope.Verifiers, opts VerifyOptions) (*Result, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	lim := archive.DefaultLimits
	if opts.Limits != nil {
		lim = *opts.Limits
	}
	// Blobs are only hashed, never held: the audit needs their presence,
	// the subjects their digests.
	list, err := archive.ReadKeep(r, lim, func(name string) bool { return !isBlobName(name) })
	if err != nil {
		return nil, refuse(archiveReason(err), err.Error(), "", err)
	}
	files := make(map[string][]byte, len(list))
	for _, f := range list {
		files[f.Name] = f.Data
	}

	// 1. Signature, before trusting a byte of the payload.
	att, ok := files[AttestationFile]
	if !ok {
		return nil, refuse(MissingFile, AttestationFile+" is missing", "", nil)
	}
	payload, k, err := openAttestation(att, store)
	if err != nil {
		return nil, err
	}

	// 2. The signed statement.
	var st Statement
	if err := strictjson.Decode(payload, &st); err != nil {
		return nil, refuse(Malformed, "statement: "+err.Error(), "", err)
	}
	// The signed bytes must be the canonical form of what was decoded:
	// duplicate keys (Go keeps the last), keys matched case-insensitively
	// or other spellings would read differently in another verifier.
	if c, err := canon.Marshal(&st); err != nil || !bytes.Equal(c, payload) {
		return nil, refuse(Malformed, "statement: the payload is not the canonical JSON of the statement (duplicate, unknown-case or non-canonical keys)", "", err)
	}
	if st.Type != StatementType || st.PredicateType != PredicateType {
		return nil, refuse(Malformed, fmt.Sprintf("statement: _type %q / predicateType %q", clip(st.Type), clip(st.PredicateType)), "", nil)
	}
	pred := &st.Predicate
	id := pred.Run.RunID
	if pred.KeyID != k.KeyID() {
		return nil, refuse(Malformed, fmt.Sprintf("predicate key_id %q is not the signature's keyid", clip(pred.KeyID)), id, nil)
	}
	signedAt, err := time.Parse(time.RFC3339Nano, pred.SignedAt)
	if err != nil {
		return nil, refuse(Malformed, "predicate signed_at: not RFC 3339", id, err)
	}
	identity := ""
	if pred.Run.Repo != "" {
		identity = "repo:" + pred.Run.Repo
	}
	if err := k.CheckAt(signedAt, identity); err != nil {
		return nil, refuseKey(err, id)
	}
	if !opts.Witnessed.IsZero() {
		if err := k.CheckWitnessed(opts.Witnessed); err != nil {
			return nil, refuseKey(err, id)
		}
	}

	// 3. Subjects: exactly the files, with their digests.
	subj := map[string]string{}
	for i, s := range st.Subject {
		d, ok := s.Digest["sha256"]
		if len(s.Digest) != 1 || !ok || !hex64.MatchString(d) {
			return nil, refuse(Malformed, fmt.Sprintf("subject[%d]: digest must be exactly {sha256: <64 hex>}", i), id, nil)
		}
		if err := archive.CheckName(s.Name); err != nil || s.Name == AttestationFile {
			return nil, refuse(Malformed, fmt.Sprintf("subject[%d]: name %q", i, clip(s.Name)), id, err)
		}
		if _, dup := subj[s.Name]; dup {
			return nil, refuse(Malformed, fmt.Sprintf("subject[%d]: duplicate name %q", i, s.Name), id, nil)
		}
		subj[s.Name] = d
	}
	for _, req := range []string{RunFile, EventsFile, ContractFile} {
		if _, ok := subj[req]; !ok {
			return nil, refuse(MissingFile, req+" is not a subject", id, nil)
		}
	}
	for _, name := range sortedKeys(subj) {
		if _, ok := files[name]; !ok {
			return nil, refuse(MissingFile, name+" is a subject but not in the archive", id, nil)
		}
	}
	for _, f := range list {
		if _, ok := subj[f.Name]; !ok && f.Name != AttestationFile {
			return nil, refuse(ExtraFile, f.Name+" is in the archive but not a subject", id, nil)
		}
		if f.Name != AttestationFile && f.Name != RunFile && f.Name != EventsFile && f.Name != ContractFile && f.Name != CheckpointFile && !isBlobName(f.Name) {
			return nil, refuse(ExtraFile, f.Name+" is not a bundle file", id, nil)
		}
	}
	for _, f := range list {
		if f.Name == AttestationFile {
			continue
		}
		got := hex.EncodeToString(f.SHA256[:])
		if got != subj[f.Name] {
			return nil, refuse(SubjectMismatch, fmt.Sprintf("%s hashes to %s, the statement says %s", f.Name, got, subj[f.Name]), id, nil)
		}
		if isBlobName(f.Name) && got != strings.TrimPrefix(f.Name, BlobPrefix) {
			return nil, refuse(SubjectMismatch, f.Name+" is not named by its digest", id, nil)
		}
	}

	// 4. Re-audit the run from the files.
	mem := fstest.MapFS{}
	for _, f := range list {
		if f.Name != AttestationFile && f.Name != CheckpointFile {
			mem[f.Name] = &fstest.MapFile{Data: f.Data, Mode: 0o444}
		}
	}
	rep, err := replay.AuditFS(mem, replay.BlobsVerified())
	if err != nil {
		var ae *replay.AuditError
		if errors.As(err, &ae) {
			switch ae.Reason {
			case replay.ReasonChain:
				return nil, refuse(ChainBroken, ae.Error(), id, err)
			case replay.ReasonBlob, replay.ReasonMissing:
				return nil, refuse(MissingFile, ae.Error(), id, err)
			}
		}
		return nil, refuse(AuditFailed, err.Error(), id, err)
	}
	blobs := map[string]bool{}
	for _, d := range rep.Blobs {
		blobs[BlobPrefix+strings.TrimPrefix(d, "sha256:")] = true
	}
	for _, f := range list {
		if isBlobName(f.Name) && !blobs[f.Name] {
			return nil, refuse(ExtraFile, f.Name+" is not referenced by the event log", id, nil)
		}
	}

	// 5. The predicate must be what the files say.
	if rep.RunID != pred.Run.RunID || rep.ChainHead != pred.Run.Chain.Head || rep.ChainLength != pred.Run.Chain.Length {
		return nil, refuse(ChainMismatch, fmt.Sprintf("the log is run %s with %d events ending %s; the predicate says run %s, %d events ending %s",
			rep.RunID, rep.ChainLength, rep.ChainHead, clip(pred.Run.RunID), pred.Run.Chain.Length, clip(pred.Run.Chain.Head)), id, nil)
	}
	if rep.State != replay.Complete {
		return nil, refuse(NotComplete, fmt.Sprintf("the log says the run is %s", rep.State), id, nil)
	}
	want := Summarize(rep)
	if field := diffSummary(&want, &pred.Run); field != "" {
		return nil, refuse(PredicateMismatch, fmt.Sprintf("predicate field %q disagrees with the audited run", field), id, nil)
	}
	if err := opts.checkSigningTime(signedAt, rep.LastEventTime); err != nil {
		return nil, refuse(SigningTimeImplausible, err.Error(), id, nil)
	}

	res := &Result{RunID: rep.RunID, KeyID: k.KeyID(), SignedAt: signedAt.UTC(), Run: want, Files: len(list)}

	// 6. A carried checkpoint must verify and agree with the log.
	if cp, ok := files[CheckpointFile]; ok {
		v, err := checkpoint.Verify(cp, store)
		if err == nil {
			var events []eventlog.Event
			events, err = eventlog.Read(bytes.NewReader(files[EventsFile]), nil)
			if err == nil {
				err = checkpoint.Match(&v.Checkpoint, events)
			}
		}
		if err != nil {
			var ce *checkpoint.Error
			if errors.As(err, &ce) {
				return nil, refuse(Reason(ce.Reason), ce.Error(), id, err)
			}
			return nil, refuse(CheckpointInvalid, err.Error(), id, err)
		}
		res.Checkpoint = v
	}

	// 7. Source and contract binding.
	if opts.Commit != "" && !strings.EqualFold(opts.Commit, rep.Source.Commit) {
		return nil, refuse(CommitMismatch, fmt.Sprintf("the run verified commit %s, not %s", rep.Source.Commit, opts.Commit), id, nil)
	}
	if opts.Tree != "" && !strings.EqualFold(opts.Tree, rep.Source.Tree) {
		return nil, refuse(TreeMismatch, fmt.Sprintf("the run verified tree %s, not %s", rep.Source.Tree, opts.Tree), id, nil)
	}

	if opts.Repo != "" && !strings.EqualFold(opts.Repo, rep.Repo) {
		return nil, refuse(RepoMismatch, fmt.Sprintf("the run was made for repository %q, not %q", rep.Repo, opts.Repo), id, nil)
	}
	if rep.Worktree == nil || rep.Worktree.Dirty && !opts.AllowDirty {
		return nil, refuse(DirtySource, "the run was planned on a work tree with uncommitted changes (--allow-dirty): its checks ran on content no commit names", id, nil)
	}
	if opts.Profile != nil && *opts.Profile != rep.Profile {
		return nil, refuse(ProfileMismatch, fmt.Sprintf("the run used %s, not %s", profileName(rep.Profile), profileName(*opts.Profile)), id, nil)
	}
	if opts.ContractHash != "" && opts.ContractHash != rep.ContractHash {
		return nil, refuse(ContractMismatch, fmt.Sprintf("the run used contract %s, the gate requires %s", rep.ContractHash, opts.ContractHash), id, nil)
	}

	// 8. Approvals.
	res.Approvals = countApprovals(rep.Decisions)
	if res.Approvals < opts.RequireApprovals {
		return nil, refuse(InsufficientApprovals, fmt.Sprintf("%d distinct approvals, %d required", res.Approvals, opts.RequireApprovals), id, nil)
	}
	return res, nil
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

// check refuses options that leave the source or the contract unsaid.
func (o *VerifyOptions) check() error {
	n := 0
	for _, set := range []bool{o.Commit != "", o.Tree != "", o.AnySource} {
		if set {
			n++
		}
	}
	if n != 1 {
		return &PolicyError{"give exactly one of a commit, a tree, or any source"}
	}
	for name, v := range map[string]string{"commit": o.Commit, "tree": o.Tree} {
		if v != "" && !fullSHA.MatchString(v) {
			return &PolicyError{fmt.Sprintf("%s %q: give the full 40-hex SHA (64-hex in SHA-256 repositories, e.g. from git rev-parse HEAD), not a short or symbolic one", name, clip(v))}
		}
	}
	if (o.ContractHash != "") == o.AnyContract {
		return &PolicyError{"give exactly one of a contract hash or any contract"}
	}
	if o.ContractHash != "" && !contractHash.MatchString(o.ContractHash) {
		return &PolicyError{fmt.Sprintf("contract hash %q: want sha256:<64 lowercase hex>", clip(o.ContractHash))}
	}
	return nil
}

var (
	fullSHA      = regexp.MustCompile(`^([0-9a-fA-F]{40}|[0-9a-fA-F]{64})$`)
	contractHash = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
)

// checkSigningTime refuses a signed_at before the run's last event (the
// run could not have been signed before it ended) or after the
// verification time or the witness time, each plus MaxClockSkew.
func (o *VerifyOptions) checkSigningTime(signedAt time.Time, lastEvent string) error {
	last, err := time.Parse(time.RFC3339Nano, lastEvent)
	if err != nil {
		return fmt.Errorf("the log's last event time %q is not RFC 3339", clip(lastEvent))
	}
	at := signedAt.UTC().Format(time.RFC3339Nano)
	if signedAt.Before(last) {
		return fmt.Errorf("signed_at %s is before the run's last event at %s", at, last.UTC().Format(time.RFC3339Nano))
	}
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	if signedAt.After(now.Add(MaxClockSkew)) {
		return fmt.Errorf("signed_at %s is after the verification time %s (+%s)", at, now.UTC().Format(time.RFC3339), MaxClockSkew)
	}
	if !o.Witnessed.IsZero() && signedAt.After(o.Witnessed.Add(MaxClockSkew)) {
		return fmt.Errorf("signed_at %s is after the bundle was witnessed at %s (+%s)", at, o.Witnessed.UTC().Format(time.RFC3339Nano), MaxClockSkew)
	}
	return nil
}

func refuseKey(err error, runID string) error {
	var ke *trust.KeyError
	if !errors.As(err, &ke) {
		return refuse(Malformed, err.Error(), runID, err)
	}
	return refuse(Reason(ke.Reason), fmt.Sprintf("key %s: %s", ke.KeyID, ke.Detail), runID, err)
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
	}
	for _, name := range []string{"state", "source", "worktree", "repo", "profile", "contract_hash", "verification_digest", "checks", "decisions"} {
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
