package retention

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/lock"
	"github.com/proofgate/proofgate/kernel/eventlog"
	"github.com/proofgate/proofgate/kernel/replay"
)

// Plan is what a prune would do (a dry run), or did (Result).
type Plan struct {
	Settings Settings  `json:"settings"`
	Now      string    `json:"now"`
	Runs     []RunPlan `json:"runs"`
	Archive  []string  `json:"archive"`
	Blobs    BlobPlan  `json:"blobs"`
	Problems []Problem `json:"problems,omitempty"`
	// Leftovers are what a killed prune left (Recover restores them).
	Leftovers int `json:"leftovers,omitempty"`
}

// Scan plans a prune of stateDir at now without changing anything.
func Scan(stateDir string, s Settings, now time.Time) (*Plan, error) {
	h, err := ReadHistory(stateDir)
	if err != nil {
		return nil, err
	}
	ids, err := listRuns(stateDir)
	if err != nil {
		return nil, err
	}
	p := &Plan{Settings: s, Now: now.UTC().Format(time.RFC3339), Runs: make([]RunPlan, 0, len(ids)), Archive: []string{}}
	for _, id := range ids {
		p.Runs = append(p.Runs, scanRun(stateDir, id, h))
	}
	decide(p.Runs, s, now)
	for _, rp := range p.Runs {
		if rp.Decision == Archive {
			p.Archive = append(p.Archive, rp.Run)
		}
	}
	p.Blobs = planBlobs(stateDir, p.Runs, s, now)
	if p.Problems, err = Problems(stateDir); err != nil {
		return nil, err
	}
	p.Leftovers = countLeftovers(stateDir)
	return p, nil
}

// Signer signs the checkpoint an apply with a key records first: it
// returns a DSSE envelope (JSON) over payload.
type Signer interface {
	SignCheckpoint(payload []byte) ([]byte, error)
}

// Options of Apply.
type Options struct {
	Settings Settings
	Actor    string
	Now      func() time.Time
	// Signer, when set, makes the apply verify every run's chain and
	// record a signed prune.checkpoint of what it archives first.
	Signer Signer
	// UnsafeShortSettle accepts a settle time below MinSettle. Tests
	// only: the CLI never sets it.
	UnsafeShortSettle bool
	// Progress, when set, is called at each step (tests kill there).
	Progress func(step string)
}

// Result is what an apply did.
type Result struct {
	*Plan
	Archived []ArchivedData `json:"archived"`
	Skipped  []RunPlan      `json:"skipped,omitempty"` // planned, then not archivable
	Counts   Counts         `json:"counts"`
}

// Apply prunes stateDir: under the state's prune lock it restores what a
// killed prune left, refuses on integrity errors, archives every eligible
// run (written, fsynced, read back and proven byte-identical, recorded in
// the prune log, then replaced by its placeholder), reclaims unreachable
// blobs (rename, settle, rescan, restore or delete) and appends
// prune.applied.
func Apply(ctx context.Context, stateDir string, o Options) (res *Result, err error) {
	if o.Settings.Settle.Value < MinSettle && !o.UnsafeShortSettle {
		return nil, &Error{Reason: ReasonLooser, Detail: fmt.Sprintf("settle %s is below %s", o.Settings.Settle.Value, MinSettle)}
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	lk, err := acquirePruneLock(stateDir)
	if err != nil {
		return nil, err
	}
	defer func() {
		if rerr := lk.Release(); err == nil && rerr != nil {
			err = rerr
		}
	}()
	step(o, "locked")
	plan, err := Scan(stateDir, o.Settings, now())
	if err != nil {
		return nil, err
	}
	plan.Leftovers = 0 // the lock it sees is this apply's own
	if len(plan.Problems) > 0 {
		return nil, &Error{Reason: ReasonIntegrity, Run: plan.Problems[0].Run, Detail: fmt.Sprintf("%s: %s (apply refuses until it is resolved)", plan.Problems[0].Reason, plan.Problems[0].Detail)}
	}
	lg, err := openLog(stateDir)
	if err != nil {
		return nil, err
	}
	defer lg.Close()
	res = &Result{Plan: plan, Archived: []ArchivedData{}}
	if o.Signer != nil {
		if err := checkpoint(stateDir, lg, plan, o.Signer); err != nil {
			return nil, err
		}
		step(o, "checkpoint")
	}
	for _, id := range plan.Archive {
		rec, skip, err := archiveRun(stateDir, id, lg, now, o)
		if err != nil {
			return res, err
		}
		if skip.Reason != "" {
			res.Skipped = append(res.Skipped, skip)
			continue
		}
		res.Archived = append(res.Archived, rec)
	}
	if err := reclaimBlobs(ctx, stateDir, res, o, now); err != nil {
		return res, err
	}
	return res, recordApplied(lg, res, o)
}

func step(o Options, s string) {
	if o.Progress != nil {
		o.Progress(s)
	}
}

// acquirePruneLock takes <state>/prune.lock after restoring what a killed
// prune left.
func acquirePruneLock(stateDir string) (*lock.Lock, error) {
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		return nil, err
	}
	if err := Recover(stateDir); err != nil {
		return nil, err
	}
	lk, err := lock.Acquire(filepath.Join(stateDir, PruneLock))
	if err != nil {
		return nil, &Error{Reason: ReasonBusy, Detail: err.Error(), Err: err}
	}
	return lk, nil
}

