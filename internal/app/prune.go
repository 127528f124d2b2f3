package app

import (
	"context"
	"errors"
	"os"
	"os/user"
	"time"

	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/internal/retention"
	"github.com/proofgate/proofgate/kernel/actor"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/exit"
)

// PrunePayloadType is the DSSE payload type of the checkpoint an apply
// with a signer records in the prune log.
const PrunePayloadType = "application/vnd.proofgate.prune-checkpoint+json"

// RetentionFlags are a prune's settings as given on the command line,
// each "" when not given.
type RetentionFlags struct{ ArchiveAfter, BlobMinAge, Settle string }

// RetentionSettings resolves a prune's settings from the flags, the
// environment (getenv) and the retention: section of the contract at
// contractPath, when that file exists. A contract that does not load and
// a setting given shorter than its base are usage errors; any other
// failure is refused.
func RetentionSettings(contractPath string, f RetentionFlags, getenv func(string) string) (retention.Settings, error) {
	var base *contract.Retention
	if _, err := os.Stat(contractPath); err == nil {
		c, err := contract.Load(contractPath, "")
		if err != nil {
			return retention.Settings{}, exit.Wrap(exit.Usage, err)
		}
		base = c.Retention
	}
	in := retention.Inputs{
		ArchiveAfter: retention.Input{Flag: f.ArchiveAfter, FlagName: "--archive-after", Env: getenv(retention.EnvArchiveAfter), EnvName: retention.EnvArchiveAfter},
		BlobMinAge:   retention.Input{Flag: f.BlobMinAge, FlagName: "--blob-min-age", Env: getenv(retention.EnvBlobMinAge), EnvName: retention.EnvBlobMinAge},
		Settle:       retention.Input{Flag: f.Settle, FlagName: "--settle", Env: getenv(retention.EnvSettle), EnvName: retention.EnvSettle},
	}
	s, err := retention.Resolve(base, in)
	if err != nil {
		return s, pruneErr(err)
	}
	return s, nil
}

// PruneActor is who applies a prune: name, else the OS user. No name at
// all, or one that is not a printable one-line name, is a usage error.
func PruneActor(name string) (string, error) {
	if name == "" {
		if u, err := user.Current(); err == nil {
			name = u.Username
		} else {
			name = os.Getenv("USER")
		}
	}
	if name == "" {
		return "", exit.Wrap(exit.Usage, errors.New("--actor is required (no OS user name)"))
	}
	if err := actor.Check("--actor", name); err != nil {
		return "", exit.Wrap(exit.Usage, err)
	}
	return name, nil
}

// PruneScan is a prune's dry run: what an apply with settings s would do
// at now, changing nothing.
func PruneScan(state string, s retention.Settings, now time.Time) (*retention.Plan, error) {
	plan, err := retention.Scan(state, s, now)
	if err != nil {
		return nil, pruneErr(err)
	}
	return plan, nil
}

// PruneOptions say how to apply a prune.
type PruneOptions struct {
	Settings retention.Settings
	// Actor is who applies (PruneActor).
	Actor string
	// Signer, when set, makes the apply verify every run's chain first and
	// record a signed checkpoint (PrunePayloadType) of what it archives.
	Signer envelope.Signer
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Progress, when set, is called at each step.
	Progress func(step string)
	// TestSettle, when above zero, replaces the settle time, below
	// retention.MinSettle too: tests only.
	TestSettle time.Duration
}

// PruneApply archives old terminal runs of the state directory and
// reclaims unreachable blobs (retention.Apply). A refused apply is
// exit.Refused; a refused setting exit.Usage.
func PruneApply(ctx context.Context, state string, o PruneOptions) (*retention.Result, error) {
	ro := retention.Options{Settings: o.Settings, Actor: o.Actor, Now: o.Now, Progress: o.Progress}
	if ro.Now == nil {
		ro.Now = time.Now
	}
	if o.TestSettle > 0 {
		ro.Settings.Settle.Value, ro.Settings.Settle.Text, ro.UnsafeShortSettle = o.TestSettle, o.TestSettle.String(), true
	}
	if o.Signer != nil {
		ro.Signer = pruneSigner{o.Signer}
	}
	res, err := retention.Apply(ctx, state, ro)
	if err != nil {
		return nil, pruneErr(err)
	}
	return res, nil
}

func pruneErr(err error) error {
	if errors.Is(err, exit.Usage) {
		return exit.Wrap(exit.Usage, err)
	}
	return exit.Wrap(exit.Refused, err)
}

// pruneSigner signs the apply checkpoint as a DSSE envelope.
type pruneSigner struct{ s envelope.Signer }

func (p pruneSigner) SignCheckpoint(payload []byte) ([]byte, error) {
	return envelope.Sign(p.s, PrunePayloadType, payload)
}
