package app

import (
	"context"
	"errors"
	"os"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/envelope"
)

// AgentSessionOptions say whose agent-session evidence to write, where,
// and with which signer.
type AgentSessionOptions struct {
	// Run is the successor run's id; Opener opens it and its
	// implementation run (an archived one from its archive).
	Run    string
	Opener bundle.RunOpener
	// Out is the archive file; Replace removes an existing one first.
	Out     string
	Replace bool
	// Key signs with a key; Keyless (set instead) with an ephemeral key
	// Fulcio certifies.
	Key     envelope.Signer
	Keyless envelope.MaterialSigner
}

// ReplaceError is an existing output file that could not be removed.
type ReplaceError struct{ Err error }

func (e *ReplaceError) Error() string { return e.Err.Error() }
func (e *ReplaceError) Unwrap() error { return e.Err }

// ExportAgentSession writes the signed evidence that o.Run's commit came
// from recorded agent sessions (bundle.ExportAgentSessionStored). A run
// that may not be exported is a *bundle.ExportError, an existing o.Out
// that cannot be replaced a *ReplaceError; any other error is a failed
// write of o.Out.
func ExportAgentSession(ctx context.Context, o AgentSessionOptions) error {
	if o.Replace {
		if err := os.Remove(o.Out); err != nil && !errors.Is(err, os.ErrNotExist) {
			return &ReplaceError{Err: err}
		}
	}
	keyID, sign := agentSigner(ctx, o.Key, o.Keyless)
	return bundle.ExportAgentSessionStored(o.Opener, o.Run, o.Out, keyID, sign)
}

// agentSigner is the key id and sign function of the key signer s or,
// when nil, the keyless signer ms.
func agentSigner(ctx context.Context, s envelope.Signer, ms envelope.MaterialSigner) (string, func([]byte) ([]byte, []byte, error)) {
	if ctx == nil {
		ctx = context.Background()
	}
	if s != nil {
		return s.KeyID(), func(p []byte) ([]byte, []byte, error) {
			env, err := envelope.SignContext(ctx, s, bundle.PayloadType, p)
			return env, nil, err
		}
	}
	return ms.KeyID(), func(p []byte) ([]byte, []byte, error) {
		return envelope.SignWithMaterial(ctx, ms, bundle.PayloadType, p)
	}
}
