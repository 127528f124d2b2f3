package evidence

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"time"

	"github.com/proofgate/proofgate/internal/bounded"
	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/strictjson"
	"github.com/proofgate/proofgate/kernel/replay"
)

// Bounds of an allowlist.
const (
	MaxAllowlistSize = 1 << 20
	MaxEntries       = 256
	MaxArgs          = 256
	MaxEnv           = 256
	MaxTimeout       = 300 * time.Second
	MaxOutput        = 1 << 20
)

// EnvAllowlist is the environment variable naming the allowlist file.
const EnvAllowlist = "PROOFGATE_EVIDENCE_ALLOWLIST"

// Reason is the typed cause of an *AllowlistError.
type Reason string

// Allowlist refusals.
const (
	ReasonNoAllowlist  Reason = "no-allowlist"      // no path given
	ReasonInsideRepo   Reason = "inside-repository" // the file resolves inside the repository
	ReasonNotRegular   Reason = "not-regular"       // not a regular file
	ReasonOwner        Reason = "owner"             // owned by another user than the invoking one or root
	ReasonWritable     Reason = "group-or-world-writable"
	ReasonRead         Reason = "read"    // cannot be read
	ReasonDecode       Reason = "decode"  // not strict JSON of the format (unknown field, ...)
	ReasonInvalid      Reason = "invalid" // a value out of its bounds (field named)
	ReasonUnknownID    Reason = "unknown-id"
	ReasonExtraArgs    Reason = "extra-arguments"
	ReasonUnsupportedV Reason = "unsupported-version"
)

// AllowlistError is an allowlist (or a use of one) that is refused.
type AllowlistError struct {
	Path   string
	Reason Reason
	Field  string // the JSON path concerned, when one
	Detail string
}

