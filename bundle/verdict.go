package bundle

import (
	"errors"
	"time"
)

// The two verdicts.
const (
	VerdictAccepted = "accepted"
	VerdictRefused  = "refused"
)

// Verdict is the outcome of a verification as one JSON document: what
// `proofgate bundle verify --json` prints and the verify action reports.
// A refusal carries its reason (a Reason, or a gate's own reason such as
// artifact-not-found), its detail and, once the signature verified, the
// run id; an acceptance carries what was accepted. Members are printed in
// this order, empty ones left out; approvals is always present.
type Verdict struct {
	Verdict        string `json:"verdict"` // VerdictAccepted or VerdictRefused
	Reason         string `json:"reason,omitempty"`
	Detail         string `json:"detail,omitempty"`
	RunID          string `json:"run_id,omitempty"`
	KeyID          string `json:"key_id,omitempty"`
	SignedAt       string `json:"signed_at,omitempty"`    // RFC 3339 with nanoseconds, UTC
	Signer         string `json:"signer,omitempty"`       // a keyless bundle's signing identity
	WitnessedAt    string `json:"witnessed_at,omitempty"` // a keyless bundle's witnessed time (= signed_at)
	Commit         string `json:"commit,omitempty"`
	Tree           string `json:"tree,omitempty"`
	Dirty          *bool  `json:"dirty,omitempty"` // set when accepted
	WorktreeDigest string `json:"worktree_digest,omitempty"`
	Repo           string `json:"repo,omitempty"`
	Profile        string `json:"profile,omitempty"`
	ContractHash   string `json:"contract_hash,omitempty"`
	State          string `json:"state,omitempty"`
	Digest         string `json:"verification_digest,omitempty"`
	ChainHead      string `json:"chain_head,omitempty"`
	Approvals      int    `json:"approvals"`
	Checkpoint     int    `json:"checkpoint_length,omitempty"`
	// Unsandboxed lists the checks that did not run in the docker sandbox
	// (Unsandboxed), set when accepted; absent when every check did.
	Unsandboxed []string `json:"unsandboxed,omitempty"`
	// ImplementedBy summarises the implementation run a successor's
	// bundle carries (ADR 0017), set when accepted; absent otherwise.
	ImplementedBy *ImplementationSummary `json:"implemented_by,omitempty"`
	// Authorized lists the tracking authorization targets the run
	// authorizes (bundle/authorization.go), set when accepted; absent when
	// none.
	Authorized []string `json:"authorized,omitempty"`
	// Products lists the files the run's passed checks produced (ADR
	// 0039), set when accepted; absent when none.
	Products []ProductVerdict `json:"products,omitempty"`
	// ArchiveSHA256 is the SHA-256 of the bundle file as read, set by a
	// caller that hashed it (bundle verify), so the downloaded file can be
	// matched to the verdict.
	ArchiveSHA256 string `json:"archive_sha256,omitempty"`
	// StatementOnly is true when only the signed statement was verified
	// (VerifyStatement, ADR 0040): no event log was replayed.
	StatementOnly bool `json:"statement_only,omitempty"`
}

// Verdict returns the acceptance of r.
func (r *Result) Verdict() Verdict {
	dirty := r.Run.Worktree.Dirty
	v := Verdict{Verdict: VerdictAccepted, RunID: r.RunID, KeyID: r.KeyID, SignedAt: r.SignedAt.Format(time.RFC3339Nano),
		Commit: r.Run.Source.Commit, Tree: r.Run.Source.Tree, Dirty: &dirty, WorktreeDigest: r.Run.Worktree.Digest,
		Repo: r.Run.Repo, Profile: r.Run.Profile, ContractHash: r.Run.ContractHash, State: string(r.Run.State),
		Digest: r.Run.VerificationDigest, ChainHead: r.Run.Chain.Head, Approvals: r.Approvals}
	if r.Checkpoint != nil {
		v.Checkpoint = r.Checkpoint.Length
	}
	v.Unsandboxed = Unsandboxed(&r.Run)
	v.ImplementedBy = r.Run.ImplementedBy
	v.Authorized = Authorized(&r.Run)
	v.Products = Products(&r.Run)
	v.StatementOnly = r.StatementOnly
	if !r.Witnessed.IsZero() {
		v.Signer, v.WitnessedAt = r.Signer, r.Witnessed.Format(time.RFC3339Nano)
	}
	return v
}

// Refusal is a refused verdict for reason.
func Refusal(reason, detail, runID string) Verdict {
	return Verdict{Verdict: VerdictRefused, Reason: reason, Detail: detail, RunID: runID}
}

// VerdictOf turns what Verify returned into a verdict: an acceptance, or
// the refusal a *VerifyError describes. Any other error (a *PolicyError,
// an unreadable input) is not a verdict and is returned as it is.
func VerdictOf(res *Result, err error) (Verdict, error) {
	if err == nil {
		return res.Verdict(), nil
	}
	var ve *VerifyError
	if errors.As(err, &ve) {
		return Refusal(string(ve.Reason), ve.Detail, ve.RunID), nil
	}
	return Verdict{}, err
}
