package bench

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/proofgate/proofgate/internal/bounded"
	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/durable"
)

// MaxEvidence bounds the evidence file a baseline hashes.
const MaxEvidence = 1 << 30

// BaselineOptions is one baseline observation to record.
type BaselineOptions struct {
	Task         string
	Status       string
	Criteria     []string // the task's criteria the evidence covers
	EvidenceFile string   // required unless Status is not-run
	DurationMS   *int64
	Attempts     *int64
	ReviewMS     *int64
	Actor        string
	Now          time.Time
}

// beforeRename, when set (tests), runs after the new manifest is staged and
// before the old one is re-read and replaced: a concurrent edit lands here.
var beforeRename func()

// RecordBaseline is the single write path of a manifest: it validates the
// observation against the task, refuses an unknown task, an existing
// baseline and a criterion the task lacks, hashes the evidence file into
// evidence_digest, stages the new manifest in a temporary file beside it
// (fsynced), and renames it into place only if the manifest's bytes are
// still those it read (ReasonManifestChanged otherwise, nothing replaced).
func RecordBaseline(path string, o BaselineOptions) (*Baseline, error) {
	old, err := readManifest(path)
	if err != nil {
		return nil, err
	}
	m, err := Parse(path, old)
	if err != nil {
		return nil, err
	}
	b, err := newBaseline(path, m, o)
	if err != nil {
		return nil, err
	}
	next, err := withBaseline(path, old, o.Task, b)
	if err != nil {
		return nil, err
	}
	// What is written must read back as a valid manifest with the baseline.
	check, err := Parse(path, next)
	if err != nil {
		return nil, fmt.Errorf("the rewritten manifest does not validate: %w", err)
	}
	if _, t, _ := check.Task(o.Task); t == nil || t.Baseline == nil || t.Baseline.EvidenceDigest != b.EvidenceDigest {
		return nil, &Error{File: path, Task: o.Task, Reason: ReasonManifestInvalid, Detail: "the rewritten manifest lost the baseline"}
	}
	return b, replaceIfUnchanged(path, canon.SumBytes(old), next)
}

// newBaseline validates o against the manifest and hashes the evidence.
func newBaseline(path string, m *Manifest, o BaselineOptions) (*Baseline, error) {
	_, t, ok := m.Task(o.Task)
	if !ok {
		return nil, &Error{File: path, Task: o.Task, Reason: ReasonUnknownTask, Detail: "no task with this id in the manifest"}
	}
	if t.Baseline != nil {
		return nil, &Error{File: path, Task: o.Task, Reason: ReasonDuplicate, Detail: fmt.Sprintf("a baseline (%s) is already recorded; a baseline is written once", t.Baseline.Status)}
	}
	b := &Baseline{Status: o.Status, Criteria: slices.Clone(o.Criteria), DurationMS: o.DurationMS, Attempts: o.Attempts, ReviewMS: o.ReviewMS, Actor: o.Actor}
	if !o.Now.IsZero() {
		b.RecordedAt = o.Now.UTC().Format(time.RFC3339)
	}
	ids := map[string]bool{}
	for _, c := range t.Criteria {
		ids[c.ID] = true
	}
	if err := validateBaseline(b, ids); err != nil {
		var ce *criterionError
		if errors.As(err, &ce) {
			return nil, &Error{File: path, Task: o.Task, Reason: ReasonCriterion, Detail: fmt.Sprintf("--criteria %q is not a criterion of task %s", ce.id, o.Task)}
		}
		return nil, &Error{File: path, Task: o.Task, Reason: ReasonBadBaseline, Detail: err.Error()}
	}
	if o.EvidenceFile == "" {
		if o.Status != StatusNotRun {
			return nil, &Error{File: path, Task: o.Task, Reason: ReasonEvidence, Detail: "an evidence file is required unless the status is not-run"}
		}
		return b, nil
	}
	d, err := hashEvidence(o.EvidenceFile)
	if err != nil {
		return nil, &Error{File: path, Task: o.Task, Reason: ReasonEvidence, Detail: err.Error(), Err: err}
	}
	b.EvidenceDigest, b.EvidenceFile = d, filepath.ToSlash(o.EvidenceFile)
	return b, nil
}

