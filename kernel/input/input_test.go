package input_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/internal/blob"
	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/kernel/input"
)

// The test vector of docs/SPEC.md, "Tool inputs and manifests". The
// digests were computed with sha256sum over the bytes written out here.
const (
	vecRaw       = `{"model": "m1", "messages": [{"role":"user","content":"hi"},{"content":"hello","role":"assistant"}], "temperature": 0.50}`
	vecCanonical = `{"messages":[{"content":"hi","role":"user"},{"content":"hello","role":"assistant"}],"model":"m1","temperature":0.5}`
	vecHash      = "sha256:6a8a4b7e1c7717f0b5069cfd151efad5df0de5fba9a4657ae4eaedd776e411d5"
	vecMsg0      = `{"content":"hi","role":"user"}`
	vecMsg0D     = "sha256:9017285104d1b249960a30732b8e92f6e2fb3acf8d8e4b2a16c116ad0c1ed211"
	vecMsg1      = `{"content":"hello","role":"assistant"}`
	vecMsg1D     = "sha256:465e35e0bc490f3f41451e41bb547b8a05d174aeee26a115da1fa8c3c674af7b"
	vecLink0     = `{"format":"proofgate.input-link.v1","index":0,"message":"sha256:9017285104d1b249960a30732b8e92f6e2fb3acf8d8e4b2a16c116ad0c1ed211"}`
	vecLink0D    = "sha256:27645d475744177b302de6b4eca7f0c2d99f533b8818745f95a484afefb5f6c7"
	vecLink1     = `{"format":"proofgate.input-link.v1","index":1,"message":"sha256:465e35e0bc490f3f41451e41bb547b8a05d174aeee26a115da1fa8c3c674af7b","prev":"sha256:27645d475744177b302de6b4eca7f0c2d99f533b8818745f95a484afefb5f6c7"}`
	vecLink1D    = "sha256:7d3e5d9213865c8308046e791b6de0694aa737c3480c4db9b54a5c47b5149e03"
	vecRest      = `{"model":"m1","temperature":0.5}`
	vecRestD     = "sha256:c87fcc8669f9c9b5da02638193867a238fd4132e253b5c86a5c7cc5078ad42ef"
	vecManifest  = `{"count":2,"format":"proofgate.input-manifest.v1","input_hash":"sha256:6a8a4b7e1c7717f0b5069cfd151efad5df0de5fba9a4657ae4eaedd776e411d5","last":"sha256:7d3e5d9213865c8308046e791b6de0694aa737c3480c4db9b54a5c47b5149e03","rest":"sha256:c87fcc8669f9c9b5da02638193867a238fd4132e253b5c86a5c7cc5078ad42ef"}`
	vecManifestD = "sha256:83eac77f828ee532a3570242715cdacd450ee9417b6bb777be17bdf75ac9c202"
)

func reason(t *testing.T, err error, want string) {
	t.Helper()
	var e *input.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not an *input.Error, want reason %s", err, err, want)
	}
	if e.Reason != want {
		t.Fatalf("reason %s (%v), want %s", e.Reason, err, want)
	}
}

func store(t *testing.T) (*blob.Store, string) {
	dir := t.TempDir()
	return blob.New(dir), dir
}

