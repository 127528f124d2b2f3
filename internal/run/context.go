package run

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/proofgate/proofgate/kernel/exit"

	"github.com/proofgate/proofgate/internal/bounded"
	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/strictjson"
)

// Snapshot is one verified context snapshot (--context-file): what an agent
// or a person based the change on. Its snapshot_hash must be the digest of
// the canonical JSON of the object without snapshot_hash.
type Snapshot struct {
	Query     string
	Hash      string
	Canonical []byte // the whole object, canonical, as stored in the blob
}

// Bounds on a context file.
const (
	MaxContextFile = 1 << 20
	MaxSnapshots   = 64
)

// ContextError names what is wrong in a context file.
type ContextError struct {
	File, Path, Msg string
}

func (e *ContextError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("%s: %s", e.File, e.Msg)
	}
	return fmt.Sprintf("%s: %s: %s", e.File, e.Path, e.Msg)
}

// Is reports whether target is exit.Usage, the class of an input the caller can correct.
func (e *ContextError) Is(target error) bool { return target == exit.Usage }

// LoadContext reads and verifies a context file: one snapshot object or an
// array of them, each {query, references, provenance, snapshot_hash}.
func LoadContext(path string) ([]Snapshot, error) {
	f, err := bounded.Open(path) // a FIFO does not hang, a device is refused
	if errors.As(err, new(*bounded.NotRegularError)) {
		return nil, &ContextError{path, "", "not a regular file"}
	}
	if err != nil {
		return nil, &ContextError{path, "", err.Error()}
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxContextFile+1))
	if err != nil {
		return nil, &ContextError{path, "", err.Error()}
	}
	if len(b) > MaxContextFile {
		return nil, &ContextError{path, "", fmt.Sprintf("larger than %d bytes", MaxContextFile)}
	}
	return ParseContext(path, b)
}

// ParseContext verifies the snapshots in b (see LoadContext).
func ParseContext(file string, b []byte) ([]Snapshot, error) {
	b = bytes.TrimSpace(b)
	var raws []json.RawMessage
	prefix := func(i int) string { return fmt.Sprintf("[%d]", i) }
	if len(b) > 0 && b[0] == '[' {
		if err := strictjson.Decode(b, &raws); err != nil {
			if path, msg, ok := strictDetail(err); ok {
				return nil, &ContextError{file, path, msg}
			}
			return nil, &ContextError{file, "", "not a JSON array of snapshots: " + err.Error()}
		}
	} else {
		raws = []json.RawMessage{b}
		prefix = func(int) string { return "$" }
	}
	if len(raws) == 0 {
		return nil, &ContextError{file, "", "no snapshots"}
	}
	if len(raws) > MaxSnapshots {
		return nil, &ContextError{file, "", fmt.Sprintf("%d snapshots (at most %d)", len(raws), MaxSnapshots)}
	}
	out := make([]Snapshot, 0, len(raws))
	for i, raw := range raws {
		p := prefix(i)
		var obj map[string]json.RawMessage
		if err := strictjson.Decode(raw, &obj); err != nil {
			if path, msg, ok := strictDetail(err); ok {
				return nil, &ContextError{file, joinPath(p, path), msg}
			}
			return nil, &ContextError{file, p, "not a JSON object"}
		}
		for k := range obj {
			switch k {
			case "query", "references", "provenance", "snapshot_hash":
			default:
				return nil, &ContextError{file, p + "." + k, "unknown field"}
			}
		}
		var s struct {
			Query      *string         `json:"query"`
			References []any           `json:"references"`
			Provenance json.RawMessage `json:"provenance"`
			Hash       string          `json:"snapshot_hash"`
		}
		if err := strictjson.Decode(raw, &s); err != nil {
			if path, msg, ok := strictDetail(err); ok {
				return nil, &ContextError{file, joinPath(p, path), msg}
			}
			return nil, &ContextError{file, p, err.Error()}
		}
		switch {
		case s.Query == nil:
			return nil, &ContextError{file, p + ".query", "required"}
		case s.References == nil:
			return nil, &ContextError{file, p + ".references", "required (an array)"}
		case len(s.Provenance) == 0 || string(s.Provenance) == "null":
			return nil, &ContextError{file, p + ".provenance", "required"}
		case s.Hash == "":
			return nil, &ContextError{file, p + ".snapshot_hash", "required"}
		}
		delete(obj, "snapshot_hash")
		want, err := canon.Digest(obj)
		if err != nil {
			return nil, &ContextError{file, p, err.Error()}
		}
		if s.Hash != want {
			return nil, &ContextError{file, p + ".snapshot_hash", fmt.Sprintf("%s does not match the snapshot (%s)", s.Hash, want)}
		}
		whole, err := canon.Transform(raw)
		if err != nil {
			return nil, &ContextError{file, p, err.Error()}
		}
		out = append(out, Snapshot{Query: *s.Query, Hash: s.Hash, Canonical: whole})
	}
	return out, nil
}

// strictDetail splits a strict decoder refusal of a member (a duplicate or
// a case variant) into its path and message.
func strictDetail(err error) (path, msg string, ok bool) {
	var se *strictjson.Error
	if !errors.As(err, &se) || se.Path == "" {
		return "", "", false
	}
	return se.Path, se.Detail, true
}

// joinPath appends a path relative to one snapshot to the snapshot's own.
func joinPath(base, rel string) string {
	if strings.HasPrefix(rel, "[") {
		return base + rel
	}
	return base + "." + rel
}
