package runtime

// Cache modes.
const (
	CacheReadWrite = "rw"
	CacheReadOnly  = "ro"
)

// Cache is one cache directory prepared by the kernel (internal/cache) for a
// check: the directory Source of scope Scope, to be bind-mounted at Mount,
// writable only when Mode is "rw". Everything but Source is recorded in
// check.started and in the Docker runtime's profile ("caches"), so
// evidence says what warm state a result depended on.
type Cache struct {
	Name  string `json:"name"`
	Mount string `json:"mount"`
	Mode  string `json:"mode"` // rw | ro
	// Scope is the scope whose directory is mounted; RunScope the run's
	// own (they differ when a pull-request run reads the default scope).
	Scope    string `json:"scope"`
	RunScope string `json:"run_scope"`
	// Source is the absolute host directory; not recorded (it is the
	// machine's, not the evidence's).
	Source string `json:"-"`
	// Digest is the tree digest taken before the mount (see internal/cache):
	// "sha256:" + hex over every entry's path, type, mode, size and mtime.
	Digest  string `json:"digest"`
	Entries int64  `json:"entries"`
	Bytes   int64  `json:"bytes"`
	// Generation counts the writes recorded for the directory; Provenance
	// says whether the tree is what the last recorded write left
	// ("recorded"), was never written ("empty"), was copied from the
	// default scope ("seeded"), or changed since without a record
	// ("unrecorded": restored by actions/cache, or tampered with).
	Generation int64  `json:"generation"`
	Provenance string `json:"provenance"`
	// WrittenBy is "<run>/<check>" of the last recorded write, if any.
	WrittenBy string `json:"written_by,omitempty"`
	// Lifetime is "run" for a run-lifetime cache (its Scope is then the
	// run's own directory, run-<16 hex>, which started empty and is removed
	// when the run's checks are done); absent for a persistent one. Only a
	// run cache may be mounted under the workspace (ADR 0032).
	Lifetime string `json:"lifetime,omitempty"`
}

// LifetimeRun is Cache.Lifetime of a run-lifetime cache.
const LifetimeRun = "run"
