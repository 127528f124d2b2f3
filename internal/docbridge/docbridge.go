// Package docbridge is the built-in context provider: a reader of a local
// doc-bridge index, `.doc-bridge/index.json` in the repository
// (docs/SPEC.md "Context providers").
//
// Index format (closed, strictly decoded, at most MaxIndex bytes):
//
//	{"version": 1,
//	 "entries": [{"id": "adr-0001", "title": "…", "path": "docs/adr/0001.md", "text": "…"}, …],
//	 "contentHash": "sha256:<hex>"}
//
// contentHash is "sha256:" + hex SHA-256 of the RFC 8785 canonical JSON of
// the index object without contentHash ({"entries":[…],"version":1}). The
// reader recomputes it and refuses an index whose hash differs
// (ReasonTampered), a missing index (ReasonMissing), one that is not a
// regular file, too large (ReasonTooLarge) or not of this format
// (ReasonMalformed): a resolution never falls back to anything.
//
// Matching: the query is split into terms (maximal runs of Unicode letters
// and digits, lowercased, duplicates dropped, at most MaxTerms). An entry
// matches when every term occurs in its lowercased title, path or text; its
// score is 3 × occurrences in the title + 2 × in the path + 1 × in the text.
// Matches are ordered by score (highest first), then id (byte order), and
// the first provider.MaxReferences are returned: the same index and query
// always give the same references. Each reference carries the SHA-256 of its
// entry's text; the provenance carries the index's contentHash.
package docbridge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"
	"unicode"

	"github.com/proofgate/proofgate/internal/bounded"
	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/provider"
	"github.com/proofgate/proofgate/internal/strictjson"
)

// Name is the provider's name (--provider doc-bridge).
const Name = "doc-bridge"

// DefaultIndex is the index path relative to the repository.
const DefaultIndex = ".doc-bridge/index.json"

// Bounds on an index.
const (
	MaxIndex   = 16 << 20
	MaxEntries = 10000
	MaxText    = 256 << 10
	MaxTerms   = 32
)

// Reason is the typed cause of a refused index.
type Reason string

// Reasons.
const (
	ReasonMissing   Reason = "index-missing"
	ReasonTooLarge  Reason = "index-too-large"
	ReasonMalformed Reason = "index-malformed"
	ReasonTampered  Reason = "index-tampered"
	ReasonQuery     Reason = "query-without-terms"
)

// Error is a refused index or query.
type Error struct {
	File   string
	Reason Reason
	Detail string
	Err    error
}

func (e *Error) Error() string {
	return fmt.Sprintf("doc-bridge index %s: %s: %s", e.File, e.Reason, e.Detail)
}

func (e *Error) Unwrap() error { return e.Err }

// Entry is one document of the index.
type Entry struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Path  string `json:"path"`
	Text  string `json:"text"`
}

type body struct {
	Version int     `json:"version"`
	Entries []Entry `json:"entries"`
}

type file struct {
	Version     int     `json:"version"`
	Entries     []Entry `json:"entries"`
	ContentHash string  `json:"contentHash"`
}

// Index is a verified doc-bridge index.
type Index struct {
	source      string
	contentHash string
	entries     []Entry
}

// Load reads and verifies the index at path; source is how provenance names
// it (its path relative to the repository).
func Load(path, source string) (*Index, error) {
	f, err := bounded.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &Error{path, ReasonMissing, "no index (build one with doc-bridge, or pass --index)", err}
	}
	if errors.As(err, new(*bounded.NotRegularError)) {
		return nil, &Error{path, ReasonMalformed, "not a regular file", err}
	}
	if err != nil {
		return nil, &Error{path, ReasonMissing, err.Error(), err}
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxIndex+1))
	if err != nil {
		return nil, &Error{path, ReasonMissing, err.Error(), err}
	}
	if len(b) > MaxIndex {
		return nil, &Error{path, ReasonTooLarge, fmt.Sprintf("larger than %d bytes", MaxIndex), nil}
	}
	return Parse(path, source, b)
}

