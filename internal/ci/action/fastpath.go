package action

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing/fstest"
	"time"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/archive"
	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/key"
	"github.com/proofgate/proofgate/bundle/sigstore"
	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/ci/artifact"
	"github.com/proofgate/proofgate/internal/ci/ghapi"
	"github.com/proofgate/proofgate/internal/durable"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/internal/strictjson"
	"github.com/proofgate/proofgate/kernel/replay"
)

// FastPathReason is why the review job did not import a handed-off run
// and re-ran the checks instead.
type FastPathReason string

// Reasons of a refused hand-off.
const (
	FastNoKey         FastPathReason = "no-signing-key"       // key mode without a key: nothing to verify the hand-off with
	FastNotFound      FastPathReason = "run-not-found"        // no unexpired hand-off for the head
	FastFork          FastPathReason = "run-from-fork"        // the artifact's workflow run came from another repository
	FastAPI           FastPathReason = "github-api"           // listing or downloading failed
	FastMalformed     FastPathReason = "run-malformed"        // zip, archive, statement or subjects
	FastBadSignature  FastPathReason = "signature-invalid"    // not signed by the job's key
	FastOtherHead     FastPathReason = "other-head"           // signed for another PR head or PR
	FastOtherContract FastPathReason = "other-contract"       // ran under another contract than the base's
	FastOtherRepo     FastPathReason = "other-repository"     // ran in another repository
	FastAudit         FastPathReason = "audit-failed"         // the files do not replay to what the statement says
	FastNotAwaiting   FastPathReason = "not-awaiting"         // the run is not AWAITING_APPROVAL
	FastCheckout      FastPathReason = "checkout-differs"     // the review job's checkout is not the commit the run tested
	FastExists        FastPathReason = "run-exists-different" // a different run with that id is in the state directory
	// FastSigningTime: signed_at is before the run's last event (the
	// export writes that time; the log rules out an earlier one).
	FastSigningTime FastPathReason = "signing-time-implausible"
)

// FastPathError is a refused hand-off.
type FastPathError struct {
	Reason FastPathReason
	Detail string
}

func (e *FastPathError) Error() string { return string(e.Reason) + ": " + e.Detail }

func refuse(r FastPathReason, format string, args ...any) *FastPathError {
	return &FastPathError{Reason: r, Detail: fmt.Sprintf(format, args...)}
}

// fastPath is an imported run.
type fastPath struct {
	artifact string
	took     time.Duration
}

// tryFastPath imports the pull_request job's run for a pull_request_review
// event. On success j.r is the imported run, open for writing; otherwise it
// reports why, and the caller re-runs the checks.
func (j *job) tryFastPath(ctx context.Context) bool {
	if j.ev.Name != "pull_request_review" || j.gh == nil {
		return false
	}
	start := time.Now()
	name, err := j.importRun(ctx)
	if err != nil {
		var fe *FastPathError
		if !errors.As(err, &fe) {
			fe = refuse(FastAPI, "%v", err)
		}
		j.res.FastPathRefusal = string(fe.Reason)
		msg := "no trustworthy run of the pull_request job for head " + short(j.ev.HeadSHA) + " (" + fe.Error() + "): re-running the checks"
		j.s.notes = append(j.s.notes, "Review fast path not taken: "+msg+".")
		j.f.annotate("notice", "ProofGate re-runs the checks", msg)
		return false
	}
	j.fast = &fastPath{artifact: name, took: time.Since(start)}
	j.res.Imported = true
	j.res.RunID = j.r.ID
	rep := j.r.Report()
	j.s.report = rep
	j.res.State, j.res.VerificationDigest = rep.State, rep.VerificationDigest
	j.f.output("run-id", j.r.ID)
	j.f.output("verification-digest", rep.VerificationDigest)
	j.s.notes = append(j.s.notes, fmt.Sprintf("Review fast path: imported run %s from artifact %s (signature, chain, head %s and base contract verified in %s); the checks were not re-run.",
		code(j.r.ID), code(name), code(short(j.ev.HeadSHA)), j.fast.took.Round(time.Millisecond)))
	j.f.logf("proofgate: imported run %s from %s in %s, checks not re-run", j.r.ID, name, j.fast.took.Round(time.Millisecond))
	return true
}

