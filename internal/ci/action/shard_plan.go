package action

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/sigstore"
	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/ci/artifact"
	"github.com/proofgate/proofgate/internal/ci/handoff"
	"github.com/proofgate/proofgate/internal/ci/status"
	"github.com/proofgate/proofgate/internal/strictjson"
	"github.com/proofgate/proofgate/kernel/replay"
)

// The planned run of a sharded run travels as the run hand-off does
// (internal/ci/handoff, docs/SPEC.md "Run hand-off artifact"): a zip holding one
// <run id>.run.tar.gz with the run's files (run.json, events.ndjson,
// contract.json, referenced blobs) and attestation.dsse.json (plus, keyless,
// attestation.sigstore.json), the envelope over a PlanStatement whose
// predicate type is PlanPredicateType. The shard and merge jobs verify it
// with their own signer identity, replay it to PLANNED, and bind it to their
// workflow run and attempt, their repository, the contract they resolved
// and the commit they checked out, before installing it in their state
// directory.

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
	WorkflowRun PlanWorkflowRun   `json:"workflow_run"`
}

// PlanWorkflowRun names the workflow run attempt the plan is for.
type PlanWorkflowRun struct {
	Repository string `json:"repository"`
	ID         int64  `json:"id"`
	Attempt    int    `json:"attempt"`
}

// planShards is a mode: plan job: plan once, sign, upload.
func (j *job) planShards(ctx context.Context) (int, error) {
	tok, results := j.o.Getenv("ACTIONS_RUNTIME_TOKEN"), j.o.Getenv("ACTIONS_RESULTS_URL")
	if tok == "" || results == "" {
		return 0, shardRefuse(ShardNoArtifacts, "", "ACTIONS_RUNTIME_TOKEN or ACTIONS_RESULTS_URL is missing: the planned run cannot be uploaded for the shard jobs")
	}
	j.report(ctx, status.Pending, "sharded run planned; its shard jobs run the checks")
	// The shard jobs post nothing; the merge job reports the run's state.
	j.statusMode = status.ModeNone
	if err := j.plan(ctx); err != nil {
		return 0, err
	}
	defer j.closeRun()
	rep := j.r.Report()
	j.s.report = rep
	j.res.State = rep.State
	j.f.output("state", string(rep.State))
	keyID, sign, err := j.handoffSigner(ctx)
	if err != nil {
		return 0, err
	}
	w := j.wrun
	wr := PlanWorkflowRun{Repository: j.repo, ID: w.ID, Attempt: w.Attempt}
	data, err := handoff.Pack(j.r.Dir, replay.Planned, func(rep *replay.Report, subjects []bundle.Subject, signedAt string) any {
		return &PlanStatement{Type: bundle.StatementType, PredicateType: PlanPredicateType, Subject: subjects,
			Predicate: PlanPredicate{SignedAt: signedAt, KeyID: keyID, Run: bundle.Summarize(rep), WorkflowRun: wr}}
	}, sign)
	if err != nil {
		return 0, environment("pack the planned run: %w", err)
	}
	name := PlanArtifactName(w.ID, w.Attempt)
	if _, err := uploadArtifact(ctx, j.f, tok, results, name, map[string][]byte{j.r.ID + handoff.ArchiveSuffix: data}); err != nil {
		return 0, shardRefuse(ShardNoArtifacts, name, "upload: %v", err)
	}
	j.f.output("plan-artifact", name)
	j.s.notes = append(j.s.notes, fmt.Sprintf("Sharded run planned: run %s (%d checks) uploaded, signed, as artifact %s for the shard jobs of workflow run %d, attempt %d.",
		code(j.r.ID), len(j.c.Checks), code(name), w.ID, w.Attempt))
	return ExitOK, nil
}

