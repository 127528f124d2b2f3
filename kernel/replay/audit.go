package replay

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"slices"

	"github.com/proofgate/proofgate/internal/bounded"
	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/strictjson"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/eventlog"
	"github.com/proofgate/proofgate/kernel/input"
)

// ReasonProjectionLag is a run.json that is an exact projection of a prefix
// of the log: a writer died between an append and the projection rewrite.
// It is not tampering, and the next writer repairs it.
const ReasonProjectionLag AuditReason = "projection-lagging"

// Bounds on the files of a run directory.
const (
	maxContractJSON = 4 << 20
	maxRunJSON      = 64 << 20
)

// AuditOption adjusts AuditFS.
type AuditOption func(*auditConfig)

type auditConfig struct {
	blobsVerified bool
	get           func(digest string) ([]byte, error)
}

// ManifestBlobs makes AuditFS read the blobs of manifest inputs through get
// instead of from fsys (a verifier that holds only some blobs' bytes: the
// bundle verifier streams the others). input.Rebuild checks every blob get
// returns against its digest.
func ManifestBlobs(get func(digest string) ([]byte, error)) AuditOption {
	return func(c *auditConfig) { c.get = get }
}

// BlobsVerified tells AuditFS that every blob's bytes were already checked
// against a signed digest (the bundle verifier does that), so only their
// presence is checked.
func BlobsVerified() AuditOption { return func(c *auditConfig) { c.blobsVerified = true } }

// AuditFS reconciles the run held in fsys: contract.json, events.ndjson,
// run.json and blobs/sha256/<hex>. It verifies the chain, replays it against
// the frozen contract (refusing illegal transitions, decisions that do not
// bind to the verification, recomputed digests that differ), checks every
// referenced blob and compares run.json with the replayed projection.
func AuditFS(fsys fs.FS, opts ...AuditOption) (*Report, error) {
	rep, _, err := auditFS(fsys, opts...)
	return rep, err
}

func auditFS(fsys fs.FS, opts ...AuditOption) (*Report, *Folder, error) {
	cfg := auditConfig{}
	for _, o := range opts {
		o(&cfg)
	}
	c, hash, err := readFrozenContract(fsys)
	if err != nil {
		return nil, nil, err
	}
	// run.json before the log: a live writer appends to the log and then
	// rewrites run.json, so read in this order run.json can only trail the
	// log (projection-lagging), never run ahead of it (which is tampering).
	proj, err := readBounded(fsys, RunFile, maxRunJSON)
	if err != nil {
		return nil, nil, err
	}
	events, err := readEvents(fsys)
	if err != nil {
		var ce *eventlog.ChainError
		var ae *AuditError
		switch {
		case errors.As(err, &ae):
			return nil, nil, ae
		case errors.As(err, &ce) && ce.File != "":
			return nil, nil, &AuditError{Reason: ReasonChain, Line: ce.Line, Detail: fmt.Sprintf("%s: %s: %s", ce.File, ce.Reason, ce.Detail), Err: ce}
		case errors.As(err, &ce):
			return nil, nil, &AuditError{Reason: ReasonChain, Line: ce.Line, Detail: fmt.Sprintf("%s: %s", ce.Reason, ce.Detail), Err: ce}
		}
		return nil, nil, &AuditError{Reason: ReasonChain, Detail: err.Error(), Err: err}
	}
	if len(events) == 0 {
		return nil, nil, &AuditError{Reason: ReasonChain, Detail: "empty event log"}
	}
	if events[0].Contract != hash {
		return nil, nil, &AuditError{Reason: ReasonContract, Line: 1, Detail: fmt.Sprintf("the log is bound to %s, contract.json hashes to %s", events[0].Contract, hash)}
	}
	f := NewFolder(c)
	for i, e := range events {
		if err := f.Apply(i+1, e); err != nil {
			return nil, nil, err
		}
	}
	rep := f.Report(len(events), headOf(events))
	for _, d := range rep.Blobs {
		if err := checkBlob(fsys, d, cfg.blobsVerified); err != nil {
			return nil, nil, err
		}
	}
	if err := f.checkShards(fsys, events); err != nil {
		return nil, nil, err
	}
	members, err := f.rebuildManifests(fsys, cfg.get)
	if err != nil {
		return nil, nil, err
	}
	if err := compareProjectionBytes(proj, c, events, rep); err != nil {
		addBlobs(rep, members)
		return rep, f, err
	}
	addBlobs(rep, members)
	return rep, f, nil
}

