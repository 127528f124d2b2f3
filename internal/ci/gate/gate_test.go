package gate

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/internal/ci/artifact"
	"github.com/proofgate/proofgate/kernel/exit"
)

// anyRun is a policy that binds nothing, so a bundle is refused for what
// it is, not for the policy.
var anyRun = bundle.VerifyOptions{AnySource: true, AnyContract: true}

func TestFileUnreadable(t *testing.T) {
	res := File(Options{Policy: anyRun}, filepath.Join(t.TempDir(), "missing.tar.gz"), "missing.tar.gz")
	r := res.Refusal
	if r == nil || r.Class != exit.Usage || r.Reason != string(ReasonUsage) || !strings.HasPrefix(r.Detail, "input bundle: ") || len(res.Attempts) != 0 {
		t.Fatalf("refusal %+v, attempts %v", r, res.Attempts)
	}
}

func TestFileCompanionUnreadable(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "b.tar.gz")
	if err := os.WriteFile(p, []byte("junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(artifact.CompanionName(p), 0o755); err != nil { // a directory: unreadable, not absent
		t.Fatal(err)
	}
	r := File(Options{Policy: anyRun}, p, "b.tar.gz").Refusal
	if r == nil || r.Class != exit.Usage || !strings.HasPrefix(r.Detail, "input bundle's companion "+artifact.CompanionName(p)+": ") {
		t.Fatalf("refusal %+v", r)
	}
}

// A file that is no bundle is one refused attempt, the gate's refusal,
// and the bundle passed to Verified with that refusal.
func TestFileRefused(t *testing.T) {
	p := filepath.Join(t.TempDir(), "b.tar.gz")
	if err := os.WriteFile(p, []byte("junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	var seen []Bundle
	res := File(Options{Policy: anyRun, Verified: func(b Bundle) { seen = append(seen, b) }}, p, "in/b.tar.gz")
	r := res.Refusal
	if r == nil || r.Class != exit.Refused || r.Reason == "" || res.Accepted != nil {
		t.Fatalf("refusal %+v", r)
	}
	want := Attempt{Artifact: "file in/b.tar.gz", Verdict: bundle.VerdictRefused, Reason: r.Reason, Detail: r.Detail}
	if len(res.Attempts) != 1 || res.Attempts[0] != want {
		t.Fatalf("attempts %+v, want %+v", res.Attempts, want)
	}
	if len(seen) != 1 || seen[0].Name != "b.tar.gz" || seen[0].URI != "" || string(seen[0].Data) != "junk" ||
		seen[0].Verdict.Verdict != bundle.VerdictRefused || seen[0].Verdict.Reason != r.Reason {
		t.Fatalf("verified %+v", seen)
	}
}

// A policy that does not describe one is refused as malformed, not as an
// error of the gate.
func TestFilePolicyError(t *testing.T) {
	p := filepath.Join(t.TempDir(), "b.tar.gz")
	if err := os.WriteFile(p, []byte("junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := File(Options{}, p, "b.tar.gz").Refusal
	if r == nil || r.Class != exit.Refused || r.Reason != string(bundle.Malformed) {
		t.Fatalf("refusal %+v", r)
	}
}

func TestNotFound(t *testing.T) {
	s := &search{o: Options{Repo: Repo{Owner: "o", Name: "r"}, Search: artifact.Search{Commit: "abc"}}}
	for _, tc := range []struct {
		err    error
		class  exit.Class
		reason string
		detail string
	}{
		{nil, exit.Refused, string(ReasonNotFound), "no unexpired ProofGate artifact for tree abc in o/r"},
		{fmt.Errorf("x: %w", artifact.ErrNotFound), exit.Refused, string(ReasonNotFound), "no unexpired ProofGate artifact for tree abc in o/r"},
		{fmt.Errorf("gone: %w", artifact.ErrExpired), exit.Refused, string(ReasonExpired), "gone: " + artifact.ErrExpired.Error()},
		{fmt.Errorf("other: %w", artifact.ErrOtherCommit), exit.Refused, string(ReasonOther), "other: " + artifact.ErrOtherCommit.Error()},
		{errors.New("502"), exit.Environment, string(ReasonGitHubAPI), "502" + noArtifactsAPIHint},
	} {
		if r := s.notFound(tc.err); *r != (Refusal{tc.class, tc.reason, tc.detail}) {
			t.Errorf("%v: %+v", tc.err, r)
		}
	}
	s.o.Search.ByCommit = true
	if r := s.notFound(nil); r.Detail != "no unexpired ProofGate artifact for commit abc in o/r" {
		t.Errorf("by commit: %q", r.Detail)
	}
}

// The first accepted candidate wins and ends the search; all refused,
// the first refusal is the gate's.
func TestFirstAccepted(t *testing.T) {
	var tried []string
	try := func(_ int, v string) Attempt {
		tried = append(tried, v)
		return Attempt{Verdict: v, Reason: "r-" + v}
	}
	if r := firstAccepted([]string{"refused", bundle.VerdictAccepted, "never"}, try); r != nil || len(tried) != 2 {
		t.Fatalf("refusal %+v after %v", r, tried)
	}
	if r := firstAccepted([]string{"a", "b"}, try); *r != (Refusal{exit.Refused, "r-a", ""}) {
		t.Fatalf("refusal %+v", r)
	}
}

func TestArtifactURI(t *testing.T) {
	a := &artifact.Artifact{ID: 7}
	a.Run.ID = 3
	s := &search{o: Options{Repo: Repo{Owner: "o", Name: "r"}}}
	if u := s.artifactURI(a); u != "https://github.com/o/r/actions/runs/3/artifacts/7" {
		t.Errorf("default server: %s", u)
	}
	s.o.ServerURL = "https://ghe.example/"
	if u := s.artifactURI(a); u != "https://ghe.example/o/r/actions/runs/3/artifacts/7" {
		t.Errorf("GHES: %s", u)
	}
}
