package run

import (
	"fmt"

	"github.com/proofgate/proofgate/kernel/eventlog"
	"github.com/proofgate/proofgate/kernel/replay"
)

// AppendEvidence records runtime evidence in the run's log (kernel/replay's
// evidence.go): it stores blobs (the captured streams, an observation's
// artifacts) in the run's blob store, so they travel in the bundle and the
// audit checks them, then appends typ, evidence.collected or
// evidence.verdict, with data. The events change no state.
func (r *Run) AppendEvidence(typ string, data any, blobs ...[]byte) (eventlog.Event, error) {
	if typ != replay.TypeEvidenceCollected && typ != replay.TypeEvidenceVerdict {
		return eventlog.Event{}, fmt.Errorf("event type %q is not an evidence event", typ)
	}
	for _, b := range blobs {
		if _, err := r.blobs.Put(b); err != nil {
			return eventlog.Event{}, fmt.Errorf("evidence blob: %w", err)
		}
	}
	return r.Append(typ, data)
}

// Collection is the evidence.collected this run's log records for
// collection id.
func (r *Run) Collection(id string) (replay.EvidenceCollectedData, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fold.Collection(id)
}