// hashEvidence is the SHA-256 of a regular file of at most MaxEvidence bytes.
func hashEvidence(p string) (string, error) {
	f, err := bounded.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(f, MaxEvidence+1))
	if err != nil {
		return "", err
	}
	if n > MaxEvidence {
		return "", fmt.Errorf("%s: larger than %d bytes", p, MaxEvidence)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// withBaseline returns the manifest bytes with b set on task: a JSON
// manifest is re-encoded (indented), a YAML one edited as a node tree so
// its comments and layout survive.
func withBaseline(path string, old []byte, task string, b *Baseline) ([]byte, error) {
	if strings.HasSuffix(path, ".json") {
		m, err := Parse(path, old)
		if err != nil {
			return nil, err
		}
		_, t, _ := m.Task(task)
		t.Baseline = b
		out, err := json.MarshalIndent(m, "", "  ")
		return append(out, '\n'), err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(old, &doc); err != nil {
		return nil, &Error{File: path, Reason: ReasonManifestInvalid, Detail: err.Error(), Err: err}
	}
	t := findTask(&doc, task)
	if t == nil {
		return nil, &Error{File: path, Task: task, Reason: ReasonUnknownTask, Detail: "task not found in the YAML tree"}
	}
	var v yaml.Node
	if err := v.Encode(baselineYAML(b)); err != nil {
		return nil, err
	}
	t.Content = append(t.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "baseline"}, &v)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	return buf.Bytes(), enc.Close()
}

// baselineYAML is b as a map with the JSON names of its fields (encoded
// with its keys sorted).
func baselineYAML(b *Baseline) any {
	js, _ := json.Marshal(b)
	var m map[string]any
	_ = yaml.Unmarshal(js, &m) // JSON is YAML; ints stay ints
	return m
}

// findTask finds the mapping node of the task with id in a manifest tree.
func findTask(doc *yaml.Node, id string) *yaml.Node {
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil
	}
	suites := member(doc.Content[0], "suites")
	if suites == nil || suites.Kind != yaml.SequenceNode {
		return nil
	}
	for _, s := range suites.Content {
		tasks := member(s, "tasks")
		if tasks == nil || tasks.Kind != yaml.SequenceNode {
			continue
		}
		for _, t := range tasks.Content {
			if v := member(t, "id"); v != nil && v.Kind == yaml.ScalarNode && v.Value == id {
				return t
			}
		}
	}
	return nil
}

func member(n *yaml.Node, key string) *yaml.Node {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// replaceIfUnchanged stages next beside path (fsynced), re-reads path and
// renames the staged file over it only if path still hashes to digest.
func replaceIfUnchanged(path, digest string, next []byte) error {
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return &Error{File: path, Reason: ReasonManifestIO, Detail: err.Error(), Err: err}
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.Write(next)
	if werr == nil {
		werr = tmp.Chmod(mode)
	}
	if werr == nil {
		werr = durable.Sync(tmp)
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return &Error{File: path, Reason: ReasonManifestIO, Detail: werr.Error(), Err: werr}
	}
	if beforeRename != nil {
		beforeRename()
	}
	now, err := readManifest(path)
	if err != nil {
		return err
	}
	if got := canon.SumBytes(now); got != digest {
		return &Error{File: path, Reason: ReasonManifestChanged, Detail: fmt.Sprintf("the manifest changed while the baseline was written (read %s, now %s); nothing was replaced: run the command again", digest, got)}
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return &Error{File: path, Reason: ReasonManifestIO, Detail: err.Error(), Err: err}
	}
	return durable.SyncDir(filepath.Dir(path))
}
