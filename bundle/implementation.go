package bundle

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing/fstest"

	"github.com/proofgate/proofgate/bundle/archive"
	"github.com/proofgate/proofgate/internal/strictjson"
	"github.com/proofgate/proofgate/kernel/eventlog"
	"github.com/proofgate/proofgate/kernel/replay"
)

// A run planned with implemented_by (ADR 0017) verifies the tree an agent
// left; the run whose sessions the agent worked in (the implementation
// run) travels in the same bundle under ImplementationPrefix + its id + "/":
// its run.json, events.ndjson, contract.json and every blob its log names,
// with the same rules as the main files (subjects, digests, no extra
// file). Verify replays it fully, requires it to be the run implemented_by
// names at the head and length recorded there, superseded by the bundled
// run and by nothing else, and summarises it in the predicate's
// run.implemented_by.

// Manifest inputs (conversations stored as message blobs) are rebuilt by
// the replay with kernel/input's Rebuild, in the bundled run (from the
// small blobs readArchive holds) and in the implementation run (whose
// blobs are held): a manifest that does not rebuild its recorded input
// hash is refused.

// ImplementationPrefix is the directory of the implementation run's files.
const ImplementationPrefix = "implementation/"

// ImplementationMismatch is a carried implementation run that is not the
// one the bundled run's implemented_by names: another run, another chain
// (re-chained, truncated or extended), source or contract, or not ended
// SUPERSEDED by the bundled run.
const ImplementationMismatch Reason = "implementation-mismatch"

// ImplementationSummary is the predicate's run.implemented_by: the
// implementation run as the bundled run's run.planned binds it (chain head
// and length before its supersession) and what its sessions did.
type ImplementationSummary struct {
	Run       string `json:"run"`
	Head      string `json:"head"`
	Length    int    `json:"length"`
	Sessions  int    `json:"sessions"`
	ToolCalls int    `json:"tool_calls"`
}

// implementationRE matches the name of a carried implementation file:
// the run id, then a run file or a blob named by its digest.
var implementationRE = regexp.MustCompile(`^implementation/([0-9]{8}T[0-9]{6}\.[0-9]{3}Z-[0-9a-f]{8})/(run\.json|events\.ndjson|contract\.json|blobs/sha256/[0-9a-f]{64})$`)

// splitImplementation returns the run id and the run-relative name of a
// carried implementation file; ok is false for any other name.
func splitImplementation(name string) (id, rel string, ok bool) {
	m := implementationRE.FindStringSubmatch(name)
	if m == nil {
		return "", "", false
	}
	return m[1], m[2], true
}

func isImplementationBlob(name string) bool {
	_, rel, ok := splitImplementation(name)
	return ok && strings.HasPrefix(rel, BlobPrefix)
}

// checkImplementation requires the implementation run (its audit report
// and events) to be exactly the run ib names, ended SUPERSEDED by run by.
// It returns the predicate's summary of it.
func checkImplementation(ib *replay.ImplementedBy, rep *replay.Report, events []eventlog.Event, by string) (*ImplementationSummary, error) {
	switch {
	case rep.RunID != ib.Run:
		return nil, fmt.Errorf("the carried log is run %s, implemented_by names %s", rep.RunID, ib.Run)
	case rep.ContractHash != ib.Contract:
		return nil, fmt.Errorf("run %s used contract %s, implemented_by records %s", ib.Run, rep.ContractHash, ib.Contract)
	case rep.Source.Commit != ib.Source.Commit || rep.Source.Tree != ib.Source.Tree:
		return nil, fmt.Errorf("run %s is bound to commit %s tree %s, implemented_by records commit %s tree %s", ib.Run, rep.Source.Commit, rep.Source.Tree, ib.Source.Commit, ib.Source.Tree)
	case len(events) != ib.Length+1:
		return nil, fmt.Errorf("run %s has %d events; implemented_by binds %d, then only its supersession", ib.Run, len(events), ib.Length)
	case events[ib.Length-1].Hash != ib.Head:
		return nil, fmt.Errorf("run %s's event %d is %s, implemented_by binds %s", ib.Run, ib.Length, events[ib.Length-1].Hash, ib.Head)
	}
	last := events[len(events)-1]
	var d replay.StateData
	if last.Type != replay.TypeState || strictjson.Decode(last.Data, &d) != nil ||
		d.From != replay.Implementing || d.To != replay.Superseded || d.By != by || rep.State != replay.Superseded {
		return nil, fmt.Errorf("run %s does not end IMPLEMENTING → SUPERSEDED by %s (it is %s)", ib.Run, by, rep.State)
	}
	sessions, calls := sessionCounts(rep)
	return &ImplementationSummary{Run: ib.Run, Head: ib.Head, Length: ib.Length, Sessions: sessions, ToolCalls: calls}, nil
}

