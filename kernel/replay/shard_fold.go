package replay

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"

	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/strictjson"
	"github.com/proofgate/proofgate/kernel/eventlog"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// The run-log side of shards: the shard.merged row and the audit of a
// merged run's shard logs against the copies in the run's log.

// shardFold is the replay of shard.merged events.
type shardFold struct {
	of      int
	merged  map[int]bool
	claimed map[string]int // check id -> the shard that recorded it
	records []shardRecord
}

type shardRecord struct {
	line int
	d    ShardMergedData
}

// applyShardMerged records one merged shard: while VERIFYING and before
// the verification, a shard of the same count as every other, not merged
// before, whose checks are exactly the results recorded since the
// previous shard.merged (so every check is counted once, by one shard).
func (f *Folder) applyShardMerged(line int, _ eventlog.Event, d ShardMergedData) error {
	if f.state != Verifying || f.verified {
		return bad(line, ReasonIllegalTransition, "shard.merged while %s", f.state)
	}
	if f.sh == nil {
		f.sh = &shardFold{of: d.Of, merged: map[int]bool{}, claimed: map[string]int{}}
	}
	sh := f.sh
	switch {
	case d.Of < 1 || d.Of > MaxShards || d.Of != sh.of:
		return bad(line, ReasonBadEvent, "shard.merged of %d shards, the run merges %d", d.Of, sh.of)
	case d.Shard < 1 || d.Shard > d.Of || sh.merged[d.Shard]:
		return bad(line, ReasonBadEvent, "shard %d/%d merged twice or out of range", d.Shard, d.Of)
	case !digestRE.MatchString(d.Log.Head) || d.Log.Length < 2 || !digestRE.MatchString(d.Manifest):
		return bad(line, ReasonBadEvent, "shard %d: log %d events ending %q, manifest %q", d.Shard, d.Log.Length, d.Log.Head, d.Manifest)
	case len(f.pending) > 0:
		return bad(line, ReasonBadEvent, "shard %d merged while checks are started and not finished", d.Shard)
	case len(f.results)-len(sh.claimed) != len(d.Checks):
		return bad(line, ReasonBadEvent, "shard %d lists %d checks, %d results were recorded for it", d.Shard, len(d.Checks), len(f.results)-len(sh.claimed))
	}
	for _, id := range d.Checks {
		if _, ok := f.results[id]; !ok {
			return bad(line, ReasonBadEvent, "shard %d lists check %q, which has no result", d.Shard, id)
		}
		if s, dup := sh.claimed[id]; dup {
			return bad(line, ReasonBadEvent, "check %q recorded by shards %d and %d", id, s, d.Shard)
		}
		sh.claimed[id] = d.Shard
	}
	sh.merged[d.Shard] = true
	sh.records = append(sh.records, shardRecord{line, d})
	return nil
}

// shardsComplete refuses the verification of a merged run unless every
// shard 1..N was merged and recorded every result.
func (f *Folder) shardsComplete(line int) error {
	if f.sh == nil {
		return nil
	}
	if len(f.sh.merged) != f.sh.of {
		return bad(line, ReasonBadEvent, "verification of a merged run with %d of %d shards merged", len(f.sh.merged), f.sh.of)
	}
	if len(f.sh.claimed) != len(f.results) {
		return bad(line, ReasonBadEvent, "verification of a merged run with %d results, %d recorded by shards", len(f.results), len(f.sh.claimed))
	}
	return nil
}

// Merged reports whether the replayed run merged shards, and how many.
func (f *Folder) Merged() (shards int, ok bool) {
	if f.sh == nil {
		return 0, false
	}
	return f.sh.of, true
}

// Untouched reports whether the replayed run is VERIFYING with nothing
// recorded since: no check started or finished, no shard merged, no
// verification (a merge or exec killed right after its state change).
func (f *Folder) Untouched() bool {
	return f.state == Verifying && len(f.results) == 0 && len(f.pending) == 0 && f.sh == nil && !f.verified && !f.budgetHit
}

// maxShardLog bounds one shard log and one shard.json an audit reads.
const (
	maxShardLog      = 1 << 30
	maxShardManifest = 1 << 20
)

// ShardFiles are the files of merged shard i in a run directory (or a
// bundle): shards/<i>/events.ndjson, shard.json, and the signature files
// when present.
func ShardFiles(i int) []string {
	d := path.Join(ShardDir, strconv.Itoa(i))
	return []string{path.Join(d, EventsFile), path.Join(d, ShardManifestFile), path.Join(d, ShardSignatureFile), path.Join(d, ShardMaterialFile)}
}

// checkShards audits a merged run's shard logs in fsys: each shard.merged
// names a shards/<i>/shard.json whose digest it records and whose log
// reference it repeats, a shard log that verifies (ReadShardLog) with
// that length and head, and whose check events are, type and data byte
// for byte, the check events the run's log recorded for the shard.
func (f *Folder) checkShards(fsys fs.FS, events []eventlog.Event) error {
	if err := f.checkShardNames(fsys); err != nil || f.sh == nil {
		return err
	}
	b := eventlog.Binding{Run: events[0].Run, Source: events[0].Source, Contract: events[0].Contract}
	copies := shardCopies(events)
	for _, rec := range f.sh.records {
		if err := f.checkShard(fsys, b, rec, copies[rec.line]); err != nil {
			return err
		}
	}
	return nil
}

