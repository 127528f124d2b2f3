package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/proofgate/proofgate/bundle/checkpoint"
	"github.com/proofgate/proofgate/bundle/trust"
	"github.com/proofgate/proofgate/kernel/eventlog"
)

// checkpointCover is what a verified checkpoint covered: the first Length
// events of run RunID, ending at Head, signed at Time by KeyID.
type checkpointCover struct {
	RunID  string `json:"run_id"`
	Length int    `json:"length"`
	Head   string `json:"head"`
	Time   string `json:"time"`
	KeyID  string `json:"key_id"`
}

// verifyCheckpoint checks events against a signed checkpoint. It returns
// what the checkpoint covered, or a refusal reason and detail, or an error
// when the inputs are unusable.
func verifyCheckpoint(cpFile, trustFile string, events []eventlog.Event) (cover *checkpointCover, reason, detail string, err error) {
	store, err := trust.Load(trustFile)
	if err != nil {
		return nil, "", "", err
	}
	cp, err := checkpoint.ReadFile(cpFile)
	if err != nil {
		return nil, "", "", err
	}
	v, err := checkpoint.Verify(cp, store)
	if err == nil {
		err = checkpoint.Match(&v.Checkpoint, events)
	}
	if err != nil {
		var ce *checkpoint.Error
		if errors.As(err, &ce) {
			return nil, string(ce.Reason), ce.Detail, nil
		}
		return nil, string(checkpoint.Invalid), err.Error(), nil
	}
	return &checkpointCover{RunID: v.Run, Length: v.Length, Head: v.Head, Time: v.Time, KeyID: v.KeyID}, "", "", nil
}

// printCheckpointCover says, under an ok events verify, what the checkpoint
// covered and what it did not.
func printCheckpointCover(w io.Writer, c *checkpointCover, total int) {
	fmt.Fprintf(w, "checkpoint: covers events 1..%d of %d of run %s (head %s), signed at %s by key %s\n",
		c.Length, total, c.RunID, c.Head, esc(c.Time), c.KeyID)
	if total > c.Length {
		fmt.Fprintf(w, "checkpoint: events %d..%d came after it (chain only; 'proofgate events checkpoint %s' signs a new one)\n", c.Length+1, total, c.RunID)
	}
}
