package main

import (
	"errors"

	"github.com/proofgate/proofgate/bundle/checkpoint"
	"github.com/proofgate/proofgate/bundle/trust"
	"github.com/proofgate/proofgate/kernel/eventlog"
)

// verifyCheckpoint checks events against a signed checkpoint. It returns a
// refusal reason and detail, or an error when the inputs are unusable.
func verifyCheckpoint(cpFile, trustFile string, events []eventlog.Event) (reason, detail string, err error) {
	store, err := trust.Load(trustFile)
	if err != nil {
		return "", "", err
	}
	cp, err := checkpoint.ReadFile(cpFile)
	if err != nil {
		return "", "", err
	}
	if err := checkpoint.VerifyLog(cp, store, events); err != nil {
		var ce *checkpoint.Error
		if errors.As(err, &ce) {
			return string(ce.Reason), ce.Detail, nil
		}
		return string(checkpoint.Invalid), err.Error(), nil
	}
	return "", "", nil
}