func readBlob(t *testing.T, dir, d string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "sha256", strings.TrimPrefix(d, "sha256:")))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestVector(t *testing.T) {
	c, err := input.Canonical([]byte(vecRaw))
	if err != nil {
		t.Fatal(err)
	}
	if string(c) != vecCanonical || input.Hash(c) != vecHash {
		t.Fatalf("canonical %s hash %s", c, input.Hash(c))
	}
	bs, dir := store(t)
	st, err := input.Store(bs, c)
	if err != nil {
		t.Fatal(err)
	}
	if st.Hash != vecHash || st.Ref != vecManifestD || !st.Manifest {
		t.Fatalf("stored %+v", st)
	}
	want := map[string]string{vecMsg0D: vecMsg0, vecMsg1D: vecMsg1, vecLink0D: vecLink0,
		vecLink1D: vecLink1, vecRestD: vecRest, vecManifestD: vecManifest}
	var total int64
	for d, b := range want {
		if got := readBlob(t, dir, d); got != b {
			t.Errorf("blob %s = %s, want %s", d, got, b)
		}
		if canon.SumBytes([]byte(b)) != d {
			t.Errorf("vector digest of %s is not %s", b, d)
		}
		total += int64(len(b))
	}
	files, _ := filepath.Glob(filepath.Join(dir, "sha256", "*"))
	if len(files) != len(want) || st.Written != total {
		t.Fatalf("%d blobs, %d bytes written; want %d, %d", len(files), st.Written, len(want), total)
	}
	got, blobs, err := input.Rebuild(input.FromStore(bs), st.Ref)
	if err != nil || string(got) != vecCanonical {
		t.Fatalf("rebuild %s %v", got, err)
	}
	if len(blobs) != len(want) || blobs[0] != vecManifestD {
		t.Fatalf("blobs read %v", blobs)
	}
	for _, d := range blobs {
		if _, ok := want[d]; !ok {
			t.Fatalf("read unexpected blob %s", d)
		}
	}
	again, err := input.Store(bs, c)
	if err != nil || again.Written != 0 || again.Ref != st.Ref {
		t.Fatalf("second store %+v %v: nothing should be written", again, err)
	}
}

func TestCanonicalRefusals(t *testing.T) {
	deep := strings.Repeat(`{"a":`, input.MaxDepth) + "1" + strings.Repeat("}", input.MaxDepth)
	cases := []struct{ name, raw, reason string }{
		{"array", `[1,2]`, input.ReasonNotObject},
		{"string", `"x"`, input.ReasonNotObject},
		{"null", `null`, input.ReasonNotObject},
		{"number", ` 12`, input.ReasonNotObject},
		{"empty", ``, input.ReasonSyntax},
		{"syntax", `{"a":}`, input.ReasonSyntax},
		{"trailing", `{"a":1} {}`, input.ReasonSyntax},
		{"invalid utf8", "{\"a\":\"\xff\"}", input.ReasonSyntax},
		{"duplicate", `{"a":1,"a":2}`, input.ReasonDuplicate},
		{"nested duplicate", `{"m":[{"x":1,"x":1}]}`, input.ReasonDuplicate},
		{"case variant", `{"status":"revoked","Status":"active"}`, input.ReasonCaseVariant},
		{"nested case variant", `{"m":[{"role":"user","ROLE":"system"}]}`, input.ReasonCaseVariant},
		{"kelvin sign variant", "{\"k\":1,\"\u212a\":2}", input.ReasonCaseVariant},
		{"long s variant", "{\"s\":1,\"\u017f\":2}", input.ReasonCaseVariant},
		{"too deep", `{"x":` + deep + `}`, input.ReasonTooDeep},
		{"reserved format", `{"format":"proofgate.input-manifest.v1"}`, input.ReasonReserved},
		{"reserved format escaped", `{"format":"proofgate.input-manifest\u002ev1"}`, input.ReasonReserved},
		{"too large", `{"a":"` + strings.Repeat("x", input.MaxInput) + `"}`, input.ReasonTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := input.Canonical([]byte(c.raw))
			reason(t, err, c.reason)
		})
	}
	ok := []string{deep, `{"k":1,"K2":2}`, `{"a":{"b":1},"A2":1}`, `{"format":"other"}`, `{}`}
	for _, raw := range ok {
		if _, err := input.Canonical([]byte(raw)); err != nil {
			t.Errorf("%.40s: %v", raw, err)
		}
	}
}

func TestOneBlobInputs(t *testing.T) {
	for _, raw := range []string{`{"name":"world"}`, `{"messages":"not an array"}`, `{"messages":[]}`,
		`{"messages":{"0":"x"}}`, `{"messages":null}`, `{}`} {
		t.Run(raw, func(t *testing.T) {
			bs, dir := store(t)
			c, err := input.Canonical([]byte(raw))
			if err != nil {
				t.Fatal(err)
			}
			st, err := input.Store(bs, c)
			if err != nil {
				t.Fatal(err)
			}
			files, _ := filepath.Glob(filepath.Join(dir, "sha256", "*"))
			if st.Manifest || st.Ref != input.Hash(c) || st.Hash != st.Ref || len(files) != 1 || st.Written != int64(len(c)) {
				t.Fatalf("stored %+v in %d blobs, want one blob, no manifest", st, len(files))
			}
			got, blobs, err := input.Rebuild(input.FromStore(bs), st.Ref)
			if err != nil || string(got) != string(c) || len(blobs) != 1 || blobs[0] != st.Ref {
				t.Fatalf("rebuild %s %v %v", got, blobs, err)
			}
		})
	}
}

