package bundle

// Agent-session evidence (ADR 0021, docs/SPEC.md "Agent-session evidence").
// The agent workflow (examples/workflows/agent.yml) commits what its agent
// left, plans the successor run B with implemented_by A on that commit
// (ADR 0017) and exports this archive: a deterministic .tar.gz holding B's
// run.json, events.ndjson, contract.json and every blob B's log names, the
// implementation run A's files under implementation/<A>/ exactly as a
// bundle carries them, and attestation.dsse.json: a DSSE envelope (payload
// type application/vnd.in-toto+json) over an in-toto Statement whose
// subjects are every other file and whose predicate type is
// AgentSessionPredicateType. A keyless archive adds the verification
// material (envelope.MaterialFile) beside the envelope, unsigned, as a
// bundle does.
//
// The predicate is {signed_at, key_id, run}: run is Summarize of B with
// run.implemented_by, recomputed on open. OpenAgentSession accepts the
// archive only when the signature opens (the caller's opener pins the
// signer), the statement is canonical with exactly the files as subjects,
// B and A replay, A is the run B's implemented_by binds and ended
// SUPERSEDED by B, A recorded at least one agent session, B's work tree
// was clean, and B's source commit and repository are what the caller
// asks for (the pull request's head, the repository it runs in). Only
// then is a pull request's head "from an agent session".

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing/fstest"
	"time"

	"github.com/proofgate/proofgate/bundle/archive"
	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/durable"
	"github.com/proofgate/proofgate/internal/strictjson"
	"github.com/proofgate/proofgate/kernel/eventlog"
	"github.com/proofgate/proofgate/kernel/replay"
)

// AgentSessionPredicateType is the agent-session statement's predicate
// type: never a bundle's, so the archive cannot pass for one.
const AgentSessionPredicateType = "https://proofgate.dev/agent-session/v1"

// AgentSessionSuffix ends the agent-session archive's file name.
const AgentSessionSuffix = ".agent-session.tar.gz"

// AgentSessionReason says why agent-session evidence was refused.
type AgentSessionReason string

// Reasons of a refused agent-session archive.
const (
	AgentMalformed       AgentSessionReason = "malformed"         // archive, statement, subjects or predicate type
	AgentSignature       AgentSessionReason = "signature-invalid" // the opener refused the envelope
	AgentTampered        AgentSessionReason = "tampered"          // a log does not replay, or replays to another summary
	AgentNoImplemented   AgentSessionReason = "not-implemented"   // the run names no implementation run
	AgentImplMismatch    AgentSessionReason = "implementation-mismatch"
	AgentNoSession       AgentSessionReason = "no-session"       // the implementation run recorded no agent session
	AgentDirty           AgentSessionReason = "dirty-worktree"   // the successor ran on uncommitted changes
	AgentOtherCommit     AgentSessionReason = "other-commit"     // the agent's commit is not the one asked for
	AgentOtherRepository AgentSessionReason = "other-repository" // recorded in another repository
	// AgentSigningTime: signed_at is before the successor run's last event
	// (the time the signer's key was judged at is one the logs rule out).
	AgentSigningTime AgentSessionReason = "signing-time-implausible"
)

// AgentSessionError is refused agent-session evidence.
type AgentSessionError struct {
	Reason AgentSessionReason
	Detail string
}

func (e *AgentSessionError) Error() string { return string(e.Reason) + ": " + e.Detail }

func agentRefuse(r AgentSessionReason, format string, args ...any) *AgentSessionError {
	return &AgentSessionError{Reason: r, Detail: fmt.Sprintf(format, args...)}
}

// AgentSessionStatement is the archive's signed statement.
type AgentSessionStatement struct {
	Type          string                `json:"_type"`
	Subject       []Subject             `json:"subject"`
	PredicateType string                `json:"predicateType"`
	Predicate     AgentSessionPredicate `json:"predicate"`
}

// AgentSessionPredicate is what the agent workflow asserts.
type AgentSessionPredicate struct {
	SignedAt string     `json:"signed_at"`
	KeyID    string     `json:"key_id"`
	Run      RunSummary `json:"run"`
}

// AgentSessionProof is accepted evidence: the agent's commit, and the
// implementation run whose sessions produced it.
type AgentSessionProof struct {
	Run            string    `json:"run"`            // the successor B
	Implementation string    `json:"implementation"` // the implementation run A
	Sessions       int       `json:"sessions"`
	ToolCalls      int       `json:"tool_calls"`
	Commit         string    `json:"commit"`
	Tree           string    `json:"tree"`
	Repo           string    `json:"repo"`
	ContractHash   string    `json:"contract_hash"`
	KeyID          string    `json:"key_id"`
	SignedAt       time.Time `json:"signed_at"`
	Dirty          bool      `json:"dirty"` // the successor ran on uncommitted changes
}