// checkpoint records the signed list of the chains about to be archived,
// refusing if any run's chain does not verify.
func checkpoint(stateDir string, lg *eventlog.Log, plan *Plan, s Signer) error {
	heads := []ChainHead{}
	for _, rp := range plan.Runs {
		if rp.unreadable && !rp.Archived {
			return &Error{Reason: ReasonChain, Run: rp.Run, Detail: rp.Reason}
		}
		if rp.Decision == Archive {
			heads = append(heads, ChainHead{Run: rp.Run, Head: rp.head, Length: rp.length})
		}
	}
	if err := verifyArchives(stateDir); err != nil {
		return err
	}
	payload, err := canon.Marshal(heads)
	if err != nil {
		return err
	}
	env, err := s.SignCheckpoint(payload)
	if err != nil {
		return fmt.Errorf("prune checkpoint: %w", err)
	}
	_, err = lg.Append(TypeCheckpoint, CheckpointData{Runs: heads, Envelope: json.RawMessage(env)})
	return err
}

// verifyArchives hashes every archive a placeholder stands for against the
// prune log's record (an archived run's chain is proved by its archive).
func verifyArchives(stateDir string) error {
	ids, err := listRuns(stateDir)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if !IsArchived(filepath.Join(stateDir, RunsDir, id)) {
			continue
		}
		if _, err := verifiedRecord(stateDir, id); err != nil {
			return &Error{Reason: ReasonChain, Run: id, Detail: err.Error(), Err: err}
		}
	}
	return nil
}

// reclaimBlobs reclaims the unreachable blobs, with a fresh plan (the
// runs just archived now count through their records).
func reclaimBlobs(ctx context.Context, stateDir string, res *Result, o Options, now func() time.Time) error {
	scan := func() (*Plan, error) { return Scan(stateDir, o.Settings, now()) }
	p, err := scan()
	if err != nil {
		return err
	}
	res.Blobs = p.Blobs
	if len(p.Blobs.candidates) == 0 {
		return nil
	}
	step(o, "blobs-renaming")
	rescan := func() (map[string]bool, error) {
		step(o, "blobs-rescan")
		p, err := scan()
		if err != nil {
			return nil, err
		}
		if p.Blobs.Skipped != "" {
			// Something became unreadable: keep every blob.
			all := map[string]bool{}
			for _, b := range res.Blobs.candidates {
				all[b.digest] = true
			}
			return all, nil
		}
		return keptNow(p), nil
	}
	n, r, b, err := reclaim(ctx, p.Blobs.candidates, o.Settings.Settle.Value, rescan)
	res.Counts.BlobsReclaimed, res.Counts.BlobsRestored, res.Counts.BytesReclaimed = n, r, b
	step(o, "blobs-done")
	return err
}

