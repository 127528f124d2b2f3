package shard

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/proofgate/proofgate/internal/blob"
	"github.com/proofgate/proofgate/internal/bounded"
	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/lock"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/internal/strictjson"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/eventlog"
	"github.com/proofgate/proofgate/kernel/replay"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// Bounds on what Merge reads from a shard directory.
const (
	MaxManifest  = 1 << 20
	MaxSignature = 1 << 20
	MaxShardLog  = 1 << 30
)

// Merge verifies every shard dir (chain, binding, manifest, signature,
// coverage: each check exactly once, all shards 1..n present) and appends
// the results to the run's log; the run then continues as after a
// single-machine exec (AWAITING_APPROVAL or BLOCKED; STALE when a shard
// saw another work tree). The run must be PLANNED, or VERIFYING with
// nothing recorded since (a merge killed after its state change resumes);
// otherwise *run.StateError: a run merges once. Every refusal of a shard is a
// *MergeError; nothing is appended unless every shard is accepted.
func Merge(ctx context.Context, stateDir, id string, dirs []string, opts MergeOptions) (*MergeResult, error) {
	if len(dirs) == 0 {
		return nil, &MergeError{Reason: Missing, Detail: "no shard directories given"}
	}
	r, err := run.Open(stateDir, id)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if _, err := r.CanMerge(); err != nil {
		return nil, err
	}
	m := &merger{r: r, opts: opts}
	m.binding, m.length, _ = r.PlannedRef()
	var loaded []*loadedShard
	for _, d := range dirs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		ls, err := m.load(d)
		if err != nil {
			return nil, err
		}
		loaded = append(loaded, ls)
	}
	if err := coverage(r.Contract, loaded); err != nil {
		return nil, err
	}
	merged := make([]run.MergedShard, len(loaded))
	checks := 0
	for i, ls := range loaded {
		merged[i] = ls.merged()
		checks += len(ls.m.Checks)
	}
	if err := r.MergeShards(merged); err != nil {
		return nil, err
	}
	return &MergeResult{Shards: len(loaded), Checks: checks, State: string(r.State())}, nil
}

type merger struct {
	r       *run.Run
	opts    MergeOptions
	binding eventlog.Binding
	length  int
}

// loadedShard is one verified shard directory.
type loadedShard struct {
	dir      string
	manifest []byte
	m        replay.ShardManifest
	files    map[string][]byte
	log      *replay.ShardLog
	signer   string
}

func refuse(r Reason, dir string, err error, format string, a ...any) *MergeError {
	return &MergeError{Reason: r, Dir: dir, Detail: fmt.Sprintf(format, a...), Err: err}
}

// load verifies one shard directory on its own, in this order: complete
// (running), signed by a trusted signer (untrusted), a canonical
// manifest of this run's binding and planned log (tampered, foreign), no
// dependency outside the shard (order), the shard log, its digest, chain,
// contents and blobs (tampered).
func (m *merger) load(dir string) (*loadedShard, error) {
	ls := &loadedShard{dir: dir, files: map[string][]byte{}}
	if err := checkComplete(dir); err != nil {
		return nil, err
	}
	var err error
	if ls.manifest, err = readBounded(filepath.Join(dir, ManifestFile), MaxManifest); err != nil {
		return nil, refuse(Tampered, dir, err, "%s: %v", ManifestFile, err)
	}
	ls.files[ManifestFile] = ls.manifest
	if err := m.checkSignature(ls); err != nil {
		return nil, err
	}
	if ls.m, err = decodeManifest(ls.manifest); err != nil {
		return nil, refuse(Tampered, dir, err, "%s: %v", ManifestFile, err)
	}
	if err := m.checkBinding(ls); err != nil {
		return nil, err
	}
	if err := m.checkFinished(ls); err != nil {
		return nil, err
	}
	if err := checkDependencies(m.r.Contract, ls); err != nil {
		return nil, err
	}
	if err := m.checkLog(ls); err != nil {
		return nil, err
	}
	return ls, checkBlobs(ls)
}

