package replay

import (
	"slices"

	"github.com/proofgate/proofgate/kernel/eventlog"
)

// What a writer reads of the replay so far (kernel/run decides from it).

// State is the run's state after the events applied so far.
func (f *Folder) State() State { return f.state }

// Planned is the replayed run.planned.
func (f *Folder) Planned() PlannedData { return f.planned }

// Due is the state change the last decision moves the run to while no
// state.changed has been replayed after it (a writer killed between the
// two appends left it for the next writer), or nil.
func (f *Folder) Due() *StateData { return f.due }

// SupersededBy is the run a SUPERSEDED transition names.
func (f *Folder) SupersededBy() string { return f.supersededBy }

// Approvers is the number of approvals the lifecycle counts so far (see
// approval.Tally.Counted).
func (f *Folder) Approvers() int { return f.approvals.Counted() }

// ApprovedBy reports whether any identity of the decision already
// approved.
func (f *Folder) ApprovedBy(actor string, gh *GitHubReview) bool {
	return f.approvals.Approved(gh.Identity(actor))
}

// Decisions are the decisions replayed so far, oldest first.
func (f *Folder) Decisions() []Decision { return f.r.Decisions }

// VerificationDigest is the digest the last verification.completed
// recorded, "" before one.
func (f *Folder) VerificationDigest() string { return f.r.VerificationDigest }

// Source is the source binding of the log.
func (f *Folder) Source() eventlog.Source { return f.r.Source }

// ContractHash is the contract binding of the log.
func (f *Folder) ContractHash() string { return f.r.ContractHash }

// HeadOf returns the hash of the last of events, "" when there are none.
func HeadOf(events []eventlog.Event) string { return headOf(events) }

// Checks are the results of the checks finished so far, in the contract's
// order.
func (f *Folder) Checks() []CheckReport {
	f.collect()
	return slices.Clone(f.r.Checks)
}

// CurrentDigest is the verification digest of the checks finished so far:
// what the next verification.completed must record.
func (f *Folder) CurrentDigest() (string, error) {
	f.collect()
	return VerificationDigest(&f.r)
}
