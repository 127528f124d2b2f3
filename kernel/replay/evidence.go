package replay

import (
	"regexp"

	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/kernel/eventlog"
)

// Runtime evidence for a claim (issue 16 item 1; docs/SPEC.md "Runtime
// evidence"): the wire shapes of a collection report and of a verdict
// record, which internal/evidence writes as files and, for a run, as the
// data of evidence.collected and evidence.verdict. Both events change no
// state; the replay checks their shape, that a verdict names a collection
// recorded earlier in the same log, and that a collection whose command
// hit a limitation gets no verdict but unable-to-check.

// Event types of runtime evidence.
const (
	TypeEvidenceCollected = "evidence.collected"
	TypeEvidenceVerdict   = "evidence.verdict"
)

// EvidenceVersion is the version of the report and verdict formats.
const EvidenceVersion = 1

// EvidenceReport is a collection report (<id>.json): what one run of an
// allowlisted command observed. Exit 0 means the process completed, never
// that the claim is true.
type EvidenceReport struct {
	V          int    `json:"v"`
	Collection string `json:"collection"`
	ID         string `json:"id"`
	Claim      string `json:"claim"`
	// Allowlist is the SHA-256 of the allowlist file's bytes; EntryHash
	// the digest of the entry's canonical JSON; ArgvHash of its argv's.
	Allowlist        string   `json:"allowlist"`
	EntryHash        string   `json:"entry_hash"`
	ArgvHash         string   `json:"argv_hash"`
	Argv             []string `json:"argv"`
	Cwd              string   `json:"cwd"`
	Env              []string `json:"env"` // the names of the declared variables, sorted
	TimeoutSeconds   int      `json:"timeout_seconds"`
	OutputLimitBytes int64    `json:"output_limit_bytes"`
	Started          string   `json:"started"`
	Finished         string   `json:"finished"`
	DurationMS       int64    `json:"duration_ms"`
	ExitCode         int      `json:"exit_code"` // -1 when the process did not exit by itself
	// Outcome is "exited" or the limitation that stopped the command;
	// Limitation repeats the latter ("" for exited): timeout,
	// output-limit, spawn-failure.
	Outcome    string         `json:"outcome"`
	Limitation string         `json:"limitation,omitempty"`
	Detail     string         `json:"detail,omitempty"`
	Stdout     EvidenceStream `json:"stdout"`
	Stderr     EvidenceStream `json:"stderr"`
}

// EvidenceStream is one captured stream's artifact.
type EvidenceStream struct {
	File      string `json:"file"`
	Digest    string `json:"digest"`
	Size      int64  `json:"size"`
	Truncated bool   `json:"truncated,omitempty"`
}

// Evidence outcomes and limitations.
const (
	EvidenceExited       = "exited"
	EvidenceTimeout      = "timeout"
	EvidenceOutputLimit  = "output-limit"
	EvidenceSpawnFailure = "spawn-failure"
)

// Verdicts.
const (
	VerdictConfirmed     = "confirmed"
	VerdictDubious       = "dubious"
	VerdictRefuted       = "refuted"
	VerdictUnableToCheck = "unable-to-check"
)

// ValidVerdict reports whether v is one of the four verdicts.
func ValidVerdict(v string) bool {
	switch v {
	case VerdictConfirmed, VerdictDubious, VerdictRefuted, VerdictUnableToCheck:
		return true
	}
	return false
}

// EvidenceVerdict is a verdict record (verdict.json, and the data of
// evidence.verdict): a human's (or an agent's) judgement of the claim a
// collection was made for.
type EvidenceVerdict struct {
	V          int    `json:"v"`
	Collection string `json:"collection"`
	ID         string `json:"id"`
	Report     string `json:"report"` // the digest of <id>.json
	Verdict    string `json:"verdict"`
	Reason     string `json:"reason"`
	Actor      string `json:"actor"`
	Time       string `json:"time"`
	// Limitation is the report's limitation that forced unable-to-check.
	Limitation   string        `json:"limitation,omitempty"`
	Observations []Observation `json:"observations,omitempty"`
}

// Observation is what an approved optional tool observed about TARGET,
// recorded only with at least one durable artifact.
type Observation struct {
	Tool      string                `json:"tool"`
	Target    string                `json:"target"`
	Artifacts []ObservationArtifact `json:"artifacts"`
}

// ObservationArtifact is a file copied into the collection.
type ObservationArtifact struct {
	File   string `json:"file"`
	Digest string `json:"digest"`
	Size   int64  `json:"size"`
}

// EvidenceCollectedData is the data of evidence.collected: the report and
// its digest (the SHA-256 of its canonical JSON, which is <id>.json's
// exact bytes).
type EvidenceCollectedData struct {
	Digest string         `json:"digest"`
	Report EvidenceReport `json:"report"`
}

// collectionRE is the shape of a collection id.
var collectionRE = regexp.MustCompile(`^[0-9]{8}T[0-9]{6}\.[0-9]{3}Z-[0-9a-f]{8}$`)

// evidenceIDRE is the shape of an allowlist id (a file name part).
var evidenceIDRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// ValidCollectionID reports whether c has the shape of a collection id.
func ValidCollectionID(c string) bool { return collectionRE.MatchString(c) }

