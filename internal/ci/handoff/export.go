package handoff

import (
	"bytes"
	"context"
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

// SignFunc signs a statement's payload: it returns the DSSE envelope and,
// keyless, the verification material that goes into the archive beside it
// (nil for a key signature).
type SignFunc func(payload []byte) (env, material []byte, err error)

// KeySign is the SignFunc of key s: a DSSE envelope, no material.
func KeySign(ctx context.Context, s envelope.Signer) SignFunc {
	return func(p []byte) ([]byte, []byte, error) {
		env, err := envelope.SignContext(ctx, s, bundle.PayloadType, p)
		return env, nil, err
	}
}

// KeylessSign is the SignFunc of ms (keyless): a DSSE envelope and the
// material that vouches for its key.
func KeylessSign(ctx context.Context, ms envelope.MaterialSigner) SignFunc {
	return func(p []byte) ([]byte, []byte, error) {
		return envelope.SignWithMaterial(ctx, ms, bundle.PayloadType, p)
	}
}

// StatementFunc makes the statement to sign of a run's replay, its files'
// subjects and the last event's time.
type StatementFunc func(rep *replay.Report, subjects []bundle.Subject, signedAt string) any

// ReadRunFile reads a run directory's file; the log is its whole chain
// (sealed segments, then the active file) as the one member it becomes.
func ReadRunFile(dir, name string) ([]byte, error) {
	if name == bundle.EventsFile {
		return replay.ReadChain(dir, 1<<30)
	}
	return os.ReadFile(filepath.Join(dir, name))
}

// Export packs the AWAITING_APPROVAL run in dir and signs its statement
// with sign. It returns the archive's bytes.
func Export(dir string, pr PR, keyID string, sign SignFunc) ([]byte, error) {
	return Pack(dir, replay.AwaitingApproval, func(rep *replay.Report, subjects []bundle.Subject, signedAt string) any {
		return &Statement{Type: bundle.StatementType, PredicateType: PredicateType, Subject: subjects,
			Predicate: Predicate{SignedAt: signedAt, KeyID: keyID, Run: bundle.Summarize(rep), PullRequest: pr}}
	}, sign)
}

// Pack packs the run in dir, which must replay to state want, with the
// signed statement that statement makes of its replay, the files' subjects
// and the last event's time; it returns the archive's bytes (the hand-off
// and the sharded run's plan).
func Pack(dir string, want replay.State, statement StatementFunc, sign SignFunc) ([]byte, error) {
	mem, rep, err := readRun(dir, want)
	if err != nil {
		return nil, err
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
	return writeArchive(mem, env, material)
}

// readRun reads the run in dir, which must replay to state want: its
// files, merged shards and referenced blobs, and its replay.
func readRun(dir string, want replay.State) (map[string][]byte, *replay.Report, error) {
	mem := map[string][]byte{}
	for _, n := range []string{bundle.RunFile, bundle.EventsFile, bundle.ContractFile} {
		b, err := ReadRunFile(dir, n)
		if err != nil {
			return nil, nil, fmt.Errorf("hand-off: %w", err)
		}
		mem[n] = b
	}
	if err := readMergedShards(dir, mem); err != nil {
		return nil, nil, fmt.Errorf("hand-off: %w", err)
	}
	rep, err := replay.AuditFS(replay.Overlay(dir, mem), replay.BlobsVerified())
	if err != nil {
		return nil, nil, fmt.Errorf("hand-off: audit: %w", err)
	}
	if rep.State != want {
		return nil, nil, fmt.Errorf("hand-off: the run is %s, not %s", rep.State, want)
	}
	for _, d := range rep.Blobs {
		name := bundle.BlobPrefix + d[len("sha256:"):]
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil {
			return nil, nil, fmt.Errorf("hand-off: %w", err)
		}
		mem[name] = b
	}
	return mem, rep, nil
}

// writeArchive writes the files, in name order, then the envelope and the
// material (when there is one) as the archive.
func writeArchive(mem map[string][]byte, env, material []byte) ([]byte, error) {
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

// subjectsOf returns the files' subjects in name order.
func subjectsOf(files map[string][]byte) []bundle.Subject {
	out := make([]bundle.Subject, 0, len(files))
	for n, b := range files {
		s := sha256.Sum256(b)
		out = append(out, bundle.Subject{Name: n, Digest: map[string]string{"sha256": hex.EncodeToString(s[:])}})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