// rebuildManifests rebuilds every manifest input the log names and checks
// it hashes to its recorded input hash; it returns the member blobs read.
func (f *Folder) rebuildManifests(fsys fs.FS, get func(string) ([]byte, error)) ([]string, error) {
	if f.s == nil || len(f.s.manifests) == 0 {
		return nil, nil
	}
	if get == nil {
		get = fsysBlobs(fsys)
	}
	refs := make([]string, 0, len(f.s.manifests))
	for ref := range f.s.manifests {
		refs = append(refs, ref)
	}
	slices.Sort(refs)
	var members []string
	for _, ref := range refs {
		canonical, read, err := input.Rebuild(get, ref)
		if err != nil {
			return nil, &AuditError{Reason: ReasonBlob, Detail: fmt.Sprintf("manifest input %s: %v", ref, err), Err: err}
		}
		if got := canon.SumBytes(canonical); got != f.s.manifests[ref] {
			return nil, &AuditError{Reason: ReasonBlob, Detail: fmt.Sprintf("manifest input %s rebuilds input %s, the log records %s", ref, got, f.s.manifests[ref])}
		}
		members = append(members, read...)
	}
	return members, nil
}

// fsysBlobs reads manifest blobs from fsys's blob directory, re-hashed.
func fsysBlobs(fsys fs.FS) func(string) ([]byte, error) {
	return func(d string) ([]byte, error) {
		if !digestRE.MatchString(d) {
			return nil, fmt.Errorf("blob digest %q is not sha256:<64 hex>", d)
		}
		if err := checkBlob(fsys, d, false); err != nil {
			return nil, err
		}
		return readBounded(fsys, path.Join(BlobDir, "sha256", d[len("sha256:"):]), maxInputBlob)
	}
}

// maxInputBlob bounds one blob a manifest rebuild reads.
const maxInputBlob = input.MaxInput

// addBlobs adds digests to rep.Blobs, sorted, without duplicates.
func addBlobs(rep *Report, digests []string) {
	if len(digests) == 0 {
		return
	}
	rep.Blobs = append(rep.Blobs, digests...)
	slices.Sort(rep.Blobs)
	rep.Blobs = slices.Compact(rep.Blobs)
}

// Audit reconciles the run in directory dir (see AuditFS) and checks that
// the directory's name is the run id.
func Audit(dir string) (*Report, error) {
	rep, _, err := auditDir(dir)
	return rep, err
}

func auditDir(dir string) (*Report, *Folder, error) {
	rep, f, err := auditFS(DirFS(dir))
	if rep != nil && rep.RunID != filepath.Base(dir) {
		return nil, nil, &AuditError{Reason: ReasonBadEvent, Line: 1, Detail: fmt.Sprintf("the log belongs to run %s, not %s", rep.RunID, filepath.Base(dir))}
	}
	return rep, f, err
}

func readFrozenContract(fsys fs.FS) (*contract.Resolved, string, error) {
	b, err := readBounded(fsys, ContractFile, maxContractJSON)
	if err != nil {
		return nil, "", err
	}
	cb, err := canon.Transform(b)
	if err != nil || !bytes.Equal(cb, b) {
		return nil, "", &AuditError{Reason: ReasonContract, Detail: "contract.json is not canonical JSON"}
	}
	var c contract.Resolved
	if err := strictjson.Decode(b, &c); err != nil {
		return nil, "", &AuditError{Reason: ReasonContract, Detail: "contract.json: " + err.Error()}
	}
	return &c, canon.SumBytes(b), nil
}

func readBounded(fsys fs.FS, name string, max int64) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, &AuditError{Reason: ReasonMissing, Detail: name + ": " + err.Error()}
	}
	defer f.Close()
	b, err := bounded.ReadAll(f, max)
	var tl *bounded.TooLargeError
	switch {
	case errors.As(err, &tl):
		return nil, &AuditError{Reason: ReasonMissing, Detail: fmt.Sprintf("%s is %s", name, tl)}
	case err != nil:
		return nil, &AuditError{Reason: ReasonMissing, Detail: name + ": " + err.Error()}
	}
	return b, nil
}

