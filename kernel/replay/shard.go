package replay

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/proofgate/proofgate/internal/strictjson"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/eventlog"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// Shards (docs/SPEC.md "Shards", ADR 0026): a planned run's checks
// executed in N shard logs and merged back into the run's log.
//
// A shard log is an eventlog whose every line is bound to the run's
// contract and source and to the run id qualified by the shard,
// ShardRun(run, i, n) = "<run>#shard-<i>-of-<n>": a shard log line is
// never a valid line of the run's own log (foreign-binding), and the
// run's replay does not accept the shard log's own event types
// (shard.opened, shard.closed are not rows of the event table).
const (
	// TypeShardOpened is a shard log's first event.
	TypeShardOpened = "shard.opened"
	// TypeShardClosed is a shard log's last event.
	TypeShardClosed = "shard.closed"
	// TypeShardMerged is the run-log event that records one merged shard
	// after the shard's check events were appended.
	TypeShardMerged = "shard.merged"
)

// MaxShards bounds N in a shard spec I/N.
const MaxShards = 256

// ShardDir is the run directory's folder of merged shards: shards/<i>/
// holds the shard's log (events.ndjson) and manifest files.
const ShardDir = "shards"

// Files of a shard directory (and of shards/<i>/ in a merged run).
const (
	ShardManifestFile  = "shard.json"
	ShardSignatureFile = "shard.sig"
	ShardMaterialFile  = "shard.sigstore.json"
)

// ChainRef names a log prefix: its length and the hash of its last event.
type ChainRef struct {
	Length int    `json:"length"`
	Head   string `json:"head"`
}

// ShardOpenedData is the data of shard.opened.
type ShardOpenedData struct {
	Shard  int      `json:"shard"`
	Of     int      `json:"of"`
	Checks []string `json:"checks"`
	// Planned is the run's log the shard executed: the planned prefix.
	Planned  ChainRef      `json:"planned"`
	Worktree WorktreeState `json:"worktree"`
	Executor string        `json:"executor"`
}

// ShardClosedData is the data of shard.closed.
type ShardClosedData struct {
	Checks         int           `json:"checks"`
	Failed         int           `json:"failed"`
	BudgetExceeded bool          `json:"budget_exceeded"`
	Worktree       WorktreeState `json:"worktree"`
}

// ShardMergedData is the data of shard.merged.
type ShardMergedData struct {
	Shard  int      `json:"shard"`
	Of     int      `json:"of"`
	Checks []string `json:"checks"`
	// Log is the shard log's length and head as verified at merge.
	Log ChainRef `json:"log"`
	// Manifest is "sha256:<hex>" of the shard's shard.json bytes.
	Manifest string `json:"manifest"`
	// Worktree is the work-tree digest the shard saw when it closed.
	Worktree string `json:"worktree_digest"`
	// Signer is the key id that signed shard.json ("" for an unsigned
	// merge, which only tests allow).
	Signer string `json:"signer"`
}

// ShardManifest is shard.json: what a shard directory holds, written when
// the shard log is closed, signed into shard.sig.
type ShardManifest struct {
	V        int             `json:"v"`
	Run      string          `json:"run"`
	Contract string          `json:"contract"`
	Source   eventlog.Source `json:"source"`
	Shard    int             `json:"shard"`
	Of       int             `json:"of"`
	Checks   []string        `json:"checks"`
	Planned  ChainRef        `json:"planned"`
	Log      ChainRef        `json:"log"`
	// Events is the sha256 hex of the shard log file.
	Events   string   `json:"events"`
	Blobs    []string `json:"blobs"`
	Finished string   `json:"finished"`
}

// ReasonShard is a shard log (or a merged run's copy of it) that does not
// hold.
const ReasonShard AuditReason = "shard"

// ShardRun is the run id a shard log is bound to.
func ShardRun(run string, shard, of int) string {
	return run + "#shard-" + strconv.Itoa(shard) + "-of-" + strconv.Itoa(of)
}

// ShardBinding is the binding of shard i of n of the run bound by b.
func ShardBinding(b eventlog.Binding, shard, of int) eventlog.Binding {
	b.Run = ShardRun(b.Run, shard, of)
	return b
}

// ShardLog is a verified shard log.
type ShardLog struct {
	Opened ShardOpenedData
	Closed ShardClosedData
	// Checks are the check.started and check.finished events, in order.
	Checks []eventlog.Event
	// Results are the check.finished data by check id.
	Results map[string]CheckFinishedData
	Length  int
	Head    string
}

// ReadShardLog verifies shard shard of of's log data against the run's
// binding and frozen contract: the chain under ShardBinding, shard.opened
// first naming this shard, then only check events of the checks it lists,
// each started at most once (after its dependencies, which must be in
// the shard, passed) and finished exactly once, optionally
// budget.exceeded, and shard.closed last with the counts. Refusals are
// *AuditError (ReasonChain for the chain, ReasonShard otherwise).
func ReadShardLog(data []byte, c *contract.Resolved, run eventlog.Binding, shard, of int) (*ShardLog, error) {
	events, sl, err := openShardLog(data, c, run, shard, of)
	if err != nil {
		return nil, err
	}
	sc := &shardScan{c: c, sl: sl, in: map[string]bool{}, started: map[string]bool{}}
	for _, id := range sl.Opened.Checks {
		sc.in[id] = true
	}
	for i, e := range events[1 : len(events)-1] {
		if err := sc.apply(i+2, e); err != nil {
			return nil, err
		}
	}
	return sl, sc.close(len(events), events[len(events)-1])
}

