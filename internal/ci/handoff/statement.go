package handoff

import "github.com/proofgate/proofgate/bundle"

// The hand-off archive is a deterministic .tar.gz of the run directory's
// evidence (run.json, events.ndjson, contract.json, the referenced blobs)
// plus attestation.dsse.json, a DSSE envelope signed by the bundle signer
// over an in-toto Statement whose predicate type is PredicateType. The
// release gate requires bundle.PredicateType, so a hand-off can never pass
// for a COMPLETE bundle.
const (
	// PredicateType is the hand-off statement's predicate type.
	PredicateType = "https://proofgate.dev/run-awaiting-approval/v1"
	// ArchiveSuffix ends the hand-off archive's name inside the zip.
	ArchiveSuffix = ".run.tar.gz"
	// MaxArtifactBytes bounds a downloaded hand-off zip.
	MaxArtifactBytes = 256 << 20
)

// Statement is the hand-off's signed statement.
type Statement struct {
	Type          string           `json:"_type"`
	Subject       []bundle.Subject `json:"subject"`
	PredicateType string           `json:"predicateType"`
	Predicate     Predicate        `json:"predicate"`
}

// Predicate is what the pull_request job asserts: the run (as a bundle
// predicate summarises it, recomputed on import) and the pull request it
// ran for.
type Predicate struct {
	SignedAt    string            `json:"signed_at"`
	KeyID       string            `json:"key_id"`
	Run         bundle.RunSummary `json:"run"`
	PullRequest PR                `json:"pull_request"`
}

// PR binds the run to the pull request's head and base commits.
type PR struct {
	Number  int    `json:"number"`
	HeadSHA string `json:"head_sha"`
	BaseSHA string `json:"base_sha"`
}
