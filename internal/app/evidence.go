package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/proofgate/proofgate/internal/evidence"
	"github.com/proofgate/proofgate/internal/process"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/kernel/exit"
	"github.com/proofgate/proofgate/kernel/replay"
)

// collectLockWait is how long evidence collect waits for another writer
// (an approval, a prune deciding about the run) to release the run's lock.
const collectLockWait = 10 * time.Second

// CollectOptions say which allowlisted command to run for which claim, and
// where its evidence goes.
type CollectOptions struct {
	// State is the state directory of Run.
	State string
	// Allowlist is the allowlist file; Repo the repository it must lie
	// outside ("" when there is none).
	Allowlist, Repo string
	// ID is the allowlisted command; Args what followed it (refused).
	ID   string
	Args []string
	// Claim is what the evidence is for.
	Claim string
	// Run, when set, is the run the collection is chained into; Dir the
	// evidence directory (default: the run's evidence/).
	Run, Dir string
}

// Collected is a collection written (and chained into Run when set); its
// JSON is 'proofgate evidence collect --json'.
type Collected struct {
	Dir    string          `json:"dir"`
	Digest string          `json:"report_digest"`
	Run    string          `json:"run,omitempty"`
	Report evidence.Report `json:"report"`
}

// Collect runs the allowlist's command o.ID exactly as reviewed
// (evidence.Collect) and keeps its output in a fresh collection. With
// o.Run the run is resolved first and leased, not locked, while the
// command runs (prune leaves it alone; approvals are not held off), then
// the report is chained into its log. Refusals are the evidence package's
// typed errors; a run that cannot be resolved, leased or appended to is
// returned as it is, for the caller to classify.
func Collect(ctx context.Context, o CollectOptions) (*Collected, error) {
	a, err := evidence.Load(o.Allowlist, o.Repo)
	if err != nil {
		return nil, err
	}
	e, err := a.Lookup(o.ID, o.Args)
	if err != nil {
		return nil, err
	}
	id, root, err := collectTarget(o.State, o.Run, o.Dir)
	if err != nil {
		return nil, err
	}
	if id != "" {
		l, err := run.Lease(o.State, id, "evidence collect", collectLockWait)
		if err != nil {
			return nil, err
		}
		defer l.Release()
	}
	col, err := evidence.Collect(ctx, evidence.CollectOptions{Entry: e, Allowlist: a, Claim: o.Claim, Root: root, Runtime: process.New()})
	if err != nil {
		return nil, err
	}
	if err := chainCollection(o.State, id, col); err != nil {
		return nil, err
	}
	return &Collected{Dir: col.Dir, Digest: col.Digest, Report: col.Report, Run: id}, nil
}

// collectTarget resolves run (without locking it) and the evidence
// directory.
func collectTarget(state, runID, dir string) (id, root string, err error) {
	if runID == "" {
		root, err = evidenceRoot(dir, "")
		return "", root, err
	}
	store := run.NewStore(state)
	if id, err = store.Resolve(runID); err != nil {
		return "", "", err
	}
	root, err = evidenceRoot(dir, store.Path(id))
	return id, root, err
}

// evidenceRoot is dir, or the run's evidence/ directory (inside the state
// directory's runs/, which the work-tree digest leaves out).
func evidenceRoot(dir, runDir string) (string, error) {
	switch {
	case dir != "":
		return filepath.Abs(dir)
	case runDir != "":
		return filepath.Abs(filepath.Join(runDir, "evidence"))
	}
	return "", exit.Wrap(exit.Usage, errors.New("--dir DIR is required without --run (keep it outside the repository, or the work tree is no longer clean)"))
}

// chainCollection chains col into run id's log (none when id is "").
func chainCollection(state, id string, col *evidence.Collection) error {
	if id == "" {
		return nil
	}
	r, err := run.OpenWait(state, id, collectLockWait)
	if err != nil {
		return fmt.Errorf("collection %s written, but not chained into run %s: %w", col.Dir, id, err)
	}
	defer r.Close()
	d := replay.EvidenceCollectedData{Digest: col.Digest, Report: col.Report}
	if _, err := r.AppendEvidence(replay.TypeEvidenceCollected, d, col.Stdout, col.Stderr); err != nil {
		return fmt.Errorf("collection %s written, but not chained into run %s: %w", col.Dir, r.ID, err)
	}
	return nil
}

