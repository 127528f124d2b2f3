package bundle

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/bundle/archive"
	"github.com/proofgate/proofgate/internal/blob"
	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/strictjson"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/eventlog"
	"github.com/proofgate/proofgate/kernel/input"
	"github.com/proofgate/proofgate/kernel/replay"
)

// rewriteRun is what a holder of a trusted key can do to the run whose
// files are under prefix ("" for the bundled run): mutate its events,
// re-chain the whole log, rewrite its run.json to the replay of the new log
// (when it still replays), and re-sign the statement over the new files.
func rewriteRun(t *testing.T, fs []archive.File, k *signingKey, prefix string, mutate func([]eventlog.Event) []eventlog.Event) []archive.File {
	t.Helper()
	fs, events := rewriteMembers(t, fs, prefix, mutate)
	return resign(t, fs, k, func(s *Statement) {
		s.Subject = subjectsFor(fs)
		if prefix == "" && len(events) > 0 {
			s.Predicate.Run.Chain = Chain{Head: events[len(events)-1].Hash, Length: len(events)}
		}
	})
}

// rewriteMembers is rewriteRun without the signature: the members with the
// log under prefix mutated and re-chained, and its run.json rewritten.
func rewriteMembers(t testing.TB, fs []archive.File, prefix string, mutate func([]eventlog.Event) []eventlog.Event) ([]archive.File, []eventlog.Event) {
	t.Helper()
	var c contract.Resolved
	var events []eventlog.Event
	for _, f := range fs {
		switch f.Name {
		case prefix + ContractFile:
			if err := strictjson.Decode(f.Data, &c); err != nil {
				t.Fatal(err)
			}
		case prefix + EventsFile:
			var err error
			if events, err = eventlog.Read(bytes.NewReader(f.Data), nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	events = mutate(events)
	var log bytes.Buffer
	for i := range events {
		events[i].Seq, events[i].Prev = uint64(i+1), nil
		if i > 0 {
			p := events[i-1].Hash
			events[i].Prev = &p
		}
		events[i].Hash, _ = eventlog.Hash(events[i])
		line, _ := canon.Marshal(events[i])
		log.Write(append(line, '\n'))
	}
	fs = edit(fs, prefix+EventsFile, func([]byte) []byte { return log.Bytes() })
	if rep, err := replay.Fold(&c, events); err == nil {
		proj, _ := json.MarshalIndent(rep, "", "  ")
		fs = edit(fs, prefix+RunFile, func([]byte) []byte { return append(proj, '\n') })
	}
	return fs, events
}

// editData rewrites the data of the n-th event of type typ (from 0).
func editData(t testing.TB, typ string, n int, fn func(map[string]any)) func([]eventlog.Event) []eventlog.Event {
	return func(events []eventlog.Event) []eventlog.Event {
		for i, e := range events {
			if e.Type != typ {
				continue
			}
			if n--; n >= 0 {
				continue
			}
			var d map[string]any
			if err := json.Unmarshal(e.Data, &d); err != nil {
				t.Fatal(err)
			}
			fn(d)
			events[i].Data, _ = canon.Marshal(d)
			return events
		}
		t.Fatalf("no %s", typ)
		return nil
	}
}

// insertAfter inserts an event of type typ with data after the n-th event
// of type after.
func insertAfter(t *testing.T, after string, n int, typ string, data map[string]any) func([]eventlog.Event) []eventlog.Event {
	return func(events []eventlog.Event) []eventlog.Event {
		for i, e := range events {
			if e.Type != after {
				continue
			}
			if n--; n >= 0 {
				continue
			}
			ne := e
			ne.Type = typ
			ne.Data, _ = canon.Marshal(data)
			return append(events[:i+1], append([]eventlog.Event{ne}, events[i+1:]...)...)
		}
		t.Fatalf("no %s", after)
		return nil
	}
}

// dataOf decodes the n-th event of type typ of the log under prefix.
func dataOf(t *testing.T, fs []archive.File, prefix, typ string, n int) map[string]any {
	t.Helper()
	for _, f := range fs {
		if f.Name != prefix+EventsFile {
			continue
		}
		events, _ := eventlog.Read(bytes.NewReader(f.Data), nil)
		for _, e := range events {
			if e.Type == typ {
				if n--; n < 0 {
					var d map[string]any
					json.Unmarshal(e.Data, &d)
					return d
				}
			}
		}
	}
	t.Fatalf("no %s under %q", typ, prefix)
	return nil
}

// replayReason is the kernel replay's reason inside a refusal, if any.
func replayReason(err error) replay.AuditReason {
	var ae *replay.AuditError
	if errors.As(err, &ae) {
		return ae.Reason
	}
	return ""
}

func TestImplementationBundleHostile(t *testing.T) {
	f := makeImplemented(t)
	k := newKey(t)
	st := storeWith(t, k)
	fs := files(t, export(t, f.fixture, k, ExportOptions{}))
	a := ImplementationPrefix + f.implID + "/"
	other := makeImplemented(t)
	otherFS := files(t, export(t, other.fixture, k, ExportOptions{}))
	otherA := ImplementationPrefix + other.implID + "/"
	plain := files(t, export(t, makeRun(t, runOpts{approve: []string{"alice"}}), k, ExportOptions{}))

	// The manifest call (the third tool.requested) and a blob of one of its messages.
	manifestReq := dataOf(t, fs, a, replay.TypeToolRequested, 2)
	var messageBlob string
	for _, x := range fs {
		if strings.HasPrefix(x.Name, a+BlobPrefix) && bytes.Contains(x.Data, []byte(`turn 2`)) && !bytes.Contains(x.Data, []byte(`messages`)) {
			messageBlob = x.Name
		}
	}
	if manifestReq["manifest"] != true || messageBlob == "" {
		t.Fatalf("fixture: manifest request %v, message blob %q", manifestReq, messageBlob)
	}
	// Another conversation's manifest, stored beside A's blobs.
	otherDir := t.TempDir()
	otherStore := blob.New(otherDir)
	oc, _ := input.Canonical(messages(5))
	os2, err := input.Store(otherStore, oc)
	if err != nil || !os2.Manifest {
		t.Fatalf("other manifest: %+v %v", os2, err)
	}
	withOtherManifest := append([]archive.File{}, fs...)
	ents, _ := os.ReadDir(filepath.Join(otherDir, "sha256"))
	for _, e := range ents {
		b, _ := os.ReadFile(filepath.Join(otherDir, "sha256", e.Name()))
		name := a + BlobPrefix + e.Name()
		if !hasFile(fs, name) {
			withOtherManifest = append(withOtherManifest, archive.File{Name: name, Data: b})
		}
	}

	for _, tc := range []struct {
		name   string
		fs     []archive.File
		want   Reason
		replay replay.AuditReason // the kernel's reason inside, when the replay refused
	}{
		{"forged receipt: output hash of a finished call", rewriteRun(t, fs, k, a, editData(t, replay.TypeToolFinished, 0, func(d map[string]any) {
			d["output_hash"] = "sha256:" + strings.Repeat("e", 64)
		})), AuditFailed, replay.ReasonReceipt},
		{"forged receipt: a start for the blocked call", rewriteRun(t, fs, k, a, insertAfter(t, replay.TypeToolDecided, 4, replay.TypeToolStarted, map[string]any{
			"action": dataOf(t, fs, a, replay.TypeToolRequested, 3)["action"], "receipt": "r-0000000000ff", "session": manifestReq["session"], "tool": "wipe",
			"input_hash": dataOf(t, fs, a, replay.TypeToolRequested, 3)["input_hash"], "input_ref": dataOf(t, fs, a, replay.TypeToolRequested, 3)["input_ref"],
			"decision": "allow", "owner": dataOf(t, fs, a, replay.TypeSessionStarted, 0)["owner"]})), AuditFailed, replay.ReasonDenied},
		{"approval replayed for another input hash", rewriteRun(t, fs, k, a, editData(t, replay.TypeToolDecided, 2, func(d map[string]any) {
			d["input_hash"] = dataOf(t, fs, a, replay.TypeToolRequested, 0)["input_hash"]
		})), AuditFailed, replay.ReasonApprovalBinding},
		{"approval by the session's own agent", rewriteRun(t, fs, k, a, editData(t, replay.TypeToolDecided, 2, func(d map[string]any) {
			d["actor"] = "claude-code"
		})), AuditFailed, replay.ReasonSelfApproval},
		{"changed message blob, re-signed", resign(t, edit(fs, messageBlob, func(b []byte) []byte { return bytes.Replace(b, []byte("turn 2"), []byte("turn X"), 1) }), k, func(s *Statement) {
			s.Subject = subjectsFor(edit(fs, messageBlob, func(b []byte) []byte { return bytes.Replace(b, []byte("turn 2"), []byte("turn X"), 1) }))
		}), SubjectMismatch, ""},
		{"changed message blob, renamed to its digest", renameToDigest(t, k, fs, messageBlob, func(b []byte) []byte { return bytes.Replace(b, []byte("turn 2"), []byte("turn X"), 1) }), MissingFile, replay.ReasonBlob},
		{"manifest naming another input", rewriteRun(t, withOtherManifest, k, a, func(ev []eventlog.Event) []eventlog.Event {
			ev = editData(t, replay.TypeToolRequested, 2, func(d map[string]any) { d["input_ref"] = os2.Ref })(ev)
			return editData(t, replay.TypeToolStarted, 2, func(d map[string]any) { d["input_ref"] = os2.Ref })(ev)
		}), MissingFile, replay.ReasonBlob},
		{"implementation log from another run", resign(t, swapImplementation(fs, a, otherFS, otherA), k, func(s *Statement) {
			s.Subject = subjectsFor(swapImplementation(fs, a, otherFS, otherA))
		}), ImplementationMismatch, ""},
		{"a second implementation run carried", resign(t, append(append([]archive.File{}, fs...), only(otherFS, otherA)...), k, func(s *Statement) {
			s.Subject = subjectsFor(append(append([]archive.File{}, fs...), only(otherFS, otherA)...))
		}), ExtraFile, ""},
		{"implemented_by head edited", rewriteRun(t, fs, k, "", editData(t, replay.TypePlanned, 0, func(d map[string]any) {
			d["implemented_by"].(map[string]any)["head"] = "sha256:" + strings.Repeat("1", 64)
		})), ImplementationMismatch, ""},
		{"implementation log truncated before its supersession", rewriteRun(t, fs, k, a, func(ev []eventlog.Event) []eventlog.Event { return ev[:len(ev)-1] }), ImplementationMismatch, ""},
		{"an event appended after the supersession", rewriteRun(t, fs, k, a, func(ev []eventlog.Event) []eventlog.Event {
			e := ev[len(ev)-1]
			e.Type, e.Data = replay.TypeLockBroken, []byte(`{"actor":"x","owner_created":"2026-12-01T00:00:00Z","owner_host":"h","owner_pid":1}`)
			return append(ev, e)
		}), ImplementationMismatch, ""},
		{"implementation log re-chained", rewriteRun(t, fs, k, a, editData(t, replay.TypeSessionEnded, 0, func(d map[string]any) { d["reason"] = "rewritten" })), ImplementationMismatch, ""},
		{"implementation run missing", resign(t, without(fs, a), k, func(s *Statement) { s.Subject = subjectsFor(without(fs, a)) }), MissingFile, ""},
		{"implementation events missing", resign(t, without(fs, a+EventsFile), k, func(s *Statement) { s.Subject = subjectsFor(without(fs, a+EventsFile)) }), MissingFile, ""},
		{"implementation on a run that names none", resign(t, append(append([]archive.File{}, plain...), only(fs, a)...), k, func(s *Statement) {
			s.Subject = subjectsFor(append(append([]archive.File{}, plain...), only(fs, a)...))
		}), ExtraFile, ""},
		{"implementation file edited, not re-signed", edit(fs, a+RunFile, flip), SubjectMismatch, ""},
		{"predicate lies about the tool calls", resign(t, fs, k, func(s *Statement) { s.Predicate.Run.ImplementedBy.ToolCalls = 1 }), PredicateMismatch, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Verify(bytes.NewReader(repack(t, tc.fs)), st, anyRun)
			if got := reasonOf(err); got != tc.want {
				t.Fatalf("reason %q (%v), want %s", got, err, tc.want)
			}
			t.Log(err)
			if tc.replay != "" && replayReason(err) != tc.replay {
				t.Fatalf("replay reason %q (%v), want %s", replayReason(err), err, tc.replay)
			}
		})
	}
}

func hasFile(fs []archive.File, name string) bool {
	for _, f := range fs {
		if f.Name == name {
			return true
		}
	}
	return false
}

// only is the files under prefix.
func only(fs []archive.File, prefix string) []archive.File {
	var out []archive.File
	for _, f := range fs {
		if strings.HasPrefix(f.Name, prefix) {
			out = append(out, f)
		}
	}
	return out
}

// without is fs without the files named name or under it.
func without(fs []archive.File, name string) []archive.File {
	var out []archive.File
	for _, f := range fs {
		if f.Name != name && !strings.HasPrefix(f.Name, name) {
			out = append(out, f)
		}
	}
	return out
}

// swapImplementation replaces the files under prefix by other's files
// under otherPrefix, renamed under prefix.
func swapImplementation(fs []archive.File, prefix string, other []archive.File, otherPrefix string) []archive.File {
	out := without(fs, prefix)
	for _, f := range only(other, otherPrefix) {
		out = append(out, archive.File{Name: prefix + strings.TrimPrefix(f.Name, otherPrefix), Data: f.Data})
	}
	return out
}

// renameToDigest changes a blob and renames it to its new digest, re-signed.
func renameToDigest(t *testing.T, k *signingKey, fs []archive.File, name string, fn func([]byte) []byte) []archive.File {
	t.Helper()
	var out []archive.File
	for _, f := range fs {
		if f.Name == name {
			d := fn(append([]byte{}, f.Data...))
			f = archive.File{Name: name[:len(name)-64] + sum(d), Data: d}
		}
		out = append(out, f)
	}
	return resign(t, out, k, func(s *Statement) { s.Subject = subjectsFor(out) })
}

// Export refuses a successor whose implementation run is not beside it.
func TestImplementationExportRefusals(t *testing.T) {
	f := makeImplemented(t)
	k := newKey(t)
	if err := os.Rename(f.implDir, f.implDir+".moved"); err != nil {
		t.Fatal(err)
	}
	_, err := Export(f.runDir, k.s, &bytes.Buffer{}, ExportOptions{})
	var ee *ExportError
	if !errors.As(err, &ee) || ee.Reason != MissingFile {
		t.Fatalf("export without the implementation run: %v", err)
	}
}
