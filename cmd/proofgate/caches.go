package main

import (
	"context"
	"os"

	"github.com/spf13/cobra"

	"github.com/proofgate/proofgate/internal/cache"
	"github.com/proofgate/proofgate/kernel/contract"
)

// registerCacheRoot adds --cache-root to a command that runs checks.
func registerCacheRoot(c *cobra.Command, root *string) {
	c.Flags().StringVar(root, "cache-root", "", "directory that keeps the contract's caches between runs (default $"+cache.EnvRoot+", else $RUNNER_TEMP/proofgate-cache, else the user cache directory's proofgate/caches); CLI runs use its scope \"local\"")
}

// cacheStore opens the cache store of a CLI run (scope local) when the
// contract declares caches; nil otherwise.
func cacheStore(c *contract.Resolved, root, repo string) (*cache.Store, error) {
	if len(c.Caches) == 0 {
		return nil, nil
	}
	if root == "" {
		var err error
		if root, err = cache.DefaultRoot(os.Getenv); err != nil {
			return nil, envErr(err)
		}
	}
	s, err := cache.Open(root, cache.Local(), repo)
	if err != nil {
		return nil, usageErr(err)
	}
	return s, nil
}

// checkCacheRoot opens the cache store once before a run is planned, so
// that an unusable root (inside the repository) refuses the command
// rather than leave a planned run behind.
func checkCacheRoot(ctx context.Context, c *contract.Resolved, root string) error {
	if len(c.Caches) == 0 {
		return nil
	}
	repo, err := repoDir(ctx)
	if err != nil {
		return err
	}
	_, err = cacheStore(c, root, repo)
	return err
}
