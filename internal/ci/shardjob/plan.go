package shardjob

import (
	"bytes"
	"context"
	"strconv"

	"github.com/google/go-github/v62/github"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/sigstore"
	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/ci/artifact"
	"github.com/proofgate/proofgate/internal/ci/handoff"
	"github.com/proofgate/proofgate/internal/strictjson"
	"github.com/proofgate/proofgate/kernel/replay"
)

// The planned run of a sharded run travels as the run hand-off does
// (internal/ci/handoff, docs/SPEC.md "Run hand-off artifact"): a zip holding one
// <run id>.run.tar.gz with the run's files (run.json, events.ndjson,
// contract.json, referenced blobs) and attestation.dsse.json (plus, keyless,
// attestation.sigstore.json), the envelope over a PlanStatement whose
// predicate type is planPredicateType. The shard and merge jobs verify it
// with their own signer identity, replay it to PLANNED, and bind it to their
// workflow run and attempt, their repository, the contract they resolved
// and the commit they checked out, before installing it in their state
// directory.

// planPredicateType is the planned run statement's predicate type.
const planPredicateType = "https://proofgate.dev/run-planned/v1"

// PlanStatement is the planned run's signed statement.
type PlanStatement struct {
	Type          string           `json:"_type"`
	Subject       []bundle.Subject `json:"subject"`
	PredicateType string           `json:"predicateType"`
	Predicate     PlanPredicate    `json:"predicate"`
}

// PlanPredicate is what the plan job asserts: the planned run and the
// workflow run (and attempt) whose shard jobs execute it.
type PlanPredicate struct {
	SignedAt    string            `json:"signed_at"`
	KeyID       string            `json:"key_id"`
	Run         bundle.RunSummary `json:"run"`
	WorkflowRun WorkflowRun       `json:"workflow_run"`
}

// WorkflowRun names a workflow run attempt of a repository: the job's own,
// or the one a plan is for.
type WorkflowRun struct {
	Repository string `json:"repository"`
	ID         int64  `json:"id"`
	Attempt    int    `json:"attempt"`
}

// ReadWorkflowRun reads the job's workflow run of repository repo from
// GITHUB_RUN_ID and GITHUB_RUN_ATTEMPT, both canonical positive decimals.
func ReadWorkflowRun(getenv func(string) string, repo string) (WorkflowRun, error) {
	id, err := strconv.ParseInt(getenv("GITHUB_RUN_ID"), 10, 64)
	if err != nil || id <= 0 || strconv.FormatInt(id, 10) != getenv("GITHUB_RUN_ID") {
		return WorkflowRun{}, Refuse(NoWorkflowRun, "", "GITHUB_RUN_ID %q is not a workflow run id: a sharded run's jobs find each other's artifacts by it", getenv("GITHUB_RUN_ID"))
	}
	a, err := strconv.Atoi(getenv("GITHUB_RUN_ATTEMPT"))
	if err != nil || a <= 0 || a > 1<<20 || strconv.Itoa(a) != getenv("GITHUB_RUN_ATTEMPT") {
		return WorkflowRun{}, Refuse(NoWorkflowRun, "", "GITHUB_RUN_ATTEMPT %q is not a run attempt", getenv("GITHUB_RUN_ATTEMPT"))
	}
	return WorkflowRun{Repository: repo, ID: id, Attempt: a}, nil
}

// PackPlan packs the PLANNED run in dir for workflow run w and signs its
// statement with sign under keyID.
func PackPlan(dir string, w WorkflowRun, keyID string, sign handoff.SignFunc) ([]byte, error) {
	return handoff.Pack(dir, replay.Planned, func(rep *replay.Report, subjects []bundle.Subject, signedAt string) any {
		return &PlanStatement{Type: bundle.StatementType, PredicateType: planPredicateType, Subject: subjects,
			Predicate: PlanPredicate{SignedAt: signedAt, KeyID: keyID, Run: bundle.Summarize(rep), WorkflowRun: w}}
	}, sign)
}

// Plan is the plan job's run as a later job fetched and verified it.
type Plan struct {
	Artifact  string            // the plan artifact's name
	Files     map[string][]byte // the run's files, without the signature
	Statement *PlanStatement
	Listed    []*artifact.Artifact // the workflow run's artifacts, among which the merge selects its shards
}

// FetchPlan lists the artifacts of workflow run w of owner/repo, downloads
// its attempt's plan and opens it (openPlan) with the job's own key
// (signer) or, when kv is not nil, keyless. A plan that does not open is
// refused as PlanInvalid; binding its run to the job's contract and
// checkout and installing it are the caller's (RefusePlan).
func FetchPlan(ctx context.Context, gh *github.Client, owner, repo string, w WorkflowRun, signer envelope.Signer, kv *sigstore.Verifiers) (*Plan, error) {
	arts, err := listArtifacts(ctx, gh, owner, repo, w.ID)
	if err != nil {
		return nil, err
	}
	name, zipData, err := downloadPlan(ctx, gh, owner, repo, arts, w)
	if err != nil {
		return nil, err
	}
	files, st, err := openPlan(zipData, signer, kv, w)
	if err != nil {
		return nil, RefusePlan(name, err)
	}
	return &Plan{Artifact: name, Files: files, Statement: st, Listed: arts}, nil
}

// openPlan verifies the plan archive's signature with the job's own key
// (signer) or, when kv is not nil, keyless, its statement, the replay of
// its files to PLANNED, and that it is for workflow run w.
func openPlan(zipData []byte, signer envelope.Signer, kv *sigstore.Verifiers, w WorkflowRun) (map[string][]byte, *PlanStatement, error) {
	files, payload, wk, err := handoff.OpenSigned(zipData, signer, kv)
	if err != nil {
		return nil, nil, err
	}
	st, err := checkPlan(payload, files)
	if err != nil {
		return nil, nil, err
	}
	if wk != nil {
		if err := handoff.CheckKeylessTime(wk, st.Predicate.KeyID, st.Predicate.SignedAt, st.Predicate.Run.Repo); err != nil {
			return nil, nil, err
		}
	}
	if p := st.Predicate.WorkflowRun; p != w {
		return nil, nil, handoff.Refuse(handoff.OtherHead, "the plan is for workflow run %d attempt %d of %q, this job is run %d attempt %d of %s",
			p.ID, p.Attempt, p.Repository, w.ID, w.Attempt, w.Repository)
	}
	return files, st, nil
}

// checkPlan decodes the canonical plan statement, requires its predicate
// type and subjects that are exactly the files, and replays the files to
// the PLANNED run the statement asserts.
func checkPlan(payload []byte, files map[string][]byte) (*PlanStatement, error) {
	var st PlanStatement
	if err := strictjson.Decode(payload, &st); err != nil {
		return nil, handoff.Refuse(handoff.Malformed, "statement: %v", err)
	}
	if c, err := canon.Marshal(&st); err != nil || !bytes.Equal(c, payload) {
		return nil, handoff.Refuse(handoff.Malformed, "the statement is not its canonical JSON")
	}
	if st.Type != bundle.StatementType || st.PredicateType != planPredicateType {
		return nil, handoff.Refuse(handoff.Malformed, "statement type %q / predicate type %q, want %s", st.Type, st.PredicateType, planPredicateType)
	}
	if err := handoff.CheckSubjects(st.Subject, files); err != nil {
		return nil, err
	}
	if err := handoff.ReplayClaimed(files, replay.Planned, st.Predicate.Run, st.Predicate.SignedAt); err != nil {
		return nil, err
	}
	return &st, nil
}
