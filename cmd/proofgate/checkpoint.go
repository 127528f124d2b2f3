package main

import (
	"errors"

	"github.com/proofgate/proofgate/bundle/checkpoint"
	"github.com/proofgate/proofgate/bundle/trust"
	"github.com/proofgate/proofgate/kernel/eventlog"
)

// verifyCheckpoint checks events against a signed checkpoint. It returns
// the checkpoint's length, or a refusal reason and detail, or an error when
// the inputs are unusable.
func verifyCheckpoint(cpFile, trustFile string, events []eventlog.Event) (length int, reason, detail string, err error) {
	store, err := trust.Load(trustFile)
	if err != nil {
		return 0, "", "", err
	}
	cp, err := checkpoint.ReadFile(cpFile)
	if err != nil {
		return 0, "", "", err
	}
	v, err := checkpoint.Verify(cp, store)
	if err == nil {
		err = checkpoint.Match(&v.Checkpoint, events)
	}
	if err != nil {
		var ce *checkpoint.Error
		if errors.As(err, &ce) {
			return 0, string(ce.Reason), ce.Detail, nil
		}
		return 0, string(checkpoint.Invalid), err.Error(), nil
	}
	return v.Length, "", "", nil
}
