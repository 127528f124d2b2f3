package app

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"time"

	"github.com/proofgate/proofgate/internal/cache"
	"github.com/proofgate/proofgate/internal/docker"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/kernel/exit"
)

// OrphanOptions say where to look for what dead harnesses left.
type OrphanOptions struct {
	// State is the state directory whose runs recorded check processes.
	State string
	// CacheRoot is the cache root of the run-lifetime cache directories;
	// "" is cache.DefaultRoot of Getenv (os.Getenv when nil).
	CacheRoot string
	Getenv    func(string) string
	// Now is when the collection runs.
	Now time.Time
}

// Orphans is what a collection found and removed, in the order it went.
type Orphans struct {
	// Processes are the check process records of dead harnesses, each
	// killed or not as its Result says.
	Processes []run.RunProcess
	// RunCaches are the run-lifetime cache directories swept.
	RunCaches []cache.ScopeReport
	// Containers are the ids of the ProofGate containers removed.
	Containers []string
}

// CollectOrphans kills the check processes whose harness is provably dead
// on this host (run.GCProcesses), removes the run-lifetime cache
// directories of runs that are gone (cache.SweepRuns, none when the root
// does not exist), then the ProofGate containers of dead harnesses or
// older than 24h (docker.Runtime.GC). It stops at the first failure, an
// environment error, and returns what it did up to it.
func CollectOrphans(ctx context.Context, o OrphanOptions) (*Orphans, error) {
	res := &Orphans{}
	var err error
	if res.Processes, err = run.GCProcesses(o.State, o.Now); err != nil {
		return res, exit.Wrap(exit.Environment, err)
	}
	if res.RunCaches, err = sweepRunCaches(o); err != nil {
		return res, exit.Wrap(exit.Environment, err)
	}
	d, err := docker.New(ctx)
	if err != nil {
		return res, exit.Wrap(exit.Environment, err)
	}
	defer d.Close()
	if res.Containers, err = d.GC(ctx); err != nil {
		return res, exit.Wrap(exit.Environment, err)
	}
	return res, nil
}

// sweepRunCaches removes the run-lifetime cache directories left by dead
// harnesses under the cache root (none when it does not exist).
func sweepRunCaches(o OrphanOptions) ([]cache.ScopeReport, error) {
	root := o.CacheRoot
	if root == "" {
		getenv := o.Getenv
		if getenv == nil {
			getenv = os.Getenv
		}
		var err error
		if root, err = cache.DefaultRoot(getenv); err != nil {
			return nil, err
		}
	}
	if _, err := os.Lstat(root); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return cache.SweepRuns(root, false)
}
