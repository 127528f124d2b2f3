// Package handoff is the GitHub Action's run hand-off (ADR 0018,
// docs/SPEC.md "Run hand-off artifact"): a run one job seals as a signed
// archive and a later job opens and checks. The pull_request job hands its
// AWAITING_APPROVAL run to the review job (the fast path), the plan job its
// PLANNED run to the shard jobs.
//
// Sealing (Export, Pack) packs the run directory's evidence and signs an
// in-toto statement over it; opening (Open, OpenSigned) verifies the
// signature with the job's own key or keyless against a trusted root and
// the job's own identity, the statement, its subjects and the replay of the
// files. Importing (Importer.Import) finds the newest trusted artifact for
// the pull request's head, opens it, binds the run to the importing job
// (its PR head, repository, contract and checkout: Binding) and installs
// it in the job's state directory (Install). A refusal is an *Error naming
// its Reason. Which key, root and identity the job verifies with, and the
// artifacts' upload, are the action's (internal/ci/action).
package handoff