// checkComplete refuses a directory Exec has not finished: shard.json
// missing, or its lock held by a live process.
func checkComplete(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() {
		return refuse(Missing, dir, err, "not a shard directory")
	}
	if o, err := lock.Read(filepath.Join(dir, LockFile)); err == nil && lock.Alive(o) {
		return refuse(Running, dir, nil, "%s is held by process %d: the shard is still executing", LockFile, o.PID)
	}
	if _, err := os.Lstat(filepath.Join(dir, ManifestFile)); errors.Is(err, fs.ErrNotExist) {
		return refuse(Running, dir, err, "no %s: the shard has not finished (or its executor died; re-run it)", ManifestFile)
	}
	return nil
}

// checkSignature verifies shard.sig (and shard.sigstore.json) over the
// exact manifest bytes before anything in them is read.
func (m *merger) checkSignature(ls *loadedShard) error {
	sig, err := readBounded(filepath.Join(ls.dir, SignatureFile), MaxSignature)
	switch {
	case m.opts.Verifier == nil && m.opts.Unsigned:
		return nil
	case m.opts.Verifier == nil:
		return refuse(Untrusted, ls.dir, nil, "no verifier for shard signatures (a merge trusts only shards it verified)")
	case err != nil:
		return refuse(Untrusted, ls.dir, err, "%s: %v", SignatureFile, err)
	}
	material, err := readBounded(filepath.Join(ls.dir, MaterialFile), MaxSignature)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return refuse(Untrusted, ls.dir, err, "%s: %v", MaterialFile, err)
	}
	if err := m.opts.Verifier.VerifyShard(ls.manifest, sig, material); err != nil {
		return refuse(Untrusted, ls.dir, err, "signature: %v", err)
	}
	ls.files[SignatureFile] = sig
	if material != nil {
		ls.files[MaterialFile] = material
	}
	ls.signer = keyIDOf(sig)
	return nil
}

// checkBinding requires the manifest to name this run, its contract and
// source, and a prefix of its log.
func (m *merger) checkBinding(ls *loadedShard) error {
	mf, b := &ls.m, m.binding
	switch {
	case mf.V != 1:
		return refuse(Tampered, ls.dir, nil, "%s: v %d", ManifestFile, mf.V)
	case mf.Run != b.Run:
		return refuse(Foreign, ls.dir, nil, "the shard is of run %q, not %s", mf.Run, b.Run)
	case mf.Contract != b.Contract:
		return refuse(Foreign, ls.dir, nil, "the shard ran contract %s, the run is bound to %s", mf.Contract, b.Contract)
	case mf.Source != b.Source:
		return refuse(Foreign, ls.dir, nil, "the shard ran commit %s tree %s, the run is bound to commit %s tree %s", mf.Source.Commit, mf.Source.Tree, b.Source.Commit, b.Source.Tree)
	case mf.Planned.Length < 1 || mf.Planned.Length > m.length || m.r.EventAt(mf.Planned.Length) != mf.Planned.Head:
		return refuse(Foreign, ls.dir, nil, "the shard executed a planned log of %d events ending %s, which is not this run's", mf.Planned.Length, mf.Planned.Head)
	case mf.Of < 1 || mf.Of > MaxShards || mf.Shard < 1 || mf.Shard > mf.Of:
		return refuse(Tampered, ls.dir, nil, "%s: shard %d of %d", ManifestFile, mf.Shard, mf.Of)
	}
	return nil
}

// MaxClockSkew is how far a shard's finished time may lie before the
// planned log's last event (the shard job's clock against the planner's).
const MaxClockSkew = 5 * time.Minute