// importRun finds, verifies and imports the hand-off; it returns the
// artifact's name.
func (j *job) importRun(ctx context.Context) (string, error) {
	var kv *sigstore.Verifiers
	switch {
	case j.keyless:
		var err error
		if kv, err = j.keylessVerifiers(ctx); err != nil {
			return "", err
		}
	case j.signer == nil:
		return "", refuse(FastNoKey, "the hand-off is verified with the job's signing key, and there is none")
	}
	name := RunArtifactPrefix + j.ev.HeadSHA
	a, err := j.findRun(ctx, name)
	if err != nil {
		return "", err
	}
	zipData, err := artifact.Download(ctx, j.gh, j.owner, j.name, a.ID, MaxRunArtifactBytes)
	if err != nil {
		return "", refuse(FastAPI, "download %s: %v", name, err)
	}
	files, st, err := j.openRun(zipData, kv)
	if err != nil {
		return "", err
	}
	if err := j.bindRun(ctx, st); err != nil {
		return "", err
	}
	return name, j.installRun(st.Predicate.Run.RunID, files)
}

// listedArtifact is an artifact with the workflow run's repositories.
type listedArtifact struct {
	artifact.Artifact
	WorkflowRun struct {
		HeadSHA          string `json:"head_sha"`
		RepositoryID     int64  `json:"repository_id"`
		HeadRepositoryID int64  `json:"head_repository_id"`
	} `json:"workflow_run"`
}

// findRun lists artifact name and returns the newest unexpired one whose
// workflow run is for the head and ran in this repository (not a fork's
// head repository). The name is a hint; head_sha and the repository ids,
// which GitHub records, decide.
func (j *job) findRun(ctx context.Context, name string) (*listedArtifact, error) {
	q := url.Values{"name": {name}, "per_page": {"100"}}
	var list struct {
		Artifacts []*listedArtifact `json:"artifacts"`
	}
	if _, err := ghapi.Get(ctx, j.gh, fmt.Sprintf("repos/%s/%s/actions/artifacts?%s", url.PathEscape(j.owner), url.PathEscape(j.name), q.Encode()), &list); err != nil {
		return nil, refuse(FastAPI, "list artifacts %s: %v", name, err)
	}
	var best *listedArtifact
	fork := 0
	for _, a := range list.Artifacts {
		switch {
		case a == nil || a.Name != name || a.Expired || a.WorkflowRun.HeadSHA != j.ev.HeadSHA:
		case a.WorkflowRun.HeadRepositoryID != a.WorkflowRun.RepositoryID || a.WorkflowRun.RepositoryID == 0:
			fork++
		case best == nil || a.CreatedAt.After(best.CreatedAt) || a.CreatedAt.Equal(best.CreatedAt) && a.ID > best.ID:
			best = a
		}
	}
	switch {
	case best != nil:
		return best, nil
	case fork > 0:
		return nil, refuse(FastFork, "%d artifact(s) %s come from workflow runs of another head repository (a fork): not trusted", fork, name)
	}
	return nil, refuse(FastNotFound, "no unexpired artifact %s for head %s", name, short(j.ev.HeadSHA))
}

// openRun unpacks the hand-off, verifies its signature with the job's key,
// its statement and subjects, and replays the run from its files.
func (j *job) openRun(zipData []byte, kv *sigstore.Verifiers) (map[string][]byte, *RunStatement, error) {
	files, payload, wk, err := j.openSignedRun(zipData, kv)
	if err != nil {
		return nil, nil, err
	}
	st, err := checkStatement(payload, files)
	if err != nil {
		return nil, nil, err
	}
	if wk != nil {
		if err := checkKeylessTime(wk, st.Predicate.KeyID, st.Predicate.SignedAt, st.Predicate.Run.Repo); err != nil {
			return nil, nil, err
		}
	}
	return files, st, nil
}

