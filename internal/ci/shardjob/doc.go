// Package shardjob holds the plan, shard and merge jobs of a sharded run on
// GitHub Actions (issue 17; docs/action.md "Shards"; internal/shard's
// package doc "Who plans"): their artifact names, the signed plan
// statement, selecting a workflow run's shard artifacts, and their refusal
// reasons. A contract's checks run as the matrix jobs of one workflow run,
// in three kinds of job:
//
//   - mode: plan (one job) plans the run once and uploads it, signed by the
//     job's signer as a run hand-off is (key or keyless, PackPlan), as
//     artifact PlanArtifactName: "proofgate-plan-<GITHUB_RUN_ID>-
//     <GITHUB_RUN_ATTEMPT>".
//   - mode: run with shard: I/N (the matrix jobs, needs: the plan job)
//     import and verify the plan (FetchPlan), execute shard I of N
//     (internal/shard.Exec), sign the shard directory (bundle.SignShard /
//     SignShardWith) and upload it (ReadShard) as ShardArtifactName:
//     "proofgate-shard-<GITHUB_RUN_ID>-<GITHUB_RUN_ATTEMPT>-<I>-of-<N>", a
//     zip of the shard directory.
//   - mode: merge (one job, needs: the matrix) imports the plan, lists the
//     workflow run's artifacts (GET /repos/{o}/{r}/actions/runs/{run_id}/
//     artifacts, FetchPlan), takes exactly the shard artifacts of its own
//     run and attempt, requires each index 1..N once and one N, downloads
//     them (DownloadShards), and merges them with internal/shard.Merge,
//     which verifies each shard's signature with the job's own signer
//     identity (Verifier: the job's key, or KeylessVerifiers: the trusted
//     root and the job's own OIDC identity), chain, binding and coverage
//     (MergeRefusal names a refused shard's artifact). The merged run then
//     counts approvals, signs and uploads the bundle as an unsharded run
//     does.
//
// The run id and attempt in the names keep a merge from ever seeing the
// shards of another workflow run (the listing is per run, and each listed
// artifact's workflow_run.id must be the job's) or of another attempt of
// the same run (a re-run re-plans: its shards bind to another run id).
// A re-run must therefore re-run all jobs of the workflow run: "re-run
// failed jobs" re-runs a failed shard and the merge in a new attempt whose
// plan artifact does not exist, which the shard job refuses (plan-missing).
//
// A refusal is an *Error naming its Reason; Class is its exit class. Reading
// the jobs' inputs, executing and merging the shard, uploading, and
// reporting are the action's (internal/ci/action, shard*.go).
package shardjob
