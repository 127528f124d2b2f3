package action

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/key"
	"github.com/proofgate/proofgate/bundle/trust"
	"github.com/proofgate/proofgate/internal/ci/artifact"
	"github.com/proofgate/proofgate/internal/ci/handoff"
	"github.com/proofgate/proofgate/internal/githubtest"
	"github.com/proofgate/proofgate/kernel/replay"
)

// slowContract's checks take ≥ 5 s and count their executions in a file
// outside the workspace (COUNTER), so a test sees whether a job re-ran them.
const slowContract = `version: 1
name: widget
defaults:
  runtime: process
  timeout: 60s
checks:
  - id: slow
    run: [sh, -c, 'echo run >> COUNTER; sleep 5']
  - id: readme
    run: [test, -f, README.md]
approval: {required: 1, roles: [write, maintain, admin]}
`

// fastFixture is a fixture whose pull_request job has run (AWAITING_APPROVAL,
// hand-off uploaded but listed for no head: each test lists it itself) and
// bob's approval of the head.
type fastFixture struct {
	*fixture
	counter string
	zip     []byte // the hand-off artifact's zip
	review  int64
}

func newFastFixture(t *testing.T, files map[string]string) *fastFixture {
	t.Helper()
	counter := filepath.Join(t.TempDir(), "counter")
	c := strings.ReplaceAll(slowContract, "COUNTER", counter)
	for p, data := range files {
		files[p] = strings.ReplaceAll(data, "COUNTER", counter)
	}
	fx := newFixtureBase(t, c, files, nil)
	ff := &fastFixture{fixture: fx, counter: counter}
	// Uploads appear for another head: each test lists what it needs.
	fx.gh.SetRun(owner, repo, strings.Repeat("0", 40))
	fx.prEvent()
	res, err := fx.run()
	mustCode(t, res.Code, ExitAwaiting, err, fx.log.String())
	var ok bool
	if ff.zip, ok = fx.gh.Uploaded(RunArtifactPrefix + fx.head); !ok {
		t.Fatalf("no hand-off artifact uploaded:\n%s", fx.log.String())
	}
	if fx.outputs()["run-artifact"] != RunArtifactPrefix+fx.head {
		t.Fatalf("run-artifact output: %v", fx.outputs())
	}
	ff.review = fx.gh.AddReview(owner, repo, prNum, githubtest.Review{User: bob, State: "APPROVED", CommitID: fx.head})
	ff.freshJob()
	fx.reviewEvent(ff.review)
	return ff
}

// freshJob points the job at a new checkout of the test merge commit with
// an empty state directory, as a new job on a new runner sees it.
func (ff *fastFixture) freshJob() {
	ws := filepath.Join(ff.t.TempDir(), "ws")
	git(ff.t, ff.tmp, "clone", "-q", ff.ws, ws)
	git(ff.t, ws, "checkout", "-q", "--detach", ff.merge)
	ff.env["GITHUB_WORKSPACE"] = ws
}

func (ff *fastFixture) runs() int {
	b, _ := os.ReadFile(ff.counter)
	return strings.Count(string(b), "run\n")
}

func (ff *fastFixture) list(a githubtest.Artifact) {
	if a.Name == "" {
		a.Name = RunArtifactPrefix + ff.head
	}
	if a.HeadSHA == "" {
		a.HeadSHA = ff.head
	}
	ff.gh.AddArtifact(owner, repo, a)
}

func TestReviewFastPathImportsWithoutRerunning(t *testing.T) {
	ff := newFastFixture(t, nil)
	if ff.runs() != 1 {
		t.Fatalf("pull_request job ran the slow check %d times", ff.runs())
	}
	ff.list(githubtest.Artifact{Data: ff.zip})
	start := time.Now()
	res, err := ff.run()
	took := time.Since(start)
	mustCode(t, res.Code, ExitOK, err, ff.log.String())
	if !res.Imported || res.FastPathRefusal != "" || res.State != replay.Complete || res.Recorded != 1 || res.ArtifactID == 0 {
		t.Fatalf("review job: %+v\n%s", res, ff.log.String())
	}
	if ff.runs() != 1 {
		t.Fatalf("the review job re-ran the checks (%d runs)", ff.runs())
	}
	if took >= 5*time.Second {
		t.Fatalf("review to bundle took %s, not independent of the 5 s check", took)
	}
	t.Logf("review job start to COMPLETE and uploaded bundle: %s (checks took ≥ 5 s)", took)
	if !strings.Contains(ff.summary(), "Review fast path: imported run") {
		t.Errorf("summary does not say the run was imported:\n%s", ff.summary())
	}
	// The bundle verifies like any other: the release gate accepts it.
	if _, ok := ff.gh.Uploaded(ArtifactPrefix + ff.head); !ok {
		t.Fatal("no bundle uploaded")
	}
}

