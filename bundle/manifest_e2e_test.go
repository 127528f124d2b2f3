package bundle

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/proofgate/proofgate/bundle/archive"
	"github.com/proofgate/proofgate/internal/blob"
	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/process"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/internal/session"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/eventlog"
	"github.com/proofgate/proofgate/kernel/input"
	"github.com/proofgate/proofgate/kernel/replay"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// chatContract has a check and a chat tool that reads its canonical JSON
// arguments on stdin and prints how many messages they hold.
const chatContract = `version: 1
name: chat
defaults: {runtime: process, timeout: 60s}
checks:
  - id: hello
    run: [sh, -c, 'echo verified']
approval: {required: 1}
tools:
  - name: chat
    description: Count the conversation's messages.
    run: [/bin/sh, -c, "/usr/bin/grep -o '\"role\":' | /usr/bin/wc -l"]
    stdin: json
    params:
      messages: {type: array, required: true, max_items: 64}
      model: {type: string, max_length: 32}
policy:
  - {tool: chat, effect: allow}
`

type chatRepo struct {
	repo, state, implID string
	popts               run.PlanOptions
}

// newChatRepo commits chatContract (loaded by the real loader) and plans
// an IMPLEMENTING run.
func newChatRepo(t *testing.T) *chatRepo {
	t.Helper()
	repo, cfile := contractRepo(t, chatContract)
	c, err := contract.Load(cfile, "")
	if err != nil {
		t.Fatal(err)
	}
	r := &chatRepo{repo: repo, state: filepath.Join(repo, ".proofgate")}
	r.popts = run.PlanOptions{RepoDir: repo, StateDir: r.state, Contract: c, Origin: "git:base:.proofgate/contract.yaml", Repo: "acme/widget"}
	o := r.popts
	o.Implement = true
	a, err := run.Plan(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	r.implID = a.ID
	a.Close()
	return r
}

// conversation is the arguments of turn n (from 1): n messages, each
// about 200 bytes, the first n-1 equal to the previous turn's.
func conversation(n int) []byte {
	msgs := make([]map[string]string, n)
	for i := range msgs {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		msgs[i] = map[string]string{"role": role, "content": fmt.Sprintf("turn %d: %s", i, strings.Repeat("lorem ipsum ", 16))}
	}
	b, _ := json.Marshal(map[string]any{"model": "m-1", "messages": msgs})
	return b
}

func dirBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// chat runs turns calls of the chat tool in one real session, one turn
// each, and returns the blob bytes each call added.
func (r *chatRepo) chat(t *testing.T, turns int) []int64 {
	t.Helper()
	ctx := context.Background()
	ss, err := session.Start(ctx, session.Options{StateDir: r.state, Run: r.implID, RepoDir: r.repo, Agent: "claude-code", Runtime: processOnly, LockWait: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	blobs := filepath.Join(run.NewStore(r.state).Path(r.implID), replay.BlobDir)
	var grew []int64
	for n := 1; n <= turns; n++ {
		turn, err := ss.BeginTurn()
		if err != nil {
			t.Fatal(err)
		}
		before := dirBytes(t, blobs)
		res, err := ss.Call(ctx, session.Call{Tool: "chat", Args: conversation(n), Turn: turn})
		if err != nil {
			t.Fatalf("turn %d: %v", n, err)
		}
		if res.Status != session.Status("finished") || res.Result != "success" || strings.TrimSpace(string(res.Stdout)) != strconv.Itoa(n) {
			t.Fatalf("turn %d: %+v (stdout %q)", n, res, res.Stdout)
		}
		grew = append(grew, dirBytes(t, blobs)-before)
		if err := ss.EndTurn(turn); err != nil {
			t.Fatal(err)
		}
	}
	if err := ss.End("done"); err != nil {
		t.Fatal(err)
	}
	return grew
}

// requested returns the tool.requested data of the run in dir.
func requested(t *testing.T, dir string) []replay.ToolRequestedData {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, replay.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	events, err := eventlog.Read(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []replay.ToolRequestedData
	for _, e := range events {
		if e.Type == replay.TypeToolRequested {
			var d replay.ToolRequestedData
			json.Unmarshal(e.Data, &d)
			out = append(out, d)
		}
	}
	return out
}

// A real 28-turn session whose conversation grows turn by turn stores
// every input as a manifest, with flat per-turn writes; the run is then
// verified in place (the session changed nothing), approved, exported and
// verified from its bundle, which holds the manifests' blobs; tampered
// messages and manifests are refused.
func TestManifestSessionBundle(t *testing.T) {
	const turns = 28
	r := newChatRepo(t)
	grew := r.chat(t, turns)
	dir := run.NewStore(r.state).Path(r.implID)
	reqs := requested(t, dir)
	if len(reqs) != turns {
		t.Fatalf("%d tool.requested events", len(reqs))
	}
	for i, q := range reqs {
		if !q.Manifest || q.InputRef == q.InputHash {
			t.Fatalf("call %d not stored by manifest: %+v", i+1, q)
		}
	}
	// Flat: the last turn writes about what the second did, far less than
	// its whole input.
	last := len(conversation(turns))
	t.Logf("blob bytes per turn: %v (turn %d input %d bytes)", grew, turns, last)
	if g := grew[turns-1]; g > 2*grew[1] || g*4 > int64(last) {
		t.Fatalf("turn %d wrote %d bytes (turn 2: %d, input %d)", turns, g, grew[1], last)
	}

	ctx := context.Background()
	a, err := run.Open(r.state, r.implID)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Exec(ctx, run.ExecOptions{RepoDir: r.repo, StateDir: r.state, Runtimes: map[string]runtime.Runtime{"process": process.New()}, Jobs: 1}); err != nil {
		t.Fatal(err)
	}
	if err := a.Decide(ctx, run.DecisionOptions{Actor: "bob", Fresh: run.Freshness{RepoDir: r.repo, StateDir: r.state}}); err != nil {
		t.Fatal(err)
	}
	if st := a.State(); st != replay.Complete {
		t.Fatalf("run is %s", st)
	}
	a.Close()

	k := newKey(t)
	var buf bytes.Buffer
	if _, err := Export(dir, k.s, &buf, ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	commit := git(t, r.repo, "rev-parse", "HEAD")
	opts := VerifyOptions{AnyContract: true, Commit: commit, RequireApprovals: 1}
	if _, err := Verify(bytes.NewReader(buf.Bytes()), storeWith(t, k), opts); err != nil {
		t.Fatalf("bundle refused: %v", err)
	}

	good := files(t, buf.Bytes())
	lastReq := reqs[turns-1]
	for _, tc := range []struct {
		name  string
		fs    []archive.File
		want  Reason
		input string // kernel/input reason inside the refusal, if any
		text  string
	}{
		{"message blob changed in place, re-signed", resign(t, changeMessage(t, good), k, func(st *Statement) {
			st.Subject = subjectsFor(changeMessage(t, good))
		}), SubjectMismatch, "", "not named by its digest"},
		{"manifest over a replaced message, same input hash", replaceLastMessage(t, good, k, lastReq), MissingFile, input.ReasonHashMismatch, ""},
		{"manifest naming another input", rewriteRun(t, good, k, "", swapRef(t, turns-1, reqs[turns-2].InputRef)), MissingFile, "", "rebuilds input " + reqs[turns-2].InputHash},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Verify(bytes.NewReader(repack(t, tc.fs)), storeWith(t, k), opts)
			if reasonOf(err) != tc.want {
				t.Fatalf("refusal %v, want %s", err, tc.want)
			}
			var ie *input.Error
			if tc.input != "" && (!errors.As(err, &ie) || ie.Reason != tc.input) {
				t.Fatalf("refusal %v does not carry input reason %s", err, tc.input)
			}
			if !strings.Contains(err.Error(), tc.text) {
				t.Fatalf("refusal %v does not say %q", err, tc.text)
			}
		})
	}
}

// isMessageBlob reports whether f is a message blob of the conversation.
func isMessageBlob(f archive.File) bool {
	return isBlobName(f.Name) && bytes.HasPrefix(f.Data, []byte(`{"content":"turn `))
}

// changeMessage alters one message blob's bytes, keeping its name.
func changeMessage(t *testing.T, fs []archive.File) []archive.File {
	t.Helper()
	out := append([]archive.File(nil), fs...)
	for i, f := range out {
		if isMessageBlob(f) {
			out[i].Data = bytes.Replace(bytes.Clone(f.Data), []byte("lorem"), []byte("LOREM"), 1)
			return out
		}
	}
	t.Fatal("no message blob in the bundle")
	return nil
}

func blobFile(b []byte) archive.File {
	return archive.File{Name: BlobPrefix + strings.TrimPrefix(canon.SumBytes(b), "sha256:"), Data: b}
}

// replaceLastMessage rebuilds the last call's manifest consistently (a new
// last message, its link, a manifest keeping the recorded input hash),
// points the call's events at it, drops the replaced blobs, re-chains and
// re-signs.
func replaceLastMessage(t *testing.T, fs []archive.File, k *signingKey, q replay.ToolRequestedData) []archive.File {
	t.Helper()
	get := func(d string) []byte {
		for _, f := range fs {
			if f.Name == BlobPrefix+strings.TrimPrefix(d, "sha256:") {
				return f.Data
			}
		}
		t.Fatalf("no blob %s", d)
		return nil
	}
	var m map[string]any
	json.Unmarshal(get(q.InputRef), &m)
	var l map[string]any
	oldLink := m["last"].(string)
	json.Unmarshal(get(oldLink), &l)
	oldMsg := l["message"].(string)
	msg := []byte(`{"content":"turn 27: wipe the tree","role":"assistant"}`)
	l["message"] = canon.SumBytes(msg)
	lb, _ := canon.Marshal(l)
	m["last"] = canon.SumBytes(lb)
	mb, _ := canon.Marshal(m)
	drop := map[string]bool{}
	for _, d := range []string{q.InputRef, oldLink, oldMsg} {
		drop[BlobPrefix+strings.TrimPrefix(d, "sha256:")] = true
	}
	var out []archive.File
	for _, f := range fs {
		if !drop[f.Name] {
			out = append(out, f)
		}
	}
	out = append(out, blobFile(msg), blobFile(lb), blobFile(mb))
	return rewriteRun(t, out, k, "", swapRef(t, 27, canon.SumBytes(mb)))
}

// swapRef sets the input_ref of the n-th call (tool.requested and
// tool.started) to ref.
func swapRef(t *testing.T, n int, ref string) func([]eventlog.Event) []eventlog.Event {
	set := func(d map[string]any) { d["input_ref"] = ref }
	return func(events []eventlog.Event) []eventlog.Event {
		events = editData(t, replay.TypeToolRequested, n, set)(events)
		return editData(t, replay.TypeToolStarted, n, set)(events)
	}
}

// The successor path: a real session with manifest inputs in A, the
// agent's commit, B verifying it with implemented_by; B's bundle carries
// A with its manifests' blobs and verifies.
func TestManifestSessionSuccessor(t *testing.T) {
	r := newChatRepo(t)
	r.chat(t, 6)
	ctx := context.Background()
	os.WriteFile(filepath.Join(r.repo, "agent.txt"), []byte("the agent's change\n"), 0o644)
	git(t, r.repo, "add", "-A")
	git(t, r.repo, "commit", "-q", "-m", "agent")
	popts := r.popts
	popts.ImplementedBy = r.implID
	b, err := run.Plan(ctx, popts)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Exec(ctx, run.ExecOptions{RepoDir: r.repo, StateDir: r.state, Runtimes: map[string]runtime.Runtime{"process": process.New()}, Jobs: 1}); err != nil {
		t.Fatal(err)
	}
	if err := b.Decide(ctx, run.DecisionOptions{Actor: "bob", Fresh: run.Freshness{RepoDir: r.repo, StateDir: r.state}}); err != nil {
		t.Fatal(err)
	}
	bDir := b.Dir
	b.Close()
	k := newKey(t)
	var buf bytes.Buffer
	if _, err := Export(bDir, k.s, &buf, ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	res, err := Verify(bytes.NewReader(buf.Bytes()), storeWith(t, k), VerifyOptions{AnyContract: true, Commit: git(t, r.repo, "rev-parse", "HEAD"), RequireApprovals: 1})
	if err != nil {
		t.Fatalf("bundle refused: %v", err)
	}
	if ib := res.Run.ImplementedBy; ib == nil || ib.ToolCalls != 6 {
		t.Fatalf("implemented_by %+v", res.Run.ImplementedBy)
	}
	messages := 0
	for _, f := range files(t, buf.Bytes()) {
		if strings.HasPrefix(f.Name, ImplementationPrefix) && bytes.HasPrefix(f.Data, []byte(`{"content":"turn `)) {
			messages++
		}
	}
	if messages != 6 {
		t.Fatalf("the bundle carries %d message blobs of the implementation run, want 6", messages)
	}
}

// The verifier holds only blobs of at most maxKeptBlob bytes for the
// rebuild: a run whose manifest names a larger message (one no tool call
// can produce: arguments are at most 64 KiB) is refused, never accepted
// unchecked; the same run's export itself audits fine.
func TestManifestBlobTooLargeToHold(t *testing.T) {
	r := newChatRepo(t)
	dir := run.NewStore(r.state).Path(r.implID)
	lg, err := eventlog.Open(filepath.Join(dir, replay.EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	w := &sessionWriter{t: t, lg: lg, bs: blob.New(filepath.Join(dir, replay.BlobDir)),
		owner: replay.Owner{PID: os.Getpid(), Start: 1, BootID: "boot-1", Host: "h", Created: time.Date(2026, 12, 1, 13, 0, 0, 0, time.UTC)}}
	sess := w.id("s")
	w.add(replay.TypeSessionStarted, replay.SessionStartedData{Session: sess, Agent: "claude-code", Owner: w.owner})
	big := fmt.Sprintf(`{"messages":[{"content":"%s","role":"user"}],"model":"m"}`, strings.Repeat("x", maxKeptBlob))
	w.call(sess, "", "chat", replay.DecisionAllow, 0, "rule-0", []byte(big), "")
	w.add(replay.TypeSessionEnded, replay.SessionEndedData{Session: sess})
	lg.Close()

	ctx := context.Background()
	a, err := run.Open(r.state, r.implID)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Exec(ctx, run.ExecOptions{RepoDir: r.repo, StateDir: r.state, Runtimes: map[string]runtime.Runtime{"process": process.New()}, Jobs: 1}); err != nil {
		t.Fatal(err)
	}
	if err := a.Decide(ctx, run.DecisionOptions{Actor: "bob", Fresh: run.Freshness{RepoDir: r.repo, StateDir: r.state}}); err != nil {
		t.Fatal(err)
	}
	a.Close()
	k := newKey(t)
	var buf bytes.Buffer
	if _, err := Export(dir, k.s, &buf, ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = Verify(bytes.NewReader(buf.Bytes()), storeWith(t, k), VerifyOptions{AnyContract: true, AnySource: true, RequireApprovals: 1})
	var ie *input.Error
	if reasonOf(err) != MissingFile || !errors.As(err, &ie) || ie.Reason != input.ReasonMissing || !strings.Contains(err.Error(), "the verifier holds for manifest inputs") {
		t.Fatalf("refusal %v", err)
	}
}
