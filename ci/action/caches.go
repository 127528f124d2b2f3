package action

import (
	"github.com/proofgate/proofgate/kernel/cache"
)

// cacheStore opens the cache store when the contract declares caches. The
// kernel decides the scope from the event's facts: a pull request's own
// (pr-<N>, reading default), default for a push to the default branch, a
// branch scope otherwise. The root is $PROOFGATE_CACHE_ROOT, else
// $RUNNER_TEMP/proofgate-cache: restore it with actions/cache before the
// step and save it after (docs/action.md).
func (j *job) cacheStore() (*cache.Store, error) {
	if len(j.c.Caches) == 0 {
		return nil, nil
	}
	sc, err := cache.ScopeFor(cache.Facts{PR: j.ev.PR, Ref: j.o.Getenv("GITHUB_REF"), DefaultBranch: j.ev.DefaultBranch})
	if err != nil {
		return nil, environment("caches: %w", err)
	}
	root, err := cache.DefaultRoot(j.o.Getenv)
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
