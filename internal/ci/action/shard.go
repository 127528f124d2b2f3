package action

// Sharded runs (issue 17; docs/action.md "Shards"; internal/shard's package
// doc "Who plans"). A contract's checks run as the matrix jobs of one
// workflow run, in three kinds of job:
//
//   - mode: plan (one job) plans the run once and uploads it, signed by the
//     job's signer as a run hand-off is (key or keyless), as artifact
//     PlanArtifactPrefix+"<GITHUB_RUN_ID>-<GITHUB_RUN_ATTEMPT>".
//   - mode: run with shard: I/N (the matrix jobs, needs: the plan job)
//     import and verify the plan, execute shard I of N (internal/shard.Exec),
//     sign the shard directory (bundle.SignShard / SignShardWith) and upload
//     it as ShardArtifactName: "proofgate-shard-<GITHUB_RUN_ID>-
//     <GITHUB_RUN_ATTEMPT>-<I>-of-<N>", a zip of the shard directory.
//   - mode: merge (one job, needs: the matrix) imports the plan, lists the
//     workflow run's artifacts (GET /repos/{o}/{r}/actions/runs/{run_id}/
//     artifacts), takes exactly the shard artifacts of its own run and
//     attempt, requires each index 1..N once and one N, downloads them,
//     and merges them with internal/shard.Merge, which verifies each shard's
//     signature with the job's own signer identity (the job's key, or the
//     trusted root and the job's own OIDC identity), chain, binding and
//     coverage. The merged run then counts approvals, signs and uploads the
//     bundle as an unsharded run does.
//
// The run id and attempt in the names keep a merge from ever seeing the
// shards of another workflow run (the listing is per run, and each listed
// artifact's workflow_run.id must be the job's) or of another attempt of
// the same run (a re-run re-plans: its shards bind to another run id).
// A re-run must therefore re-run all jobs of the workflow run: "re-run
// failed jobs" re-runs a failed shard and the merge in a new attempt whose
// plan artifact does not exist, which the shard job refuses (plan-missing).

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/proofgate/proofgate/internal/shard"
	"github.com/proofgate/proofgate/kernel/exit"
)

// Values of input mode.
const (
	ModeRun   = "run"   // plan and execute (with input shard: execute one shard of a planned run)
	ModePlan  = "plan"  // plan a sharded run once and upload it for the shard and merge jobs
	ModeMerge = "merge" // merge the workflow run's shards, then approve, sign and upload
)

// Artifact names of a sharded run.
const (
	// PlanArtifactPrefix starts the planned run's artifact name,
	// proofgate-plan-<GITHUB_RUN_ID>-<GITHUB_RUN_ATTEMPT>.
	PlanArtifactPrefix = "proofgate-plan-"
	// ShardArtifactPrefix starts a shard's artifact name,
	// proofgate-shard-<GITHUB_RUN_ID>-<GITHUB_RUN_ATTEMPT>-<I>-of-<N>.
	ShardArtifactPrefix = "proofgate-shard-"
	// PlanPredicateType is the planned run statement's predicate type.
	PlanPredicateType = "https://proofgate.dev/run-planned/v1"
	// MaxShardArtifactBytes bounds a downloaded shard zip (and its files).
	MaxShardArtifactBytes = 256 << 20
	// MaxRunArtifacts bounds the artifacts a merge job lists for its run.
	MaxRunArtifacts = 1000
)

// ShardReason is why a plan, shard or merge job refused. The kernel's
// merge refusals (internal/shard Reason: missing, duplicate, foreign,
// tampered, untrusted, overlap, running, order, unassigned) keep their
// names.
type ShardReason string

// Reasons the action itself refuses (beside the kernel's).
const (
	ShardNoWorkflowRun ShardReason = "no-workflow-run" // GITHUB_RUN_ID or GITHUB_RUN_ATTEMPT missing or malformed
	ShardNoToken       ShardReason = "no-github-token" // the artifacts of the run cannot be listed
	ShardNoSigner      ShardReason = "no-signer"       // key mode without a key: nothing signs or verifies
	ShardNoArtifacts   ShardReason = "no-artifact-service"
	ShardPlanMissing   ShardReason = "plan-missing" // no plan artifact of this run and attempt
	ShardPlanInvalid   ShardReason = "plan-invalid" // its signature, statement or binding does not hold
	ShardMissing       ShardReason = ShardReason(shard.Missing)
	ShardDuplicate     ShardReason = ShardReason(shard.Duplicate)
	ShardForeign       ShardReason = ShardReason(shard.Foreign)
	ShardCount         ShardReason = "count-mismatch" // shard artifacts of this attempt disagree on N
	ShardExpired       ShardReason = "expired"
	ShardMalformed     ShardReason = "malformed" // the zip or its files
	ShardAPI           ShardReason = "github-api"
)

// ShardError is a refused plan, shard or merge step.
type ShardError struct {
	Reason   ShardReason
	Artifact string // the artifact it concerns, "" for none
	Detail   string
	Err      error
}

