package shard

import (
	"fmt"

	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/kernel/replay"
)

// MaxShards bounds N in I/N.
const MaxShards = replay.MaxShards

// Spec names one shard: Index in [1, Count].
type Spec struct{ Index, Count int }

// String is "I/N".
func (s Spec) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// SpecError refuses a shard spec.
type SpecError struct {
	Value  string
	Detail string
}

func (e *SpecError) Error() string {
	return fmt.Sprintf("--shard %q: %s (want I/N, 1 <= I <= N <= %d)", e.Value, e.Detail, MaxShards)
}

// ExecOptions configure the execution of one shard.
type ExecOptions struct {
	Spec Spec
	Out  string
	Run  run.ExecOptions
}

// Result is an executed shard.
type Result struct {
	Dir    string
	Spec   Spec
	Checks []string
	Head   string
	Length int
	Failed int
}

// Verifier checks a shard manifest's signature; nil means the caller
// verified nothing and Merge refuses unless MergeOptions.Unsigned is set
// (CLI tests only). material is shard.sigstore.json's bytes, nil for a
// key-signed shard.
type Verifier interface {
	VerifyShard(manifest, signature, material []byte) error
}

// MergeOptions configure Merge.
type MergeOptions struct {
	Verifier Verifier
	Unsigned bool
}

// MergeResult is a merged run.
type MergeResult struct {
	Shards int
	Checks int
	State  string
}

// Reason is the typed cause of a refused merge.
type Reason string

// Reasons a merge is refused.
const (
	Missing   Reason = "missing"   // a shard of 1..N, or a check, is in no shard dir
	Duplicate Reason = "duplicate" // two shard dirs for one index (a shard executed twice)
	Foreign   Reason = "foreign"   // bound to another run, contract, source or planned log
	Tampered  Reason = "tampered"  // chain, manifest digests or shard log contents do not hold
	Untrusted Reason = "untrusted" // the signature is missing or not by a trusted signer
	Overlap   Reason = "overlap"   // a check in two shards
	Running   Reason = "running"   // the shard has not finished (no manifest, or its lock is held)
	Order     Reason = "order"     // a check's dependency executed in another shard
	// Unassigned: a shard executed checks other than its planned
	// assignment (Assign over the run's contract for its N).
	Unassigned Reason = "unassigned"
	// SigningTime: shard.json's finished time is outside what the run's
	// log allows: before the planned log's last event, or after the merge.
	SigningTime Reason = "signing-time-implausible"
)

// MergeError carries a typed Reason and the shard dir it concerns.
type MergeError struct {
	Reason Reason
	Dir    string
	Detail string
	Err    error
}

func (e *MergeError) Error() string {
	return fmt.Sprintf("merge: shard %s: %s: %s", e.Dir, e.Reason, e.Detail)
}

// Unwrap returns the underlying error.
func (e *MergeError) Unwrap() error { return e.Err }
