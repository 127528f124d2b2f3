package handoff

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/key"
	"github.com/proofgate/proofgate/internal/ci/artifact"
	"github.com/proofgate/proofgate/internal/keytest"
	"github.com/proofgate/proofgate/internal/process"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/replay"
	"github.com/proofgate/proofgate/kernel/runtime"
)

const contractYAML = `version: 1
name: t
defaults: {runtime: process, timeout: 20s}
checks:
  - {id: a, run: [sh, -c, 'echo out']}
approval: {required: 1}
`

// awaiting makes a git repository, plans and executes one run of the
// contract there with the process runtime, and returns its directory
// (AWAITING_APPROVAL).
func awaiting(t *testing.T) string {
	t.Helper()
	repo := t.TempDir()
	for _, args := range [][]string{{"init", "-q"}, {"-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "init"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	c, err := contract.Parse("contract.yaml", []byte(contractYAML), "")
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(repo, ".proofgate")
	ctx := context.Background()
	r, err := run.Plan(ctx, run.PlanOptions{RepoDir: repo, StateDir: state, Contract: c, Origin: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.Exec(ctx, run.ExecOptions{RepoDir: repo, StateDir: state, Jobs: 1, Runtimes: map[string]runtime.Runtime{"process": process.New()}}); err != nil {
		t.Fatal(err)
	}
	return r.Dir
}

// keySign signs with s, as the action's key mode does.
func keySign(s *key.Signer) SignFunc {
	return func(p []byte) ([]byte, []byte, error) {
		env, err := envelope.Sign(s, bundle.PayloadType, p)
		return env, nil, err
	}
}

// zipped is the hand-off artifact's zip of archive data.
func zipped(t *testing.T, files map[string][]byte) []byte {
	t.Helper()
	z, err := artifact.Zip(files)
	if err != nil {
		t.Fatal(err)
	}
	return z
}

func reasonOf(err error) Reason {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ""
}

// A run exported with the job's key opens with that key, to the statement
// it was exported with; another key, no key, material beside a key
// signature, and a zip that is not one run archive are refused.
func TestExportOpen(t *testing.T) {
	dir := awaiting(t)
	k := keytest.New(t)
	pr := PR{Number: 7, HeadSHA: strings.Repeat("a", 40), BaseSHA: strings.Repeat("b", 40)}
	data, err := Export(dir, pr, k.Signer.KeyID(), keySign(k.Signer))
	if err != nil {
		t.Fatal(err)
	}
	files, st, err := Open(zipped(t, map[string][]byte{"r" + ArchiveSuffix: data}), k.Signer, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.Predicate.PullRequest != pr || st.PredicateType != PredicateType || st.Predicate.KeyID != k.Signer.KeyID() || st.Predicate.Run.State != replay.AwaitingApproval {
		t.Fatalf("statement %+v", st)
	}
	if _, ok := files[bundle.EventsFile]; !ok || files[bundle.AttestationFile] != nil {
		t.Fatalf("files: %d, events %v, attestation %v", len(files), ok, files[bundle.AttestationFile] != nil)
	}
	// Exporting again makes the same bytes.
	if again, err := Export(dir, pr, k.Signer.KeyID(), keySign(k.Signer)); err != nil || string(again) != string(data) {
		t.Fatalf("a second export differs (%v)", err)
	}
	other := keytest.New(t)
	cases := []struct {
		name   string
		zip    []byte
		signer envelope.Signer
		want   Reason
	}{
		{"another key", zipped(t, map[string][]byte{"r" + ArchiveSuffix: data}), other.Signer, BadSignature},
		{"no key", zipped(t, map[string][]byte{"r" + ArchiveSuffix: data}), nil, NoKey},
		{"two files", zipped(t, map[string][]byte{"r" + ArchiveSuffix: data, "s" + ArchiveSuffix: data}), k.Signer, Malformed},
		{"another name", zipped(t, map[string][]byte{"r.tar.gz": data}), k.Signer, Malformed},
		{"not a zip", data, k.Signer, Malformed},
	}
	for _, tc := range cases {
		if _, _, err := Open(tc.zip, tc.signer, nil); reasonOf(err) != tc.want {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.want)
		}
	}
}

// Pack refuses a run that is not in the state the statement is for.
func TestPackRequiresState(t *testing.T) {
	dir := awaiting(t)
	k := keytest.New(t)
	_, err := Pack(dir, replay.Planned, func(*replay.Report, []bundle.Subject, string) any { return struct{}{} }, keySign(k.Signer))
	if err == nil || !strings.Contains(err.Error(), "not PLANNED") {
		t.Fatalf("Pack of an AWAITING_APPROVAL run as PLANNED: %v", err)
	}
}

// ReplayClaimed refuses another state, another summary and a signed_at
// before the last event; CheckSubjects refuses subjects that are not the
// files.
func TestReplayClaimedAndSubjects(t *testing.T) {
	dir := awaiting(t)
	k := keytest.New(t)
	data, err := Export(dir, PR{Number: 1}, k.Signer.KeyID(), keySign(k.Signer))
	if err != nil {
		t.Fatal(err)
	}
	files, st, err := Open(zipped(t, map[string][]byte{"r" + ArchiveSuffix: data}), k.Signer, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := st.Predicate
	otherRun := p.Run
	otherRun.Repo = "other/repo"
	for _, tc := range []struct {
		name string
		err  error
		want Reason
	}{
		{"as claimed", ReplayClaimed(files, replay.AwaitingApproval, p.Run, p.SignedAt), ""},
		{"another state", ReplayClaimed(files, replay.Planned, p.Run, p.SignedAt), NotAwaiting},
		{"another summary", ReplayClaimed(files, replay.AwaitingApproval, otherRun, p.SignedAt), Audit},
		{"signed before the last event", ReplayClaimed(files, replay.AwaitingApproval, p.Run, "2001-01-01T00:00:00Z"), SigningTime},
		{"signed_at not a time", ReplayClaimed(files, replay.AwaitingApproval, p.Run, "yesterday"), Malformed},
		{"subjects", CheckSubjects(st.Subject, files), ""},
		{"a subject short", CheckSubjects(st.Subject[1:], files), Malformed},
		{"a file more", CheckSubjects(st.Subject, with(files, "extra", []byte("x"))), Malformed},
		{"a file changed", CheckSubjects(st.Subject, with(files, bundle.RunFile, []byte("{}"))), Malformed},
	} {
		if got := reasonOf(tc.err); got != tc.want || (tc.want == "") != (tc.err == nil) {
			t.Errorf("%s: %v, want %q", tc.name, tc.err, tc.want)
		}
	}
}

// with returns a copy of files with name set to b.
func with(files map[string][]byte, name string, b []byte) map[string][]byte {
	out := make(map[string][]byte, len(files)+1)
	for n, d := range files {
		out[n] = d
	}
	out[name] = b
	return out
}

func TestRefuseError(t *testing.T) {
	err := error(Refuse(OtherHead, "PR #%d", 7))
	if err.Error() != "other-head: PR #7" || reasonOf(err) != OtherHead {
		t.Fatalf("%v", err)
	}
}

func TestKeyVerifiers(t *testing.T) {
	k := keytest.New(t)
	v := KeyVerifiers{ID: k.Signer.KeyID(), Pub: k.Signer.Public}
	if _, err := v.Verifier("other"); err == nil {
		t.Fatal("another key id was trusted")
	}
	tk, err := v.Verifier(k.Signer.KeyID())
	if err != nil || tk.KeyID() != k.Signer.KeyID() {
		t.Fatalf("the job's key: %v", err)
	}
	sig, err := k.Signer.Sign(context.Background(), []byte("m"))
	if err != nil || !v.Verify([]byte("m"), sig) || v.Verify([]byte("n"), sig) || v.Verify([]byte("m"), sig[1:]) {
		t.Fatalf("Verify: %v", err)
	}
}
