package bundle

import (
	"slices"

	"github.com/proofgate/proofgate/kernel/replay"
)

// reasons is every refusal reason of a bundle verification, in the order
// of docs/SPEC.md §7's verification steps. It is the one registry the
// verifier's output (a *VerifyError's Reason, the "reason" of bundle
// verify --json and of the verify action), the failure vectors' expect
// lines and the SPEC are held to (reasons_test.go): a Reason constant
// not listed here, a listed one the SPEC's verification order does not
// name, or a vector expecting another string fails. Every one is of class
// exit.Refused (VerifyError.Is).
var reasons = []Reason{
	ArchiveUnsafe, ArchiveTooLarge, Malformed, MissingFile, UnknownKey,
	MaterialMismatch, CertificateInvalid, TimestampInvalid, TlogInvalid, IdentityMismatch,
	SignatureInvalid, KeyRevoked, KeyNotValid, SigningTimeImplausible, ExtraFile,
	SubjectMismatch, ChainBroken, AuditFailed, ImplementationMismatch, ShardMismatch,
	NotComplete, ChainMismatch, PredicateMismatch, CheckpointInvalid, CheckpointRewritten,
	CheckpointTruncated, CheckpointForeignRun, CommitMismatch, TreeMismatch, RepoMismatch,
	ProfileMismatch, ContractMismatch, DirtySource, UnsandboxedCheck, InsufficientApprovals,
	RuleNotSatisfied, AuthorizationMissing, AuthorizationRejected, NotAProduct,
}

// Reasons returns every refusal reason of a bundle verification, in the
// order the SPEC's verification steps first name them.
func Reasons() []Reason { return slices.Clone(reasons) }

// auditReasons maps the replay's reasons to the bundle's: a log that does
// not chain, evidence that is missing or altered, a shard log that does not
// fold. Any other audit failure is AuditFailed.
var auditReasons = map[replay.AuditReason]Reason{
	replay.ReasonChain:   ChainBroken,
	replay.ReasonBlob:    MissingFile,
	replay.ReasonMissing: MissingFile,
	replay.ReasonShard:   ShardMismatch,
}
