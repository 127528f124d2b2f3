package action

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/archive"
	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/kernel/replay"
)

// The run hand-off (ADR 0018, docs/SPEC.md "Run hand-off artifact"): the
// pull_request job uploads its verified AWAITING_APPROVAL run as artifact
// RunArtifactPrefix+<PR head>, a deterministic .tar.gz of the run
// directory's evidence (run.json, events.ndjson, contract.json, the
// referenced blobs) plus attestation.dsse.json, a DSSE envelope signed by
// the bundle signer over an in-toto Statement whose predicate type is
// RunPredicateType. The release gate requires bundle.PredicateType, so a
// hand-off can never pass for a COMPLETE bundle.
const (
	// RunArtifactPrefix starts the hand-off artifact's name.
	RunArtifactPrefix = "proofgate-run-"
	// RunPredicateType is the hand-off statement's predicate type.
	RunPredicateType = "https://proofgate.dev/run-awaiting-approval/v1"
	// runArchiveSuffix ends the hand-off archive's name inside the zip.
	runArchiveSuffix = ".run.tar.gz"
	// MaxRunArtifactBytes bounds a downloaded hand-off zip.
	MaxRunArtifactBytes = 256 << 20
)

// RunStatement is the hand-off's signed statement.
type RunStatement struct {
	Type          string           `json:"_type"`
	Subject       []bundle.Subject `json:"subject"`
	PredicateType string           `json:"predicateType"`
	Predicate     RunPredicate     `json:"predicate"`
}

// RunPredicate is what the pull_request job asserts: the run (as a bundle
// predicate summarises it, recomputed on import) and the pull request it
// ran for.
type RunPredicate struct {
	SignedAt    string            `json:"signed_at"`
	KeyID       string            `json:"key_id"`
	Run         bundle.RunSummary `json:"run"`
	PullRequest HandoffPR         `json:"pull_request"`
}

// HandoffPR binds the run to the pull request's head and base commits.
type HandoffPR struct {
	Number  int    `json:"number"`
	HeadSHA string `json:"head_sha"`
	BaseSHA string `json:"base_sha"`
}

// readRunFile reads a run directory's file; the log is its whole chain
// (sealed segments, then the active file) as the one member it becomes.
func readRunFile(dir, name string) ([]byte, error) {
	if name == bundle.EventsFile {
		return replay.ReadChain(dir, 1<<30)
	}
	return os.ReadFile(filepath.Join(dir, name))
}

// exportRun packs the AWAITING_APPROVAL run in dir and signs its
// statement with sign. It returns the archive's bytes.
func exportRun(ctx context.Context, dir string, pr HandoffPR, keyID string, sign func([]byte) ([]byte, []byte, error)) ([]byte, error) {
	return packRun(dir, replay.AwaitingApproval, func(rep *replay.Report, subjects []bundle.Subject, signedAt string) any {
		return &RunStatement{Type: bundle.StatementType, PredicateType: RunPredicateType, Subject: subjects,
			Predicate: RunPredicate{SignedAt: signedAt, KeyID: keyID, Run: bundle.Summarize(rep), PullRequest: pr}}
	}, sign)
}