// VerdictOptions say which collection is judged, how, and by whom.
type VerdictOptions struct {
	// State is the state directory of Run.
	State string
	// Collection is a collection directory, or a collection id inside Dir
	// (default: Run's evidence/ directory).
	Collection, Dir string
	// Run, when set, is the run the verdict is chained into: the
	// collection must be chained into it, its report unchanged.
	Run string
	// Verdict, Reason and Actor are the judgement; Observation what an
	// approved optional tool observed (nil for none).
	Verdict, Reason, Actor string
	Observation            *evidence.ObservationInput
}

// Judged is a verdict recorded in its collection, and the run it was
// chained into ("" for none).
type Judged struct {
	Record *evidence.VerdictRecord
	Run    string
}

// Verdict records o's verdict on the claim of a collection
// (evidence.Record), once, and with o.Run chains it into the run's log.
// Refusals are the evidence package's typed errors; a collection id
// without a directory to find it in is a usage error; a run that cannot
// be opened or appended to is returned as it is.
func Verdict(o VerdictOptions) (*Judged, error) {
	var r *run.Run
	if o.Run != "" {
		var err error
		if r, err = run.Open(o.State, o.Run); err != nil {
			return nil, err
		}
		defer r.Close()
	}
	dir, err := collectionDir(o.Collection, o.Dir, r)
	if err != nil {
		return nil, err
	}
	l, err := evidence.Open(dir)
	if err != nil {
		return nil, err
	}
	if r != nil {
		if err := chainedCollection(r, l); err != nil {
			return nil, err
		}
	}
	rec, blobs, err := evidence.Record(l, evidence.VerdictOptions{Verdict: o.Verdict, Reason: o.Reason, Actor: o.Actor, Observation: o.Observation})
	if err != nil {
		return nil, err
	}
	if r == nil {
		return &Judged{Record: rec}, nil
	}
	if _, err := r.AppendEvidence(replay.TypeEvidenceVerdict, rec, blobs...); err != nil {
		return nil, fmt.Errorf("verdict written to %s, but not chained into run %s: %w", dir, r.ID, err)
	}
	return &Judged{Record: rec, Run: r.ID}, nil
}

// collectionDir resolves a collection: a directory path, or a collection
// id inside dir (or the run's evidence directory).
func collectionDir(arg, dir string, r *run.Run) (string, error) {
	if strings.ContainsRune(arg, os.PathSeparator) || !replay.ValidCollectionID(arg) {
		return arg, nil
	}
	runDir := ""
	if r != nil {
		runDir = r.Dir
	}
	root, err := evidenceRoot(dir, runDir)
	if err != nil {
		if fi, serr := os.Stat(arg); serr == nil && fi.IsDir() {
			return arg, nil
		}
		return "", exit.Wrap(exit.Usage, errors.New("COLLECTION is an id: give --dir DIR or --run RUN to find it, or pass the collection's directory"))
	}
	return filepath.Join(root, arg), nil
}

// chainedCollection refuses a verdict for run r on a collection its log
// does not record, or whose report is no longer the one recorded.
func chainedCollection(r *run.Run, l *evidence.Loaded) error {
	d, ok := r.Collection(l.Report.Collection)
	switch {
	case !ok:
		return &evidence.ArtifactError{Path: l.Dir, Reason: evidence.ArtifactMissing, Detail: fmt.Sprintf("collection %s is not chained into run %s: collect it with --run %s", l.Report.Collection, r.ID, r.ID)}
	case d.Digest != l.Digest:
		return &evidence.ArtifactError{Path: l.Dir, Reason: evidence.ArtifactTampered, Detail: fmt.Sprintf("its report digests to %s, run %s recorded %s", l.Digest, r.ID, d.Digest)}
	}
	return nil
}