// checkFinished refuses a manifest whose finished time is before the
// planned log it executed was written (the run's own event time, which
// the shard's signer does not control): a signer backdating its
// signature below a revocation cannot also move the run's log.
func (m *merger) checkFinished(ls *loadedShard) error {
	fin, err := time.Parse(time.RFC3339Nano, ls.m.Finished)
	if err != nil {
		return refuse(Tampered, ls.dir, err, "%s: finished %q is not RFC 3339", ManifestFile, ls.m.Finished)
	}
	planned, err := time.Parse(time.RFC3339Nano, m.r.EventTime(ls.m.Planned.Length))
	if err != nil {
		return refuse(Tampered, ls.dir, err, "the run's event %d has no time", ls.m.Planned.Length)
	}
	if fin.Before(planned.Add(-MaxClockSkew)) {
		return refuse(SigningTime, ls.dir, nil, "%s finished %s, before the run's planned log it executed was written (%s)",
			ManifestFile, fin.UTC().Format(time.RFC3339Nano), planned.UTC().Format(time.RFC3339Nano))
	}
	return nil
}

// checkDependencies refuses a shard that executed a check whose
// dependency it did not execute: the dependency's result was not known
// to it (a dependency split across shards).
func checkDependencies(c *contract.Resolved, ls *loadedShard) error {
	for _, id := range ls.m.Checks {
		chk, ok := c.Check(id)
		if !ok {
			return refuse(Tampered, ls.dir, nil, "check %q is not in the contract", id)
		}
		for _, d := range chk.DependsOn {
			if !slices.Contains(ls.m.Checks, d) {
				return refuse(Order, ls.dir, nil, "check %q ran in shard %d/%d without its dependency %q", id, ls.m.Shard, ls.m.Of, d)
			}
		}
	}
	return nil
}

// checkLog verifies the shard log against the manifest and the run.
func (m *merger) checkLog(ls *loadedShard) error {
	lb, err := readBounded(filepath.Join(ls.dir, LogFile), MaxShardLog)
	if err != nil {
		return refuse(Tampered, ls.dir, err, "%s: %v", LogFile, err)
	}
	if got := sha256Hex(lb); got != ls.m.Events {
		return refuse(Tampered, ls.dir, nil, "%s hashes to %s, %s says %s", LogFile, got, ManifestFile, ls.m.Events)
	}
	sl, err := replay.ReadShardLog(lb, m.r.Contract, m.binding, ls.m.Shard, ls.m.Of)
	if err != nil {
		return refuse(Tampered, ls.dir, err, "%s: %v", LogFile, err)
	}
	switch {
	case sl.Length != ls.m.Log.Length || sl.Head != ls.m.Log.Head:
		return refuse(Tampered, ls.dir, nil, "%s is %d events ending %s, %s says %d ending %s", LogFile, sl.Length, sl.Head, ManifestFile, ls.m.Log.Length, ls.m.Log.Head)
	case !slices.Equal(sl.Opened.Checks, ls.m.Checks) || sl.Opened.Planned != ls.m.Planned:
		return refuse(Tampered, ls.dir, nil, "shard.opened and %s name other checks or another planned log", ManifestFile)
	}
	ls.log = sl
	ls.files[LogFile] = lb
	return nil
}

// checkBlobs requires every blob the log references (a check's output
// streams and products) to be listed in the manifest and present under
// blobs/ with its digest.
func checkBlobs(ls *loadedShard) error {
	listed := map[string]bool{}
	for _, d := range ls.m.Blobs {
		listed[d] = true
	}
	store := blob.New(filepath.Join(ls.dir, BlobDir))
	for _, id := range ls.m.Checks {
		r := ls.log.Results[id]
		for _, s := range []*runtime.Stream{r.Stdout, r.Stderr} {
			if s != nil && !listed[s.Digest] {
				return refuse(Tampered, ls.dir, nil, "check %q's output %s is not in %s", id, s.Digest, ManifestFile)
			}
		}
		for _, p := range r.Products {
			if !listed[p.Digest] {
				return refuse(Tampered, ls.dir, nil, "check %q's product %s (%s) is not in %s", id, p.Path, p.Digest, ManifestFile)
			}
		}
	}
	for _, d := range ls.m.Blobs {
		if err := store.Verify(d); err != nil {
			return refuse(Tampered, ls.dir, err, "blob %s: %v", d, err)
		}
	}
	return nil
}