func (e *AllowlistError) Error() string {
	s := "evidence allowlist"
	if e.Path != "" {
		s += " " + e.Path
	}
	s += ": " + string(e.Reason)
	if e.Field != "" {
		s += ": " + e.Field
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Entry is one allowlisted command.
type Entry struct {
	ID          string
	Argv        []string
	Cwd         string
	Env         map[string]string
	Timeout     time.Duration
	OutputLimit int64
	// Hash is the digest of the entry's canonical JSON (as in the file).
	Hash string
}

// Allowlist is a loaded allowlist.
type Allowlist struct {
	Path    string // the resolved path
	Digest  string // SHA-256 of the file's bytes
	Entries map[string]Entry
}

type rawAllowlist struct {
	Version  int                 `json:"version"`
	Commands map[string]rawEntry `json:"commands"`
}

type rawEntry struct {
	Argv    []string          `json:"argv"`
	Cwd     *string           `json:"cwd"`
	Env     map[string]string `json:"env"`
	Timeout *int              `json:"timeout_seconds"`
	Output  *int64            `json:"output_limit_bytes"`
}

// Load reads the allowlist at path, refusing one that resolves inside
// repoDir (when repoDir is not ""), one whose owner or mode lets someone
// else change it, and any content that is not the strict format.
func Load(path, repoDir string) (*Allowlist, error) {
	if path == "" {
		return nil, &AllowlistError{Reason: ReasonNoAllowlist, Detail: "give --allowlist FILE or set " + EnvAllowlist}
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, &AllowlistError{Path: path, Reason: ReasonRead, Detail: unwrapPath(err).Error()}
	}
	if real, err = filepath.Abs(real); err != nil {
		return nil, &AllowlistError{Path: path, Reason: ReasonRead, Detail: err.Error()}
	}
	if oerr := outside(real, repoDir); oerr != nil {
		oerr.Path = path
		return nil, oerr
	}
	b, rerr := readChecked(real)
	if rerr != nil {
		rerr.Path = path
		return nil, rerr
	}
	a, aerr := parse(b)
	if aerr != nil {
		aerr.Path = path
		return nil, aerr
	}
	a.Path, a.Digest = real, canon.SumBytes(b)
	return a, nil
}

// outside refuses real when it is inside repoDir (both resolved).
func outside(real, repoDir string) *AllowlistError {
	if repoDir == "" {
		return nil
	}
	repo, err := filepath.EvalSymlinks(repoDir)
	if err != nil {
		return &AllowlistError{Reason: ReasonRead, Detail: "repository " + repoDir + ": " + unwrapPath(err).Error()}
	}
	if repo, err = filepath.Abs(repo); err != nil {
		return &AllowlistError{Reason: ReasonRead, Detail: err.Error()}
	}
	if rel, err := filepath.Rel(repo, real); err == nil && filepath.IsLocal(rel) {
		return &AllowlistError{Reason: ReasonInsideRepo, Detail: fmt.Sprintf("resolves to %s, inside the repository %s: a pull request could edit it; keep it in a location only you control", real, repo)}
	}
	return nil
}

// readChecked opens real, checks what it is and who may write it on the
// open file (no window between the check and the read), and reads it.
func readChecked(real string) ([]byte, *AllowlistError) {
	f, err := bounded.Open(real)
	var nr *bounded.NotRegularError
	switch {
	case errors.As(err, &nr):
		return nil, &AllowlistError{Reason: ReasonNotRegular, Detail: nr.Error()}
	case err != nil:
		return nil, &AllowlistError{Reason: ReasonRead, Detail: unwrapPath(err).Error()}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, &AllowlistError{Reason: ReasonRead, Detail: err.Error()}
	}
	if err := checkOwner(fi); err != nil {
		return nil, err
	}
	b, err := bounded.ReadAll(f, MaxAllowlistSize)
	if err != nil {
		return nil, &AllowlistError{Reason: ReasonRead, Detail: err.Error()}
	}
	return b, nil
}

func parse(b []byte) (*Allowlist, *AllowlistError) {
	var raw rawAllowlist
	if err := strictjson.Decode(b, &raw); err != nil {
		field := ""
		var se *strictjson.Error
		if errors.As(err, &se) {
			field = se.Path
		}
		return nil, &AllowlistError{Reason: ReasonDecode, Field: field, Detail: err.Error()}
	}
	if raw.Version != 1 {
		return nil, &AllowlistError{Reason: ReasonUnsupportedV, Field: "version", Detail: fmt.Sprintf("%d (want 1)", raw.Version)}
	}
	if len(raw.Commands) > MaxEntries {
		return nil, &AllowlistError{Reason: ReasonInvalid, Field: "commands", Detail: fmt.Sprintf("%d commands, at most %d", len(raw.Commands), MaxEntries)}
	}
	a := &Allowlist{Entries: map[string]Entry{}}
	// In id order: the refusal of a file with several bad entries names
	// the same one every time.
	for _, id := range slices.Sorted(maps.Keys(raw.Commands)) {
		e, err := entry(id, raw.Commands[id])
		if err != nil {
			return nil, err
		}
		a.Entries[id] = e
	}
	return a, nil
}

func invalid(field, format string, args ...any) *AllowlistError {
	return &AllowlistError{Reason: ReasonInvalid, Field: field, Detail: fmt.Sprintf(format, args...)}
}

// entry validates one command.
func entry(id string, re rawEntry) (Entry, *AllowlistError) {
	p := "commands." + id
	switch {
	case !replay.ValidEvidenceID(id):
		return Entry{}, invalid(p, "id: want [a-z0-9][a-z0-9._-]{0,62}, not \"verdict\"")
	case len(re.Argv) == 0 || len(re.Argv) > MaxArgs:
		return Entry{}, invalid(p+".argv", "want 1 to %d arguments", MaxArgs)
	case !filepath.IsAbs(re.Argv[0]):
		return Entry{}, invalid(p+".argv[0]", "%q is not an absolute path (no PATH search)", re.Argv[0])
	case re.Cwd == nil:
		return Entry{}, invalid(p+".cwd", "is required")
	case !filepath.IsAbs(*re.Cwd):
		return Entry{}, invalid(p+".cwd", "%q is not an absolute path", *re.Cwd)
	case re.Env == nil:
		return Entry{}, invalid(p+".env", "is required (an explicit environment; {} for none)")
	case len(re.Env) > MaxEnv:
		return Entry{}, invalid(p+".env", "more than %d variables", MaxEnv)
	case re.Timeout == nil || *re.Timeout < 1 || *re.Timeout > int(MaxTimeout/time.Second): // compared in seconds: a product could overflow
		return Entry{}, invalid(p+".timeout_seconds", "want 1 to %d", int(MaxTimeout/time.Second))
	case re.Output == nil || *re.Output < 1 || *re.Output > MaxOutput:
		return Entry{}, invalid(p+".output_limit_bytes", "want 1 to %d (1 MiB)", MaxOutput)
	}
	for i, a := range re.Argv {
		if slices.Contains([]byte(a), 0) {
			return Entry{}, invalid(fmt.Sprintf("%s.argv[%d]", p, i), "contains a NUL byte")
		}
	}
	h, err := canon.Digest(re)
	if err != nil {
		return Entry{}, invalid(p, "%v", err)
	}
	return Entry{ID: id, Argv: slices.Clone(re.Argv), Cwd: filepath.Clean(*re.Cwd), Env: re.Env,
		Timeout: time.Duration(*re.Timeout) * time.Second, OutputLimit: *re.Output, Hash: h}, nil
}

// Lookup returns the entry id, refusing an unknown id and any appended
// argument: an allowlisted command runs exactly as reviewed.
func (a *Allowlist) Lookup(id string, extra []string) (Entry, error) {
	if len(extra) > 0 {
		return Entry{}, &AllowlistError{Path: a.Path, Reason: ReasonExtraArgs, Detail: fmt.Sprintf("%d argument(s) after the id: an allowlisted command runs exactly as reviewed, with no appended arguments", len(extra))}
	}
	e, ok := a.Entries[id]
	if !ok {
		return Entry{}, &AllowlistError{Path: a.Path, Reason: ReasonUnknownID, Detail: fmt.Sprintf("no command %q", id)}
	}
	return e, nil
}

// IDs lists the allowlisted ids, sorted.
func (a *Allowlist) IDs() []string {
	ids := make([]string, 0, len(a.Entries))
	for id := range a.Entries {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
