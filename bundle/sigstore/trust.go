package sigstore

import (
	"fmt"

	"github.com/proofgate/proofgate/bundle/trust"
)

// TrustIdentities are the identity policies of a trust store, each valid
// only inside its lifecycle (status, window, retirement, revocation) at
// the witnessed time; nil for a nil store.
func TrustIdentities(s *trust.Store) []Identity {
	if s == nil {
		return nil
	}
	ids := make([]Identity, 0, len(s.Identities))
	for n := range s.Identities {
		ti := &s.Identities[n]
		ids = append(ids, Identity{Name: fmt.Sprintf("trust.json identities[%d] (%s)", n, ti.ID),
			Issuer: ti.Issuer, SignerWorkflow: ti.SignerWorkflow, SourceRepo: ti.SourceRepo, SourceRef: ti.SourceRef,
			Valid: ti.CheckWitnessed})
	}
	return ids
}
