package bundle

import (
	"bytes"
	"encoding/json"
	"testing"
	"testing/fstest"

	"github.com/proofgate/proofgate/bundle/archive"
	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/kernel/eventlog"
	"github.com/proofgate/proofgate/kernel/replay"
)

// withRepeatedApproval returns the bundle's files with a second
// approval.recorded event inserted right after the first one, its data
// changed by mutate, the chain recomputed, run.json re-projected and the
// statement re-signed by a trusted key: a log the kernel's replay accepts
// (a repeated approver does not count again) and a trusted exporter signs.
func withRepeatedApproval(t *testing.T, fs []archive.File, k *signingKey, mutate func(d map[string]any)) []archive.File {
	t.Helper()
	var evb []byte
	for _, f := range fs {
		if f.Name == EventsFile {
			evb = f.Data
		}
	}
	events, err := eventlog.Read(bytes.NewReader(evb), nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []eventlog.Event
	inserted := false
	for _, e := range events {
		out = append(out, e)
		if e.Type == replay.TypeApproval && !inserted {
			var d map[string]any
			json.Unmarshal(e.Data, &d)
			mutate(d)
			dup := e
			dup.Data, _ = canon.Marshal(d)
			out = append(out, dup)
			inserted = true
		}
	}
	if !inserted {
		t.Fatal("no approval event")
	}
	var buf bytes.Buffer
	for i := range out {
		out[i].Seq = uint64(i + 1)
		if i > 0 {
			p := out[i-1].Hash
			out[i].Prev = &p
		}
		out[i].Hash, _ = eventlog.Hash(out[i])
		line, _ := canon.Marshal(out[i])
		buf.Write(append(line, '\n'))
	}
	fs = edit(fs, EventsFile, func([]byte) []byte { return buf.Bytes() })
	mem := fstest.MapFS{}
	for _, f := range fs {
		mem[f.Name] = &fstest.MapFile{Data: f.Data}
	}
	// The old run.json no longer agrees; the replay's report is the new one.
	rep, _ := replay.AuditFS(mem, replay.BlobsVerified())
	if rep == nil {
		t.Fatal("the replay refused the log")
	}
	proj, _ := canon.Marshal(rep)
	fs = edit(fs, RunFile, func([]byte) []byte { return proj })
	mem[RunFile] = &fstest.MapFile{Data: proj}
	if _, err := replay.AuditFS(mem, replay.BlobsVerified()); err != nil {
		t.Fatalf("the kernel refuses the edited run: %v", err)
	}
	return resign(t, fs, k, func(s *Statement) {
		s.Subject = subjectsFor(fs)
		s.Predicate.Run = Summarize(rep)
	})
}

// TestApprovalsCountedLikeTheKernel: the verifier counts one person once
// by the same identities the kernel's replay uses (actor and GitHub login
// case-folded and trimmed, GitHub numeric id), so a repeated approval
// under another spelling cannot satisfy --require-approvals.
func TestApprovalsCountedLikeTheKernel(t *testing.T) {
	f := makeRun(t, runOpts{approve: []string{"alice", "bob"}, required: 2})
	k := newKey(t)
	st := storeWith(t, k)
	fs := files(t, export(t, f, k, ExportOptions{}))
	if _, err := Verify(bytes.NewReader(repack(t, fs)), st, VerifyOptions{AnySource: true, AnyContract: true, RequireApprovals: 2}); err != nil {
		t.Fatalf("genuine bundle: %v", err)
	}
	cases := map[string]func(d map[string]any){
		"actor case":   func(d map[string]any) { d["actor"] = "Alice" },
		"actor spaces": func(d map[string]any) { d["actor"] = " alice " },
		"github login": func(d map[string]any) {
			d["actor"] = "alice-gh"
			d["github"] = map[string]any{"login": "ALICE", "user_id": 42, "review_id": 7, "commit": f.commit, "permission": "write"}
		},
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			b := repack(t, withRepeatedApproval(t, fs, k, mutate))
			res, err := Verify(bytes.NewReader(b), st, VerifyOptions{AnySource: true, AnyContract: true, RequireApprovals: 2})
			if err != nil {
				t.Fatalf("two real approvers refused: %v", err)
			}
			if res.Approvals != 2 {
				t.Fatalf("counted %d approvals, two people approved", res.Approvals)
			}
			if _, err := Verify(bytes.NewReader(b), st, VerifyOptions{AnySource: true, AnyContract: true, RequireApprovals: 3}); reasonOf(err) != InsufficientApprovals {
				t.Fatalf("3 required, 2 people approved: %v", err)
			}
		})
	}
}

// TestRepoBinding: VerifyOptions.Repo binds the run's repository (GitHub
// compares owner/name without case); a bundle for another repository or
// for none is refused.
func TestRepoBinding(t *testing.T) {
	f := makeRun(t, runOpts{approve: []string{"alice"}})
	k := newKey(t)
	st := storeWith(t, k)
	good := export(t, f, k, ExportOptions{})
	for repo, want := range map[string]Reason{"": "", "acme/widget": "", "ACME/Widget": "", "acme/other": RepoMismatch, "acme/widget2": RepoMismatch} {
		if _, err := Verify(bytes.NewReader(good), st, VerifyOptions{AnySource: true, AnyContract: true, Repo: repo}); reasonOf(err) != want {
			t.Errorf("repo %q: %v, want %q", repo, err, want)
		}
	}
}
