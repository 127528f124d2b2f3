// Package app is the application layer: the work of a verb, with plain
// options in and results out, shared by the command line (cmd/proofgate)
// and the GitHub Action (internal/ci/action), which only parse their
// inputs, call it and render what it returns. Plan, exec and decide need
// no function here: both applications call internal/run directly.
//
// One file a verb (or family):
//
//   - runtimes.go: the runtimes a contract needs (Connect)
//   - list.go, output.go: a state directory's runs (List), a check's
//     recorded output (OpenOutput)
//   - export.go: a run's signed bundle, its companion Sigstore bundle and
//     products (Export); agentsession.go: an agent-session bundle
//     (ExportAgentSession)
//   - vsa.go: a signed verification summary and its policy document
//     (WriteSummary); gatepolicy.go: a gate policy file, read by bundle
//     verify --policy and the verify action's input policy
//     (ParseGatePolicy, CheckTrust)
//   - events.go, checkpoint.go: verifying event logs and checkpoints, a
//     writer's lock (VerifyEvents, VerifyStateChains, Unlock,
//     CheckpointRun, CheckpointState)
//   - prune.go, clean.go, caches.go, orphans.go: the cleanup family
//     (PruneScan, PruneApply, CleanRoots, PruneCaches, CollectOrphans)
//   - session.go, tool.go, implement.go, authorize.go, status.go: an
//     agent's sessions and calls (OpenSession, ListTools, CallTool,
//     DecideCall, PlanImplementing), authorizations (Authorize), the
//     calls a status shows as waiting (NewStatusDoc)
//   - shard.go: a shard's execution and the merge (ExecShard, Merge)
//   - evidence.go, benchmark.go: claims evidence (Collect, Verdict),
//     benchmark reports (BenchmarkReport, RecordBaseline)
//   - init.go: the starter contract, workflows, key pair and .gitignore
//     lines init writes, every one refused before any is written when one
//     exists (Init)
//   - doctor.go, doctor_ready.go: what a run needs, as findings (Doctor)
//
// The errors a caller acts on carry their exit class (kernel/exit); a
// failed write of a file the user named is the caller's to word.
package app
