package checkpoint

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/trust"
	"github.com/proofgate/proofgate/internal/keytest"
)

// FuzzVerifyState signs fuzzed payload bytes with a trusted key, so the
// payload decoder is reached: no panic, a refusal is a *Error, and an
// accepted state's runs are ascending by id and unique.
func FuzzVerifyState(f *testing.F) {
	k := keytest.New(f)
	st := trust.New()
	if _, err := st.Add(k.PubPEM, "", nil, nil); err != nil {
		f.Fatal(err)
	}
	h := "sha256:" + strings.Repeat("a", 64)
	good, err := StatePayload(State{V: Version, Repository: Repository{Root: strings.Repeat("c", 40), ID: "acme/app"},
		Runs: []StateRun{{Run: "20260101T000000.000Z-0000abcd", Length: 3, Head: h}, {Run: "20260102T000000.000Z-0000abce", Length: 1, Head: h}},
		Time: "2026-12-01T12:00:00Z"})
	if err != nil {
		f.Fatal(err)
	}
	if env, err := envelope.Sign(k.Signer, StatePayloadType, good); err != nil {
		f.Fatal(err)
	} else if _, err := VerifyState(env, st); err != nil {
		f.Fatalf("a valid state checkpoint: %v", err)
	}
	f.Add(good)
	for _, r := range [][2]string{{"0000abce", "0000abcd"}, {"20260102", "20250102"}, {`"v":1`, `"v":1,"v":1`}, {`"v":1`, `"V":1`},
		{`"length":3`, `"length":99999999999999999999`}, {`"length":3`, `"length":3.0`}, {`"runs":[`, `"runs":` + strings.Repeat("[", 3000)},
		{`"time":"2026-12-01T12:00:00Z"`, `"time":"2026-13-01T12:00:00Z"`}, {`"id":"acme/app"`, `"id":"acme\u0000"`}} {
		f.Add(bytes.Replace(good, []byte(r[0]), []byte(r[1]), 1))
	}
	f.Add(good[:len(good)-1])
	f.Fuzz(func(t *testing.T, payload []byte) {
		env, err := envelope.Sign(k.Signer, StatePayloadType, payload)
		if err != nil {
			return
		}
		vs, err := VerifyState(env, st)
		var ce *Error
		if err != nil {
			if !errors.As(err, &ce) {
				t.Fatalf("untyped refusal %v", err)
			}
			return
		}
		for i := 1; i < len(vs.Runs); i++ {
			if vs.Runs[i].Run <= vs.Runs[i-1].Run {
				t.Fatalf("accepted runs out of order: %q then %q", vs.Runs[i-1].Run, vs.Runs[i].Run)
			}
		}
	})
}