func (f *Folder) checkShard(fsys fs.FS, b eventlog.Binding, rec shardRecord, copied []eventlog.Event) error {
	d := rec.d
	names := ShardFiles(d.Shard)
	mb, err := readBounded(fsys, names[1], maxShardManifest)
	if err != nil {
		return err
	}
	if got := canon.SumBytes(mb); got != d.Manifest {
		return bad(rec.line, ReasonShard, "%s hashes to %s, shard.merged records %s", names[1], got, d.Manifest)
	}
	var m ShardManifest
	if err := strictjson.Decode(mb, &m); err != nil {
		return bad(rec.line, ReasonShard, "%s: %v", names[1], err)
	}
	lb, err := readBounded(fsys, names[0], maxShardLog)
	if err != nil {
		return err
	}
	s := sha256.Sum256(lb)
	if m.Log != d.Log || m.Events != hex.EncodeToString(s[:]) || m.Shard != d.Shard || m.Of != d.Of {
		return bad(rec.line, ReasonShard, "%s does not describe shard %d/%d's log %s", names[1], d.Shard, d.Of, names[0])
	}
	events, sl, err := openShardLog(lb, f.c, b, d.Shard, d.Of)
	if err != nil {
		return &AuditError{Reason: ReasonShard, Line: rec.line, Detail: names[0] + ": " + err.Error(), Err: err}
	}
	if sl.Length != d.Log.Length || sl.Head != d.Log.Head || !slices.Equal(sl.Opened.Checks, d.Checks) {
		return bad(rec.line, ReasonShard, "%s is %d events ending %s; shard.merged records %d ending %s", names[0], sl.Length, sl.Head, d.Log.Length, d.Log.Head)
	}
	return f.matchCopies(rec, events, sl, copied)
}

// matchCopies requires the shard log's events between shard.opened and
// shard.closed to be the run log's copies (type and data byte for byte;
// the run's replay already judged those) and optionally budget.exceeded,
// and shard.closed's counts to be the replayed results' of the shard.
func (f *Folder) matchCopies(rec shardRecord, events []eventlog.Event, sl *ShardLog, copied []eventlog.Event) error {
	d, k, budget := rec.d, 0, false
	for _, e := range events[1 : len(events)-1] {
		switch {
		case e.Type == TypeBudget:
			budget = true
		case k < len(copied) && e.Type == copied[k].Type && bytes.Equal(e.Data, copied[k].Data):
			k++
		default:
			return bad(rec.line, ReasonShard, "shard %d's event %d (%s) is not the one the run's log copies", d.Shard, e.Seq, e.Type)
		}
	}
	if k != len(copied) {
		return bad(rec.line, ReasonShard, "shard %d's log has %d check events, the run's log copies %d", d.Shard, k, len(copied))
	}
	last := events[len(events)-1]
	var c ShardClosedData
	if last.Type != TypeShardClosed || strictjson.Decode(last.Data, &c) != nil {
		return bad(rec.line, ReasonShard, "shard %d's log does not end with a valid %s", d.Shard, TypeShardClosed)
	}
	failed := 0
	for _, id := range d.Checks {
		if f.results[id].Outcome != runtime.Passed {
			failed++
		}
	}
	if c.Checks != len(d.Checks) || c.Failed != failed || c.BudgetExceeded != budget {
		return bad(rec.line, ReasonShard, "shard %d's shard.closed counts %d checks, %d failed, budget %v; the run replays %d, %d, %v", d.Shard, c.Checks, c.Failed, c.BudgetExceeded, len(d.Checks), failed, budget)
	}
	return nil
}

// checkShardNames refuses a shards/ entry no shard.merged accounts for:
// another index, or another file name.
func (f *Folder) checkShardNames(fsys fs.FS) error {
	ents, err := fs.ReadDir(fsys, ShardDir)
	if err != nil || len(ents) == 0 {
		return nil // no shards/ (fs.ErrNotExist): a run that merged none
	}
	known := map[string]bool{}
	if f.sh != nil {
		for i := range f.sh.merged {
			for _, n := range ShardFiles(i) {
				known[n] = true
			}
		}
	}
	for _, e := range ents {
		sub, err := fs.ReadDir(fsys, path.Join(ShardDir, e.Name()))
		if err != nil {
			return &AuditError{Reason: ReasonShard, Detail: fmt.Sprintf("%s/%s is not a merged shard's directory", ShardDir, e.Name())}
		}
		for _, s := range sub {
			if n := path.Join(ShardDir, e.Name(), s.Name()); !known[n] {
				return &AuditError{Reason: ReasonShard, Detail: n + " is not a file of a shard the log merged"}
			}
		}
	}
	return nil
}

// shardCopies maps each shard.merged line to the check events the run's
// log recorded since the previous shard.merged (or the start).
func shardCopies(events []eventlog.Event) map[int][]eventlog.Event {
	out := map[int][]eventlog.Event{}
	var cur []eventlog.Event
	for i, e := range events {
		switch e.Type {
		case TypeCheckStarted, TypeCheckFinished:
			cur = append(cur, e)
		case TypeShardMerged:
			out[i+1], cur = cur, nil
		}
	}
	return out
}
