package shardjob

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/proofgate/proofgate/internal/ci/handoff"
	"github.com/proofgate/proofgate/internal/shard"
	"github.com/proofgate/proofgate/kernel/exit"
)

// Reason is why a plan, shard or merge job refused. The kernel's merge
// refusals (internal/shard Reason: missing, duplicate, foreign, tampered,
// untrusted, overlap, running, order, unassigned) keep their names.
type Reason string

// Reasons the jobs themselves refuse (beside the kernel's).
const (
	NoWorkflowRun Reason = "no-workflow-run" // GITHUB_RUN_ID or GITHUB_RUN_ATTEMPT missing or malformed
	NoToken       Reason = "no-github-token" // the artifacts of the run cannot be listed
	NoSigner      Reason = "no-signer"       // key mode without a key: nothing signs or verifies
	NoArtifacts   Reason = "no-artifact-service"
	PlanMissing   Reason = "plan-missing" // no plan artifact of this run and attempt
	PlanInvalid   Reason = "plan-invalid" // its signature, statement or binding does not hold
	Missing       Reason = Reason(shard.Missing)
	Duplicate     Reason = Reason(shard.Duplicate)
	Foreign       Reason = Reason(shard.Foreign)
	Count         Reason = "count-mismatch" // shard artifacts of this attempt disagree on N
	Expired       Reason = "expired"
	Malformed     Reason = "malformed" // the zip or its files
	API           Reason = "github-api"
)

// Error is a refused plan, shard or merge step.
type Error struct {
	Reason   Reason
	Artifact string // the artifact it concerns, "" for none
	Detail   string
	Err      error
}

func (e *Error) Error() string {
	if e.Artifact != "" {
		return fmt.Sprintf("sharded run refused (%s): artifact %s: %s", e.Reason, e.Artifact, e.Detail)
	}
	return fmt.Sprintf("sharded run refused (%s): %s", e.Reason, e.Detail)
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Refuse returns the refusal for reason r of artifact ("" for none), its
// detail formatted.
func Refuse(r Reason, artifact, format string, args ...any) *Error {
	return &Error{Reason: r, Artifact: artifact, Detail: fmt.Sprintf(format, args...)}
}

// Class is the exit class of a sharded step's error: the GitHub API and
// the artifact service are the environment's, input is usage, every other
// refusal is a refusal.
func Class(err error) exit.Class {
	var se *Error
	if errors.As(err, &se) {
		switch se.Reason {
		case API, NoArtifacts:
			return exit.Environment
		case NoWorkflowRun, NoToken, NoSigner:
			return exit.Usage
		}
	}
	return exit.Refused
}

// RefusePlan makes a refusal of plan artifact name (a hand-off refusal, or
// its binding or installation failing) a PlanInvalid Error.
func RefusePlan(name string, err error) error {
	var fe *handoff.Error
	if errors.As(err, &fe) {
		return &Error{Reason: PlanInvalid, Artifact: name, Detail: fe.Error(), Err: err}
	}
	return &Error{Reason: PlanInvalid, Artifact: name, Detail: err.Error(), Err: err}
}

// MergeRefusal makes a kernel merge refusal an Error naming the artifact of
// the shard directory it concerns (names: directory to artifact, as
// DownloadShards returns them); any other merge failure is the
// environment's.
func MergeRefusal(err error, names map[string]string) error {
	var me *shard.MergeError
	if !errors.As(err, &me) {
		return exit.Wrap(exit.Environment, fmt.Errorf("merge: %w", err))
	}
	name := names[me.Dir]
	if name == "" {
		for d, n := range names {
			if strings.HasPrefix(me.Dir, d+string(filepath.Separator)) {
				name = n
			}
		}
	}
	return &Error{Reason: Reason(me.Reason), Artifact: name, Detail: me.Detail, Err: err}
}