// Parse verifies an index held in b (see Load).
func Parse(path, source string, b []byte) (*Index, error) {
	if len(b) > MaxIndex {
		return nil, &Error{path, ReasonTooLarge, fmt.Sprintf("larger than %d bytes", MaxIndex), nil}
	}
	var ix file
	if err := strictjson.Decode(b, &ix); err != nil {
		return nil, &Error{path, ReasonMalformed, err.Error(), err}
	}
	if err := checkEntries(ix); err != nil {
		return nil, &Error{path, ReasonMalformed, err.Error(), nil}
	}
	want, err := canon.Digest(body{ix.Version, ix.Entries})
	if err != nil {
		return nil, &Error{path, ReasonMalformed, err.Error(), err}
	}
	if ix.ContentHash != want {
		return nil, &Error{path, ReasonTampered, fmt.Sprintf("contentHash %q, the content hashes to %s", ix.ContentHash, want), nil}
	}
	return &Index{source: source, contentHash: want, entries: ix.Entries}, nil
}

func checkEntries(ix file) error {
	switch {
	case ix.Version != 1:
		return fmt.Errorf("version: %d is not supported (want 1)", ix.Version)
	case ix.Entries == nil:
		return errors.New("entries: required (an array)")
	case len(ix.Entries) > MaxEntries:
		return fmt.Errorf("entries: %d (at most %d)", len(ix.Entries), MaxEntries)
	case ix.ContentHash == "":
		return errors.New("contentHash: required")
	}
	seen := map[string]int{}
	for i, e := range ix.Entries {
		if e.ID == "" || len(e.ID) > provider.MaxField || len(e.Title) > provider.MaxField || len(e.Path) > provider.MaxField {
			return fmt.Errorf("entries[%d]: id required; id, title and path at most %d bytes", i, provider.MaxField)
		}
		if len(e.Text) > MaxText {
			return fmt.Errorf("entries[%d].text: longer than %d bytes", i, MaxText)
		}
		if j, dup := seen[e.ID]; dup {
			return fmt.Errorf("entries[%d].id: duplicate %q (first at entries[%d])", i, e.ID, j)
		}
		seen[e.ID] = i
	}
	return nil
}

// ContentHash is the index's verified contentHash.
func (x *Index) ContentHash() string { return x.contentHash }

// Resolve implements provider.Provider.
func (x *Index) Resolve(_ context.Context, query string) (provider.Result, error) {
	terms := Terms(query)
	if len(terms) == 0 {
		return provider.Result{}, &Error{x.source, ReasonQuery, fmt.Sprintf("query %q has no letters or digits", query), nil}
	}
	type match struct {
		e     *Entry
		score int
	}
	var ms []match
	for i := range x.entries {
		if s := score(&x.entries[i], terms); s > 0 {
			ms = append(ms, match{&x.entries[i], s})
		}
	}
	slices.SortFunc(ms, func(a, b match) int {
		if a.score != b.score {
			return b.score - a.score
		}
		return strings.Compare(a.e.ID, b.e.ID)
	})
	res := provider.Result{
		References: []provider.Reference{},
		Provenance: provider.Provenance{Source: x.source, ContentHash: x.contentHash, Matches: len(ms)},
	}
	for _, m := range ms[:min(len(ms), provider.MaxReferences)] {
		sum := sha256.Sum256([]byte(m.e.Text))
		res.References = append(res.References, provider.Reference{
			ID: m.e.ID, Title: m.e.Title, Path: m.e.Path, Score: m.score, TextDigest: "sha256:" + hex.EncodeToString(sum[:]),
		})
	}
	return res, nil
}

// Terms splits a query into its search terms (see the package doc).
func Terms(query string) []string {
	fields := strings.FieldsFunc(strings.ToLower(query), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	var out []string
	for _, f := range fields {
		if !slices.Contains(out, f) && len(out) < MaxTerms {
			out = append(out, f)
		}
	}
	return out
}

// score is 0 unless every term occurs somewhere in the entry.
func score(e *Entry, terms []string) int {
	title, path, text := strings.ToLower(e.Title), strings.ToLower(e.Path), strings.ToLower(e.Text)
	total := 0
	for _, t := range terms {
		s := 3*strings.Count(title, t) + 2*strings.Count(path, t) + strings.Count(text, t)
		if s == 0 {
			return 0
		}
		total += s
	}
	return total
}
