package docbridge

import (
	"bytes"
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/provider"
	"github.com/proofgate/proofgate/internal/strictjson"
)

func indexBytes(f *testing.F, es []Entry) []byte {
	h, err := canon.Digest(body{1, es})
	if err != nil {
		f.Fatal(err)
	}
	b, err := canon.Marshal(file{1, es, h})
	if err != nil {
		f.Fatal(err)
	}
	return b
}

// FuzzIndex feeds an arbitrary index and query to Parse and Resolve: no
// panic, an accepted index's contentHash verifies, and a resolution has at
// most MaxReferences references, in score-then-id order, with the same
// snapshot hash when repeated.
func FuzzIndex(f *testing.F) {
	valid := indexBytes(f, append(entries(20), Entry{ID: "zz-other", Title: "Unrelated", Text: "nothing"}))
	f.Add(valid, "cache health")
	f.Add(valid, "CACHE cache Cache")
	f.Add(indexBytes(f, []Entry{}), "x")
	f.Add(indexBytes(f, []Entry{{ID: "a", Title: "Ünïcode", Text: "straße ǅ"}}), "STRASSE ünïcode")
	for _, s := range []string{
		`{"version":1,"entries":[],"contentHash":"sha256:00"}`,
		`{"version":1,"version":1,"entries":[],"contentHash":""}`,
		`{"Version":1,"entries":[],"contentHash":""}`,
		`{"version":1e400,"entries":[],"contentHash":""}`,
		`{"version":1,"entries":[{"id":"a"},{"id":"a"}],"contentHash":""}`,
		strings.Repeat(`{"a":`, 5000),
		string(valid[:len(valid)/2]),
	} {
		f.Add([]byte(s), "a")
	}
	f.Fuzz(func(t *testing.T, b []byte, query string) {
		ix, err := Parse("index.json", DefaultIndex, b)
		ix2, err2 := Parse("index.json", DefaultIndex, bytes.Clone(b))
		if (err == nil) != (err2 == nil) || (err != nil && err.Error() != err2.Error()) || !reflect.DeepEqual(ix, ix2) {
			t.Fatalf("parse not deterministic: %v / %v", err, err2)
		}
		if reasonOf(err) == ReasonTampered {
			ix, err = rehashed(t, b)
		}
		if err != nil {
			if reasonOf(err) == "" {
				t.Fatalf("untyped refusal: %v", err)
			}
			return
		}
		if want, err := canon.Digest(body{1, ix.entries}); err != nil || want != ix.ContentHash() {
			t.Fatalf("accepted index hash %s, content hashes to %s (%v)", ix.ContentHash(), want, err)
		}
		r1, err1 := ix.Resolve(context.Background(), query)
		r2, err2 := ix.Resolve(context.Background(), query)
		if (err1 == nil) != (err2 == nil) || !reflect.DeepEqual(r1, r2) {
			t.Fatalf("resolve not deterministic: %v / %v", err1, err2)
		}
		if err1 != nil {
			return
		}
		checkOrder(t, r1.References)
		s1, _, e1 := provider.Resolve(context.Background(), Name, ix, query)
		s2, _, e2 := provider.Resolve(context.Background(), Name, ix, query)
		if (e1 == nil) != (e2 == nil) || (e1 == nil && s1.Hash != s2.Hash) {
			t.Fatalf("snapshot not deterministic: %v / %v", e1, e2)
		}
	})
}

// rehashed repairs the contentHash of an index refused as tampered: the
// hash being the only fault, the repaired index must be accepted (and so
// reaches Resolve with arbitrary entries).
func rehashed(t *testing.T, b []byte) (*Index, error) {
	var fl file
	if err := strictjson.Decode(b, &fl); err != nil {
		t.Fatalf("refused as tampered but does not decode: %v", err)
	}
	h, err := canon.Digest(body{fl.Version, fl.Entries})
	if err != nil {
		t.Fatal(err)
	}
	fl.ContentHash = h
	b2, err := canon.Marshal(fl)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := Parse("index.json", DefaultIndex, b2)
	if err != nil {
		t.Fatalf("repaired index refused: %v", err)
	}
	return ix, nil
}

func checkOrder(t *testing.T, refs []provider.Reference) {
	if len(refs) > provider.MaxReferences {
		t.Fatalf("%d references", len(refs))
	}
	for i := 1; i < len(refs); i++ {
		a, b := refs[i-1], refs[i]
		if a.Score < b.Score || (a.Score == b.Score && a.ID >= b.ID) {
			t.Fatalf("references %d,%d out of order: %+v %+v", i-1, i, a, b)
		}
	}
}
