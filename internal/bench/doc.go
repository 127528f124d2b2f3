// Package bench reports over a repository's run history and compares it
// with a benchmark manifest's baselines (docs/SPEC.md "Benchmarks over run history").
//
// # Report (version 1)
//
// History reads every run of the state directory in run-id order and
// reconciles each exactly as status and audit do (chain, replay against the
// frozen contract, re-hashed evidence, run.json); a run that does not
// reconcile is listed in "refused" with its audit reason and is counted
// nowhere else. History writes nothing (it never moves a run to STALE).
//
//	{"version":1,
//	 "runs":[{"run_id","state","contract_hash","suite"?,"task"?,"checks",
//	          "outcomes":{outcome:n},"evidence","context","approvals",
//	          "rejections","retries","supersedes"?,"stale","duration_ms","review_ms"?}],
//	 "refused":[{"run_id","reason","line"?,"detail"}],
//	 "aggregate":{"runs","refused","states":{state:n},"complete_rate","blocked_rate",
//	              "stale_rate","checks","check_pass_rate","approvals","retried_rate"},
//	 "manifest"?, "manifest_digest"?, "tasks"?:[...]}
//
// duration_ms runs from run.planned to the run's last event; review_ms from
// the first move to AWAITING_APPROVAL to the first decision; retries counts
// check executions beyond one per check. Rates are fractions rounded to four
// decimals.
//
// # Manifest (version 1)
//
// `.proofgate/benchmark.yaml` (or `.json`), at most MaxManifest bytes,
// strictly decoded (unknown members, duplicate keys, YAML aliases refused):
//
//	version: 1
//	suites:
//	  - id: api                 # [a-z0-9][a-z0-9._-]{0,62}, unique
//	    title: API work
//	    tasks:                  # task ids unique over the manifest
//	      - id: health-503
//	        title: Health endpoint returns 503 when the cache is down
//	        criteria: [{id: returns-503, text: GET /health answers 503}]
//	        baseline:           # written by RecordBaseline only
//	          status: passed    # passed | failed | not-run
//	          criteria: [returns-503]   # what the evidence covers
//	          evidence_digest: sha256:<hex of the evidence file>
//	          evidence_file: notes/health.txt
//	          duration_ms: 3600000      # optional observations
//	          attempts: 2
//	          review_ms: 600000
//	          actor: alice
//	          recorded_at: 2026-12-01T16:00:00Z
//
// A contract binds its runs to a task with `benchmark: {suite, task}`.
//
// # Comparability
//
// Compare marks a task comparable only when its baseline exists
// (baseline-missing), is not not-run (baseline-not-run), has an evidence
// digest and covers every acceptance criterion (baseline-evidence-missing),
// and the latest reconciled run bound to the task exists (harness-not-run)
// and is COMPLETE (harness-not-complete). For a comparable task each
// resource — duration_ms, attempts (reconciled runs bound to the task),
// review_ms — is reported alone as (baseline − run) / baseline, labelled
// improved (the run used less), regressed, unchanged, or unavailable (a
// value missing, or a baseline of 0). There is no composite score.
package bench