// ExportAgentSession packs the successor run in runDir (planned with
// implemented_by; any state) and its implementation run beside it, and
// signs the statement with sign (which returns the envelope and, keyless,
// the verification material).
func ExportAgentSession(runDir, keyID string, sign func(payload []byte) (env, material []byte, err error)) ([]byte, error) {
	return exportAgentSession(runDir, beside(filepath.Dir(runDir)), keyID, sign)
}

// ExportAgentSessionStored is ExportAgentSessionFile of run id of
// stateDir: a run `proofgate prune` archived, the successor or its
// implementation run, is read from its archive.
func ExportAgentSessionStored(open RunOpener, id, outPath, keyID string, sign func([]byte) ([]byte, []byte, error)) error {
	dir, done, err := open(id)
	if err != nil {
		return &ExportError{Reason: MissingFile, RunID: id, Detail: err.Error(), Err: err}
	}
	defer done()
	data, err := exportAgentSession(dir, open, keyID, sign)
	if err != nil {
		return err
	}
	return writeAgentSession(outPath, data)
}

// exportAgentSession is ExportAgentSession with the implementation run
// found in the runs directory runs.
func exportAgentSession(runDir string, open RunOpener, keyID string, sign func(payload []byte) (env, material []byte, err error)) ([]byte, error) {
	id := filepath.Base(runDir)
	mem := map[string][]byte{}
	for _, n := range []string{RunFile, EventsFile, ContractFile} {
		b, err := readFileBounded(filepath.Join(runDir, n), maxSmallFile)
		if err != nil {
			return nil, &ExportError{Reason: MissingFile, RunID: id, Detail: err.Error(), Err: err}
		}
		mem[n] = b
	}
	rep, err := replay.AuditFS(replay.Overlay(runDir, mem), replay.BlobsVerified())
	if err != nil {
		return nil, &ExportError{Reason: AuditFailed, RunID: id, Detail: err.Error(), Err: err}
	}
	if rep.ImplementedBy == nil {
		return nil, &ExportError{Reason: ImplementationMismatch, RunID: id, Detail: "the run was not planned with implemented_by: it records no agent session"}
	}
	subjects := map[string]string{}
	var entries []archive.Entry
	for n, b := range mem {
		subjects[n] = sum(b)
		entries = append(entries, archive.BytesEntry(n, b))
	}
	for _, d := range rep.Blobs {
		e, err := blobEntry(runDir, id, d[len("sha256:"):])
		if err != nil {
			return nil, err
		}
		subjects[e.Name] = d[len("sha256:"):]
		entries = append(entries, e)
	}
	impl, entries, done, err := packImplementation(open, rep, subjects, entries)
	if err != nil {
		return nil, err
	}
	defer done()
	at, err := time.Parse(time.RFC3339Nano, rep.LastEventTime)
	if err != nil {
		return nil, fmt.Errorf("agent session: last event time: %w", err)
	}
	sm := Summarize(rep)
	sm.ImplementedBy = impl
	st := AgentSessionStatement{Type: StatementType, PredicateType: AgentSessionPredicateType, Subject: subjectList(subjects),
		Predicate: AgentSessionPredicate{SignedAt: at.UTC().Format(time.RFC3339Nano), KeyID: keyID, Run: sm}}
	payload, err := canon.Marshal(&st)
	if err != nil {
		return nil, err
	}
	env, material, err := sign(payload)
	if err != nil {
		return nil, fmt.Errorf("agent session: sign: %w", err)
	}
	entries = append(entries, archive.BytesEntry(AttestationFile, env))
	if material != nil {
		entries = append(entries, archive.BytesEntry(envelope.MaterialFile, material))
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name < entries[j].Name })
	var buf bytes.Buffer
	if err := archive.Write(&buf, entries); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// ExportAgentSessionFile writes ExportAgentSession's archive to outPath,
// refusing an existing file.
func ExportAgentSessionFile(runDir, outPath, keyID string, sign func([]byte) ([]byte, []byte, error)) error {
	data, err := ExportAgentSession(runDir, keyID, sign)
	if err != nil {
		return err
	}
	return writeAgentSession(outPath, data)
}

