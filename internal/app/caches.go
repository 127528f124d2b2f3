package app

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/proofgate/proofgate/internal/cache"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/exit"
)

// CachePruneOptions say which cache scopes to remove, from which root.
type CachePruneOptions struct {
	// Root is the cache root; "" is cache.DefaultRoot of Getenv.
	Root string
	// OlderThan (an age, e.g. 14d) and Scopes (names) select the scopes;
	// at least one of them is required.
	OlderThan string
	Scopes    []string
	// Apply removes; without it nothing changes.
	Apply bool
	// Now is the clock (time.Now when nil); Getenv reads the environment
	// (os.Getenv when nil).
	Now    func() time.Time
	Getenv func(string) string
}

// CachesPruned is what a cache prune did or would do; its JSON is
// 'proofgate clean caches --json'.
type CachesPruned struct {
	cache.PruneReport
	OlderThan string `json:"older_than,omitempty"`
	// Removed and Bytes count the scopes and leftovers removed (or that
	// would be), and their bytes.
	Removed int   `json:"removed"`
	Bytes   int64 `json:"bytes"`
}

// PruneCaches removes (or, without Apply, lists) the old pull-request and
// branch cache scopes of a cache root (cache.Prune). No selection, a bad
// age, a refused scope name or root are usage errors; a root that cannot
// be read is the environment's.
func PruneCaches(o CachePruneOptions) (*CachesPruned, error) {
	po, err := cachePruneOptions(o)
	if err != nil {
		return nil, err
	}
	root := o.Root
	if root == "" {
		getenv := o.Getenv
		if getenv == nil {
			getenv = os.Getenv
		}
		if root, err = cache.DefaultRoot(getenv); err != nil {
			return nil, exit.Wrap(exit.Environment, err)
		}
	}
	if root, err = filepath.Abs(root); err != nil {
		return nil, exit.Wrap(exit.Usage, err)
	}
	rep, err := cache.Prune(root, po)
	if err != nil {
		return nil, cachePruneErr(err)
	}
	out := &CachesPruned{PruneReport: rep, OlderThan: o.OlderThan}
	for _, s := range append(rep.Scopes, rep.Leftovers...) {
		if s.Action == cache.ActionRemoved || s.Action == cache.ActionWouldRemove {
			out.Removed++
			out.Bytes += s.Bytes
		}
	}
	return out, nil
}

func cachePruneOptions(o CachePruneOptions) (cache.PruneOptions, error) {
	po := cache.PruneOptions{Scopes: o.Scopes, Apply: o.Apply, Now: o.Now}
	if o.OlderThan == "" && len(o.Scopes) == 0 {
		return po, exit.Wrap(exit.Usage, errors.New("say what to prune: --older-than AGE, --scope S, or both (see 'proofgate clean caches --help')"))
	}
	if o.OlderThan != "" {
		d, err := contract.ParseAge(o.OlderThan)
		if err != nil || d <= 0 {
			return po, exit.Wrap(exit.Usage, fmt.Errorf("--older-than: %q is not an age (want e.g. 14d or 36h)", o.OlderThan))
		}
		po.OlderThan = time.Duration(d)
	}
	return po, nil
}

// cachePruneErr classifies a Prune error: a refused name or root is bad
// input (usage); a filesystem failure is the environment's.
func cachePruneErr(err error) error {
	var ce *cache.Error
	if errors.As(err, &ce) && ce.Reason == cache.ReasonIO {
		return exit.Wrap(exit.Environment, err)
	}
	var pe *os.PathError
	if errors.As(err, &pe) && !errors.Is(err, os.ErrNotExist) {
		return exit.Wrap(exit.Environment, err)
	}
	return exit.Wrap(exit.Usage, err)
}