// packImplementation adds the implementation run of rep, found in the
// runs directory runs and read from its archive when pruned, to the
// bundle: audited as the main run is (its blobs re-hashed while copied),
// checked against implemented_by. It returns nil when rep names no
// implementation run. The blob entries read the implementation run's
// directory when written: call done after that.
func packImplementation(open RunOpener, rep *replay.Report, subjects map[string]string, entries []archive.Entry) (_ *ImplementationSummary, _ []archive.Entry, done func(), err error) {
	ib := rep.ImplementedBy
	if ib == nil {
		return nil, entries, func() {}, nil
	}
	id := rep.RunID
	implDir, release, err := open(ib.Run)
	if err != nil {
		return nil, nil, nil, &ExportError{Reason: MissingFile, RunID: id, Detail: "implementation run: " + err.Error(), Err: err}
	}
	defer func() {
		if err != nil {
			release()
		}
	}()
	mem, implRep, events, err := auditImplementationDir(implDir, id)
	if err != nil {
		return nil, nil, nil, err
	}
	summary, err := checkImplementation(ib, implRep, events, id)
	if err != nil {
		return nil, nil, nil, &ExportError{Reason: ImplementationMismatch, RunID: id, Detail: err.Error()}
	}
	prefix := ImplementationPrefix + ib.Run + "/"
	for _, name := range []string{RunFile, EventsFile, ContractFile} {
		subjects[prefix+name] = sum(mem[name])
		entries = append(entries, archive.BytesEntry(prefix+name, mem[name]))
	}
	for _, d := range implRep.Blobs {
		e, err := blobEntry(implDir, id, d[len("sha256:"):])
		if err != nil {
			return nil, nil, nil, err
		}
		e.Name = prefix + e.Name
		subjects[e.Name] = d[len("sha256:"):]
		entries = append(entries, e)
	}
	return summary, entries, release, nil
}

// auditImplementationDir reads and audits the implementation run in dir
// for the export of run id.
func auditImplementationDir(dir, id string) (map[string][]byte, *replay.Report, []eventlog.Event, error) {
	mem := map[string][]byte{}
	for _, name := range []string{RunFile, EventsFile, ContractFile} {
		b, err := readRunFile(dir, name)
		if err != nil {
			return nil, nil, nil, &ExportError{Reason: MissingFile, RunID: id, Detail: "implementation run: " + err.Error(), Err: err}
		}
		mem[name] = b
	}
	rep, err := replay.AuditFS(replay.Overlay(dir, mem), replay.BlobsVerified())
	if err != nil {
		return nil, nil, nil, &ExportError{Reason: AuditFailed, RunID: id, Detail: "implementation run: " + err.Error(), Err: err}
	}
	events, err := eventlog.Read(bytes.NewReader(mem[EventsFile]), nil)
	if err != nil {
		return nil, nil, nil, &ExportError{Reason: AuditFailed, RunID: id, Detail: fmt.Sprintf("implementation run events: %v", err), Err: err}
	}
	return mem, rep, events, nil
}

// auditImplementation verifies the carried implementation run of the
// audited bundle: exactly the files of the run implemented_by names (none
// when it names none), a full replay of them, its blobs referenced by its
// log, and the run being what implemented_by binds. It sets b.impl.
func (b *unpacked) auditImplementation() error {
	ib := b.rep.ImplementedBy
	mem := fstest.MapFS{}
	for _, f := range b.list {
		id, rel, ok := splitImplementation(f.Name)
		if !ok {
			continue
		}
		if ib == nil || id != ib.Run {
			return refuse(ExtraFile, f.Name+" is not a file of the implementation run the bundled run names", b.id, nil)
		}
		mem[rel] = &fstest.MapFile{Data: f.Data, Mode: 0o444}
	}
	if ib == nil {
		return nil
	}
	for _, name := range []string{RunFile, EventsFile, ContractFile} {
		if _, ok := mem[name]; !ok {
			return refuse(MissingFile, fmt.Sprintf("implemented_by names run %s, and the bundle does not carry its %s", ib.Run, name), b.id, nil)
		}
	}
	rep, err := replay.AuditFS(mem, replay.BlobsVerified())
	if err != nil {
		return refuseImplementationAudit(err, ib.Run, b.id)
	}
	referenced := map[string]bool{}
	for _, d := range rep.Blobs {
		referenced[BlobPrefix+strings.TrimPrefix(d, "sha256:")] = true
	}
	for rel := range mem {
		if strings.HasPrefix(rel, BlobPrefix) && !referenced[rel] {
			return refuse(ExtraFile, ImplementationPrefix+ib.Run+"/"+rel+" is not referenced by the implementation run's log", b.id, nil)
		}
	}
	events, err := eventlog.Read(bytes.NewReader(mem[EventsFile].Data), nil)
	if err != nil {
		return refuse(ChainBroken, "implementation run: "+err.Error(), b.id, err)
	}
	summary, err := checkImplementation(ib, rep, events, b.rep.RunID)
	if err != nil {
		return refuse(ImplementationMismatch, err.Error(), b.id, nil)
	}
	b.impl = summary
	return nil
}

// refuseImplementationAudit is refuseAudit for the implementation run.
func refuseImplementationAudit(err error, run, runID string) error {
	ve := refuseAudit(err, runID).(*VerifyError)
	ve.Detail = "implementation run " + run + ": " + ve.Detail
	return ve
}