// openSignedRun unpacks a signed run archive (the hand-off, the sharded
// run's plan), verifies its envelope with the job's key or (kv) keyless,
// and returns its files (without the signature) and the signed payload.
func (j *job) openSignedRun(zipData []byte, kv *sigstore.Verifiers) (map[string][]byte, []byte, envelope.WitnessedKey, error) {
	zfiles, err := artifact.Unzip(zipData, MaxRunArtifactBytes, MaxRunArtifactBytes)
	if err != nil {
		return nil, nil, nil, refuse(FastMalformed, "%v", err)
	}
	if len(zfiles) != 1 {
		return nil, nil, nil, refuse(FastMalformed, "the artifact holds %d files, want one %s", len(zfiles), runArchiveSuffix)
	}
	var tgz []byte
	for n, b := range zfiles {
		if !strings.HasSuffix(n, runArchiveSuffix) {
			return nil, nil, nil, refuse(FastMalformed, "the artifact holds %q, want a %s", n, runArchiveSuffix)
		}
		tgz = b
	}
	afiles, err := archive.Read(bytes.NewReader(tgz), archive.DefaultLimits)
	if err != nil {
		return nil, nil, nil, refuse(FastMalformed, "%v", err)
	}
	files := map[string][]byte{}
	for _, f := range afiles {
		files[f.Name] = f.Data
	}
	att := files[bundle.AttestationFile]
	delete(files, bundle.AttestationFile)
	material, hasMaterial := files[envelope.MaterialFile]
	delete(files, envelope.MaterialFile)
	var payload []byte
	var wk envelope.WitnessedKey
	if kv != nil {
		if payload, wk, err = openKeyless(att, material, kv); err != nil {
			return nil, nil, nil, err
		}
	} else {
		if hasMaterial {
			return nil, nil, nil, refuse(FastMalformed, "a key-signed hand-off carries %s", envelope.MaterialFile)
		}
		if payload, err = j.openKeyed(att); err != nil {
			return nil, nil, nil, err
		}
	}
	return files, payload, wk, nil
}

// openKeyed opens a hand-off envelope with the job's own Ed25519 key.
func (j *job) openKeyed(att []byte) ([]byte, error) {
	ks, ok := j.signer.(*key.Signer)
	if !ok {
		return nil, refuse(FastNoKey, "the signer is not an Ed25519 key")
	}
	vs := keyVerifiers{id: ks.KeyID(), pub: ks.Public}
	payload, _, err := envelope.Open(att, bundle.PayloadType, bundle.AttestationFile, vs)
	if err != nil {
		return nil, refuse(FastBadSignature, "%v", err)
	}
	return payload, nil
}

// checkStatement decodes the canonical statement, requires the hand-off
// predicate type and subjects that are exactly the files, and replays the
// files to the summary the statement asserts.
func checkStatement(payload []byte, files map[string][]byte) (*RunStatement, error) {
	var st RunStatement
	if err := strictjson.Decode(payload, &st); err != nil {
		return nil, refuse(FastMalformed, "statement: %v", err)
	}
	if c, err := canon.Marshal(&st); err != nil || !bytes.Equal(c, payload) {
		return nil, refuse(FastMalformed, "the statement is not its canonical JSON")
	}
	if st.Type != bundle.StatementType || st.PredicateType != RunPredicateType {
		return nil, refuse(FastMalformed, "statement type %q / predicate type %q, want %s", st.Type, st.PredicateType, RunPredicateType)
	}
	if err := checkSubjects(st.Subject, files); err != nil {
		return nil, err
	}
	if err := replayClaimed(files, replay.AwaitingApproval, st.Predicate.Run, st.Predicate.SignedAt); err != nil {
		return nil, err
	}
	return &st, nil
}

// checkSubjects requires subjects to be exactly the files.
func checkSubjects(subjects []bundle.Subject, files map[string][]byte) error {
	want := subjectsOf(files)
	if len(want) != len(subjects) {
		return refuse(FastMalformed, "%d subjects for %d files", len(subjects), len(want))
	}
	for i := range want {
		if want[i].Name != subjects[i].Name || want[i].Digest["sha256"] != subjects[i].Digest["sha256"] || len(subjects[i].Digest) != 1 {
			return refuse(FastMalformed, "subject %q does not match the files", subjects[i].Name)
		}
	}
	return nil
}

