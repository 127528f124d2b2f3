package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/proofgate/proofgate/internal/bounded"
	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/strictjson"
)

// Bounds on a manifest.
const (
	MaxManifest = 1 << 20
	MaxSuites   = 64
	MaxTasks    = 1024 // over all suites
	MaxCriteria = 64   // per task
	maxDepth    = 16
	maxText     = 4096
)

// Baseline statuses.
const (
	StatusPassed = "passed"
	StatusFailed = "failed"
	StatusNotRun = "not-run"
)

// Manifest is a benchmark manifest, version 1.
type Manifest struct {
	Version int     `json:"version"`
	Suites  []Suite `json:"suites"`
}

// Suite is a named group of tasks.
type Suite struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Tasks []Task `json:"tasks"`
}

// Task is one benchmark task: what must be achieved (criteria), and what a
// baseline harness observed doing it.
type Task struct {
	ID       string      `json:"id"`
	Title    string      `json:"title"`
	Criteria []Criterion `json:"criteria"`
	Baseline *Baseline   `json:"baseline,omitempty"`
}

// Criterion is one acceptance criterion of a task.
type Criterion struct {
	ID   string `json:"id"`
	Text string `json:"text"`
}

// Baseline is the observation a baseline harness (a person, another
// tool) made of a task, recorded by `proofgate benchmark baseline`.
type Baseline struct {
	Status string `json:"status"` // passed | failed | not-run
	// Criteria are the task's criteria the evidence covers.
	Criteria       []string `json:"criteria,omitempty"`
	EvidenceDigest string   `json:"evidence_digest,omitempty"`
	EvidenceFile   string   `json:"evidence_file,omitempty"`
	DurationMS     *int64   `json:"duration_ms,omitempty"`
	Attempts       *int64   `json:"attempts,omitempty"`
	ReviewMS       *int64   `json:"review_ms,omitempty"`
	Actor          string   `json:"actor,omitempty"`
	RecordedAt     string   `json:"recorded_at,omitempty"`
}

var (
	idRE     = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)
	digestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
)

// Task returns the task with id and its suite.
func (m *Manifest) Task(id string) (*Suite, *Task, bool) {
	for i := range m.Suites {
		for j := range m.Suites[i].Tasks {
			if m.Suites[i].Tasks[j].ID == id {
				return &m.Suites[i], &m.Suites[i].Tasks[j], true
			}
		}
	}
	return nil, nil, false
}

// readManifest reads a manifest file's bytes: a regular file of at most
// MaxManifest bytes.
func readManifest(path string) ([]byte, error) {
	f, err := bounded.Open(path)
	if errors.As(err, new(*bounded.NotRegularError)) {
		return nil, &Error{File: path, Reason: ReasonManifestInvalid, Detail: "not a regular file"}
	}
	if err != nil {
		reason := ReasonManifestIO
		if errors.Is(err, fs.ErrNotExist) {
			reason = ReasonManifestMissing
		}
		return nil, &Error{File: path, Reason: reason, Detail: err.Error(), Err: err}
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxManifest+1))
	if err != nil {
		return nil, &Error{File: path, Reason: ReasonManifestIO, Detail: err.Error(), Err: err}
	}
	if len(b) > MaxManifest {
		return nil, &Error{File: path, Reason: ReasonManifestInvalid, Detail: fmt.Sprintf("larger than %d bytes", MaxManifest)}
	}
	return b, nil
}

// Load reads and validates the manifest at path (YAML, or JSON when the
// name ends in .json); it returns the manifest and the SHA-256 of its bytes.
func Load(path string) (*Manifest, string, error) {
	b, err := readManifest(path)
	if err != nil {
		return nil, "", err
	}
	m, err := Parse(path, b)
	if err != nil {
		return nil, "", err
	}
	return m, canon.SumBytes(b), nil
}

// Parse decodes and validates a manifest held in b.
func Parse(file string, b []byte) (*Manifest, error) {
	js := b
	if !strings.HasSuffix(file, ".json") {
		var err error
		if js, err = yamlToJSON(b); err != nil {
			return nil, &Error{File: file, Reason: ReasonManifestInvalid, Detail: err.Error(), Err: err}
		}
	}
	var m Manifest
	if err := strictjson.Decode(js, &m); err != nil {
		return nil, &Error{File: file, Reason: ReasonManifestInvalid, Detail: err.Error(), Err: err}
	}
	if err := validate(&m); err != nil {
		return nil, &Error{File: file, Reason: ReasonManifestInvalid, Detail: err.Error()}
	}
	return &m, nil
}