// packRun packs the run in dir, which must replay to state want, with the
// signed statement that statement makes of its replay, the files' subjects
// and the last event's time; it returns the archive's bytes (the hand-off
// and the sharded run's plan, shard_plan.go).
func packRun(dir string, want replay.State, statement func(rep *replay.Report, subjects []bundle.Subject, signedAt string) any, sign func([]byte) ([]byte, []byte, error)) ([]byte, error) {
	mem := map[string][]byte{}
	for _, n := range []string{bundle.RunFile, bundle.EventsFile, bundle.ContractFile} {
		b, err := readRunFile(dir, n)
		if err != nil {
			return nil, fmt.Errorf("hand-off: %w", err)
		}
		mem[n] = b
	}
	if err := readMergedShards(dir, mem); err != nil {
		return nil, fmt.Errorf("hand-off: %w", err)
	}
	rep, err := replay.AuditFS(replay.Overlay(dir, mem), replay.BlobsVerified())
	if err != nil {
		return nil, fmt.Errorf("hand-off: audit: %w", err)
	}
	if rep.State != want {
		return nil, fmt.Errorf("hand-off: the run is %s, not %s", rep.State, want)
	}
	for _, d := range rep.Blobs {
		name := bundle.BlobPrefix + d[len("sha256:"):]
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil {
			return nil, fmt.Errorf("hand-off: %w", err)
		}
		mem[name] = b
	}
	signedAt, err := time.Parse(time.RFC3339Nano, rep.LastEventTime)
	if err != nil {
		return nil, fmt.Errorf("hand-off: last event time: %w", err)
	}
	payload, err := canon.Marshal(statement(rep, subjectsOf(mem), signedAt.UTC().Format(time.RFC3339Nano)))
	if err != nil {
		return nil, err
	}
	env, material, err := sign(payload)
	if err != nil {
		return nil, fmt.Errorf("hand-off: sign: %w", err)
	}
	names := make([]string, 0, len(mem))
	for n := range mem {
		names = append(names, n)
	}
	sort.Strings(names)
	entries := make([]archive.Entry, 0, len(names)+2)
	for _, n := range names {
		entries = append(entries, archive.BytesEntry(n, mem[n]))
	}
	entries = append(entries, archive.BytesEntry(bundle.AttestationFile, env))
	if material != nil {
		entries = append(entries, archive.BytesEntry(envelope.MaterialFile, material))
	}
	var buf bytes.Buffer
	if err := archive.Write(&buf, entries); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func subjectsOf(files map[string][]byte) []bundle.Subject {
	out := make([]bundle.Subject, 0, len(files))
	for n, b := range files {
		s := sha256.Sum256(b)
		out = append(out, bundle.Subject{Name: n, Digest: map[string]string{"sha256": hex.EncodeToString(s[:])}})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// handoff uploads the job's AWAITING_APPROVAL run for the review job. A
// failure is a warning: the review job then re-runs the checks.
func (j *job) handoff(ctx context.Context) {
	if j.ev.Name != "pull_request" || j.ev.Fork || (!j.keyless && j.signer == nil) {
		return
	}
	keyID, sign, err := j.handoffSigner(ctx)
	if err == nil {
		var data []byte
		if data, err = exportRun(ctx, j.r.Dir, HandoffPR{Number: j.ev.PR, HeadSHA: j.ev.HeadSHA, BaseSHA: j.ev.BaseSHA}, keyID, sign); err == nil {
			j.uploadHandoff(ctx, data)
			return
		}
	}
	j.f.annotate("warning", "ProofGate run hand-off", "the run was not handed off to the review job (it will re-run the checks): "+err.Error())
}

// uploadHandoff uploads the signed hand-off archive as the run artifact.
func (j *job) uploadHandoff(ctx context.Context, data []byte) {
	tok, results := j.o.Getenv("ACTIONS_RUNTIME_TOKEN"), j.o.Getenv("ACTIONS_RESULTS_URL")
	if tok == "" || results == "" {
		return
	}
	name := RunArtifactPrefix + j.ev.HeadSHA
	if _, err := uploadArtifact(ctx, j.f, tok, results, name, map[string][]byte{j.r.ID + runArchiveSuffix: data}); err != nil {
		j.f.annotate("warning", "ProofGate run hand-off", "uploading "+name+" failed (the review job will re-run the checks): "+err.Error())
		return
	}
	j.f.output("run-artifact", name)
	j.s.notes = append(j.s.notes, fmt.Sprintf("The verified run was handed off as artifact %s: a review of this head completes it without re-running the checks.", code(name)))
}

// keyVerifiers trusts exactly one Ed25519 key: the job's own signing key,
// which signed the hand-off in the pull_request job.
type keyVerifiers struct {
	id  string
	pub ed25519.PublicKey
}

func (k keyVerifiers) Verifier(id string) (envelope.TrustedKey, error) {
	if id != k.id {
		return nil, fmt.Errorf("key %s is not the job's signing key %s", clipID(id), k.id)
	}
	return k, nil
}
func (k keyVerifiers) KeyID() string { return k.id }
func (k keyVerifiers) Verify(message, sig []byte) bool {
	return len(sig) == ed25519.SignatureSize && ed25519.Verify(k.pub, message, sig)
}
func (keyVerifiers) CheckAt(time.Time, string) error { return nil }
func (keyVerifiers) CheckWitnessed(time.Time) error  { return nil }

func clipID(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return fmt.Sprintf("%q", s)
}
