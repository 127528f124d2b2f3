package bundle

import (
	"slices"
	"strings"

	"github.com/proofgate/proofgate/kernel/eventlog"
	"github.com/proofgate/proofgate/kernel/replay"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// Media and type URIs of the attestation.
const (
	PayloadType   = "application/vnd.in-toto+json"
	StatementType = "https://in-toto.io/Statement/v1"
	PredicateType = "https://proofgate.dev/evidence/v1"
)

// File names inside a bundle.
const (
	AttestationFile = "attestation.dsse.json"
	RunFile         = "run.json"
	EventsFile      = "events.ndjson"
	ContractFile    = "contract.json"
	CheckpointFile  = "checkpoint.dsse.json"
	BlobPrefix      = "blobs/sha256/"
)

// Statement is the in-toto Statement v1 signed in attestation.dsse.json.
type Statement struct {
	Type          string    `json:"_type"`
	Subject       []Subject `json:"subject"`
	PredicateType string    `json:"predicateType"`
	Predicate     Predicate `json:"predicate"`
}

// Subject is one file of the bundle and its digest.
type Subject struct {
	Name   string            `json:"name"`
	Digest map[string]string `json:"digest"` // {"sha256": "<64 hex>"}
}

// Predicate is the evidence predicate (PredicateType).
type Predicate struct {
	// SignedAt is the signing time the signer asserts (RFC 3339, UTC):
	// key validity windows, retirement and revocation apply to it.
	SignedAt string `json:"signed_at"`
	// KeyID repeats the signature's keyid inside the signed bytes.
	KeyID string     `json:"key_id"`
	Run   RunSummary `json:"run"`
}

// RunSummary is what the bundle asserts about the run; verify recomputes
// it from the files with replay.AuditFS and requires equality.
type RunSummary struct {
	RunID   string          `json:"run_id"`
	State   replay.State    `json:"state"`
	Source  eventlog.Source `json:"source"`
	Repo    string          `json:"repo,omitempty"`
	Profile string          `json:"profile,omitempty"`
	// Worktree says whether the checks ran on the committed content
	// (dirty false) or on a work tree with uncommitted changes, and its
	// digest. A gate refuses a dirty run unless told otherwise.
	Worktree           replay.Worktree   `json:"worktree"`
	ContractHash       string            `json:"contract_hash"`
	VerificationDigest string            `json:"verification_digest"`
	Chain              Chain             `json:"chain"`
	Checks             []CheckSummary    `json:"checks"`
	Decisions          []replay.Decision `json:"decisions"`
	// ImplementedBy summarises the implementation run the bundle carries
	// (ADR 0017), when the run was planned with implemented_by.
	ImplementedBy *ImplementationSummary `json:"implemented_by,omitempty"`
	// Authorizations are the run's tracking authorizations
	// (authorization.recorded), oldest first; absent when none, so the
	// predicate of a run without one is unchanged.
	Authorizations []replay.Authorization `json:"authorizations,omitempty"`
}

// Chain is the event chain's head hash and length.
type Chain struct {
	Head   string `json:"head"`
	Length int    `json:"length"`
}

// CheckSummary is one check's outcome and how it ran.
type CheckSummary struct {
	ID         string          `json:"id"`
	Outcome    runtime.Outcome `json:"outcome"`
	ExitCode   int             `json:"exit_code"`
	DurationMS int64           `json:"duration_ms"`
	Stdout     *runtime.Stream `json:"stdout,omitempty"`
	Stderr     *runtime.Stream `json:"stderr,omitempty"`
	Runtime    *RuntimeSummary `json:"runtime,omitempty"`
	// Products are the files the passed check produced (ADR 0039), each
	// also a subject of the statement (ProductSubject).
	Products []replay.Product `json:"products,omitempty"`
}

// ProductPrefix starts the subject name of a product: products/<check
// id>/<path> (ADR 0039). No file of a bundle archive has such a name: a
// product is attested by its digest, and travels beside the bundle.
const ProductPrefix = "products/"

// ProductSubject is the subject name of check's product at path.
func ProductSubject(check, path string) string { return ProductPrefix + check + "/" + path }

// productSubjects are the product subjects of s: name → sha256 hex.
func productSubjects(s *RunSummary) map[string]string {
	out := map[string]string{}
	for _, c := range s.Checks {
		for _, p := range c.Products {
			out[ProductSubject(c.ID, p.Path)] = strings.TrimPrefix(p.Digest, "sha256:")
		}
	}
	return out
}

// RuntimeSummary summarises a check's runtime attestation.
type RuntimeSummary struct {
	Provider    string `json:"provider"`
	Sandboxed   bool   `json:"sandboxed"`
	ImageRef    string `json:"image_ref,omitempty"`
	ImageID     string `json:"image_id,omitempty"`
	ImagePin    string `json:"image_pin,omitempty"` // "image-id" only (ADR 0031)
	ProfileHash string `json:"profile_hash,omitempty"`
}

// Summarize derives the predicate's run summary from an audit report.
func Summarize(r *replay.Report) RunSummary {
	s := RunSummary{
		RunID:              r.RunID,
		State:              r.State,
		Source:             r.Source,
		Repo:               r.Repo,
		Profile:            r.Profile,
		ContractHash:       r.ContractHash,
		VerificationDigest: r.VerificationDigest,
		Chain:              Chain{Head: r.ChainHead, Length: r.ChainLength},
		Checks:             []CheckSummary{},
		Decisions:          append([]replay.Decision{}, r.Decisions...),
		Authorizations:     slices.Clone(r.Authorizations),
	}
	if r.Worktree != nil {
		s.Worktree = *r.Worktree
	}
	for _, c := range r.Checks {
		cs := CheckSummary{ID: c.ID, Outcome: c.Outcome, ExitCode: c.ExitCode, DurationMS: c.DurationMS,
			Stdout: c.Stdout, Stderr: c.Stderr, Products: slices.Clone(c.Products)}
		if a := c.Attestation; a != nil {
			cs.Runtime = &RuntimeSummary{Provider: a.Provider, Sandboxed: a.Sandboxed,
				ImageRef: a.ImageRef, ImageID: a.ImageID, ImagePin: a.ImagePin, ProfileHash: a.ProfileHash}
		}
		s.Checks = append(s.Checks, cs)
	}
	return s
}
