package bundle

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/bundle/archive"
)

func hexSum(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }

// productRun is a run whose check produces dist/app ("binary") and
// dist/tools/x, and writes dist/notes, which it does not declare.
func productRun(t *testing.T, binary string) *fixture {
	t.Helper()
	return makeRun(t, runOpts{approve: []string{"alice"}, produces: []string{"dist/app", "dist/tools/*"},
		script: "mkdir -p dist/tools && printf '" + binary + "' > dist/app && printf tool > dist/tools/x && printf notes > dist/notes && echo built"})
}

// TestProductsAttested: a passed check's declared files are subjects of
// the statement by their digest, and WithSubject accepts exactly those.
func TestProductsAttested(t *testing.T) {
	f := productRun(t, "binary")
	k := newKey(t)
	b := export(t, f, k, ExportOptions{})
	st := statementOf(t, b)
	want := map[string]string{"products/hello/dist/app": hexSum("binary"), "products/hello/dist/tools/x": hexSum("tool")}
	got := map[string]string{}
	for _, s := range st.Subject {
		if strings.HasPrefix(s.Name, ProductPrefix) {
			got[s.Name] = s.Digest["sha256"]
		}
	}
	if len(got) != len(want) || got["products/hello/dist/app"] != want["products/hello/dist/app"] || got["products/hello/dist/tools/x"] != want["products/hello/dist/tools/x"] {
		t.Fatalf("product subjects %v, want %v", got, want)
	}
	for _, m := range files(t, b) {
		if strings.HasPrefix(m.Name, ProductPrefix) || strings.Contains(m.Name, "dist/") {
			t.Fatalf("a product travels in the archive: %s", m.Name)
		}
	}

	store := storeWith(t, k)
	verify := func(b []byte, subjects ...string) (*Result, error) {
		o := anyRun
		o.RequireSubjects = subjects
		return Verify(bytes.NewReader(b), store, o)
	}
	res, err := verify(b, hexSum("binary"), hexSum("tool"))
	if err != nil {
		t.Fatalf("the run's own products refused: %v", err)
	}
	if ps := Products(&res.Run); len(ps) != 2 || ps[0].Path != "dist/app" || ps[0].SHA256 != hexSum("binary") || ps[0].Size != 6 {
		t.Fatalf("verdict products %+v", ps)
	}

	other := export(t, productRun(t, "binarY"), k, ExportOptions{})
	stdout := st.Predicate.Run.Checks[0].Stdout.Digest[len("sha256:"):]
	for _, c := range []struct{ name, digest, detail string }{
		{"one byte changed", hexSum("binarY"), "no passed check produced"},
		{"a file the check wrote but did not declare", hexSum("notes"), "no passed check produced"},
		{"the check's stdout, a member of the bundle", stdout, "the bundle's own blobs/sha256/"},
		{"the log", hexSum(string(member(t, b, EventsFile))), "the bundle's own events.ndjson"},
	} {
		_, err := verify(b, hexSum("binary"), c.digest)
		if reasonOf(err) != NotAProduct || !strings.Contains(err.Error(), c.detail) {
			t.Errorf("%s: %v, want %s (%s)", c.name, err, NotAProduct, c.detail)
		}
	}
	if _, err := verify(other, hexSum("binary")); reasonOf(err) != NotAProduct {
		t.Errorf("another run's bundle for this run's binary: %v", err)
	}
	var pe *PolicyError
	if _, err := verify(b, "BINARY"); !errors.As(err, &pe) || pe.Field != PolicySubject {
		t.Errorf("malformed subject digest: %v", err)
	}
}

// TestProductSubjectsHostile: a signer who chooses the statement still
// cannot attest a product the log does not record.
func TestProductSubjectsHostile(t *testing.T) {
	f := productRun(t, "binary")
	k := newKey(t)
	b := export(t, f, k, ExportOptions{})
	store := storeWith(t, k)
	evil := hexSum("evil")
	setSubject := func(name, d string) func(*Statement) {
		return func(st *Statement) {
			for i, s := range st.Subject {
				if s.Name == name {
					if d == "" {
						st.Subject = append(st.Subject[:i], st.Subject[i+1:]...)
					} else {
						st.Subject[i].Digest["sha256"] = d
					}
					return
				}
			}
			st.Subject = append(st.Subject, Subject{Name: name, Digest: map[string]string{"sha256": d}})
		}
	}
	app := "products/hello/dist/app"
	for _, c := range []struct {
		name   string
		files  []byte
		reason Reason
		detail string
	}{
		{"a product no check produced", repack(t, resign(t, files(t, b), k, setSubject("products/hello/dist/evil", evil))), SubjectMismatch, "no passed check of the log produced it"},
		{"a product under an undeclared check", repack(t, resign(t, files(t, b), k, setSubject("products/release/dist/app", hexSum("binary")))), SubjectMismatch, "no passed check of the log produced it"},
		{"a product's digest swapped", repack(t, resign(t, files(t, b), k, setSubject(app, evil))), SubjectMismatch, "the log recorded"},
		{"a product left out", repack(t, resign(t, files(t, b), k, setSubject(app, ""))), SubjectMismatch, "not a subject"},
		{"a predicate claiming another product", repack(t, resign(t, files(t, b), k, func(st *Statement) {
			setSubject(app, evil)(st)
			st.Predicate.Run.Checks[0].Products[0].Digest = "sha256:" + evil
		})), PredicateMismatch, `"checks"`},
		{"a traversing product name", repack(t, resign(t, files(t, b), k, setSubject("products/hello/../run.json", evil))), Malformed, "subject["},
		{"a product without a check", repack(t, resign(t, files(t, b), k, setSubject("products/", evil))), Malformed, "subject["},
		{"the product shipped inside the archive", repack(t, append(files(t, b), fileNamed(app, "binary"))), ExtraFile, "not a bundle file"},
	} {
		_, err := Verify(bytes.NewReader(c.files), store, anyRun)
		if reasonOf(err) != c.reason || !strings.Contains(err.Error(), c.detail) {
			t.Errorf("%s: %v, want %s (%s)", c.name, err, c.reason, c.detail)
		}
	}
}

// statementOf is the statement a (trusted, test-made) bundle signs.
func statementOf(t *testing.T, b []byte) Statement {
	t.Helper()
	var st Statement
	if err := json.Unmarshal(restate(t, member(t, b, AttestationFile), func(*Statement) {}), &st); err != nil {
		t.Fatal(err)
	}
	return st
}

func fileNamed(name, data string) archive.File { return archive.File{Name: name, Data: []byte(data)} }