func checkBlob(fsys fs.FS, d string, presenceOnly bool) error {
	name := path.Join(BlobDir, "sha256", d[len("sha256:"):])
	f, err := fsys.Open(name)
	if err != nil {
		return &AuditError{Reason: ReasonBlob, Detail: fmt.Sprintf("evidence %s is missing", d)}
	}
	defer f.Close()
	if presenceOnly {
		return nil
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return &AuditError{Reason: ReasonBlob, Detail: fmt.Sprintf("evidence %s: %v", d, err)}
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != d {
		return &AuditError{Reason: ReasonBlob, Detail: fmt.Sprintf("evidence %s was altered (now %s)", d, got)}
	}
	return nil
}

// compareProjection checks run.json against the replayed report.
func compareProjection(fsys fs.FS, c *contract.Resolved, events []eventlog.Event, rep *Report) error {
	b, err := readBounded(fsys, RunFile, maxRunJSON)
	if err != nil {
		return err
	}
	return compareProjectionBytes(b, c, events, rep)
}

// compareProjectionBytes checks run.json's bytes b against the replay.
func compareProjectionBytes(b []byte, c *contract.Resolved, events []eventlog.Event, rep *Report) error {
	var got Report
	if err := strictjson.Decode(b, &got); err != nil {
		return &AuditError{Reason: ReasonProjection, Detail: "run.json: " + err.Error()}
	}
	if got.Worktree == nil {
		// Written before run.json carried the work tree (ADR 0005); the
		// field is derived from run.planned, which the replay checked.
		got.Worktree = rep.Worktree
	}
	if sameReport(&got, rep) {
		return nil
	}
	if got.ChainLength > 0 && got.ChainLength < len(events) {
		if prefix, err := Fold(c, events[:got.ChainLength]); err == nil && sameReport(&got, prefix) {
			return &AuditError{Reason: ReasonProjectionLag, Detail: fmt.Sprintf("run.json reflects %d of %d events", got.ChainLength, len(events))}
		}
	}
	return &AuditError{Reason: ReasonProjection, Detail: "run.json " + describeDiff(&got, rep)}
}

func sameReport(a, b *Report) bool {
	x, err1 := canon.Marshal(a)
	y, err2 := canon.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

// describeDiff names the first top-level field where run.json differs.
func describeDiff(got, want *Report) string {
	var g, w map[string]json.RawMessage
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(want)
	_ = strictjson.Decode(gb, &g)
	_ = strictjson.Decode(wb, &w)
	for _, k := range []string{"run_id", "state", "source", "worktree", "contract_hash", "verification_digest", "checks", "decisions", "chain_head", "chain_length", "pending", "blobs", "sessions", "repo", "profile", "implemented_by"} {
		if !bytes.Equal(canonOrRaw(g[k]), canonOrRaw(w[k])) {
			return fmt.Sprintf("field %q disagrees with the event log", k)
		}
	}
	return "disagrees with the event log"
}

func canonOrRaw(b json.RawMessage) []byte {
	if c, err := canon.Transform(b); err == nil {
		return c
	}
	return b
}

// AuditReplay is Audit returning the replay too, for a writer that
// continues from it. With a lagging projection (ReasonProjectionLag) it
// returns the report and the replay beside the error.
func AuditReplay(dir string) (*Report, *Folder, error) { return auditDir(dir) }

// ReadContract reads and checks fsys's contract.json: canonical JSON, a
// resolved contract. It returns the contract and its hash.
func ReadContract(fsys fs.FS) (*contract.Resolved, string, error) { return readFrozenContract(fsys) }

// CompareProjection checks fsys's run.json against the replayed report rep
// of events: nil when equal, a *AuditError with ReasonProjectionLag when it
// is the exact projection of a prefix of events, else ReasonProjection.
func CompareProjection(fsys fs.FS, c *contract.Resolved, events []eventlog.Event, rep *Report) error {
	return compareProjection(fsys, c, events, rep)
}

// IsReason reports whether err is an *AuditError with the given reason.
func IsReason(err error, reason AuditReason) bool {
	var ae *AuditError
	return errors.As(err, &ae) && ae.Reason == reason
}