// TestHandoffIsNoBundle: the hand-off archive is refused by the bundle
// verifier (predicate type), so a release gate cannot take it for evidence.
func TestHandoffIsNoBundle(t *testing.T) {
	ff := newFastFixture(t, nil)
	files, err := artifact.Unzip(ff.zip, 1<<30, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	var tgz []byte
	for _, b := range files {
		tgz = b
	}
	st, err := trust.Load(ff.trust)
	if err != nil {
		t.Fatal(err)
	}
	p, err := bundle.NewPolicy(bundle.WithoutSourceBindingUnsafe(), bundle.WithoutContractBindingUnsafe())
	if err != nil {
		t.Fatal(err)
	}
	_, err = bundle.NewVerifier(st).Verify(bytes.NewReader(tgz), p)
	if err == nil {
		t.Fatal("the bundle verifier accepted a hand-off")
	}
	t.Logf("bundle verifier: %v", err)
}

func TestReviewFastPathHostile(t *testing.T) {
	otherKey := func(t *testing.T, ff *fastFixture) []byte {
		_, priv, _ := ed25519.GenerateKey(rand.Reader)
		s, err := key.NewSigner(priv)
		if err != nil {
			t.Fatal(err)
		}
		runs, _ := filepath.Glob(filepath.Join(ff.ws, ".proofgate/runs/*/events.ndjson"))
		if len(runs) != 1 {
			t.Fatalf("runs: %v", runs)
		}
		data, err := handoff.Export(filepath.Dir(runs[0]), handoff.PR{Number: prNum, HeadSHA: ff.head, BaseSHA: ff.base}, s.KeyID(),
			func(p []byte) ([]byte, []byte, error) {
				env, err := envelope.Sign(s, bundle.PayloadType, p)
				return env, nil, err
			})
		if err != nil {
			t.Fatal(err)
		}
		z, err := artifact.Zip(map[string][]byte{"x" + handoff.ArchiveSuffix: data})
		if err != nil {
			t.Fatal(err)
		}
		return z
	}
	cases := []struct {
		name  string
		files map[string]string
		setup func(t *testing.T, ff *fastFixture)
		want  handoff.Reason
	}{
		{"none listed", nil, func(*testing.T, *fastFixture) {}, handoff.NotFound},
		{"fork workflow run", nil, func(t *testing.T, ff *fastFixture) {
			ff.list(githubtest.Artifact{Data: ff.zip, HeadRepositoryID: 99})
		}, handoff.Fork},
		{"listed for another head", nil, func(t *testing.T, ff *fastFixture) {
			ff.list(githubtest.Artifact{Data: ff.zip, HeadSHA: ff.base})
		}, handoff.NotFound},
		{"run for another head", nil, func(t *testing.T, ff *fastFixture) {
			// The PR moved to a new head (same tree); a hand-off of the old
			// head is listed under the new head's name.
			newHead := git(t, ff.ws, "commit-tree", ff.head+"^{tree}", "-p", ff.head, "-m", "same tree")
			ff.gh.SetHead(owner, repo, prNum, newHead)
			id := ff.gh.AddReview(owner, repo, prNum, githubtest.Review{User: bob, State: "APPROVED", CommitID: newHead})
			ff.reviewEvent(id)
			ff.head = newHead
			ff.list(githubtest.Artifact{Data: ff.zip})
		}, handoff.OtherHead},
		{"run under another contract", map[string]string{".proofgate/other.yaml": strings.Replace(slowContract, "timeout: 60s", "timeout: 61s", 1)}, func(t *testing.T, ff *fastFixture) {
			ff.env["INPUT_CONTRACT"] = ".proofgate/other.yaml"
			ff.list(githubtest.Artifact{Data: ff.zip})
		}, handoff.OtherContract},
		{"signed by another key", nil, func(t *testing.T, ff *fastFixture) {
			ff.list(githubtest.Artifact{Data: otherKey(t, ff)})
		}, handoff.BadSignature},
		{"evidence edited", nil, func(t *testing.T, ff *fastFixture) {
			ff.list(githubtest.Artifact{Data: forge(t, ff.zip, bundle.RunFile, func(b []byte) []byte { return append(b, ' ') })})
		}, handoff.Malformed},
		{"extra file", nil, func(t *testing.T, ff *fastFixture) {
			ff.list(githubtest.Artifact{Data: rezip(t, ff.zip, func(f map[string][]byte) { f["README"] = []byte("x") })})
		}, handoff.Malformed},
		{"base moved: another test merge", nil, func(t *testing.T, ff *fastFixture) {
			ws := ff.env["GITHUB_WORKSPACE"]
			m := git(t, ws, "commit-tree", ff.merge+"^{tree}", "-p", ff.base, "-p", ff.head, "-m", "re-merged")
			git(t, ws, "checkout", "-q", "--detach", m)
			ff.list(githubtest.Artifact{Data: ff.zip})
		}, handoff.Checkout},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ff := newFastFixture(t, tc.files)
			tc.setup(t, ff)
			res, err := ff.run()
			if res.Imported || res.FastPathRefusal != string(tc.want) {
				t.Fatalf("refusal %q imported %v, want %q\n%s", res.FastPathRefusal, res.Imported, tc.want, ff.log.String())
			}
			if ff.runs() != 2 {
				t.Fatalf("the checks ran %d times, want a re-run (2)", ff.runs())
			}
			if !strings.Contains(ff.summary(), "Review fast path not taken") || !strings.Contains(ff.log.String(), string(tc.want)) {
				t.Errorf("summary/log do not say why:\n%s", ff.summary())
			}
			if tc.want != handoff.Checkout {
				mustCode(t, res.Code, ExitOK, err, ff.log.String())
			}
		})
	}
}
