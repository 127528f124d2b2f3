package evidence

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/proofgate/proofgate/internal/bounded"
	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/printable"
	"github.com/proofgate/proofgate/internal/strictjson"
	"github.com/proofgate/proofgate/kernel/actor"
	"github.com/proofgate/proofgate/kernel/replay"
)

// Bounds of a verdict's observation artifacts.
const (
	MaxArtifacts    = 16
	MaxArtifactSize = 64 << 20
)

// VerdictFile is the verdict record's name in a collection directory.
const VerdictFile = "verdict.json"

// VerdictError is a verdict the kernel refuses, with the typed reason.
type VerdictError struct {
	Reason string // limitation | invalid | observation
	// Limitation is the report's limitation when Reason is "limitation".
	Limitation string
	Detail     string
}

func (e *VerdictError) Error() string { return "verdict refused: " + e.Detail }

// Verdict refusal reasons.
const (
	VerdictLimitation  = "limitation"
	VerdictInvalid     = "invalid"
	VerdictObservation = "observation"
)

// ObservationInput is an observation to record, with the paths of its
// artifacts (copied into the collection).
type ObservationInput struct {
	Tool, Target string
	Artifacts    []string
}

// VerdictOptions describe a verdict on a collection.
type VerdictOptions struct {
	Verdict, Reason, Actor string
	Observation            *ObservationInput
	Now                    func() time.Time
}

// Loaded is a collection read back and verified against its report.
type Loaded struct {
	Dir    string
	Report Report
	Digest string
	Stdout []byte
	Stderr []byte
}

// Open reads the collection in dir: its one report, which must be the
// canonical JSON of a well-formed report, and its two streams, which must
// still match the report's digests.
func Open(dir string) (*Loaded, error) {
	id := filepath.Base(dir)
	if !replay.ValidCollectionID(id) {
		return nil, &ArtifactError{Path: dir, Reason: ArtifactInvalid, Detail: "not a collection directory (its name is not a collection id)"}
	}
	names, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	var reports []string
	for _, n := range names {
		if filepath.Base(n) != VerdictFile {
			reports = append(reports, n)
		}
	}
	if len(reports) != 1 {
		return nil, &ArtifactError{Path: dir, Reason: ArtifactMissing, Detail: fmt.Sprintf("%d reports, want exactly one <id>.json", len(reports))}
	}
	b, err := bounded.ReadFile(reports[0], 1<<20)
	if err != nil {
		return nil, &ArtifactError{Path: reports[0], Reason: ArtifactInvalid, Detail: err.Error()}
	}
	var rep Report
	if err := strictjson.Decode(b, &rep); err != nil {
		return nil, &ArtifactError{Path: reports[0], Reason: ArtifactInvalid, Detail: err.Error()}
	}
	if c, err := canon.Marshal(rep); err != nil || string(c) != string(b) {
		return nil, &ArtifactError{Path: reports[0], Reason: ArtifactTampered, Detail: "not the canonical JSON the collector wrote"}
	}
	if why := replay.CheckEvidenceReport(rep); why != "" || rep.Collection != id || filepath.Base(reports[0]) != rep.ID+".json" {
		return nil, &ArtifactError{Path: reports[0], Reason: ArtifactInvalid, Detail: "report does not describe this collection " + why}
	}
	l := &Loaded{Dir: dir, Report: rep, Digest: canon.SumBytes(b)}
	if l.Stdout, err = readStream(dir, rep.Stdout); err != nil {
		return nil, err
	}
	if l.Stderr, err = readStream(dir, rep.Stderr); err != nil {
		return nil, err
	}
	return l, nil
}

func readStream(dir string, s Stream) ([]byte, error) {
	p := filepath.Join(dir, s.File)
	b, err := bounded.ReadFile(p, MaxOutput)
	if err != nil {
		return nil, &ArtifactError{Path: p, Reason: ArtifactMissing, Detail: err.Error()}
	}
	if canon.SumBytes(b) != s.Digest || int64(len(b)) != s.Size {
		return nil, &ArtifactError{Path: p, Reason: ArtifactTampered, Detail: "does not match the report's digest"}
	}
	return b, nil
}

