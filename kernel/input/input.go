// Package input stores tool inputs content-addressed, with message
// manifests that keep a growing conversation from being written again on
// every turn. The formats below are also specified in docs/SPEC.md, section
// 2, "Tool inputs and manifests".
//
// # Input
//
// An input is a tool call's arguments: one JSON object of at most MaxInput
// bytes, nested at most MaxDepth levels, decoded strictly (internal/strictjson:
// no duplicate member, one value, valid UTF-8) and with no two member names
// of one object equal under Unicode simple case folding (strings.EqualFold).
// Its canonical form is its RFC 8785 (JCS) serialisation; the input hash is
// "sha256:" + hex SHA-256 of the canonical bytes. A top-level member
// "format" whose value is the string "proofgate.input-manifest.v1" is
// reserved (refused), so a stored input can never be read as a manifest.
//
// # Storage
//
// Every blob is written through a Putter (internal/blob's *Store:
// blobs/sha256/<hex>, O_EXCL, never overwritten); a blob that already
// exists is verified, not written. The package does not import internal/blob,
// so the verifier side (kernel/replay, bundle) rebuilds manifests with it.
// An input whose top-level "messages" member is a non-empty array of at most
// MaxMessages elements is stored as:
//
//   - one message blob per element: the element's canonical JSON (in
//     canonical JSON every nested value is itself canonical);
//   - one link blob per element, index i from 0, the canonical JSON of
//     {"format":"proofgate.input-link.v1","index":i,"message":"<message
//     digest>","prev":"<digest of link i-1>"} ("prev" absent for index 0).
//     A link names the whole message prefix up to i, so a conversation that
//     grows by k messages writes k new links, whatever its length;
//   - one rest blob: the canonical JSON of the input without "messages";
//   - the manifest blob, the canonical JSON of
//     {"count":n,"format":"proofgate.input-manifest.v1","input_hash":"<input
//     hash>","last":"<digest of link n-1>","rest":"<rest digest>"}.
//
// The input's ref is the manifest's digest. Any other input (no "messages",
// "messages" not an array, an empty array) is one blob, its canonical bytes,
// and its ref is that blob's digest.
//
// Store writes the blobs through Putter.PutMany: each new blob fsynced, one
// directory fsync for them all, every blob durable when Store returns (so
// before any event names the ref). Stored.Written counts the bytes of the
// blobs this call created; a blob another writer created first counts for
// that writer. Before writing, Store checks that its blobs rebuild the
// input.
//
// # Rebuild
//
// Rebuild reads a ref and returns the canonical input. A blob is a manifest
// when it is a JSON object whose "format" member is the manifest format
// string; it is then decoded strictly (closed: every member required,
// nothing else) and must be canonical, with 1 <= count <= MaxMessages and
// valid digests. The links are read from "last" back to index 0; each must be
// canonical, closed, carry the expected index and a "prev" exactly when its
// index is above 0. The input is rebuilt by adding "messages" (the message
// blobs in index order) to the rest object and canonicalising; its hash must
// equal "input_hash". A ref that is not a manifest must be a canonical input
// that Store would have stored as one blob. Every blob read is checked
// against its digest, whatever get does. Callers compare the returned
// canonical input's Hash with the hash they recorded.
package input

import (
	"bytes"
	stdjson "encoding/json"
	"errors"
	"fmt"

	"os"
	"regexp"

	"github.com/proofgate/proofgate/internal/canon"
)

// Putter is the blob store Store writes through (internal/blob's *Store).
// PutMany writes every bs[i] under digests[i] (sha256 of bs[i]) that is
// not stored yet, makes all of them durable before it returns nil, and
// returns the bytes it newly wrote. A stored blob that holds other bytes
// is reported by an error that wraps a value with a DigestMismatch() bool
// method returning true (internal/blob's ErrMismatch).
type Putter interface {
	PutMany(digests []string, bs [][]byte) (int64, error)
}

// Opener opens a stored blob by digest (internal/blob's *Store), for
// FromStore.
type Opener interface {
	Open(digest string) (*os.File, error)
}

// digestMismatch is how a Putter or a get function marks a blob whose
// bytes do not match its digest.
type digestMismatch interface{ DigestMismatch() bool }

func isMismatch(err error) bool {
	var dm digestMismatch
	return errors.As(err, &dm) && dm.DigestMismatch()
}

var digestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// validDigest reports whether d has the form sha256:<64 lowercase hex>.
func validDigest(d string) bool { return digestRE.MatchString(d) }

// Bounds.
const (
	MaxInput    = 8 << 20 // bytes of an input, raw or canonical
	MaxDepth    = 64      // nesting levels of an input
	MaxMessages = 65536   // elements of a "messages" array stored by manifest
	maxBlob     = MaxInput
)

// Format strings of the manifest and link blobs.
const (
	ManifestFormat = "proofgate.input-manifest.v1"
	LinkFormat     = "proofgate.input-link.v1"
)

// Stored is what Store wrote.
type Stored struct {
	Hash     string `json:"input_hash"` // hash of the complete canonical input
	Ref      string `json:"input_ref"`  // blob digest: the canonical input itself, or its manifest
	Manifest bool   `json:"manifest,omitempty"`
	Written  int64  `json:"-"` // bytes newly written to the store by this call
}

// Reasons an input, a manifest or a link is refused.
const (
	ReasonTooLarge     = "too-large"          // input over MaxInput, or a rebuilt input over it
	ReasonTooDeep      = "too-deep"           // nested deeper than MaxDepth
	ReasonSyntax       = "syntax"             // not one well-formed JSON value
	ReasonDuplicate    = "duplicate"          // a member name repeated in one object
	ReasonCaseVariant  = "case-variant"       // two member names equal under case folding
	ReasonNotObject    = "not-object"         // the input is not a JSON object
	ReasonReserved     = "reserved"           // a top-level "format" naming the manifest format
	ReasonNotCanonical = "not-canonical"      // bytes given as canonical, or a stored blob, are not
	ReasonTooMany      = "too-many-messages"  // more than MaxMessages messages
	ReasonManifest     = "manifest"           // a malformed manifest or link
	ReasonDigest       = "digest"             // a blob whose bytes do not match its digest, or a bad digest
	ReasonMissing      = "missing"            // a blob that cannot be read
	ReasonHashMismatch = "hash-mismatch"      // the rebuilt input does not hash to the recorded hash
	ReasonNotRepresent = "not-representation" // a one-blob input Store would have stored by manifest
)

// Error is a refused input, manifest or blob.
type Error struct {
	Reason string
	Detail string
	Err    error // the underlying error, if any
}

func (e *Error) Error() string { return "input: " + e.Reason + ": " + e.Detail }

func (e *Error) Unwrap() error { return e.Err }

func fail(reason, format string, args ...any) *Error {
	return &Error{Reason: reason, Detail: fmt.Sprintf(format, args...)}
}

// Hash returns the input hash of canonical bytes.
func Hash(canonical []byte) string { return canon.SumBytes(canonical) }

// Store writes canonical (the output of Canonical) into bs, as one blob or
// as messages, links, rest and manifest (see the package doc). It refuses
// bytes that are not canonical.
func Store(bs Putter, canonical []byte) (Stored, error) {
	c, err := Canonical(canonical)
	if err != nil {
		return Stored{}, err
	}
	if !bytes.Equal(c, canonical) {
		return Stored{}, fail(ReasonNotCanonical, "the bytes to store are not the canonical form of the input")
	}
	st := Stored{Hash: Hash(canonical)}
	plan, err := split(canonical, st.Hash)
	if err != nil {
		return Stored{}, err
	}
	blobs, ref := [][]byte{canonical}, st.Hash
	if plan != nil {
		blobs, ref, st.Manifest = plan.blobs, plan.ref, true
	}
	digests := make([]string, len(blobs))
	for i, b := range blobs {
		digests[i] = canon.SumBytes(b)
	}
	n, err := bs.PutMany(digests, blobs)
	if isMismatch(err) {
		return Stored{}, &Error{Reason: ReasonDigest, Detail: "an existing blob does not hold its bytes", Err: err}
	}
	if err != nil {
		return Stored{}, fmt.Errorf("input: %w", err)
	}
	st.Ref, st.Written = ref, n
	return st, nil
}

// FromStore returns a get function for Rebuild that reads blobs from bs,
// bounded by MaxInput; Rebuild checks the digests.
func FromStore(bs Opener) func(digest string) ([]byte, error) {
	return func(d string) ([]byte, error) {
		f, err := bs.Open(d)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return readBounded(f)
	}
}

type rawObject = map[string]stdjson.RawMessage