func validate(m *Manifest) error {
	if m.Version != 1 {
		return fmt.Errorf("version: %d is not supported (want 1)", m.Version)
	}
	if len(m.Suites) == 0 || len(m.Suites) > MaxSuites {
		return fmt.Errorf("suites: 1 to %d suites", MaxSuites)
	}
	tasks, suites := map[string]string{}, map[string]bool{}
	for i, s := range m.Suites {
		p := fmt.Sprintf("suites[%d]", i)
		if !idRE.MatchString(s.ID) || suites[s.ID] {
			return fmt.Errorf("%s.id: %q is not a unique id ([a-z0-9][a-z0-9._-]*, at most 63)", p, s.ID)
		}
		suites[s.ID] = true
		if len(s.Title) > maxText {
			return fmt.Errorf("%s.title: longer than %d bytes", p, maxText)
		}
		for j, t := range s.Tasks {
			tp := fmt.Sprintf("%s.tasks[%d]", p, j)
			if !idRE.MatchString(t.ID) {
				return fmt.Errorf("%s.id: %q is not an id", tp, t.ID)
			}
			if prev, dup := tasks[t.ID]; dup {
				return fmt.Errorf("%s.id: duplicate task %q (first in suite %s)", tp, t.ID, prev)
			}
			tasks[t.ID] = s.ID
			if len(tasks) > MaxTasks {
				return fmt.Errorf("%s: more than %d tasks", tp, MaxTasks)
			}
			if err := validateTask(tp, t); err != nil {
				return err
			}
		}
	}
	return nil
}

func validateTask(tp string, t Task) error {
	if t.Title == "" || len(t.Title) > maxText {
		return fmt.Errorf("%s.title: required, at most %d bytes", tp, maxText)
	}
	if len(t.Criteria) == 0 || len(t.Criteria) > MaxCriteria {
		return fmt.Errorf("%s.criteria: 1 to %d acceptance criteria", tp, MaxCriteria)
	}
	ids := map[string]bool{}
	for k, c := range t.Criteria {
		if !idRE.MatchString(c.ID) || ids[c.ID] {
			return fmt.Errorf("%s.criteria[%d].id: %q is not a unique id", tp, k, c.ID)
		}
		ids[c.ID] = true
		if c.Text == "" || len(c.Text) > maxText {
			return fmt.Errorf("%s.criteria[%d].text: required, at most %d bytes", tp, k, maxText)
		}
	}
	if t.Baseline != nil {
		if err := validateBaseline(t.Baseline, ids); err != nil {
			return fmt.Errorf("%s.baseline.%w", tp, err)
		}
	}
	return nil
}

// validateBaseline checks a baseline against its task's criterion ids.
func validateBaseline(b *Baseline, criteria map[string]bool) error {
	switch b.Status {
	case StatusPassed, StatusFailed, StatusNotRun:
	default:
		return fmt.Errorf("status: %q (want passed, failed or not-run)", b.Status)
	}
	seen := map[string]bool{}
	for i, c := range b.Criteria {
		if !criteria[c] {
			return &criterionError{i, c}
		}
		if seen[c] {
			return fmt.Errorf("criteria[%d]: duplicate %q", i, c)
		}
		seen[c] = true
	}
	if b.EvidenceDigest != "" && !digestRE.MatchString(b.EvidenceDigest) {
		return fmt.Errorf("evidence_digest: %q is not sha256:<64 hex>", b.EvidenceDigest)
	}
	for name, v := range map[string]*int64{"duration_ms": b.DurationMS, "attempts": b.Attempts, "review_ms": b.ReviewMS} {
		if v != nil && *v < 0 {
			return fmt.Errorf("%s: negative", name)
		}
	}
	if len(b.EvidenceFile) > maxText || len(b.Actor) > maxText {
		return errors.New("evidence_file or actor: too long")
	}
	return nil
}

// criterionError is a baseline naming a criterion its task does not have.
type criterionError struct {
	i  int
	id string
}

func (e *criterionError) Error() string {
	return fmt.Sprintf("criteria[%d]: %q is not a criterion of the task", e.i, e.id)
}

// yamlToJSON converts a YAML document to JSON: one document, no aliases,
// no duplicate keys, string keys only, at most maxDepth levels.
func yamlToJSON(b []byte) ([]byte, error) {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("not YAML: %w", err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, errors.New("more than one YAML document")
	}
	v, err := nodeValue(&doc, 0)
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

func nodeValue(n *yaml.Node, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("line %d: nested deeper than %d", n.Line, maxDepth)
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) != 1 {
			return nil, errors.New("empty document")
		}
		return nodeValue(n.Content[0], depth)
	case yaml.AliasNode:
		return nil, fmt.Errorf("line %d: aliases are not accepted", n.Line)
	case yaml.MappingNode:
		out := map[string]any{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode || k.Tag != "!!str" {
				return nil, fmt.Errorf("line %d: keys are strings", k.Line)
			}
			if _, dup := out[k.Value]; dup {
				return nil, fmt.Errorf("line %d: duplicate key %q", k.Line, k.Value)
			}
			v, err := nodeValue(n.Content[i+1], depth+1)
			if err != nil {
				return nil, err
			}
			out[k.Value] = v
		}
		return out, nil
	case yaml.SequenceNode:
		out := []any{}
		for _, c := range n.Content {
			v, err := nodeValue(c, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	}
	return scalarValue(n)
}

func scalarValue(n *yaml.Node) (any, error) {
	switch n.Tag {
	case "!!str":
		return n.Value, nil
	case "!!int":
		var i int64
		if err := n.Decode(&i); err != nil {
			return nil, fmt.Errorf("line %d: %w", n.Line, err)
		}
		return i, nil
	case "!!bool":
		var v bool
		if err := n.Decode(&v); err != nil {
			return nil, fmt.Errorf("line %d: %w", n.Line, err)
		}
		return v, nil
	case "!!null":
		return nil, nil
	}
	return nil, fmt.Errorf("line %d: %s values are not accepted", n.Line, n.Tag)
}