// openShardLog verifies the chain of a shard log under its binding and
// reads its shard.opened.
func openShardLog(data []byte, c *contract.Resolved, run eventlog.Binding, shard, of int) ([]eventlog.Event, *ShardLog, error) {
	want := ShardBinding(run, shard, of)
	events, err := eventlog.Read(bytes.NewReader(data), &want)
	if err != nil {
		var ce *eventlog.ChainError
		if errors.As(err, &ce) {
			return nil, nil, &AuditError{Reason: ReasonChain, Line: ce.Line, Detail: fmt.Sprintf("shard log: %s: %s", ce.Reason, ce.Detail), Err: ce}
		}
		return nil, nil, &AuditError{Reason: ReasonChain, Detail: "shard log: " + err.Error(), Err: err}
	}
	if len(events) < 2 {
		return nil, nil, shardBad(0, "the shard log has %d events; it opens and closes", len(events))
	}
	sl := &ShardLog{Results: map[string]CheckFinishedData{}, Length: len(events), Head: events[len(events)-1].Hash}
	if err := sl.open(events[0], c, shard, of); err != nil {
		return nil, nil, err
	}
	return events, sl, nil
}

func shardBad(line int, format string, a ...any) *AuditError {
	return &AuditError{Reason: ReasonShard, Line: line, Detail: "shard log: " + fmt.Sprintf(format, a...)}
}

func (sl *ShardLog) open(e eventlog.Event, c *contract.Resolved, shard, of int) error {
	if e.Type != TypeShardOpened {
		return shardBad(1, "first event is %q, want %s", e.Type, TypeShardOpened)
	}
	d := &sl.Opened
	if err := strictjson.Decode(e.Data, d); err != nil {
		return shardBad(1, "%s: %v", e.Type, err)
	}
	if d.Shard != shard || d.Of != of {
		return shardBad(1, "shard.opened names shard %d/%d, not %d/%d", d.Shard, d.Of, shard, of)
	}
	seen := map[string]bool{}
	for _, id := range d.Checks {
		chk, ok := c.Check(id)
		if !ok || seen[id] {
			return shardBad(1, "check %q is not in the contract or listed twice", id)
		}
		seen[id] = true
		for _, dep := range chk.DependsOn {
			if !slices.Contains(d.Checks, dep) {
				return shardBad(1, "check %q depends on %q, which is in another shard", id, dep)
			}
		}
	}
	if d.Planned.Length < 1 || !digestRE.MatchString(d.Planned.Head) {
		return shardBad(1, "shard.opened names planned log %d events ending %q", d.Planned.Length, d.Planned.Head)
	}
	return nil
}

// shardScan checks the events between shard.opened and shard.closed.
type shardScan struct {
	c       *contract.Resolved
	sl      *ShardLog
	in      map[string]bool
	started map[string]bool
	budget  bool
}

func (sc *shardScan) apply(line int, e eventlog.Event) error {
	switch e.Type {
	case TypeCheckStarted:
		var d CheckStartedData
		if err := strictjson.Decode(e.Data, &d); err != nil {
			return shardBad(line, "%s: %v", e.Type, err)
		}
		if !sc.in[d.Check] || sc.started[d.Check] {
			return shardBad(line, "check %q started, but it is not this shard's or started twice", d.Check)
		}
		chk, _ := sc.c.Check(d.Check)
		for _, dep := range chk.DependsOn {
			if r, ok := sc.sl.Results[dep]; !ok || r.Outcome != runtime.Passed {
				return shardBad(line, "check %q started before its dependency %q passed", d.Check, dep)
			}
		}
		sc.started[d.Check] = true
	case TypeCheckFinished:
		var d CheckFinishedData
		if err := strictjson.Decode(e.Data, &d); err != nil {
			return shardBad(line, "%s: %v", e.Type, err)
		}
		if _, done := sc.sl.Results[d.Check]; !sc.in[d.Check] || done {
			return shardBad(line, "check %q finished, but it is not this shard's or finished twice", d.Check)
		}
		if !sc.started[d.Check] && d.Outcome != runtime.Skipped {
			return shardBad(line, "check %q finished without check.started", d.Check)
		}
		sc.sl.Results[d.Check] = d
	case TypeBudget:
		sc.budget = true
		return nil
	default:
		return shardBad(line, "event type %q in a shard log", e.Type)
	}
	sc.sl.Checks = append(sc.sl.Checks, e)
	return nil
}

func (sc *shardScan) close(line int, e eventlog.Event) error {
	if e.Type != TypeShardClosed {
		return shardBad(line, "last event is %q, want %s", e.Type, TypeShardClosed)
	}
	d := &sc.sl.Closed
	if err := strictjson.Decode(e.Data, d); err != nil {
		return shardBad(line, "%s: %v", e.Type, err)
	}
	failed := 0
	for _, r := range sc.sl.Results {
		if r.Outcome != runtime.Passed {
			failed++
		}
	}
	switch {
	case len(sc.sl.Results) != len(sc.sl.Opened.Checks):
		return shardBad(line, "%d of the shard's %d checks finished", len(sc.sl.Results), len(sc.sl.Opened.Checks))
	case d.Checks != len(sc.sl.Results) || d.Failed != failed || d.BudgetExceeded != sc.budget:
		return shardBad(line, "shard.closed says %d checks, %d failed, budget %v; the log says %d, %d, %v",
			d.Checks, d.Failed, d.BudgetExceeded, len(sc.sl.Results), failed, sc.budget)
	}
	return nil
}
