package retention_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/proofgate/proofgate/internal/fscopy"
	"github.com/proofgate/proofgate/internal/retention"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/eventlog"
	"github.com/proofgate/proofgate/kernel/replay"
)

// treeDigest hashes every path, mode and content under dir.
func treeDigest(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(dir, p)
		h.Write([]byte(rel + "\x00" + d.Type().String() + "\x00"))
		if d.Type().IsRegular() {
			b, _ := os.ReadFile(p)
			h.Write(b)
		}
		return nil
	})
	return hex.EncodeToString(h.Sum(nil))
}

func TestApplyArchivesTerminalRunsAndReadersReadThem(t *testing.T) {
	f := newFixture(t)
	done, cancelled, waiting := f.complete(), f.cancelled(), f.awaiting()
	before, err := run.Inspect(context.Background(), f.state, done, run.Freshness{})
	if err != nil {
		t.Fatal(err)
	}
	waitTree := treeDigest(t, f.dir(waiting))

	// Today nothing is old enough.
	if res := f.apply(time.Now); len(res.Archived) != 0 {
		t.Fatalf("archived young runs: %+v", res.Archived)
	}
	res := f.apply(later)
	var got []string
	for _, a := range res.Archived {
		got = append(got, a.Run)
	}
	if want := []string{done, cancelled}; !slices.Equal(got, want) {
		t.Fatalf("archived %v, want %v", got, want)
	}
	if treeDigest(t, f.dir(waiting)) != waitTree {
		t.Fatal("the AWAITING_APPROVAL run was touched")
	}
	ents, _ := os.ReadDir(f.dir(done))
	if len(ents) != 1 || ents[0].Name() != "archived.json" {
		t.Fatalf("archived run directory holds %v", ents)
	}
	st, err := run.Inspect(context.Background(), f.state, done, run.Freshness{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Archived == nil || st.State != replay.Complete || st.ChainHead != before.ChainHead || len(st.Checks) != 2 {
		t.Fatalf("status of the archived run: %+v", st)
	}
	if _, err := run.Audit(f.dir(done)); err != nil {
		t.Fatal(err)
	}
	if ev, err := run.ReadLog(f.dir(done)); err != nil || ev[len(ev)-1].Hash != before.ChainHead {
		t.Fatalf("ReadLog: %v", err)
	}
	if ids, _ := run.NewStore(f.state).List(); len(ids) != 3 {
		t.Fatalf("list %v", ids)
	}
	_, err = run.Open(f.state, done)
	var ae *run.ArchivedError
	if !errors.As(err, &ae) {
		t.Fatalf("Open of an archived run: %v", err)
	}
	// The prune log verifies and records each run with its digest.
	h, err := retention.ReadHistory(f.state)
	if err != nil || len(h.Archived) != 2 || h.Archived[done].Digest != res.Archived[0].Digest {
		t.Fatalf("history %+v, %v", h, err)
	}
	evs, err := eventlog.ReadFile(filepath.Join(f.state, retention.LogFile), nil)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, e := range evs {
		types = append(types, e.Type)
	}
	if want := []string{"prune.applied", "prune.archived", "prune.archived", "prune.applied"}; !slices.Equal(types, want) {
		t.Fatalf("prune log %v, want %v", types, want)
	}
	if !bytes.Contains(evs[3].Data, []byte(`"actor":"tester"`)) || !bytes.Contains(evs[3].Data, []byte(`"runs_archived":2`)) {
		t.Fatalf("prune.applied %s", evs[3].Data)
	}
}

// Archives are deterministic: the same run archives to the same bytes.
func TestArchiveDeterministic(t *testing.T) {
	f := newFixture(t)
	id := f.complete()
	// A copy of the state with the same run, archived separately.
	cp := t.TempDir()
	fscopy.Tree(t, f.state, cp)
	f.apply(later)
	res, err := retention.Apply(context.Background(), cp, retention.Options{Settings: settings(t), Now: later, UnsafeShortSettle: true})
	if err != nil || len(res.Archived) != 1 {
		t.Fatalf("%v %+v", err, res)
	}
	a, _ := os.ReadFile(retention.ArchivePath(f.state, id))
	b, _ := os.ReadFile(retention.ArchivePath(cp, id))
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Fatal("the same run archived to different bytes")
	}
}

func TestDryRunChangesNothing(t *testing.T) {
	f := newFixture(t)
	f.complete()
	f.awaiting()
	before := treeDigest(t, f.state)
	p, err := retention.Scan(f.state, settings(t), later())
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Archive) != 1 || len(p.Runs) != 2 {
		t.Fatalf("plan %+v", p)
	}
	if treeDigest(t, f.state) != before {
		t.Fatal("the dry run changed the state directory")
	}
}