// Record checks and writes the verdict record of collection l
// (verdict.json, once: a second verdict is an *ArtifactError "exists").
// The artifacts of an observation are copied into the collection first
// and their bytes returned (for a run's blob store).
func Record(l *Loaded, o VerdictOptions) (*VerdictRecord, [][]byte, error) {
	if err := checkVerdictText(o); err != nil {
		return nil, nil, err
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	v := VerdictRecord{V: replay.EvidenceVersion, Collection: l.Report.Collection, ID: l.Report.ID, Report: l.Digest,
		Verdict: o.Verdict, Reason: o.Reason, Actor: o.Actor, Time: now().UTC().Format(time.RFC3339Nano), Limitation: l.Report.Limitation}
	if l.Report.Limitation != "" && o.Verdict != replay.VerdictUnableToCheck {
		return nil, nil, &VerdictError{Reason: VerdictLimitation, Limitation: l.Report.Limitation,
			Detail: fmt.Sprintf("the command hit its %s limit: the collection proves nothing about the claim, so only unable-to-check can be recorded", l.Report.Limitation)}
	}
	if _, err := os.Lstat(filepath.Join(l.Dir, VerdictFile)); err == nil {
		return nil, nil, &ArtifactError{Path: filepath.Join(l.Dir, VerdictFile), Reason: ArtifactExists, Detail: "this collection already has a verdict"}
	}
	var blobs [][]byte
	if o.Observation != nil {
		obs, bs, err := copyObservation(l.Dir, *o.Observation)
		if err != nil {
			return nil, nil, err
		}
		v.Observations, blobs = []Observation{obs}, bs
	}
	if why := replay.CheckVerdict(l.Report, v); why != "" {
		return nil, nil, &VerdictError{Reason: VerdictInvalid, Detail: why}
	}
	b, err := canon.Marshal(v)
	if err != nil {
		return nil, nil, err
	}
	if err := writeExclusive(filepath.Join(l.Dir, VerdictFile), b); err != nil {
		return nil, nil, err
	}
	return &v, blobs, nil
}

func checkVerdictText(o VerdictOptions) error {
	switch {
	case !replay.ValidVerdict(o.Verdict):
		return &VerdictError{Reason: VerdictInvalid, Detail: fmt.Sprintf("--verdict %q: want confirmed, dubious, refuted or unable-to-check", printable.Escape(o.Verdict))}
	case strings.TrimSpace(o.Reason) == "":
		return &VerdictError{Reason: VerdictInvalid, Detail: "--reason is required"}
	case strings.TrimSpace(o.Actor) == "":
		return &VerdictError{Reason: VerdictInvalid, Detail: "--actor is required"}
	}
	if err := errors.Join(actor.Check("actor", o.Actor), printable.CheckText("reason", o.Reason)); err != nil {
		return &VerdictError{Reason: VerdictInvalid, Detail: err.Error()}
	}
	return nil
}

// ParseObservation parses "tool=NAME@TARGET".
func ParseObservation(s string) (tool, target string, err error) {
	rest, ok := strings.CutPrefix(s, "tool=")
	name, tgt, ok2 := strings.Cut(rest, "@")
	if !ok || !ok2 || !replay.ValidEvidenceID(name) || !replay.ValidTarget(tgt) {
		return "", "", &VerdictError{Reason: VerdictObservation, Detail: fmt.Sprintf("--observation %q: want tool=NAME@TARGET (NAME an id, TARGET without spaces)", printable.Escape(s))}
	}
	return name, tgt, nil
}

// copyObservation copies the observation's artifacts into
// <dir>/observations/, exclusively, and returns the observation.
func copyObservation(dir string, in ObservationInput) (Observation, [][]byte, error) {
	if in.Tool == "" || in.Target == "" || len(in.Artifacts) == 0 {
		return Observation{}, nil, &VerdictError{Reason: VerdictObservation, Detail: "an observation is recorded only with at least one durable artifact (--artifact FILE)"}
	}
	if len(in.Artifacts) > MaxArtifacts {
		return Observation{}, nil, &VerdictError{Reason: VerdictObservation, Detail: fmt.Sprintf("at most %d artifacts", MaxArtifacts)}
	}
	od := filepath.Join(dir, "observations")
	if err := os.Mkdir(od, 0o755); err != nil {
		return Observation{}, nil, &ArtifactError{Path: od, Reason: ArtifactExists, Detail: err.Error()}
	}
	obs := Observation{Tool: in.Tool, Target: in.Target}
	var blobs [][]byte
	for i, p := range in.Artifacts {
		b, err := readArtifact(p)
		if err != nil {
			return Observation{}, nil, err
		}
		name := fmt.Sprintf("%02d-%s", i+1, safeName(filepath.Base(p)))
		if err := writeExclusive(filepath.Join(od, name), b); err != nil {
			return Observation{}, nil, err
		}
		obs.Artifacts = append(obs.Artifacts, replay.ObservationArtifact{File: "observations/" + name, Digest: canon.SumBytes(b), Size: int64(len(b))})
		blobs = append(blobs, b)
	}
	return obs, blobs, nil
}

// readArtifact reads a regular, non-empty file of at most MaxArtifactSize.
func readArtifact(p string) ([]byte, error) {
	f, err := bounded.Open(p)
	var nr *bounded.NotRegularError
	switch {
	case errors.As(err, &nr):
		return nil, &ArtifactError{Path: p, Reason: ArtifactInvalid, Detail: nr.Error()}
	case err != nil:
		return nil, &ArtifactError{Path: p, Reason: ArtifactMissing, Detail: unwrapPath(err).Error()}
	}
	defer f.Close()
	b, err := bounded.ReadAll(io.Reader(f), MaxArtifactSize)
	if err != nil {
		return nil, &ArtifactError{Path: p, Reason: ArtifactInvalid, Detail: err.Error()}
	}
	if len(b) == 0 {
		return nil, &ArtifactError{Path: p, Reason: ArtifactInvalid, Detail: "empty: an empty file is no evidence"}
	}
	return b, nil
}

// safeName keeps [A-Za-z0-9._-] of a file name, at most 64 bytes.
func safeName(s string) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= 64 {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if n := b.String(); n != "" && n != "." && n != ".." {
		return n
	}
	return "artifact"
}
