package gate

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/sigstore"
	"github.com/proofgate/proofgate/internal/ci/ghapi"
)

// maxStoreCandidates bounds how many stored statements one lookup verifies.
const maxStoreCandidates = 10

// verifyStore is the gate's last resort when no workflow artifact holds a
// bundle for the release (ADR 0040): with a subject and material
// verifiers (a trusted root), it lists the repository's attestation store
// for the first subject's digest (GET
// /repos/{owner}/{repo}/attestations/sha256:<hex>) and verifies each
// stored ProofGate statement with bundle.VerifyStatement under the gate's
// policy, the first accepted winning. The event log is not replayed: the
// verdict says statement_only. Without a subject or material verifiers,
// or when the store holds nothing for it, the artifact search's refusal
// miss stands.
func (s *search) verifyStore(ctx context.Context, miss *Refusal) *Refusal {
	p := s.o.Policy
	if len(p.RequireSubjects) == 0 || p.Material == nil {
		return miss
	}
	d := "sha256:" + p.RequireSubjects[0]
	stored, err := ghapi.Attestations(ctx, s.o.GitHub, s.o.Owner, s.o.Name, d, bundle.PredicateType, maxStoreCandidates)
	if err != nil {
		return &Refusal{miss.Class, miss.Reason, miss.Detail + "; the attestation store: " + err.Error()}
	}
	if len(stored) == 0 {
		return &Refusal{miss.Class, miss.Reason, miss.Detail + "; the attestation store holds no ProofGate statement for " + d}
	}
	return firstAccepted(stored, func(i int, comp json.RawMessage) Attempt {
		return s.verifyStored(comp, fmt.Sprintf("attestation store %s #%d", d, i+1))
	})
}

// verifyStored verifies one stored Sigstore bundle as a statement.
func (s *search) verifyStored(comp []byte, label string) Attempt {
	var r *bundle.Result
	env, err := sigstore.ArchiveEnvelope(comp)
	if err == nil {
		var p *bundle.Policy
		if p, err = s.o.Policy.Policy(); err == nil {
			v := bundle.NewVerifier(nil, bundle.WithMaterialVerifiers(s.o.Policy.Material), bundle.WithCurrentTime(s.o.Policy.Now))
			r, err = v.VerifyStatement(env, comp, p)
		}
	}
	return s.record(label, verdictOf(r, err), r)
}
