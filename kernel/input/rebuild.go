package input

import (
	stdjson "encoding/json"
)

// manifest rebuilds the input a manifest blob stands for.
func (r *reader) manifest(b []byte) ([]byte, error) {
	var m manifest
	if err := canonicalBlob("manifest", b, &m); err != nil {
		return nil, err
	}
	if err := m.check(); err != nil {
		return nil, err
	}
	msgs := make([]stdjson.RawMessage, *m.Count)
	next := *m.Last
	for i := *m.Count - 1; i >= 0; i-- {
		l, err := r.link(next, i)
		if err != nil {
			return nil, err
		}
		mb, err := r.read(*l.Message)
		if err != nil {
			return nil, err
		}
		if c := canonOrNil(mb); string(c) != string(mb) {
			return nil, fail(ReasonManifest, "message %d (%s) is not one canonical JSON value", i, *l.Message)
		}
		r.total += len(mb) + 1
		if r.total > MaxInput {
			return nil, fail(ReasonTooLarge, "messages add up to more than %d bytes", MaxInput)
		}
		msgs[i] = mb
		if l.Prev != nil {
			next = *l.Prev
		}
	}
	rest, err := r.read(*m.Rest)
	if err != nil {
		return nil, err
	}
	if err := checkRest(rest); err != nil {
		return nil, err
	}
	c, err := assemble(rest, msgs)
	if err != nil {
		return nil, err
	}
	if h := Hash(c); h != *m.InputHash {
		return nil, fail(ReasonHashMismatch, "manifest records input hash %s, its messages rebuild an input with hash %s", *m.InputHash, h)
	}
	return c, nil
}

func (m *manifest) check() error {
	switch {
	case m.Count == nil || m.Format == nil || m.InputHash == nil || m.Last == nil || m.Rest == nil:
		return fail(ReasonManifest, "manifest: members count, format, input_hash, last and rest are required")
	case *m.Format != ManifestFormat:
		return fail(ReasonManifest, "manifest: format is not %q", ManifestFormat)
	case *m.Count < 1 || *m.Count > MaxMessages:
		return fail(ReasonTooMany, "manifest: count %d is not between 1 and %d", *m.Count, MaxMessages)
	}
	for name, d := range map[string]string{"input_hash": *m.InputHash, "last": *m.Last, "rest": *m.Rest} {
		if !validDigest(d) {
			return fail(ReasonDigest, "manifest: %s is not a sha256 digest", name)
		}
	}
	return nil
}

// link reads link blob d, which must carry index i.
func (r *reader) link(d string, i int) (link, error) {
	b, err := r.read(d)
	if err != nil {
		return link{}, err
	}
	var l link
	if err := canonicalBlob("link "+d, b, &l); err != nil {
		return link{}, err
	}
	switch {
	case l.Format == nil || l.Index == nil || l.Message == nil:
		return link{}, fail(ReasonManifest, "link %s: members format, index and message are required", d)
	case *l.Format != LinkFormat:
		return link{}, fail(ReasonManifest, "link %s: format is not %q", d, LinkFormat)
	case *l.Index != i:
		return link{}, fail(ReasonManifest, "link %s: index %d where %d was expected", d, *l.Index, i)
	case (l.Prev != nil) != (i > 0):
		return link{}, fail(ReasonManifest, "link %s: prev is required exactly when index is above 0", d)
	case !validDigest(*l.Message) || (l.Prev != nil && !validDigest(*l.Prev)):
		return link{}, fail(ReasonDigest, "link %s: message or prev is not a sha256 digest", d)
	}
	return l, nil
}

// checkRest checks the rest blob: a canonical object without "messages".
func checkRest(b []byte) error {
	c, err := Canonical(b)
	if err != nil {
		return err
	}
	if string(c) != string(b) {
		return fail(ReasonManifest, "rest is not canonical JSON")
	}
	obj, err := decodeObject(c)
	if err != nil {
		return err
	}
	if _, ok := obj["messages"]; ok {
		return fail(ReasonManifest, "rest has a messages member")
	}
	return nil
}
