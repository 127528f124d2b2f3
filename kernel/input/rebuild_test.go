package input_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/internal/blob"
	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/kernel/input"
)

// mem is an in-memory blob map for crafting hostile manifests.
type mem map[string][]byte

func (m mem) put(b string) string {
	d := canon.SumBytes([]byte(b))
	m[d] = []byte(b)
	return d
}

func (m mem) get(d string) ([]byte, error) {
	b, ok := m[d]
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: d, Err: fs.ErrNotExist}
	}
	return b, nil
}

func vector() mem {
	m := mem{}
	for _, b := range []string{vecMsg0, vecMsg1, vecLink0, vecLink1, vecRest, vecManifest} {
		m.put(b)
	}
	return m
}

func link(i int, msg, prev string) string {
	s := `{"format":"proofgate.input-link.v1","index":` + strconv.Itoa(i) + `,"message":"` + msg + `"`
	if prev != "" {
		s += `,"prev":"` + prev + `"`
	}
	return s + "}"
}

func manifest(count int, hash, last, rest string) string {
	return `{"count":` + strconv.Itoa(count) + `,"format":"proofgate.input-manifest.v1","input_hash":"` + hash +
		`","last":"` + last + `","rest":"` + rest + `"}`
}

func TestRebuildVectorFromMemory(t *testing.T) {
	got, _, err := input.Rebuild(vector().get, vecManifestD)
	if err != nil || string(got) != vecCanonical {
		t.Fatalf("%s %v", got, err)
	}
}

