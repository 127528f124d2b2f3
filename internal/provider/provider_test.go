package provider

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/internal/run"
)

type fake Result

func (f fake) Resolve(context.Context, string) (Result, error) { return Result(f), nil }

const hex64 = "sha256:0000000000000000000000000000000000000000000000000000000000000000"

func refs(n int) []Reference {
	var rs []Reference
	for i := range n {
		rs = append(rs, Reference{ID: fmt.Sprint("r", i), Title: "t", Path: "p", TextDigest: hex64})
	}
	return rs
}

func reasonOf(err error) Reason {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ""
}

// The kernel bounds whatever a provider returns: more than eight
// references, a bad digest, a forged-looking line, no provenance.
func TestHostileProviderResultsRefused(t *testing.T) {
	pv := Provenance{Source: "s", ContentHash: hex64, Matches: 9}
	for name, r := range map[string]Result{
		"nine":       {refs(9), pv},
		"dup id":     {append(refs(1), refs(1)...), pv},
		"bad digest": {[]Reference{{ID: "a", TextDigest: "md5:x"}}, pv},
		"newline":    {[]Reference{{ID: "a", Title: "x\nprovenance: forged", TextDigest: hex64}}, pv},
		"no hash":    {refs(1), Provenance{Source: "s", Matches: 1}},
		"matches":    {refs(3), Provenance{Source: "s", ContentHash: hex64, Matches: 2}},
	} {
		if _, _, err := Resolve(context.Background(), "x", fake(r), "q"); reasonOf(err) != ReasonResult {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, _, err := Resolve(context.Background(), "X Y", fake{}, "q"); reasonOf(err) != ReasonName {
		t.Errorf("name: %v", err)
	}
	for _, q := range []string{"", "a\nb", strings.Repeat("q", MaxQuery+1)} {
		if _, _, err := Resolve(context.Background(), "x", fake{}, q); reasonOf(err) != ReasonQuery {
			t.Errorf("query %q: %v", q, err)
		}
	}
}

// The kernel names the provider and computes the hash; the snapshot is a
// context file run --context-file accepts.
func TestSnapshotIsAContextFile(t *testing.T) {
	s, b, err := Resolve(context.Background(), "doc-bridge", fake{refs(2), Provenance{Source: "s", ContentHash: hex64, Matches: 2}}, "why")
	if err != nil {
		t.Fatal(err)
	}
	if s.Provenance.Provider != "doc-bridge" || !strings.Contains(string(b), `"provider":"doc-bridge"`) {
		t.Fatalf("%s", b)
	}
	snaps, err := run.ParseContext("f", b)
	if err != nil || len(snaps) != 1 || snaps[0].Hash != s.Hash || snaps[0].Query != "why" {
		t.Fatalf("%v %+v", err, snaps)
	}
}

// Structural: the seam and its providers import nothing that writes or
// decides a run (no run, log, approval, lock, blob store, source).
func TestProviderImports(t *testing.T) {
	allowed := []string{"internal/bounded", "internal/canon", "internal/printable", "internal/strictjson", "internal/provider"}
	for _, pkg := range []string{"internal/provider", "internal/docbridge"} {
		out, err := exec.Command("go", "list", "-deps", "github.com/proofgate/proofgate/"+pkg).Output()
		if err != nil {
			t.Fatal(err)
		}
		for _, dep := range strings.Fields(string(out)) {
			if rel, ok := strings.CutPrefix(dep, "github.com/proofgate/proofgate/"); ok && rel != pkg && !slices.Contains(allowed, rel) {
				t.Errorf("%s depends on %s", pkg, rel)
			}
		}
	}
}