// replayClaimed replays the files and requires state want, the run
// summary the statement claims and a signed_at not before the run's last
// event.
func replayClaimed(files map[string][]byte, want replay.State, claimedRun bundle.RunSummary, signedAt string) error {
	mfs := fstest.MapFS{}
	for n, b := range files {
		mfs[n] = &fstest.MapFile{Data: b, Mode: 0o644}
	}
	rep, err := replay.AuditFS(mfs, replay.BlobsVerified())
	if err != nil {
		return refuse(FastAudit, "%v", err)
	}
	if rep.State != want {
		return refuse(FastNotAwaiting, "the run is %s, not %s", rep.State, want)
	}
	got, _ := canon.Marshal(bundle.Summarize(rep))
	claimed, _ := canon.Marshal(claimedRun)
	if !bytes.Equal(got, claimed) {
		return refuse(FastAudit, "the statement's run summary differs from the replay of the files")
	}
	at, err := time.Parse(time.RFC3339Nano, signedAt)
	if err != nil {
		return refuse(FastMalformed, "predicate signed_at: %v", err)
	}
	last, err := time.Parse(time.RFC3339Nano, rep.LastEventTime)
	if err != nil || at.Before(last) {
		return refuse(FastSigningTime, "signed_at %s is before the run's last event at %s", clipID(signedAt), rep.LastEventTime)
	}
	return nil
}

// bindRun requires the run to be for this PR's head, this repository, the
// base contract, and the commit the review job checked out.
func (j *job) bindRun(ctx context.Context, st *RunStatement) error {
	p, r := st.Predicate.PullRequest, st.Predicate.Run
	if p.Number != j.ev.PR || p.HeadSHA != j.ev.HeadSHA || p.BaseSHA != j.ev.BaseSHA {
		return refuse(FastOtherHead, "the run is for PR #%d head %s base %s, the review for #%d head %s base %s",
			p.Number, short(p.HeadSHA), short(p.BaseSHA), j.ev.PR, short(j.ev.HeadSHA), short(j.ev.BaseSHA))
	}
	return j.bindSummary(ctx, r, "the run used contract %s, the base contract is %s",
		"the run tested commit %s, the checkout is %s (the test merge moved with the base?)")
}

// bindSummary requires an imported run to be for this repository, the
// contract and profile this job resolved, and the commit it checked out;
// contractMsg and commitMsg word the refusals (claimed, then ours).
func (j *job) bindSummary(ctx context.Context, r bundle.RunSummary, contractMsg, commitMsg string) error {
	if r.Repo != j.repo {
		return refuse(FastOtherRepo, "the run is for repository %q, not %s", r.Repo, j.repo)
	}
	h, err := j.c.Hash()
	if err != nil {
		return refuse(FastOtherContract, "%v", err)
	}
	if r.ContractHash != h || r.Profile != j.c.Profile {
		return refuse(FastOtherContract, contractMsg, short(r.ContractHash), short(h))
	}
	commit, err := gitHead(ctx, j.ws)
	if err != nil || commit != r.Source.Commit {
		return refuse(FastCheckout, commitMsg, short(r.Source.Commit), short(commit))
	}
	return nil
}

// installRun writes the verified files as the run directory and opens it.
// An existing directory of that run must hold the same log.
func (j *job) installRun(id string, files map[string][]byte) error {
	if !run.ValidID(id) {
		return refuse(FastMalformed, "run id %q", id)
	}
	dir := run.NewStore(j.stateDir).Path(id)
	if have, err := readRunFile(dir, bundle.EventsFile); err == nil {
		if !bytes.Equal(have, files[bundle.EventsFile]) {
			return refuse(FastExists, "run %s is in the state directory with another log", id)
		}
	} else {
		for n, b := range files {
			p := filepath.Join(dir, filepath.FromSlash(n))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			if err := durable.CreateExclusive(p, b, 0o644); err != nil {
				return fmt.Errorf("import %s: %w", n, err)
			}
		}
	}
	r, err := run.Open(j.stateDir, id)
	if err != nil {
		return refuse(FastAudit, "open the imported run: %v", err)
	}
	j.r = r
	return nil
}

// gitHead returns the checkout's HEAD commit.
func gitHead(ctx context.Context, ws string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", "-c", "safe.directory="+ws, "-C", ws, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_NO_REPLACE_OBJECTS=1")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git rev-parse HEAD: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}