func (e *ShardError) Error() string {
	if e.Artifact != "" {
		return fmt.Sprintf("sharded run refused (%s): artifact %s: %s", e.Reason, e.Artifact, e.Detail)
	}
	return fmt.Sprintf("sharded run refused (%s): %s", e.Reason, e.Detail)
}

// Unwrap returns the underlying error.
func (e *ShardError) Unwrap() error { return e.Err }

func shardRefuse(r ShardReason, artifact, format string, args ...any) *ShardError {
	return &ShardError{Reason: r, Artifact: artifact, Detail: fmt.Sprintf(format, args...)}
}

// shardClass is the exit class of a sharded step's error: the GitHub API
// and the artifact service are the environment's, input is usage, every
// other refusal is a refusal.
func shardClass(err error) exit.Class {
	var se *ShardError
	if errors.As(err, &se) {
		switch se.Reason {
		case ShardAPI, ShardNoArtifacts:
			return exit.Environment
		case ShardNoWorkflowRun, ShardNoToken, ShardNoSigner:
			return exit.Usage
		}
	}
	return exit.Refused
}

// readShardInputs reads inputs mode and shard into in.
func readShardInputs(f *workflow, in *inputs) error {
	in.mode = strings.ToLower(strings.TrimSpace(f.input("mode")))
	switch in.mode {
	case "":
		in.mode = ModeRun
	case ModeRun, ModePlan, ModeMerge:
	default:
		return fmt.Errorf("input mode: %q is not run, plan or merge", in.mode)
	}
	v := strings.TrimSpace(f.input("shard"))
	if v == "" {
		return nil
	}
	if in.mode != ModeRun {
		return fmt.Errorf("input shard: %q is set, but a mode: %s job executes no shard (shard is for the matrix jobs, mode: run)", v, in.mode)
	}
	sp, err := shard.ParseSpec(v)
	if err != nil {
		var se *shard.SpecError
		if errors.As(err, &se) {
			return fmt.Errorf("input shard: %q: %s (want I/N with 1 <= I <= N <= %d, e.g. shard: ${{ matrix.shard }})", v, se.Detail, shard.MaxShards)
		}
		return fmt.Errorf("input shard: %w", err)
	}
	in.shard = &sp
	return nil
}

// workflowRun is the job's workflow run and attempt.
type workflowRun struct {
	ID      int64
	Attempt int
}

// readWorkflowRun reads GITHUB_RUN_ID and GITHUB_RUN_ATTEMPT, both
// canonical positive decimals.
func readWorkflowRun(getenv func(string) string) (workflowRun, error) {
	id, err := strconv.ParseInt(getenv("GITHUB_RUN_ID"), 10, 64)
	if err != nil || id <= 0 || strconv.FormatInt(id, 10) != getenv("GITHUB_RUN_ID") {
		return workflowRun{}, shardRefuse(ShardNoWorkflowRun, "", "GITHUB_RUN_ID %q is not a workflow run id: a sharded run's jobs find each other's artifacts by it", getenv("GITHUB_RUN_ID"))
	}
	a, err := strconv.Atoi(getenv("GITHUB_RUN_ATTEMPT"))
	if err != nil || a <= 0 || a > 1<<20 || strconv.Itoa(a) != getenv("GITHUB_RUN_ATTEMPT") {
		return workflowRun{}, shardRefuse(ShardNoWorkflowRun, "", "GITHUB_RUN_ATTEMPT %q is not a run attempt", getenv("GITHUB_RUN_ATTEMPT"))
	}
	return workflowRun{ID: id, Attempt: a}, nil
}

// PlanArtifactName is the planned run's artifact of workflow run w.
func PlanArtifactName(runID int64, attempt int) string {
	return fmt.Sprintf("%s%d-%d", PlanArtifactPrefix, runID, attempt)
}

// ShardArtifactName is shard s's artifact of workflow run runID, attempt.
func ShardArtifactName(runID int64, attempt int, s shard.Spec) string {
	return fmt.Sprintf("%s%d-%d-%d-of-%d", ShardArtifactPrefix, runID, attempt, s.Index, s.Count)
}

// parseShardArtifactName returns the spec of a shard artifact of runID and
// attempt; ok is false for any other name (another run's, another
// attempt's, not a shard's, or not canonical).
func parseShardArtifactName(name string, runID int64, attempt int) (shard.Spec, bool) {
	rest, ok := strings.CutPrefix(name, fmt.Sprintf("%s%d-%d-", ShardArtifactPrefix, runID, attempt))
	if !ok {
		return shard.Spec{}, false
	}
	is, ns, ok := strings.Cut(rest, "-of-")
	if !ok {
		return shard.Spec{}, false
	}
	i, err1 := strconv.Atoi(is)
	n, err2 := strconv.Atoi(ns)
	s := shard.Spec{Index: i, Count: n}
	if err1 != nil || err2 != nil || i < 1 || i > n || n > shard.MaxShards || ShardArtifactName(runID, attempt, s) != name {
		return shard.Spec{}, false
	}
	return s, true
}