// A flag asking for less than the contract's base is refused, naming both;
// asking for more is taken, with its source.
func TestSettingsOnlyMoreConservative(t *testing.T) {
	base := &contract.Retention{ArchiveAfter: contract.Duration(60 * 24 * time.Hour)}
	_, err := retention.Resolve(base, retention.Inputs{ArchiveAfter: retention.Input{Flag: "30d", FlagName: "--archive-after"}})
	if !retention.IsReason(err, retention.ReasonLooser) || !strings.Contains(err.Error(), "--archive-after 30d") || !strings.Contains(err.Error(), "retention.archive_after") || !strings.Contains(err.Error(), "60d") {
		t.Fatalf("looser flag: %v", err)
	}
	_, err = retention.Resolve(nil, retention.Inputs{BlobMinAge: retention.Input{Env: "10m", EnvName: retention.EnvBlobMinAge}})
	if !retention.IsReason(err, retention.ReasonLooser) || !strings.Contains(err.Error(), retention.EnvBlobMinAge) {
		t.Fatalf("looser variable: %v", err)
	}
	_, err = retention.Resolve(nil, retention.Inputs{Settle: retention.Input{Flag: "1s", FlagName: "--settle"}})
	if !retention.IsReason(err, retention.ReasonLooser) {
		t.Fatalf("short settle: %v", err)
	}
	s, err := retention.Resolve(base, retention.Inputs{ArchiveAfter: retention.Input{Flag: "90d", FlagName: "--archive-after", Env: "70d", EnvName: retention.EnvArchiveAfter},
		BlobMinAge: retention.Input{Env: "2h", EnvName: retention.EnvBlobMinAge}})
	if err != nil {
		t.Fatal(err)
	}
	if s.ArchiveAfter.Source != retention.FromFlag || s.ArchiveAfter.Value != 90*24*time.Hour || s.BlobMinAge.Source != retention.FromEnv || s.Settle.Source != retention.FromDefault {
		t.Fatalf("settings %+v", s)
	}
	s, _ = retention.Resolve(base, retention.Inputs{})
	if s.ArchiveAfter.Source != retention.FromContract || s.ArchiveAfter.Origin != "retention.archive_after" {
		t.Fatalf("contract setting %+v", s.ArchiveAfter)
	}
	// Apply refuses a short settle unless told it is a test.
	_, err = retention.Apply(context.Background(), t.TempDir(), retention.Options{Settings: settings(t)})
	if !retention.IsReason(err, retention.ReasonLooser) {
		t.Fatalf("apply with a short settle: %v", err)
	}
}

// oldBlob writes an unnamed blob into run id's directory, aged.
func (f *fixture) blob(id string, content string, age time.Duration) string {
	f.t.Helper()
	s := sha256.Sum256([]byte(content))
	p := filepath.Join(f.dir(id), "blobs", "sha256", hex.EncodeToString(s[:]))
	if err := os.WriteFile(p, []byte(content), 0o444); err != nil {
		f.t.Fatal(err)
	}
	old := time.Now().Add(-age)
	if err := os.Chtimes(p, old, old); err != nil {
		f.t.Fatal(err)
	}
	return p
}

// Hostile: a blob named only by an archived run survives in a retained
// run's directory; a blob written but not yet named (young) survives; an
// old unnamed blob is reclaimed.
func TestBlobReachability(t *testing.T) {
	f := newFixture(t)
	archived := f.complete()
	keep := f.awaiting()
	f.apply(later)
	h, _ := retention.ReadHistory(f.state)
	kept, err := run.Inspect(context.Background(), f.state, keep, run.Freshness{})
	if err != nil {
		t.Fatal(err)
	}
	// Check a prints the time in nanoseconds: a blob no other run names.
	var only string
	for _, d := range h.Archived[archived].Blobs {
		if !slices.Contains(kept.Blobs, d) {
			only = d
		}
	}
	if only == "" {
		t.Fatal("no blob named only by the archived run")
	}
	rd, _, done, err := run.ReadDir(f.state, archived)
	if err != nil {
		t.Fatal(err)
	}
	content, err := os.ReadFile(filepath.Join(rd, "blobs", "sha256", only[len("sha256:"):]))
	done()
	if err != nil {
		t.Fatal(err)
	}
	byArchive := f.blob(keep, string(content), 2*time.Hour)
	young := f.blob(keep, "written, not yet named", 0)
	old := f.blob(keep, "old and named by nothing", 2*time.Hour)
	res := f.apply(time.Now)
	if res.Counts.BlobsReclaimed != 1 {
		t.Fatalf("reclaimed %d blobs, want 1 (%+v)", res.Counts.BlobsReclaimed, res.Blobs)
	}
	for _, p := range []string{byArchive, young} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s was reclaimed: %v", filepath.Base(p), err)
		}
	}
	if _, err := os.Stat(old); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the old unnamed blob survived: %v", err)
	}
	if _, err := run.Audit(f.dir(keep)); err != nil && !strings.Contains(err.Error(), "lagging") {
		t.Fatalf("the retained run no longer audits: %v", err)
	}
}

