package app

import (
	"context"

	"github.com/proofgate/proofgate/internal/docker"
	"github.com/proofgate/proofgate/internal/process"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// Runtimes are the providers a contract's checks run in.
type Runtimes struct {
	// Providers maps each runtime name to its provider: "process" always,
	// "docker" when a check needs it and a daemon answered.
	Providers map[string]runtime.Runtime
	// Unavailable maps a runtime a check needs to why it could not be
	// opened (the Docker client's error).
	Unavailable map[string]error
	// Collected are the containers a Docker garbage collection removed
	// while connecting (ConnectOptions.CollectGarbage).
	Collected []string
	docker    *docker.Runtime
}

// ConnectOptions say how to connect.
type ConnectOptions struct {
	// CollectGarbage removes the containers a crashed harness on this host
	// left behind (docker.Runtime.GC) once the daemon answers. Only a
	// process in the host's process namespace can tell a dead harness from
	// a live one, so the Action, which runs in a container, leaves it off.
	CollectGarbage bool
}

// Connect opens the providers c's checks need. It never fails: a provider
// that cannot be opened is in Unavailable, for the caller to refuse the run
// (the command line) or record the checks that needed it as unavailable
// (the Action).
func Connect(ctx context.Context, c *contract.Resolved, o ConnectOptions) *Runtimes {
	r := &Runtimes{Providers: map[string]runtime.Runtime{"process": process.New()}, Unavailable: map[string]error{}}
	if !needs(c, "docker") {
		return r
	}
	d, err := docker.New(ctx)
	if err != nil {
		r.Unavailable["docker"] = err
		return r
	}
	r.docker, r.Providers["docker"] = d, d
	if o.CollectGarbage {
		if removed, err := d.GC(ctx); err == nil { // a failed sweep is the next gc's to report
			r.Collected = removed
		}
	}
	return r
}

// Close releases the Docker client, if one was opened.
func (r *Runtimes) Close() {
	if r.docker != nil {
		r.docker.Close()
	}
}

func needs(c *contract.Resolved, runtimeName string) bool {
	for _, ch := range c.Checks {
		if ch.Runtime == runtimeName {
			return true
		}
	}
	return false
}