func TestRebuildChangedMessageBlobOnDisk(t *testing.T) {
	bs, dir := store(t)
	st, err := input.Store(bs, []byte(vecCanonical))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "sha256", strings.TrimPrefix(vecMsg1D, "sha256:"))
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(`{"content":"run deploy","role":"assistant"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err = input.Rebuild(input.FromStore(bs), st.Ref)
	reason(t, err, input.ReasonDigest)
}

func TestRebuildMissingMessageBlob(t *testing.T) {
	m := vector()
	delete(m, vecMsg0D)
	_, _, err := input.Rebuild(m.get, vecManifestD)
	reason(t, err, input.ReasonMissing)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("%v does not wrap fs.ErrNotExist", err)
	}
	bs, dir := store(t)
	if _, err := input.Store(bs, []byte(vecCanonical)); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, "sha256", strings.TrimPrefix(vecLink0D, "sha256:")))
	_, _, err = input.Rebuild(input.FromStore(bs), vecManifestD)
	reason(t, err, input.ReasonMissing)
}

func TestRebuildLyingGetter(t *testing.T) {
	m := vector()
	m[vecMsg0D] = []byte(`{"content":"bye","role":"user"}`)
	_, _, err := input.Rebuild(m.get, vecManifestD)
	reason(t, err, input.ReasonDigest)
	_, _, err = input.Rebuild(func(string) ([]byte, error) { return nil, blob.ErrMismatch }, vecManifestD)
	reason(t, err, input.ReasonDigest)
}

// A message replaced by a consistent new chain (valid digests throughout)
// still cannot stand for the recorded input.
func TestRebuildReplacedMessageChain(t *testing.T) {
	m := vector()
	msg := m.put(`{"content":"sure, wiping the tree","role":"assistant"}`)
	l1 := m.put(link(1, msg, vecLink0D))
	ref := m.put(manifest(2, vecHash, l1, vecRestD))
	_, _, err := input.Rebuild(m.get, ref)
	reason(t, err, input.ReasonHashMismatch)
}

// The messages of one input under a manifest recording another's hash.
func TestRebuildManifestNamingAnotherInput(t *testing.T) {
	other, err := input.Canonical([]byte(`{"messages":[{"content":"hi","role":"user"}],"model":"m1"}`))
	if err != nil {
		t.Fatal(err)
	}
	m := vector()
	ref := m.put(manifest(2, input.Hash(other), vecLink1D, vecRestD))
	_, _, err = input.Rebuild(m.get, ref)
	reason(t, err, input.ReasonHashMismatch)
	// A truncated conversation under the full input's hash.
	ref = m.put(manifest(1, vecHash, vecLink0D, vecRestD))
	_, _, err = input.Rebuild(m.get, ref)
	reason(t, err, input.ReasonHashMismatch)
	// Another rest (model) under the recorded hash.
	rest := m.put(`{"model":"m2","temperature":0.5}`)
	ref = m.put(manifest(2, vecHash, vecLink1D, rest))
	_, _, err = input.Rebuild(m.get, ref)
	reason(t, err, input.ReasonHashMismatch)
}

func TestRebuildSwappedMessages(t *testing.T) {
	m := vector()
	l0 := m.put(link(0, vecMsg1D, ""))
	l1 := m.put(link(1, vecMsg0D, l0))
	ref := m.put(manifest(2, vecHash, l1, vecRestD))
	_, _, err := input.Rebuild(m.get, ref)
	reason(t, err, input.ReasonHashMismatch)
}

func TestRebuildMalformedManifest(t *testing.T) {
	ok := manifest(2, vecHash, vecLink1D, vecRestD)
	cases := []struct{ name, manifest, reason string }{
		{"extra member", strings.Replace(ok, `{"count"`, `{"comment":"x","count"`, 1), input.ReasonManifest},
		{"unknown trailing member", strings.Replace(ok, `}`, `,"signature":"x"}`, 1), input.ReasonManifest},
		{"missing rest", `{"count":2,"format":"proofgate.input-manifest.v1","input_hash":"` + vecHash + `","last":"` + vecLink1D + `"}`, input.ReasonManifest},
		{"missing count", `{"format":"proofgate.input-manifest.v1","input_hash":"` + vecHash + `","last":"` + vecLink1D + `","rest":"` + vecRestD + `"}`, input.ReasonManifest},
		{"count as string", strings.Replace(ok, `"count":2`, `"count":"2"`, 1), input.ReasonManifest},
		{"count fraction", strings.Replace(ok, `"count":2`, `"count":1.5`, 1), input.ReasonManifest},
		{"count zero", manifest(0, vecHash, vecLink1D, vecRestD), input.ReasonTooMany},
		{"count negative", manifest(-1, vecHash, vecLink1D, vecRestD), input.ReasonTooMany},
		{"count over the bound", manifest(input.MaxMessages+1, vecHash, vecLink1D, vecRestD), input.ReasonTooMany},
		{"count above the links", manifest(3, vecHash, vecLink1D, vecRestD), input.ReasonManifest},
		{"count below the links", manifest(1, vecHash, vecLink1D, vecRestD), input.ReasonManifest},
		{"bad input hash", manifest(2, "sha256:ABC", vecLink1D, vecRestD), input.ReasonDigest},
		{"bad last", manifest(2, vecHash, "md5:00", vecRestD), input.ReasonDigest},
		{"not canonical", strings.Replace(ok, `,`, `, `, 1), input.ReasonManifest},
		{"case variant member", strings.Replace(ok, `"count"`, `"Count"`, 1), input.ReasonManifest},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := vector()
			ref := m.put(c.manifest)
			_, _, err := input.Rebuild(m.get, ref)
			reason(t, err, c.reason)
		})
	}
}

func TestRebuildDuplicateMembers(t *testing.T) {
	m := vector()
	ok := manifest(2, vecHash, vecLink1D, vecRestD)
	ref := m.put(strings.Replace(ok, `{"count":2,`, `{"count":2,"count":2,`, 1))
	_, _, err := input.Rebuild(m.get, ref)
	reason(t, err, input.ReasonDuplicate)
	ref = m.put(strings.Replace(ok, `"last"`, `"last":"`+vecLink0D+`","last"`, 1))
	_, _, err = input.Rebuild(m.get, ref)
	reason(t, err, input.ReasonDuplicate)
	// A duplicate inside a link.
	l1 := m.put(strings.Replace(vecLink1, `"index":1,`, `"index":1,"index":1,`, 1))
	ref = m.put(manifest(2, vecHash, l1, vecRestD))
	_, _, err = input.Rebuild(m.get, ref)
	reason(t, err, input.ReasonManifest)
}

func TestRebuildMalformedLinks(t *testing.T) {
	cases := []struct{ name, link1, reason string }{
		{"extra member", strings.Replace(vecLink1, `}`, `,"z":1}`, 1), input.ReasonManifest},
		{"wrong format", strings.Replace(vecLink1, `input-link.v1`, `input-link.v2`, 1), input.ReasonManifest},
		{"wrong index", link(2, vecMsg1D, vecLink0D), input.ReasonManifest},
		{"no prev above 0", link(1, vecMsg1D, ""), input.ReasonManifest},
		{"bad message digest", link(1, "sha256:xyz", vecLink0D), input.ReasonDigest},
		{"not canonical", strings.Replace(vecLink1, `,`, ` ,`, 1), input.ReasonManifest},
		{"missing format", `{"index":1,"message":"` + vecMsg1D + `","prev":"` + vecLink0D + `"}`, input.ReasonManifest},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := vector()
			l1 := m.put(c.link1)
			ref := m.put(manifest(2, vecHash, l1, vecRestD))
			_, _, err := input.Rebuild(m.get, ref)
			reason(t, err, c.reason)
		})
	}
	m := vector()
	l0 := m.put(link(0, vecMsg0D, vecLink0D))
	l1 := m.put(link(1, vecMsg1D, l0))
	_, _, err := input.Rebuild(m.get, m.put(manifest(2, vecHash, l1, vecRestD)))
	reason(t, err, input.ReasonManifest) // prev at index 0
}

func TestRebuildMalformedRestAndMessages(t *testing.T) {
	m := vector()
	rest := m.put(`{"messages":[],"model":"m1","temperature":0.5}`)
	_, _, err := input.Rebuild(m.get, m.put(manifest(2, vecHash, vecLink1D, rest)))
	reason(t, err, input.ReasonManifest)
	rest = m.put(`[1]`)
	_, _, err = input.Rebuild(m.get, m.put(manifest(2, vecHash, vecLink1D, rest)))
	reason(t, err, input.ReasonNotObject)
	// A message blob that is not one canonical value, or smuggles structure.
	for _, msg := range []string{`{"role": "user"}`, `1],"model":"m1","x":[2`} {
		md := m.put(msg)
		l0 := m.put(link(0, md, ""))
		_, _, err = input.Rebuild(m.get, m.put(manifest(1, vecHash, l0, vecRestD)))
		reason(t, err, input.ReasonManifest)
	}
}

func TestRebuildPlainBlobs(t *testing.T) {
	m := mem{}
	_, _, err := input.Rebuild(m.get, m.put(vecCanonical))
	reason(t, err, input.ReasonNotRepresent)
	_, _, err = input.Rebuild(m.get, m.put(`{"b":1,"a":1}`))
	reason(t, err, input.ReasonNotCanonical)
	_, _, err = input.Rebuild(m.get, m.put(`[1]`))
	reason(t, err, input.ReasonNotObject)
	_, _, err = input.Rebuild(m.get, "sha256:1234")
	reason(t, err, input.ReasonDigest)
	_, _, err = input.Rebuild(m.get, "../../etc/passwd")
	reason(t, err, input.ReasonDigest)
	got, blobs, err := input.Rebuild(m.get, m.put(`{"messages":[],"name":"x"}`))
	if err != nil || string(got) != `{"messages":[],"name":"x"}` || len(blobs) != 1 {
		t.Fatalf("%s %v %v", got, blobs, err)
	}
}

func TestRebuildBlobsListed(t *testing.T) {
	// A repeated message is one blob, listed once.
	c, err := input.Canonical([]byte(`{"messages":["ok","ok","ok"]}`))
	if err != nil {
		t.Fatal(err)
	}
	bs, dir := store(t)
	st, err := input.Store(bs, c)
	if err != nil {
		t.Fatal(err)
	}
	got, blobs, err := input.Rebuild(input.FromStore(bs), st.Ref)
	if err != nil || string(got) != string(c) {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "sha256", "*"))
	if len(files) != 6 || len(blobs) != 6 { // 1 message, 3 links, rest, manifest
		t.Fatalf("%d files, %d blobs read: %v", len(files), len(blobs), blobs)
	}
}