// Hostile: a tampered archive, a missing recorded archive and an archive
// the log never recorded are each refused by every reader with its reason,
// and apply refuses while a recorded archive is missing.
func TestArchiveRefusals(t *testing.T) {
	f := newFixture(t)
	a, b, c := f.complete(), f.complete(), f.complete()
	f.apply(later)
	readers := func(id string, want retention.Reason) {
		t.Helper()
		_, err := run.Inspect(context.Background(), f.state, id, run.Freshness{})
		if !retention.IsReason(err, want) {
			t.Errorf("status %s: %v, want %s", id, err, want)
		}
		if _, err := run.Audit(f.dir(id)); !retention.IsReason(err, want) {
			t.Errorf("audit %s: %v, want %s", id, err, want)
		}
		if _, err := run.VerifyLog(f.dir(id)); !retention.IsReason(err, want) {
			t.Errorf("events verify %s: %v, want %s", id, err, want)
		}
		if _, _, _, err := run.ReadDir(f.state, id); !retention.IsReason(err, want) {
			t.Errorf("read dir %s: %v, want %s", id, err, want)
		}
	}
	// Tampered: one byte of a's archive flipped.
	p := retention.ArchivePath(f.state, a)
	raw, _ := os.ReadFile(p)
	raw[len(raw)/2] ^= 1
	os.Chmod(p, 0o644)
	if err := os.WriteFile(p, raw, 0o444); err != nil {
		t.Fatal(err)
	}
	readers(a, retention.ReasonArchiveTampered)
	// Missing: b's archive removed.
	if err := os.Remove(retention.ArchivePath(f.state, b)); err != nil {
		t.Fatal(err)
	}
	readers(b, retention.ReasonArchiveMissing)
	probs, err := retention.Problems(f.state)
	if err != nil || len(probs) != 1 || probs[0].Run != b || probs[0].Reason != retention.ReasonArchiveMissing {
		t.Fatalf("problems %+v %v", probs, err)
	}
	_, err = retention.Apply(context.Background(), f.state, retention.Options{Settings: settings(t), Now: later, UnsafeShortSettle: true})
	if !retention.IsReason(err, retention.ReasonIntegrity) {
		t.Fatalf("apply with a missing archive: %v", err)
	}
	// A recorded run whose directory is gone too is still an integrity error.
	os.RemoveAll(f.dir(b))
	if probs, _ := retention.Problems(f.state); len(probs) != 1 || probs[0].Run != b {
		t.Fatalf("problems after the directory went: %+v", probs)
	}
	// Unrecorded: c's placeholder and archive presented under a run the log
	// never recorded.
	d := f.complete()
	fake := f.dir(d)
	if err := os.RemoveAll(fake); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(fake, 0o755)
	ph, _ := os.ReadFile(filepath.Join(f.dir(c), "archived.json"))
	ph = bytes.ReplaceAll(ph, []byte(c), []byte(d))
	os.WriteFile(filepath.Join(fake, "archived.json"), ph, 0o444)
	arc, _ := os.ReadFile(retention.ArchivePath(f.state, c))
	os.WriteFile(retention.ArchivePath(f.state, d), arc, 0o444)
	readers(d, retention.ReasonArchiveUnrecorded)
	// c itself still reads.
	if _, err := run.Audit(f.dir(c)); err != nil {
		t.Fatalf("c: %v", err)
	}
}

// A SUPERSEDED run that a retained run's retry link names is kept.
func TestNeededRunKept(t *testing.T) {
	f := newFixture(t)
	r := f.planned(run.PlanOptions{})
	old := r.ID
	r.Close()
	// A PLANNED run with no writer, cancelled... retried: STALE is
	// retryable; make it STALE by a new commit.
	os.WriteFile(filepath.Join(f.repo, "README.md"), []byte("changed\n"), 0o644)
	gitCommit(t, f.repo)
	if _, err := run.Inspect(context.Background(), f.state, old, run.Freshness{RepoDir: f.repo, StateDir: f.state}); err != nil {
		t.Fatal(err)
	}
	nr, err := run.Retry(context.Background(), run.RetryOptions{ID: old, Actor: "alice", Plan: run.PlanOptions{RepoDir: f.repo, StateDir: f.state, Contract: f.c, Origin: "test"}})
	if err != nil {
		t.Fatal(err)
	}
	nr.Close() // PLANNED: retained
	p, err := retention.Scan(f.state, settings(t), later())
	if err != nil {
		t.Fatal(err)
	}
	for _, rp := range p.Runs {
		if rp.Run == old && (rp.State != "SUPERSEDED" || rp.Decision != retention.Keep || !strings.Contains(rp.Reason, nr.ID)) {
			t.Fatalf("superseded run: %+v", rp)
		}
	}
	if len(p.Archive) != 0 {
		t.Fatalf("would archive %v", p.Archive)
	}
}