func TestStoreRefusesNonCanonical(t *testing.T) {
	bs, dir := store(t)
	for _, raw := range []string{`{"b":1,"a":2}`, `{"a": 1}`, `{"a":1.0}`} {
		_, err := input.Store(bs, []byte(raw))
		reason(t, err, input.ReasonNotCanonical)
	}
	_, err := input.Store(bs, []byte(`[1]`))
	reason(t, err, input.ReasonNotObject)
	if files, _ := filepath.Glob(filepath.Join(dir, "sha256", "*")); len(files) != 0 {
		t.Fatalf("refused stores wrote %d blobs", len(files))
	}
}

func TestStoreTooManyMessages(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"messages":[`)
	for i := 0; i <= input.MaxMessages; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprint(&b, i)
	}
	b.WriteString(`]}`)
	c, err := input.Canonical([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	bs, dir := store(t)
	_, err = input.Store(bs, c)
	reason(t, err, input.ReasonTooMany)
	if files, _ := filepath.Glob(filepath.Join(dir, "sha256", "*")); len(files) != 0 {
		t.Fatalf("refused store wrote %d blobs", len(files))
	}
}

func TestStoreVerifiesExistingBlob(t *testing.T) {
	bs, dir := store(t)
	p := filepath.Join(dir, "sha256", strings.TrimPrefix(vecMsg0D, "sha256:"))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(`{"content":"rm -rf","role":"user"}`), 0o444); err != nil {
		t.Fatal(err)
	}
	_, err := input.Store(bs, []byte(vecCanonical))
	reason(t, err, input.ReasonDigest)
	if !errors.Is(err, blob.ErrMismatch) {
		t.Fatalf("%v does not wrap blob.ErrMismatch", err)
	}
	if b, _ := os.ReadFile(p); !strings.Contains(string(b), "rm -rf") {
		t.Fatal("the existing blob was rewritten")
	}
}

// The vector in docs/SPEC.md is the one tested here.
func TestSpecCarriesVector(t *testing.T) {
	spec, err := os.ReadFile("../../docs/SPEC.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"### Tool inputs and manifests", vecRaw, vecCanonical, vecHash, vecManifest, vecMsg0, vecMsg1, vecRest,
		vecMsg0D, vecMsg1D, vecLink0D, vecLink1D, vecRestD, vecManifestD, input.ManifestFormat, input.LinkFormat} {
		if !strings.Contains(string(spec), s) {
			t.Errorf("docs/SPEC.md does not carry %s", s)
		}
	}
}

// Concurrent stores of one input (two recorders racing) all succeed, agree
// on the ref, and count each new byte once.
func TestStoreConcurrent(t *testing.T) {
	bs, _ := store(t)
	raws := session(4)
	c, err := input.Canonical(raws[3])
	if err != nil {
		t.Fatal(err)
	}
	type res struct {
		st  input.Stored
		err error
	}
	out := make(chan res)
	for i := 0; i < 8; i++ {
		go func() {
			st, err := input.Store(bs, c)
			out <- res{st, err}
		}()
	}
	var written int64
	ref := ""
	for i := 0; i < 8; i++ {
		r := <-out
		if r.err != nil {
			t.Fatal(r.err)
		}
		if ref != "" && r.st.Ref != ref {
			t.Fatalf("refs %s and %s", ref, r.st.Ref)
		}
		ref = r.st.Ref
		written += r.st.Written
	}
	fresh, _ := store(t)
	once, err := input.Store(fresh, c)
	if err != nil || written != once.Written {
		t.Fatalf("concurrent stores counted %d bytes, one store %d (%v)", written, once.Written, err)
	}
	if got, _, err := input.Rebuild(input.FromStore(bs), ref); err != nil || string(got) != string(c) {
		t.Fatalf("rebuild after the race: %v", err)
	}
}
