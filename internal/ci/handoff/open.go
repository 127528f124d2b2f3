package handoff

import (
	"bytes"
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
	"github.com/proofgate/proofgate/internal/printable"
	"github.com/proofgate/proofgate/internal/strictjson"
	"github.com/proofgate/proofgate/kernel/replay"
)

// Open unpacks a hand-off, verifies its signature with the job's own key
// (signer) or, when kv is not nil, keyless, its statement and subjects, and
// replays the run from its files.
func Open(zipData []byte, signer envelope.Signer, kv *sigstore.Verifiers) (map[string][]byte, *Statement, error) {
	files, payload, wk, err := OpenSigned(zipData, signer, kv)
	if err != nil {
		return nil, nil, err
	}
	st, err := checkStatement(payload, files)
	if err != nil {
		return nil, nil, err
	}
	if wk != nil {
		if err := CheckKeylessTime(wk, st.Predicate.KeyID, st.Predicate.SignedAt, st.Predicate.Run.Repo); err != nil {
			return nil, nil, err
		}
	}
	return files, st, nil
}

// OpenSigned unpacks a signed run archive (the hand-off, the sharded run's
// plan), verifies its envelope with the job's own key (signer) or, when kv
// is not nil, keyless, and returns its files (without the signature), the
// signed payload and, keyless, the key the material vouches for.
func OpenSigned(zipData []byte, signer envelope.Signer, kv *sigstore.Verifiers) (map[string][]byte, []byte, envelope.WitnessedKey, error) {
	files, err := unpack(zipData)
	if err != nil {
		return nil, nil, nil, err
	}
	att := files[bundle.AttestationFile]
	delete(files, bundle.AttestationFile)
	material, hasMaterial := files[envelope.MaterialFile]
	delete(files, envelope.MaterialFile)
	if kv != nil {
		payload, wk, err := openKeyless(att, material, kv)
		if err != nil {
			return nil, nil, nil, err
		}
		return files, payload, wk, nil
	}
	if hasMaterial {
		return nil, nil, nil, Refuse(Malformed, "a key-signed hand-off carries %s", envelope.MaterialFile)
	}
	payload, err := openKeyed(att, signer)
	if err != nil {
		return nil, nil, nil, err
	}
	return files, payload, nil, nil
}

// unpack reads the artifact's zip, which must hold one run archive, and
// returns the archive's files.
func unpack(zipData []byte) (map[string][]byte, error) {
	zfiles, err := artifact.Unzip(zipData, MaxArtifactBytes, MaxArtifactBytes)
	if err != nil {
		return nil, Refuse(Malformed, "%v", err)
	}
	if len(zfiles) != 1 {
		return nil, Refuse(Malformed, "the artifact holds %d files, want one %s", len(zfiles), ArchiveSuffix)
	}
	var tgz []byte
	for n, b := range zfiles {
		if !strings.HasSuffix(n, ArchiveSuffix) {
			return nil, Refuse(Malformed, "the artifact holds %q, want a %s", n, ArchiveSuffix)
		}
		tgz = b
	}
	afiles, err := archive.Read(bytes.NewReader(tgz), archive.DefaultLimits)
	if err != nil {
		return nil, Refuse(Malformed, "%v", err)
	}
	files := map[string][]byte{}
	for _, f := range afiles {
		files[f.Name] = f.Data
	}
	return files, nil
}

// openKeyed opens a hand-off envelope with the job's own Ed25519 key.
func openKeyed(att []byte, signer envelope.Signer) ([]byte, error) {
	ks, ok := signer.(*key.Signer)
	if !ok {
		return nil, Refuse(NoKey, "the signer is not an Ed25519 key")
	}
	vs := KeyVerifiers{ID: ks.KeyID(), Pub: ks.Public}
	payload, _, err := envelope.Open(att, bundle.PayloadType, bundle.AttestationFile, vs)
	if err != nil {
		return nil, Refuse(BadSignature, "%v", err)
	}
	return payload, nil
}

// checkStatement decodes the canonical statement, requires the hand-off
// predicate type and subjects that are exactly the files, and replays the
// files to the summary the statement asserts.
func checkStatement(payload []byte, files map[string][]byte) (*Statement, error) {
	var st Statement
	if err := strictjson.Decode(payload, &st); err != nil {
		return nil, Refuse(Malformed, "statement: %v", err)
	}
	if c, err := canon.Marshal(&st); err != nil || !bytes.Equal(c, payload) {
		return nil, Refuse(Malformed, "the statement is not its canonical JSON")
	}
	if st.Type != bundle.StatementType || st.PredicateType != PredicateType {
		return nil, Refuse(Malformed, "statement type %q / predicate type %q, want %s", st.Type, st.PredicateType, PredicateType)
	}
	if err := CheckSubjects(st.Subject, files); err != nil {
		return nil, err
	}
	if err := ReplayClaimed(files, replay.AwaitingApproval, st.Predicate.Run, st.Predicate.SignedAt); err != nil {
		return nil, err
	}
	return &st, nil
}

// CheckSubjects requires subjects to be exactly the files.
func CheckSubjects(subjects []bundle.Subject, files map[string][]byte) error {
	want := subjectsOf(files)
	if len(want) != len(subjects) {
		return Refuse(Malformed, "%d subjects for %d files", len(subjects), len(want))
	}
	for i := range want {
		if want[i].Name != subjects[i].Name || want[i].Digest["sha256"] != subjects[i].Digest["sha256"] || len(subjects[i].Digest) != 1 {
			return Refuse(Malformed, "subject %q does not match the files", subjects[i].Name)
		}
	}
	return nil
}

// ReplayClaimed replays the files and requires state want, the run
// summary the statement claims and a signed_at not before the run's last
// event.
func ReplayClaimed(files map[string][]byte, want replay.State, claimedRun bundle.RunSummary, signedAt string) error {
	mfs := fstest.MapFS{}
	for n, b := range files {
		mfs[n] = &fstest.MapFile{Data: b, Mode: 0o644}
	}
	rep, err := replay.AuditFS(mfs, replay.BlobsVerified())
	if err != nil {
		return Refuse(Audit, "%v", err)
	}
	if rep.State != want {
		return Refuse(NotAwaiting, "the run is %s, not %s", rep.State, want)
	}
	got, _ := canon.Marshal(bundle.Summarize(rep))
	claimed, _ := canon.Marshal(claimedRun)
	if !bytes.Equal(got, claimed) {
		return Refuse(Audit, "the statement's run summary differs from the replay of the files")
	}
	at, err := time.Parse(time.RFC3339Nano, signedAt)
	if err != nil {
		return Refuse(Malformed, "predicate signed_at: %v", err)
	}
	last, err := time.Parse(time.RFC3339Nano, rep.LastEventTime)
	if err != nil || at.Before(last) {
		return Refuse(SigningTime, "signed_at %s is before the run's last event at %s", printable.ClipQuoted(signedAt), rep.LastEventTime)
	}
	return nil
}
