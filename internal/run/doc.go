// Package run is the writer side of the kernel: it plans a run from a
// resolved contract and the repository's source state, executes its checks
// through the runtime providers (kernel/runtime), records every fact in the
// run's hash-chained event log under the run's writer lock, and records
// human decisions, cancellations, retries and lock breaks.
//
// A run lives in <state>/runs/<run-id>/ (Store): events.ndjson, the source
// of truth; run.json, its projection; contract.json, the frozen contract;
// blobs/sha256/<hex>, the evidence; events.lock; procs/, the process
// records of running checks (docs/SPEC.md section 2).
//
// Everything that decides what a log means lives in kernel/replay, which
// verifiers import without this package: the lifecycle, the event-type
// table, the replay, the audit and the verification digest; callers name
// those types (replay.Report, replay.State, the event data) there. Its own
// rules are the ones only a writer needs: planning refuses
// a dirty work tree unless allowed (DirtyError); a decision reconciles the
// run on disk, refuses a stale one and appends one approval.recorded (a
// writer killed before its state.changed leaves it for the next writer,
// ADR 0006); Inspect (status, audit) reconciles before it reports and moves
// a run whose source or contract changed to STALE (never an IMPLEMENTING
// one: its agent changes the tree by design). A run that an agent's
// sessions changed is verified by a successor (PlanOptions.ImplementedBy,
// ADR 0017): planned on the tree the agent left, with the implementation
// run's contract, recording its chain head in run.planned's implemented_by
// and superseding it; ImplementedByError says why one is refused.
//
// The typical sequence, as `proofgate run` does it:
//
//	r, err := run.Plan(ctx, run.PlanOptions{RepoDir: repo, StateDir: state, Contract: c, Origin: origin})
//	err = r.Exec(ctx, run.ExecOptions{RepoDir: repo, StateDir: state, Runtimes: providers, Jobs: 2})
//	err = r.Decide(ctx, run.DecisionOptions{Actor: "alice", Fresh: run.Freshness{RepoDir: repo, StateDir: state}})
//	err = r.Close()
package run
