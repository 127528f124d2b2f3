package main

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/proofgate/proofgate/internal/lock"
	"github.com/proofgate/proofgate/kernel/exit"
)

// classify gives err its exit code: the class its own type declares
// (every typed error of the kernel says which through errors.Is; see
// kernel/exit), with the next step added where one helps; a file the
// system could not read or write is the environment's; anything else is
// a refusal.
func classify(err error) error {
	if err == nil {
		return nil
	}
	err = runHint(err)
	var (
		ee   *exit.Error
		held *lock.HeldError
		pe   *fs.PathError
	)
	switch {
	case errors.As(err, &ee):
		return err
	case errors.As(err, &held):
		return refusedErr(fmt.Errorf("%w: another proofgate is writing this run; wait for it, or if 'proofgate status RUN' says its writer is dead, run 'proofgate events unlock RUN --actor NAME --older-than DUR' first", err))
	}
	if c, ok := exit.Of(err); ok {
		return exit.Wrap(c, err)
	}
	if errors.As(err, &pe) {
		return envErr(err)
	}
	return refusedErr(err)
}
