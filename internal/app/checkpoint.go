package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/proofgate/proofgate/bundle/checkpoint"
	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/internal/record"
	"github.com/proofgate/proofgate/internal/source"
	"github.com/proofgate/proofgate/kernel/exit"
)

// RootRepository is the identity a state checkpoint binds: the root commit
// of the repository in dir, and id (e.g. owner/name, "" for none). A
// repository without a root commit is a usage error.
func RootRepository(ctx context.Context, dir, id string) (checkpoint.Repository, error) {
	root, err := source.RootCommit(ctx, dir)
	if err != nil {
		return checkpoint.Repository{}, exit.Wrap(exit.Usage, fmt.Errorf("--all binds the repository's root commit: %w", err))
	}
	return checkpoint.Repository{Root: root, ID: id}, nil
}

// CheckpointOptions say where and how to sign a checkpoint.
type CheckpointOptions struct {
	// State is the state directory.
	State string
	// Signer signs; Now is the time signed.
	Signer envelope.Signer
	Now    time.Time
}

// CheckpointRun signs a checkpoint of run id's event chain under its
// writer lock and records it in the run (record.Checkpoint). A run that
// cannot be checkpointed is returned as it is. Writing a copy of the
// envelope elsewhere is the caller's.
func CheckpointRun(id string, o CheckpointOptions) (*record.Recorded, error) {
	return record.Checkpoint(o.State, id, o.Signer, o.Now)
}

// CheckpointState signs one state checkpoint over every run of the state
// directory, bound to repo, and records it (record.State). A run whose
// chain does not verify refuses it (exit.Refused); another failure is
// returned as it is.
func CheckpointState(repo checkpoint.Repository, o CheckpointOptions) (*record.StateRecorded, error) {
	rec, err := record.State(o.State, repo, o.Signer, o.Now)
	var se *checkpoint.StateError
	if errors.As(err, &se) {
		return nil, exit.Wrap(exit.Refused, err)
	}
	return rec, err
}
