package action

import (
	"context"
	"fmt"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/sigstore"
	"github.com/proofgate/proofgate/internal/ci/ghapi"
)

// maxStoreCandidates bounds how many stored statements one lookup verifies.
const maxStoreCandidates = 10

// verifyStore is the gate's last resort when no workflow artifact holds a
// bundle for the release (ADR 0040): with a subject and a trusted root, it
// lists the repository's attestation store for the first subject's digest
// (GET /repos/{owner}/{repo}/attestations/sha256:<hex>) and verifies each
// stored ProofGate statement with bundle.VerifyStatement under the gate's
// policy, the first accepted winning. The event log is not replayed: the
// verdict says statement_only. Without a subject or a trusted root, or
// when the store holds nothing for it, the artifact search's refusal miss
// stands.
func (g *gate) verifyStore(ctx context.Context, miss *refusal) *refusal {
	if len(g.opts.RequireSubjects) == 0 || g.mv == nil {
		return miss
	}
	d := "sha256:" + g.opts.RequireSubjects[0]
	stored, err := ghapi.Attestations(ctx, g.gh, g.owner, g.name, d, bundle.PredicateType, maxStoreCandidates)
	if err != nil {
		return &refusal{miss.class, miss.reason, miss.detail + "; the attestation store: " + err.Error()}
	}
	if len(stored) == 0 {
		return &refusal{miss.class, miss.reason, miss.detail + "; the attestation store holds no ProofGate statement for " + d}
	}
	var first *Attempt
	for i, comp := range stored {
		att := g.verifyStored(comp, fmt.Sprintf("attestation store %s #%d", d, i+1))
		if att.Verdict == VerdictAccepted {
			return nil
		}
		if first == nil {
			first = &att
		}
	}
	return &refusal{miss.class, first.Reason, first.Detail}
}

// verifyStored verifies one stored Sigstore bundle as a statement.
func (g *gate) verifyStored(comp []byte, label string) Attempt {
	res := g.res
	rec := &witnessRecorder{mv: g.mv}
	var r *bundle.Result
	env, err := sigstore.ArchiveEnvelope(comp)
	if err == nil {
		var p *bundle.Policy
		if p, err = g.opts.Policy(); err == nil {
			opts := []bundle.VerifierOption{bundle.WithMaterialVerifiers(rec)}
			if !g.opts.Now.IsZero() {
				opts = append(opts, bundle.WithCurrentTime(g.opts.Now))
			}
			r, err = bundle.NewVerifier(nil, opts...).VerifyStatement(env, comp, p)
		}
	}
	v, verr := bundle.VerdictOf(r, err)
	if verr != nil {
		v = bundle.Refusal(string(bundle.Malformed), verr.Error(), "")
	}
	if v.Verdict == VerdictAccepted {
		res.Accepted, res.RunID = r, r.RunID
		if rec.last != nil {
			res.Signer, res.Witnessed = rec.last.Signer(), rec.last.WitnessedAt()
		}
		g.f.logf("proofgate: accepted the signed statement of run %s from the attestation store; its event log was not replayed (the workflow artifact is gone)", r.RunID)
	}
	att := Attempt{Artifact: label, Verdict: v.Verdict, Reason: v.Reason, Detail: v.Detail}
	res.Attempts = append(res.Attempts, att)
	return att
}