// importPlan finds, verifies and installs the plan job's run; j.r is then
// the planned run, open.
func (j *job) importPlan(ctx context.Context, kv *sigstore.Verifiers) error {
	w := j.wrun
	name := PlanArtifactName(w.ID, w.Attempt)
	arts, err := j.listRunArtifacts(ctx)
	if err != nil {
		return err
	}
	var found []*runArtifact
	for _, a := range arts {
		if a.Name == name {
			found = append(found, a)
		}
	}
	switch {
	case len(found) == 0:
		return shardRefuse(ShardPlanMissing, name, "workflow run %d attempt %d has no such artifact: the mode: plan job must run first (needs:), and a re-run must re-run all jobs", w.ID, w.Attempt)
	case len(found) > 1:
		return shardRefuse(ShardDuplicate, name, "listed %d times", len(found))
	case found[0].Expired:
		return shardRefuse(ShardExpired, name, "the artifact has expired")
	}
	zipData, err := artifact.Download(ctx, j.gh, j.owner, j.name, found[0].ID, handoff.MaxArtifactBytes)
	if err != nil {
		return shardRefuse(ShardAPI, name, "download: %v", err)
	}
	files, st, err := j.openPlan(zipData, kv)
	if err != nil {
		return planInvalid(name, err)
	}
	if err := j.bindPlan(ctx, st); err != nil {
		return planInvalid(name, err)
	}
	if err := j.installRun(st.Predicate.Run.RunID, files); err != nil {
		return planInvalid(name, err)
	}
	j.res.RunID = j.r.ID
	j.f.output("run-id", j.r.ID)
	j.f.logf("proofgate: imported planned run %s from %s (signature, chain, workflow run, contract and commit verified)", j.r.ID, name)
	return nil
}

// planInvalid makes a hand-off refusal of the plan a ShardError.
func planInvalid(name string, err error) error {
	var fe *handoff.Error
	if errors.As(err, &fe) {
		return &ShardError{Reason: ShardPlanInvalid, Artifact: name, Detail: fe.Error(), Err: err}
	}
	return &ShardError{Reason: ShardPlanInvalid, Artifact: name, Detail: err.Error(), Err: err}
}

// openPlan verifies the plan archive's signature and statement and replays
// its files to PLANNED.
func (j *job) openPlan(zipData []byte, kv *sigstore.Verifiers) (map[string][]byte, *PlanStatement, error) {
	files, payload, wk, err := handoff.OpenSigned(zipData, j.signer, kv)
	if err != nil {
		return nil, nil, err
	}
	var st PlanStatement
	if err := strictjson.Decode(payload, &st); err != nil {
		return nil, nil, handoff.Refuse(handoff.Malformed, "statement: %v", err)
	}
	if c, err := canon.Marshal(&st); err != nil || !bytes.Equal(c, payload) {
		return nil, nil, handoff.Refuse(handoff.Malformed, "the statement is not its canonical JSON")
	}
	if st.Type != bundle.StatementType || st.PredicateType != PlanPredicateType {
		return nil, nil, handoff.Refuse(handoff.Malformed, "statement type %q / predicate type %q, want %s", st.Type, st.PredicateType, PlanPredicateType)
	}
	if err := handoff.CheckSubjects(st.Subject, files); err != nil {
		return nil, nil, err
	}
	if err := handoff.ReplayClaimed(files, replay.Planned, st.Predicate.Run, st.Predicate.SignedAt); err != nil {
		return nil, nil, err
	}
	if wk != nil {
		if err := handoff.CheckKeylessTime(wk, st.Predicate.KeyID, st.Predicate.SignedAt, st.Predicate.Run.Repo); err != nil {
			return nil, nil, err
		}
	}
	return files, &st, nil
}

// bindPlan requires the plan to be for this workflow run and attempt, this
// repository, the contract this job resolved and the commit it checked out.
func (j *job) bindPlan(ctx context.Context, st *PlanStatement) error {
	p, r := st.Predicate.WorkflowRun, st.Predicate.Run
	if p.ID != j.wrun.ID || p.Attempt != j.wrun.Attempt || p.Repository != j.repo {
		return handoff.Refuse(handoff.OtherHead, "the plan is for workflow run %d attempt %d of %q, this job is run %d attempt %d of %s",
			p.ID, p.Attempt, p.Repository, j.wrun.ID, j.wrun.Attempt, j.repo)
	}
	return j.bindSummary(ctx, r, "the run was planned under contract %s, this job resolved %s",
		"the run was planned for commit %s, the checkout is %s")
}
