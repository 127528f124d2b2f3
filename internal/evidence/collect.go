package evidence

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/durable"
	"github.com/proofgate/proofgate/internal/printable"
	"github.com/proofgate/proofgate/kernel/replay"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// Wire types (kernel/replay owns them: the replay checks them in a log).
type (
	Report        = replay.EvidenceReport
	Stream        = replay.EvidenceStream
	VerdictRecord = replay.EvidenceVerdict
	Observation   = replay.Observation
)

// ArtifactReason is the typed cause of an *ArtifactError.
type ArtifactReason string

// Artifact refusals.
const (
	ArtifactExists   ArtifactReason = "exists"   // the artifact is already there: never overwritten
	ArtifactTampered ArtifactReason = "tampered" // a file no longer matches the report
	ArtifactMissing  ArtifactReason = "missing"
	ArtifactInvalid  ArtifactReason = "invalid" // not a report, not a regular file, empty, too large
)

// ArtifactError is an artifact that cannot be written or read as recorded.
type ArtifactError struct {
	Path   string
	Reason ArtifactReason
	Detail string
}

func (e *ArtifactError) Error() string {
	s := fmt.Sprintf("evidence artifact %s: %s", e.Path, e.Reason)
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// CollectOptions describe one collection.
type CollectOptions struct {
	Entry     Entry
	Allowlist *Allowlist
	Claim     string
	// Root is the evidence directory; the collection is a new
	// subdirectory of it.
	Root    string
	Runtime runtime.Runtime
	Now     func() time.Time
}

// Collection is a collection that was written.
type Collection struct {
	Dir    string
	Report Report
	// Digest is the report's digest: the SHA-256 of <id>.json.
	Digest string
	// Stdout and Stderr are the captured bytes (for a run's blob store).
	Stdout, Stderr []byte
}

// testHookDir is called with the fresh collection directory before any
// artifact is created (tests plant a file there).
var testHookDir func(dir string)

// Collect runs the entry once and writes its collection. The command's
// outcome is in the report, never an error: a timeout, an overflow or a
// spawn failure is a limitation the report names.
func Collect(ctx context.Context, o CollectOptions) (*Collection, error) {
	if err := printable.CheckText("claim", o.Claim); err != nil || o.Claim == "" {
		return nil, fmt.Errorf("--claim: %w", errors.Join(err, nonEmpty(o.Claim)))
	}
	if o.Runtime == nil {
		return nil, errors.New("evidence: no runtime")
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	id, dir, err := newDir(o.Root, now())
	if err != nil {
		return nil, err
	}
	if testHookDir != nil {
		testHookDir(dir)
	}
	e := o.Entry
	out, err := createExclusive(filepath.Join(dir, e.ID+".stdout"))
	if err != nil {
		return nil, err
	}
	defer out.Close()
	errf, err := createExclusive(filepath.Join(dir, e.ID+".stderr"))
	if err != nil {
		return nil, err
	}
	defer errf.Close()
	so, se := &recorder{f: out}, &recorder{f: errf}
	co, ce := runtime.NewCapture(so, e.OutputLimit), runtime.NewCapture(se, e.OutputLimit)
	spec := runtime.Spec{RunID: "evidence-" + id, CheckID: e.ID, Argv: slices.Clone(e.Argv), Env: maps.Clone(e.Env), Workspace: e.Cwd, Timeout: e.Timeout}
	res := o.Runtime.Run(ctx, spec, co, ce)
	if err := errors.Join(so.err, se.err, durable.Sync(out), durable.Sync(errf)); err != nil {
		return nil, fmt.Errorf("evidence: writing output: %w", err)
	}
	rep := report(id, o, res, co.Stream(), ce.Stream())
	b, err := canon.Marshal(rep)
	if err != nil {
		return nil, err
	}
	if err := writeExclusive(filepath.Join(dir, e.ID+".json"), b); err != nil {
		return nil, err
	}
	return &Collection{Dir: dir, Report: rep, Digest: canon.SumBytes(b), Stdout: so.b, Stderr: se.b}, nil
}

func nonEmpty(s string) error {
	if s == "" {
		return errors.New("is required")
	}
	return nil
}

// recorder writes a stream to its artifact and keeps the bytes (at most
// the cap, which the Capture enforces).
type recorder struct {
	f   *os.File
	b   []byte
	err error
}

func (r *recorder) Write(p []byte) (int, error) {
	n, err := r.f.Write(p)
	r.b = append(r.b, p[:n]...)
	if err != nil && r.err == nil {
		r.err = err
	}
	return n, err
}

// report builds the collection report of one run.
func report(id string, o CollectOptions, res runtime.Result, out, errs runtime.Stream) Report {
	e := o.Entry
	argvHash, _ := canon.Digest(e.Argv)
	names := slices.Sorted(maps.Keys(e.Env))
	if names == nil {
		names = []string{}
	}
	outcome, exit := EvidenceOutcome(res.Outcome), res.ExitCode
	limitation := ""
	if outcome != replay.EvidenceExited {
		limitation, exit = outcome, -1
	}
	started, finished := res.Started.UTC(), res.Finished.UTC()
	if finished.Before(started) {
		finished = started
	}
	return Report{
		V: replay.EvidenceVersion, Collection: id, ID: e.ID, Claim: o.Claim,
		Allowlist: o.Allowlist.Digest, EntryHash: e.Hash, ArgvHash: argvHash, Argv: e.Argv, Cwd: e.Cwd, Env: names,
		TimeoutSeconds: int(e.Timeout / time.Second), OutputLimitBytes: e.OutputLimit,
		Started: started.Format(time.RFC3339Nano), Finished: finished.Format(time.RFC3339Nano),
		DurationMS: finished.Sub(started).Milliseconds(), ExitCode: exit,
		Outcome: outcome, Limitation: limitation, Detail: printable.Escape(res.Detail),
		Stdout: Stream{File: e.ID + ".stdout", Digest: out.Digest, Size: out.Size, Truncated: out.Truncated},
		Stderr: Stream{File: e.ID + ".stderr", Digest: errs.Digest, Size: errs.Size, Truncated: errs.Truncated},
	}
}

// EvidenceOutcome maps a runtime outcome onto a report outcome: the process
// exited (whatever its code), or the limitation that stopped it.
func EvidenceOutcome(o runtime.Outcome) string {
	switch o {
	case runtime.Passed, runtime.Failed:
		return replay.EvidenceExited
	case runtime.Timeout:
		return replay.EvidenceTimeout
	case runtime.OutputLimit:
		return replay.EvidenceOutputLimit
	}
	return replay.EvidenceSpawnFailure
}

// newDir creates a fresh collection directory under root, retrying on the
// (unlikely) collision of a random id.
func newDir(root string, now time.Time) (id, dir string, err error) {
	if root == "" {
		return "", "", errors.New("evidence: no evidence directory")
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", "", fmt.Errorf("evidence directory %s: %w", root, err)
	}
	for range 8 {
		var b [4]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", "", err
		}
		id = now.UTC().Format("20060102T150405.000Z") + "-" + hex.EncodeToString(b[:])
		dir = filepath.Join(root, id)
		err = os.Mkdir(dir, 0o755)
		if err == nil {
			return id, dir, durable.SyncDir(root)
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", "", fmt.Errorf("evidence directory %s: %w", root, err)
		}
	}
	return "", "", fmt.Errorf("evidence directory %s: no fresh collection id", root)
}

// createExclusive creates path, refusing an existing one (O_EXCL).
func createExclusive(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return nil, &ArtifactError{Path: path, Reason: ArtifactExists, Detail: "an evidence artifact is never overwritten"}
	}
	return f, err
}

// writeExclusive writes a complete file at path, refusing an existing one.
func writeExclusive(path string, b []byte) error {
	err := durable.CreateExclusive(path, b, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return &ArtifactError{Path: path, Reason: ArtifactExists, Detail: "an evidence artifact is never overwritten"}
	}
	return err
}