// writeAgentSession writes data to a new file outPath, refusing an
// existing one; a failed write leaves nothing at outPath (staged, then
// linked into place).
func writeAgentSession(outPath string, data []byte) error {
	return durable.CreateExclusive(outPath, data, 0o644)
}

// AgentSessionOpener opens the envelope (with the material, nil when
// key-signed), pinning the signer; it returns the payload and a check of
// the signer at the predicate's signed_at for its key id and repository
// (nil: nothing more to check).
type AgentSessionOpener func(att, material []byte) (payload []byte, check func(at time.Time, keyID, repo string) error, err error)

// AgentSessionWant is what the evidence must be bound to.
type AgentSessionWant struct {
	Commit string // the pull request's head
	Repo   string // OWNER/REPO the approval runs in
}

// OpenAgentSession verifies an agent-session archive (see the section
// comment) and returns the proof, or an *AgentSessionError.
func OpenAgentSession(data []byte, want AgentSessionWant, open AgentSessionOpener) (*AgentSessionProof, error) {
	list, err := archive.Read(bytes.NewReader(data), archive.DefaultLimits)
	if err != nil {
		return nil, agentRefuse(AgentMalformed, "%v", err)
	}
	files := map[string][]byte{}
	for _, f := range list {
		files[f.Name] = f.Data
	}
	att, ok := files[AttestationFile]
	if !ok {
		return nil, agentRefuse(AgentSignature, "the archive carries no %s: unsigned", AttestationFile)
	}
	material := files[envelope.MaterialFile]
	delete(files, AttestationFile)
	delete(files, envelope.MaterialFile)
	payload, check, err := open(att, material)
	if err != nil {
		return nil, asAgentError(err)
	}
	st, err := agentStatement(payload, files)
	if err != nil {
		return nil, err
	}
	p := st.Predicate
	at, err := time.Parse(time.RFC3339Nano, p.SignedAt)
	if err != nil {
		return nil, agentRefuse(AgentMalformed, "predicate signed_at: %v", err)
	}
	if check != nil {
		if err := check(at, p.KeyID, p.Run.Repo); err != nil {
			return nil, asAgentError(err)
		}
	}
	proof, last, err := replayAgentSession(files, p.Run)
	if err != nil {
		return nil, err
	}
	if at.Before(last) {
		return nil, agentRefuse(AgentSigningTime, "signed_at %s is before the successor run's last event at %s",
			p.SignedAt, last.UTC().Format(time.RFC3339Nano))
	}
	proof.KeyID, proof.SignedAt = p.KeyID, at
	return proof, proof.bound(want)
}

// asAgentError keeps an opener's *AgentSessionError (its reason, e.g. a
// signer identity), else refuses the signature.
func asAgentError(err error) error {
	var ae *AgentSessionError
	if errors.As(err, &ae) {
		return ae
	}
	return agentRefuse(AgentSignature, "%v", err)
}

// agentStatement decodes the canonical statement and requires the
// predicate type and subjects that are exactly the files.
func agentStatement(payload []byte, files map[string][]byte) (*AgentSessionStatement, error) {
	var st AgentSessionStatement
	if err := strictjson.Decode(payload, &st); err != nil {
		return nil, agentRefuse(AgentMalformed, "statement: %v", err)
	}
	if c, err := canon.Marshal(&st); err != nil || !bytes.Equal(c, payload) {
		return nil, agentRefuse(AgentMalformed, "the statement is not its canonical JSON")
	}
	if st.Type != StatementType || st.PredicateType != AgentSessionPredicateType {
		return nil, agentRefuse(AgentMalformed, "statement type %q / predicate type %q, want %s", st.Type, st.PredicateType, AgentSessionPredicateType)
	}
	if len(st.Subject) != len(files) {
		return nil, agentRefuse(AgentMalformed, "%d subjects for %d files", len(st.Subject), len(files))
	}
	for _, s := range st.Subject {
		b, ok := files[s.Name]
		if !ok || len(s.Digest) != 1 || s.Digest["sha256"] != sum(b) {
			return nil, agentRefuse(AgentMalformed, "subject %q does not match the files", s.Name)
		}
	}
	return &st, nil
}

// replayAgentSession replays the successor and the implementation run
// from files and requires the claimed summary to be the replay's. It also
// returns the successor's last event time (the signed_at the export
// writes): the evidence cannot have been signed before it.
func replayAgentSession(files map[string][]byte, claimed RunSummary) (*AgentSessionProof, time.Time, error) {
	proof, rep, err := replayAgentRuns(files, claimed)
	if err != nil {
		return nil, time.Time{}, err
	}
	last, err := time.Parse(time.RFC3339Nano, rep.LastEventTime)
	if err != nil {
		return nil, time.Time{}, agentRefuse(AgentTampered, "run %s: last event time %q is not RFC 3339", rep.RunID, rep.LastEventTime)
	}
	return proof, last, nil
}

