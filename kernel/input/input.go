// Package input stores tool inputs content-addressed (skeleton).
package input

import (
	"errors"

	"github.com/proofgate/proofgate/kernel/blob"
	"github.com/proofgate/proofgate/kernel/canon"
)

// MaxInput bounds an input's size in bytes.
const MaxInput = 8 << 20

// Stored is what Store wrote.
type Stored struct {
	Hash     string `json:"input_hash"`
	Ref      string `json:"input_ref"`
	Manifest bool   `json:"manifest,omitempty"`
	Written  int64  `json:"-"`
}

// Error is a refused input or manifest.
type Error struct{ Reason, Detail string }

func (e *Error) Error() string { return "input: " + e.Reason + ": " + e.Detail }

var errTODO = errors.New("input: not implemented yet")

// Canonical returns the canonical JSON of raw.
func Canonical(raw []byte) ([]byte, error) { return nil, errTODO }

// Hash returns the input hash of canonical bytes.
func Hash(canonical []byte) string { return canon.SumBytes(canonical) }

// Store writes canonical into bs.
func Store(bs *blob.Store, canonical []byte) (Stored, error) { return Stored{}, errTODO }

// Rebuild returns the canonical input ref stands for.
func Rebuild(get func(digest string) ([]byte, error), ref string) ([]byte, []string, error) {
	return nil, nil, errTODO
}