// A segmented run (sealed events.NNNNNNNN.ndjson beside the active file)
// is archived whole and reads back through every reader.
func TestArchiveSegmentedRun(t *testing.T) {
	t.Setenv("PROOFGATE_SEGMENT_SIZE", "1KiB")
	f := newFixture(t)
	id := f.complete()
	segs, _ := filepath.Glob(filepath.Join(f.dir(id), "events.0*.ndjson"))
	if len(segs) == 0 {
		t.Fatal("the run has no sealed segment")
	}
	want, err := run.ReadLog(f.dir(id))
	if err != nil {
		t.Fatal(err)
	}
	res := f.apply(later)
	if len(res.Archived) != 1 || res.Archived[0].Files < 4+len(segs) {
		t.Fatalf("archived %+v", res.Archived)
	}
	got, err := run.ReadLog(f.dir(id))
	if err != nil || len(got) != len(want) || got[len(got)-1].Hash != want[len(want)-1].Hash {
		t.Fatalf("read back %d events (%v), want %d", len(got), err, len(want))
	}
	rd, _, done, err := run.ReadDir(f.state, id)
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	for _, s := range segs {
		if _, err := os.Stat(filepath.Join(rd, filepath.Base(s))); err != nil {
			t.Errorf("segment %s not in the archive: %v", filepath.Base(s), err)
		}
	}
	if st, err := run.Inspect(context.Background(), f.state, id, run.Freshness{}); err != nil || st.State != replay.Complete {
		t.Fatalf("status: %v", err)
	}
}

// What prune writes beside runs/ (archive/, the prune log, its lock) does
// not make the work tree dirty: the next run plans as before.
func TestPruneFilesAreNotWorkTree(t *testing.T) {
	f := newFixture(t)
	f.complete()
	f.apply(later)
	os.WriteFile(filepath.Join(f.state, retention.PruneLock), []byte("{}"), 0o644)
	r, err := run.Plan(context.Background(), run.PlanOptions{RepoDir: f.repo, StateDir: f.state, Contract: f.c, Origin: "test"})
	if err != nil {
		t.Fatalf("plan after a prune: %v", err)
	}
	r.Close()
	os.Remove(filepath.Join(f.state, retention.PruneLock))
	// Anything else in the state directory still counts.
	os.WriteFile(filepath.Join(f.state, "notes.txt"), []byte("x"), 0o644)
	if _, err := run.Plan(context.Background(), run.PlanOptions{RepoDir: f.repo, StateDir: f.state, Contract: f.c, Origin: "test"}); err == nil {
		t.Fatal("an untracked file beside the prune files did not make the tree dirty")
	}
}

// A run's products (ADR 0039) stay in its blob store, not in its bundle:
// prune keeps them as it keeps the blobs its log names, however old.
func TestProductsAreReachable(t *testing.T) {
	f := newFixture(t)
	// The product lies under the ignored .proofgate/runs/, so the work
	// tree stays clean.
	c, err := contract.Parse("contract.yaml", []byte(strings.Replace(contractYAML, "approval:",
		"  - {id: p, run: [sh, -c, 'mkdir -p .proofgate/runs/out && printf bin > .proofgate/runs/out/p.bin'], produces: [.proofgate/runs/out/p.bin]}\napproval:", 1)), "")
	if err != nil {
		t.Fatal(err)
	}
	f.c = c
	keep := f.awaiting()
	sum := sha256.Sum256([]byte("bin"))
	product := filepath.Join(f.dir(keep), "blobs", "sha256", hex.EncodeToString(sum[:]))
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(product, old, old); err != nil {
		t.Fatalf("the product is not in the run's blob store: %v", err)
	}
	unnamed := f.blob(keep, "old and named by nothing", 2*time.Hour)
	if res := f.apply(time.Now); res.Counts.BlobsReclaimed != 1 {
		t.Fatalf("reclaimed %d blobs, want 1", res.Counts.BlobsReclaimed)
	}
	if _, err := os.Stat(product); err != nil {
		t.Fatalf("the product was reclaimed: %v", err)
	}
	if _, err := os.Stat(unnamed); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the unnamed blob survived: %v", err)
	}
}
