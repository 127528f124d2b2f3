package action

import (
	"os"
	"path/filepath"

	"github.com/proofgate/proofgate/internal/cache"
)

// runnerTempMount is where new runners mount the host's RUNNER_TEMP into a
// container action. RUNNER_TEMP itself holds the host's path, which inside
// the container is no mount at all: a cache root there would be the
// container's own, which the daemon cannot bind into a check. A variable
// for tests.
var runnerTempMount = "/github/runner_temp"

// cacheStore opens the cache store when the contract declares caches. The
// kernel decides the scope (cache.ScopeFor) from the event's facts and the
// commit the run binds: a pull request's own (pr-<N>, reading default);
// default only for a run bound to the default branch's head as GitHub
// states it; a branch scope for a push elsewhere; else the bound commit's
// own. The root is $PROOFGATE_CACHE_ROOT, else
// $RUNNER_TEMP/proofgate-cache: restore it with actions/cache before the
// step and save it after (docs/action.md).
func (j *job) cacheStore() (*cache.Store, error) {
	if len(j.c.Caches) == 0 {
		return nil, nil
	}
	getenv := j.o.Getenv
	sc, err := cache.ScopeFor(cache.Facts{Event: j.ev.Name, PR: j.ev.PR, Ref: getenv("GITHUB_REF"), SHA: getenv("GITHUB_SHA"),
		DefaultBranch: j.ev.DefaultBranch, PayloadRef: j.ev.Ref, PayloadAfter: j.ev.After, Commit: j.boundCommit()})
	if err != nil {
		return nil, environment("caches: %w", err)
	}
	root, err := actionCacheRoot(j.o.Getenv)
	if err != nil {
		return nil, environment("caches: %w", err)
	}
	s, err := cache.Open(root, sc, j.ws)
	if err != nil {
		return nil, usage("caches: %w", err)
	}
	read := ""
	if sc.Base != "" {
		read = ", reading " + sc.Base + " where it has nothing yet"
	}
	j.f.logf("proofgate: caches in %s, scope %s%s", s.Root(), sc.Name, read)
	return s, nil
}

// boundCommit is the commit the run binds: the HEAD its plan recorded (a
// shard job's: the imported plan's, kept in the summary's report once the
// run is closed for shard.Exec).
func (j *job) boundCommit() string {
	switch {
	case j.r != nil && !j.closed:
		return j.r.Report().Source.Commit
	case j.s != nil && j.s.Report != nil:
		return j.s.Report.Source.Commit
	}
	return ""
}

// actionCacheRoot is $PROOFGATE_CACHE_ROOT, else proofgate-cache under the
// runner's temp mount when the runner mounted it (the host's
// $RUNNER_TEMP/proofgate-cache, which actions/cache steps outside the
// container restore and save), else cache.DefaultRoot's.
func actionCacheRoot(getenv func(string) string) (string, error) {
	if getenv(cache.EnvRoot) == "" && getenv("RUNNER_TEMP") != "" {
		if fi, err := os.Stat(runnerTempMount); err == nil && fi.IsDir() {
			return filepath.Join(runnerTempMount, "proofgate-cache"), nil
		}
	}
	return cache.DefaultRoot(getenv)
}