// keptNow is what the rescan keeps: every digest named now, and every
// blob of a run that a writer locked meanwhile (keyed "run:<id>").
func keptNow(p *Plan) map[string]bool {
	set := reachable(p.Runs)
	for _, rp := range p.Runs {
		if rp.locked {
			set["run:"+rp.Run] = true
		}
	}
	return set
}

func recordApplied(lg *eventlog.Log, res *Result, o Options) error {
	host, _ := os.Hostname()
	d := AppliedData{Who: Who{Actor: o.Actor, Host: host, PID: os.Getpid()}, Settings: o.Settings.List(), Archived: []ArchivedRef{}}
	for _, a := range res.Archived {
		d.Archived = append(d.Archived, ArchivedRef{Run: a.Run, Digest: a.Digest})
	}
	res.Counts.Runs = len(res.Runs)
	res.Counts.RunsArchived = len(res.Archived)
	res.Counts.RunsKept = len(res.Runs) - len(res.Archived)
	d.Counts = res.Counts
	_, err := lg.Append(TypeApplied, d)
	return err
}

// archiveRun archives one run under its lock; skip says why a planned run
// was left in place after all (it changed, a writer took it or a lease on
// it).
func archiveRun(stateDir, id string, lg *eventlog.Log, now func() time.Time, o Options) (ArchivedData, RunPlan, error) {
	dir := filepath.Join(stateDir, RunsDir, id)
	skip := func(why string, w *Writer) (ArchivedData, RunPlan, error) {
		return ArchivedData{}, RunPlan{Run: id, Decision: Keep, Reason: why, Writer: w}, nil
	}
	lk, err := lock.Acquire(filepath.Join(dir, lockFile))
	if err != nil {
		return skip("a writer holds it: "+err.Error(), nil)
	}
	defer lk.Release()
	// A lease is taken under the lock: seen now, or never taken on this
	// run before its placeholder is in place (run.Lease refuses then).
	if w, why := leased(dir); why != "" {
		return skip(why, w)
	}
	rep, _, err := replay.AuditReplay(dir)
	if err != nil || !terminal(string(rep.State)) {
		return skip(fmt.Sprintf("it changed since the scan (%v)", err), nil)
	}
	files, err := listRunFiles(dir)
	if err != nil {
		return skip("its directory cannot be archived: "+err.Error(), nil)
	}
	step(o, "archive-writing")
	digest, size, err := createArchive(stateDir, id, dir, files)
	if err != nil {
		return ArchivedData{}, RunPlan{}, fmt.Errorf("archive run %s: %w", id, err)
	}
	tmp, final := tmpArchive(stateDir, id), ArchivePath(stateDir, id)
	if err := proveArchive(tmp, digest, dir, files); err != nil {
		os.Remove(tmp)
		return ArchivedData{}, RunPlan{}, fmt.Errorf("archive run %s: not byte-identical: %w", id, err)
	}
	if err := renameDurable(tmp, final); err != nil {
		return ArchivedData{}, RunPlan{}, fmt.Errorf("archive run %s: %w", id, err)
	}
	step(o, "archive-written")
	rec := ArchivedData{Run: id, Archive: ArchiveDir + "/" + id + ArchiveSuffix, Digest: digest, Size: size, Files: len(files),
		State: string(rep.State), Head: rep.ChainHead, Length: rep.ChainLength, Blobs: rep.Referenced()}
	if _, err := lg.Append(TypeArchived, rec); err != nil {
		return rec, RunPlan{}, err
	}
	step(o, "archive-recorded")
	ph := Placeholder{V: 1, Run: id, Archive: rec.Archive, Digest: digest, Size: size, State: rec.State, Head: rec.Head, Length: rec.Length, Archived: now().UTC().Format(time.RFC3339)}
	if err := writePlaceholder(dir, ph); err != nil {
		return rec, RunPlan{}, err
	}
	step(o, "placeholder")
	return rec, RunPlan{}, clearRunDir(dir)
}