// ValidEvidenceID reports whether id has the shape of an allowlist id.
func ValidEvidenceID(id string) bool { return evidenceIDRE.MatchString(id) && id != "verdict" }

// CheckEvidenceReport checks a report's shape; "" when it is well formed.
func CheckEvidenceReport(r EvidenceReport) string {
	switch {
	case r.V != EvidenceVersion:
		return "unsupported version"
	case !ValidCollectionID(r.Collection):
		return "collection id " + clipText(r.Collection)
	case !ValidEvidenceID(r.ID):
		return "id " + clipText(r.ID)
	case !digestRE.MatchString(r.ArgvHash) || !digestRE.MatchString(r.EntryHash) || !digestRE.MatchString(r.Allowlist):
		return "a hash is not sha256:<64 hex>"
	case !digestRE.MatchString(r.Stdout.Digest) || !digestRE.MatchString(r.Stderr.Digest):
		return "a stream digest is not sha256:<64 hex>"
	}
	if d, err := canon.Digest(r.Argv); err != nil || d != r.ArgvHash {
		return "argv_hash is not the digest of argv"
	}
	switch r.Outcome {
	case EvidenceExited:
		if r.Limitation != "" {
			return "an exited command with a limitation"
		}
	case EvidenceTimeout, EvidenceOutputLimit, EvidenceSpawnFailure:
		if r.Limitation != r.Outcome {
			return "limitation is not the outcome"
		}
	default:
		return "outcome " + clipText(r.Outcome)
	}
	if (r.Stdout.Truncated || r.Stderr.Truncated) && r.Limitation == "" {
		return "a truncated stream without a limitation"
	}
	return ""
}

// CheckVerdict checks a verdict against the report it judges; "" when it
// may be recorded. A report with a limitation admits only unable-to-check.
func CheckVerdict(rep EvidenceReport, v EvidenceVerdict) string {
	switch {
	case !ValidVerdict(v.Verdict):
		return "verdict " + clipText(v.Verdict)
	case v.Actor == "":
		return "a verdict without actor"
	case v.Reason == "":
		return "a verdict without reason"
	case v.Collection != rep.Collection || v.ID != rep.ID:
		return "the verdict names another collection"
	case rep.Limitation != "" && v.Verdict != VerdictUnableToCheck:
		return "the command hit its " + rep.Limitation + " limit: only unable-to-check can be recorded"
	case v.Limitation != rep.Limitation:
		return "the verdict's limitation is not the report's"
	}
	for _, o := range v.Observations {
		if o.Tool == "" || o.Target == "" || len(o.Artifacts) == 0 {
			return "an observation needs a tool, a target and at least one durable artifact"
		}
		for _, a := range o.Artifacts {
			if !digestRE.MatchString(a.Digest) {
				return "an observation artifact digest is not sha256:<64 hex>"
			}
		}
	}
	return ""
}

func (f *Folder) applyEvidenceCollected(line int, _ eventlog.Event, d EvidenceCollectedData) error {
	if why := CheckEvidenceReport(d.Report); why != "" {
		return bad(line, ReasonBadEvent, "evidence.collected: %s", why)
	}
	if got, err := canon.Digest(d.Report); err != nil || got != d.Digest {
		return bad(line, ReasonBadEvent, "evidence.collected: digest %s is not the report's", clipText(d.Digest))
	}
	if f.collections == nil {
		f.collections = map[string]EvidenceCollectedData{}
	}
	if _, dup := f.collections[d.Report.Collection]; dup {
		return bad(line, ReasonBadEvent, "evidence.collected: collection %s recorded twice", d.Report.Collection)
	}
	f.collections[d.Report.Collection] = d
	f.blobs[d.Report.Stdout.Digest], f.blobs[d.Report.Stderr.Digest] = true, true
	return nil
}

func (f *Folder) applyEvidenceVerdict(line int, _ eventlog.Event, d EvidenceVerdict) error {
	c, ok := f.collections[d.Collection]
	if !ok {
		return bad(line, ReasonBadEvent, "evidence.verdict: collection %s is not recorded in this log", clipText(d.Collection))
	}
	if d.Report != c.Digest {
		return bad(line, ReasonBadEvent, "evidence.verdict: report %s is not the recorded %s", clipText(d.Report), c.Digest)
	}
	if why := CheckVerdict(c.Report, d); why != "" {
		return bad(line, ReasonBadEvent, "evidence.verdict: %s", why)
	}
	if f.verdicts[d.Collection] {
		return bad(line, ReasonBadEvent, "evidence.verdict: collection %s already has a verdict", d.Collection)
	}
	if f.verdicts == nil {
		f.verdicts = map[string]bool{}
	}
	f.verdicts[d.Collection] = true
	for _, o := range d.Observations {
		for _, a := range o.Artifacts {
			f.blobs[a.Digest] = true
		}
	}
	return nil
}

// Collection is the evidence.collected recorded for collection id, if any.
func (f *Folder) Collection(id string) (EvidenceCollectedData, bool) {
	d, ok := f.collections[id]
	return d, ok
}
