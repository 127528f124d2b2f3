package input

import (
	"bytes"
	stdjson "encoding/json"
	"fmt"
	"strconv"

	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/strictjson"
)

// manifest is the manifest blob (closed format).
type manifest struct {
	Count     *int    `json:"count"`
	Format    *string `json:"format"`
	InputHash *string `json:"input_hash"`
	Last      *string `json:"last"`
	Rest      *string `json:"rest"`
}

// link is one link blob (closed format).
type link struct {
	Format  *string `json:"format"`
	Index   *int    `json:"index"`
	Message *string `json:"message"`
	Prev    *string `json:"prev"`
}

// plan is a manifest input's blobs in write order, and its ref.
type plan struct {
	blobs [][]byte
	ref   string
}

// split returns the blobs that store canonical by manifest, or nil when it
// is stored as one blob.
func split(canonical []byte, hash string) (*plan, error) {
	var obj rawObject
	if err := strictjson.Decode(canonical, &obj); err != nil {
		return nil, strictError(err)
	}
	msgs, err := messages(obj)
	if msgs == nil || err != nil {
		return nil, err
	}
	delete(obj, "messages")
	rest, err := canon.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("input: rest: %w", err)
	}
	p := &plan{}
	prev := ""
	for i, m := range msgs {
		p.blobs = append(p.blobs, m)
		l := linkBytes(i, canon.SumBytes(m), prev)
		p.blobs = append(p.blobs, l)
		prev = canon.SumBytes(l)
	}
	mf := manifestBytes(len(msgs), hash, prev, canon.SumBytes(rest))
	p.blobs = append(p.blobs, rest, mf)
	p.ref = canon.SumBytes(mf)
	// The representation must rebuild what it stands for before any of
	// it is written.
	again, err := canon.Transform(join(rest, msgs))
	if err != nil || !bytes.Equal(again, canonical) {
		return nil, fail(ReasonNotCanonical, "messages and rest do not rebuild the input")
	}
	return p, nil
}

// messages returns the elements of a non-empty "messages" array, nil when
// the input is stored as one blob.
func messages(obj rawObject) ([]stdjson.RawMessage, error) {
	raw, ok := obj["messages"]
	if !ok || len(raw) == 0 || raw[0] != '[' {
		return nil, nil
	}
	var msgs []stdjson.RawMessage
	if err := strictjson.Decode(raw, &msgs); err != nil {
		return nil, strictError(err)
	}
	if len(msgs) > MaxMessages {
		return nil, fail(ReasonTooMany, "messages has %d elements, more than %d", len(msgs), MaxMessages)
	}
	if len(msgs) == 0 {
		return nil, nil
	}
	return msgs, nil
}

func linkBytes(i int, message, prev string) []byte {
	var b bytes.Buffer
	b.WriteString(`{"format":"` + LinkFormat + `","index":` + strconv.Itoa(i) + `,"message":"` + message + `"`)
	if prev != "" {
		b.WriteString(`,"prev":"` + prev + `"`)
	}
	b.WriteString("}")
	return b.Bytes()
}

func manifestBytes(n int, hash, last, rest string) []byte {
	return []byte(`{"count":` + strconv.Itoa(n) + `,"format":"` + ManifestFormat + `","input_hash":"` + hash +
		`","last":"` + last + `","rest":"` + rest + `"}`)
}

// assemble adds "messages" to the rest object and canonicalises, strictly.
func assemble(rest []byte, msgs []stdjson.RawMessage) ([]byte, error) {
	size := len(rest) + len(`,"messages":[]`)
	for _, m := range msgs {
		size += len(m) + 1
	}
	if size > MaxInput+1 {
		return nil, fail(ReasonTooLarge, "rebuilt input is more than %d bytes", MaxInput)
	}
	return Canonical(join(rest, msgs))
}

// join writes {"messages":[msgs...], rest's members}, not yet canonical.
func join(rest []byte, msgs []stdjson.RawMessage) []byte {
	size := len(rest) + len(`,"messages":[]`)
	for _, m := range msgs {
		size += len(m) + 1
	}
	var b bytes.Buffer
	b.Grow(size)
	b.WriteString(`{"messages":[`)
	for i, m := range msgs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(m)
	}
	b.WriteByte(']')
	if !bytes.Equal(rest, []byte("{}")) {
		b.WriteByte(',')
		b.Write(rest[1:])
	} else {
		b.WriteByte('}')
	}
	return b.Bytes()
}

// Rebuild reads ref through get and returns the canonical input it stands
// for and the digests of every blob read, each once, in read order.
func Rebuild(get func(digest string) ([]byte, error), ref string) ([]byte, []string, error) {
	r := &reader{get: get, seen: map[string]bool{}}
	b, err := r.read(ref)
	if err != nil {
		return nil, nil, err
	}
	if !isManifest(b) {
		c, err := plainInput(b)
		if err != nil {
			return nil, nil, err
		}
		return c, r.blobs, nil
	}
	c, err := r.manifest(b)
	if err != nil {
		return nil, nil, err
	}
	return c, r.blobs, nil
}

// plainInput checks a one-blob input.
func plainInput(b []byte) ([]byte, error) {
	c, err := Canonical(b)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(c, b) {
		return nil, fail(ReasonNotCanonical, "stored input is not canonical")
	}
	obj, err := decodeObject(c)
	if err != nil {
		return nil, err
	}
	if msgs, err := messages(obj); err != nil || msgs != nil {
		if err != nil {
			return nil, err
		}
		return nil, fail(ReasonNotRepresent, "stored input has a non-empty messages array: it is stored by manifest")
	}
	return c, nil
}

// isManifest reports whether b is a JSON object whose format member is the
// manifest format (an input with that member is refused by Canonical).
func isManifest(b []byte) bool {
	var obj rawObject
	if strictjson.Decode(b, &obj) != nil || obj == nil {
		return false
	}
	f, ok := obj["format"]
	return ok && bytes.Equal(canonOrNil(f), []byte(`"`+ManifestFormat+`"`))
}

type reader struct {
	get   func(string) ([]byte, error)
	blobs []string
	seen  map[string]bool
	total int
}

// read gets blob d and checks its bytes against d.
func (r *reader) read(d string) ([]byte, error) {
	if !validDigest(d) {
		return nil, fail(ReasonDigest, "%q is not a blob digest", d)
	}
	b, err := r.get(d)
	if err != nil {
		if isMismatch(err) {
			return nil, &Error{Reason: ReasonDigest, Detail: "blob " + d + ": " + err.Error(), Err: err}
		}
		return nil, &Error{Reason: ReasonMissing, Detail: "blob " + d + ": " + err.Error(), Err: err}
	}
	if len(b) > maxBlob {
		return nil, fail(ReasonTooLarge, "blob %s is %d bytes, more than %d", d, len(b), maxBlob)
	}
	if got := canon.SumBytes(b); got != d {
		return nil, fail(ReasonDigest, "blob %s holds bytes with digest %s", d, got)
	}
	if !r.seen[d] {
		r.seen[d] = true
		r.blobs = append(r.blobs, d)
	}
	return b, nil
}

// canonicalBlob decodes a canonical JSON blob strictly into v.
func canonicalBlob(what string, b []byte, v any) error {
	if err := strictjson.Decode(b, v); err != nil {
		return &Error{Reason: ReasonManifest, Detail: what + ": " + err.Error(), Err: err}
	}
	if !bytes.Equal(canonOrNil(b), b) {
		return fail(ReasonManifest, "%s is not canonical JSON", what)
	}
	return nil
}
