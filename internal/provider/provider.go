// Package provider is the kernel's seam for context providers: programs
// that turn a query into references (documents, records) an agent or a
// person based a change on (docs/SPEC.md "Context providers").
//
// The kernel owns the seam and the record. A Provider is given a query and
// returns data (a Result: references and provenance); it is handed no run,
// no store, no log and no key, and nothing it returns is trusted beyond
// being recorded: the kernel bounds and checks the result, names the
// provider itself and computes the snapshot hash itself, and the snapshot
// is then read by the same parser (internal/run.ParseContext) as any
// --context-file. So a provider cannot approve a run, change a run's state
// or alter how evidence is validated: the only effect of a snapshot is a
// context.attached event when a run is planned with it. This package and
// its providers import only canonical JSON, the strict decoder, the bounded
// reader and the printable check (TestProviderImports enforces it).
//
// Snapshot wire format (one object of a context file):
//
//	{"query": Q,
//	 "references": [{"id","title","path","score","text_digest"}, ...],  // at most MaxReferences
//	 "provenance": {"provider": NAME, "source": S, "content_hash": H, "matches": N},
//	 "snapshot_hash": "sha256:<hex>"}
//
// snapshot_hash is "sha256:" + hex SHA-256 of the RFC 8785 canonical JSON of
// the object without snapshot_hash, as internal/run.ParseContext checks of
// every context file. Nothing in the snapshot depends on when it was
// resolved: resolving the same query against the same source gives the same
// bytes and the same hash.
package provider

import (
	"context"
	"fmt"
	"regexp"

	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/printable"
)

// Bounds on what a provider may return.
const (
	MaxReferences = 8
	MaxQuery      = 1024
	MaxField      = 4096
)

// Provider resolves a query to references. Implementations return data
// only; see the package doc.
type Provider interface {
	Resolve(ctx context.Context, query string) (Result, error)
}

// Result is everything a provider returns.
type Result struct {
	References []Reference
	Provenance Provenance
}

// Reference is one item a query resolved to.
type Reference struct {
	ID         string `json:"id"`
	Title      string `json:"title"`
	Path       string `json:"path"`
	Score      int    `json:"score"`
	TextDigest string `json:"text_digest"`
}

// Provenance says where the references came from: Source names it (a path
// relative to the repository), ContentHash is the source's own content
// hash, Matches how many items matched before the cap.
type Provenance struct {
	Source      string `json:"source"`
	ContentHash string `json:"content_hash"`
	Matches     int    `json:"matches"`
}

// Snapshot is the kernel's record of one resolution.
type Snapshot struct {
	Query      string      `json:"query"`
	References []Reference `json:"references"`
	Provenance provenance  `json:"provenance"`
	Hash       string      `json:"snapshot_hash"`
}

type provenance struct {
	Provider string `json:"provider"`
	Provenance
}

// Reason is the typed cause of a refused resolution.
type Reason string

// Reasons.
const (
	ReasonQuery  Reason = "bad-query"
	ReasonName   Reason = "bad-provider-name"
	ReasonResult Reason = "bad-result"
)

// Error is a refused resolution.
type Error struct {
	Reason Reason
	Detail string
}

func (e *Error) Error() string { return fmt.Sprintf("context provider: %s: %s", e.Reason, e.Detail) }

var (
	nameRE   = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)
	digestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
)

// Resolve asks p (registered as name) to resolve query and records the
// answer as a verified snapshot; it returns the snapshot and its canonical
// JSON, which is a context file run --context-file accepts.
func Resolve(ctx context.Context, name string, p Provider, query string) (*Snapshot, []byte, error) {
	if !nameRE.MatchString(name) {
		return nil, nil, &Error{ReasonName, fmt.Sprintf("%q", name)}
	}
	if query == "" || len(query) > MaxQuery {
		return nil, nil, &Error{ReasonQuery, fmt.Sprintf("a query is 1 to %d bytes", MaxQuery)}
	}
	if err := printable.CheckText("query", query); err != nil {
		return nil, nil, &Error{ReasonQuery, err.Error()}
	}
	res, err := p.Resolve(ctx, query)
	if err != nil {
		return nil, nil, err
	}
	if err := checkResult(res); err != nil {
		return nil, nil, err
	}
	s := &Snapshot{Query: query, References: res.References, Provenance: provenance{name, res.Provenance}}
	if s.References == nil {
		s.References = []Reference{}
	}
	if s.Hash, err = canon.Digest(struct {
		Query      string      `json:"query"`
		References []Reference `json:"references"`
		Provenance provenance  `json:"provenance"`
	}{s.Query, s.References, s.Provenance}); err != nil {
		return nil, nil, err
	}
	b, err := canon.Marshal(s)
	if err != nil {
		return nil, nil, err
	}
	return s, b, nil
}

// checkResult bounds a provider's answer.
func checkResult(res Result) error {
	if len(res.References) > MaxReferences {
		return &Error{ReasonResult, fmt.Sprintf("%d references (at most %d)", len(res.References), MaxReferences)}
	}
	seen := map[string]bool{}
	for i, r := range res.References {
		for field, v := range map[string]string{"id": r.ID, "title": r.Title, "path": r.Path} {
			if len(v) > MaxField || printable.CheckText(field, v) != nil || (field == "id" && v == "") {
				return &Error{ReasonResult, fmt.Sprintf("references[%d].%s: empty, longer than %d bytes or not printable", i, field, MaxField)}
			}
		}
		if seen[r.ID] {
			return &Error{ReasonResult, fmt.Sprintf("references[%d].id: duplicate %q", i, r.ID)}
		}
		seen[r.ID] = true
		if !digestRE.MatchString(r.TextDigest) {
			return &Error{ReasonResult, fmt.Sprintf("references[%d].text_digest: not sha256:<64 hex>", i)}
		}
	}
	pv := res.Provenance
	if !digestRE.MatchString(pv.ContentHash) || pv.Source == "" || len(pv.Source) > MaxField || pv.Matches < len(res.References) {
		return &Error{ReasonResult, "provenance: a source, a sha256 content_hash and matches ≥ the references are required"}
	}
	return nil
}