// replayAgentRuns is replayAgentSession's replay: the proof and the
// successor's report.
func replayAgentRuns(files map[string][]byte, claimed RunSummary) (*AgentSessionProof, *replay.Report, error) {
	run, impl := fstest.MapFS{}, fstest.MapFS{}
	for n, b := range files {
		if _, rel, ok := splitImplementation(n); ok {
			impl[rel] = &fstest.MapFile{Data: b, Mode: 0o444}
			continue
		}
		if strings.HasPrefix(n, ImplementationPrefix) {
			return nil, nil, agentRefuse(AgentMalformed, "%s is not a file of an implementation run", n)
		}
		run[n] = &fstest.MapFile{Data: b, Mode: 0o444}
	}
	rep, err := replay.AuditFS(run, replay.BlobsVerified())
	if err != nil {
		return nil, nil, agentRefuse(AgentTampered, "successor run: %v", err)
	}
	if err := onlyReferenced(run, rep, ""); err != nil {
		return nil, nil, err
	}
	ib := rep.ImplementedBy
	if ib == nil {
		return nil, nil, agentRefuse(AgentNoImplemented, "run %s was not planned with implemented_by", rep.RunID)
	}
	irep, err := replay.AuditFS(impl, replay.BlobsVerified())
	if err != nil {
		return nil, nil, agentRefuse(AgentTampered, "implementation run %s: %v", ib.Run, err)
	}
	if err := onlyReferenced(impl, irep, ImplementationPrefix+ib.Run+"/"); err != nil {
		return nil, nil, err
	}
	events, err := eventlog.Read(bytes.NewReader(impl[EventsFile].Data), nil)
	if err != nil {
		return nil, nil, agentRefuse(AgentTampered, "implementation run %s: %v", ib.Run, err)
	}
	is, err := checkImplementation(ib, irep, events, rep.RunID)
	if err != nil {
		return nil, nil, agentRefuse(AgentImplMismatch, "%v", err)
	}
	sm := Summarize(rep)
	sm.ImplementedBy = is
	got, _ := canon.Marshal(sm)
	want, _ := canon.Marshal(claimed)
	if !bytes.Equal(got, want) {
		return nil, nil, agentRefuse(AgentTampered, "the statement's run summary differs from the replay of the files")
	}
	return &AgentSessionProof{Run: rep.RunID, Implementation: ib.Run, Sessions: is.Sessions, ToolCalls: is.ToolCalls,
		Commit: rep.Source.Commit, Tree: rep.Source.Tree, Repo: rep.Repo, ContractHash: rep.ContractHash,
		Dirty: rep.Worktree != nil && rep.Worktree.Dirty}, rep, nil
}

// onlyReferenced refuses a blob in fs that the replayed log does not name.
func onlyReferenced(fs fstest.MapFS, rep *replay.Report, prefix string) error {
	ref := map[string]bool{}
	for _, d := range rep.Blobs {
		ref[BlobPrefix+strings.TrimPrefix(d, "sha256:")] = true
	}
	for n := range fs {
		switch {
		case n == RunFile || n == EventsFile || n == ContractFile || ref[n]:
		default:
			return agentRefuse(AgentMalformed, "%s%s is not referenced by its run's log", prefix, n)
		}
	}
	for _, n := range []string{RunFile, EventsFile, ContractFile} {
		if _, ok := fs[n]; !ok {
			return agentRefuse(AgentMalformed, "the archive carries no %s%s", prefix, n)
		}
	}
	return nil
}

// bound requires the proof to have sessions and a clean commit of the
// wanted repository.
func (p *AgentSessionProof) bound(want AgentSessionWant) error {
	switch {
	case p.Sessions < 1:
		return agentRefuse(AgentNoSession, "implementation run %s recorded no agent session", p.Implementation)
	case p.Commit == "" || p.Dirty:
		return agentRefuse(AgentDirty, "run %s ran on uncommitted changes: no commit is proven", p.Run)
	case p.Repo != want.Repo:
		return agentRefuse(AgentOtherRepository, "run %s was recorded in repository %q, not %s", p.Run, p.Repo, want.Repo)
	case p.Commit != want.Commit:
		return agentRefuse(AgentOtherCommit, "run %s verified commit %s, the pull request head is %s", p.Run, p.Commit, want.Commit)
	}
	return nil
}
