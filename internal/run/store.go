package run

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"time"

	"github.com/proofgate/proofgate/kernel/exit"

	"github.com/proofgate/proofgate/internal/retention"
	"github.com/proofgate/proofgate/kernel/replay"
)

// Store is the directory holding one repository's runs: <state>/runs.
type Store struct{ Dir string }

// NewStore returns the run store under the state directory.
func NewStore(stateDir string) *Store { return &Store{Dir: filepath.Join(stateDir, "runs")} }

// Files of a run directory.
const (
	EventsFile   = replay.EventsFile
	RunFile      = replay.RunFile
	ContractFile = replay.ContractFile
	LockFile     = "events.lock"
	BlobDir      = replay.BlobDir
	// ProcDir holds the process records of checks that run as host
	// processes (internal/lock): what a dead harness may have left running.
	ProcDir = "procs"
)

var idRE = regexp.MustCompile(`^[0-9]{8}T[0-9]{6}\.[0-9]{3}Z-[0-9a-f]{8}$`)

// NewID returns a run id that sorts by creation time: the UTC time to the
// millisecond and a random suffix, e.g. 20261129T210005.123Z-1a2b3c4d.
func NewID(now time.Time) string {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	return now.UTC().Format("20060102T150405.000Z") + "-" + hex.EncodeToString(b[:])
}

// ValidID reports whether id is a well-formed run id.
func ValidID(id string) bool { return idRE.MatchString(id) }

// ErrNoRuns is returned by Resolve("latest") on an empty store; its class
// is exit.Usage.
var ErrNoRuns error = exit.Sentinel(exit.Usage, "no runs yet")

// NotFoundError names a run that does not exist.
type NotFoundError struct{ ID string }

func (e *NotFoundError) Error() string { return fmt.Sprintf("run %q not found", e.ID) }

// Is reports whether target is exit.Usage, the class of an input the caller can correct.
func (e *NotFoundError) Is(target error) bool { return target == exit.Usage }

// InvalidIDError is a RUN argument that is neither a run id nor "latest"
// (bad input: it never names a path).
type InvalidIDError struct{ ID string }

func (e *InvalidIDError) Error() string {
	return fmt.Sprintf("%q is not a run id (want e.g. 20261129T210005.123Z-1a2b3c4d, or latest)", e.ID)
}

// Is reports whether target is exit.Usage, the class of an input the caller can correct.
func (e *InvalidIDError) Is(target error) bool { return target == exit.Usage }

// List returns the run ids, oldest first.
func (s *Store) List() ([]string, error) {
	ents, err := os.ReadDir(s.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("run store: %w", err)
	}
	var ids []string
	for _, e := range ents {
		if e.IsDir() && ValidID(e.Name()) {
			ids = append(ids, e.Name())
		}
	}
	sort.Strings(ids)
	return ids, nil
}

// Resolve maps "latest" to the newest run id and checks that id exists.
func (s *Store) Resolve(id string) (string, error) {
	if id == "latest" {
		ids, err := s.List()
		if err != nil {
			return "", err
		}
		if len(ids) == 0 {
			return "", ErrNoRuns
		}
		return ids[len(ids)-1], nil
	}
	if !ValidID(id) {
		return "", &InvalidIDError{ID: id}
	}
	if _, err := os.Stat(filepath.Join(s.Dir, id, EventsFile)); err != nil && !retention.IsArchived(s.Path(id)) {
		return "", &NotFoundError{ID: id}
	}
	return id, nil
}

// Path returns the directory of run id.
func (s *Store) Path(id string) string { return filepath.Join(s.Dir, id) }

// Holds reports whether path names the run store or something inside it
// (symlinks resolved as far as the path exists), where nothing but the
// kernel may write: an output file there could replace a run's evidence.
func (s *Store) Holds(path string) bool {
	root, err := realPath(s.Dir)
	if err != nil {
		return false
	}
	p, err := realPath(path)
	if err != nil {
		return true // unresolvable: refuse rather than guess
	}
	rel, err := filepath.Rel(root, p)
	return err == nil && (rel == "." || filepath.IsLocal(rel))
}

// realPath makes path absolute and resolves symlinks in its longest
// existing prefix, so a link to the store or a path through one is seen
// for what it is.
func realPath(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	rest := ""
	for dir := abs; ; dir = filepath.Dir(dir) {
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(r, rest), nil
		}
		if dir == filepath.Dir(dir) {
			return abs, nil
		}
		rest = filepath.Join(filepath.Base(dir), rest)
	}
}