// coverage checks the shards together: one count, each index once, each
// check in exactly one shard, every shard 1..N present, every check
// executed.
func coverage(c *contract.Resolved, ls []*loadedShard) error {
	of := ls[0].m.Of
	byIndex := map[int]*loadedShard{}
	owner := map[string]*loadedShard{}
	for _, s := range ls {
		if s.m.Of != of {
			return refuse(Foreign, s.dir, nil, "shard %d of %d, but %s is of %d", s.m.Shard, s.m.Of, ls[0].dir, of)
		}
		if prev, dup := byIndex[s.m.Shard]; dup {
			return refuse(Duplicate, s.dir, nil, "shard %d/%d is given twice (also %s): a shard executed twice would count its checks twice", s.m.Shard, of, prev.dir)
		}
		byIndex[s.m.Shard] = s
		for _, id := range s.m.Checks {
			if prev, dup := owner[id]; dup {
				return refuse(Overlap, s.dir, nil, "check %q is in shard %d and shard %d (%s)", id, s.m.Shard, prev.m.Shard, prev.dir)
			}
			owner[id] = s
		}
	}
	for i := 1; i <= of; i++ {
		if byIndex[i] == nil {
			return refuse(Missing, "", nil, "shard %d/%d is missing", i, of)
		}
	}
	for _, ch := range c.Checks {
		if owner[ch.ID] == nil {
			return refuse(Missing, "", nil, "check %q is in no shard", ch.ID)
		}
	}
	if err := assignment(c, byIndex, of); err != nil {
		return err
	}
	sort.Slice(ls, func(i, j int) bool { return ls[i].m.Shard < ls[j].m.Shard })
	return nil
}

// assignment requires each shard to have executed exactly its planned
// checks: Assign over the run's (signed, planned) contract for N shards.
// Coverage alone would accept a trusted key's shard that took another
// shard's check, which that shard then left out.
func assignment(c *contract.Resolved, byIndex map[int]*loadedShard, of int) error {
	planned, err := Assign(c.Checks, of)
	if err != nil {
		return refuse(Tampered, "", err, "the run's checks cannot be split in %d shards: %v", of, err)
	}
	shardOf := map[string]int{}
	for i, ids := range planned {
		for _, id := range ids {
			shardOf[id] = i + 1
		}
	}
	for i := 1; i <= of; i++ {
		s := byIndex[i]
		for _, id := range s.m.Checks {
			if shardOf[id] != i {
				return refuse(Unassigned, s.dir, nil, "shard %d/%d executed check %q, which the plan assigns to shard %d", i, of, id, shardOf[id])
			}
		}
		if len(s.m.Checks) != len(planned[i-1]) {
			return refuse(Unassigned, s.dir, nil, "shard %d/%d executed %d checks, the plan assigns it %d (%s)", i, of, len(s.m.Checks), len(planned[i-1]), strings.Join(planned[i-1], ", "))
		}
	}
	return nil
}

func (ls *loadedShard) merged() run.MergedShard {
	return run.MergedShard{
		Record: replay.ShardMergedData{Shard: ls.m.Shard, Of: ls.m.Of, Checks: ls.m.Checks, Log: ls.m.Log,
			Manifest: canon.SumBytes(ls.manifest), Worktree: ls.log.Closed.Worktree.Digest, Signer: ls.signer},
		Events:         ls.log.Checks,
		BlobDir:        filepath.Join(ls.dir, BlobDir),
		Blobs:          ls.m.Blobs,
		Files:          ls.files,
		BudgetExceeded: ls.log.Closed.BudgetExceeded,
		Worktree:       ls.log.Closed.Worktree,
	}
}

func readBounded(p string, max int64) ([]byte, error) {
	return bounded.ReadFile(p, max)
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// keyIDOf is the keyid of a verified DSSE envelope, for the record.
func keyIDOf(env []byte) string {
	var e struct {
		Signatures []struct {
			KeyID string `json:"keyid"`
		} `json:"signatures"`
	}
	if strictjson.DecodeOpen(env, &e) != nil || len(e.Signatures) != 1 {
		return ""
	}
	return e.Signatures[0].KeyID
}
