package contract

import (
	"maps"
	"slices"
	"time"

	"github.com/proofgate/proofgate/kernel/runtime"
)

// Execution is what a check and a tool share: where and how their argv
// runs. Both resolve it from defaults the same way, and both become a
// runtime.Spec through the one function Spec, so a tool runs under exactly
// the isolation a check with the same settings would.
type Execution struct {
	Dir           string
	Runtime       string
	Image         string
	Pull          string
	Timeout       Duration
	Output        Size
	Network       string
	Workspace     string
	Resources     Resources
	Tmpfs         Size
	WorkspaceSize Size
	AllowRoot     bool
	Mounts        []Mount
	Env           map[string]string
	// EnvFromHost is a check's env_from_host; a tool has none.
	EnvFromHost []string
}

// Execution returns the execution settings of c.
func (c Check) Execution() Execution {
	return Execution{
		Dir: c.Dir, Runtime: c.Runtime, Image: c.Image, Pull: c.Pull, Timeout: c.Timeout, Output: c.Output,
		Network: c.Network, Workspace: c.Workspace, Resources: c.Resources, Tmpfs: c.Tmpfs,
		WorkspaceSize: c.WorkspaceSize, AllowRoot: c.AllowRoot,
		Mounts: slices.Clone(c.Mounts), Env: maps.Clone(c.Env), EnvFromHost: slices.Clone(c.EnvFromHost),
	}
}

// Execution returns the execution settings of t.
func (t Tool) Execution() Execution {
	return Execution{
		Dir: t.Dir, Runtime: t.Runtime, Image: t.Image, Pull: t.Pull, Timeout: t.Timeout, Output: t.Output,
		Network: t.Network, Workspace: t.Workspace, Resources: t.Resources, Tmpfs: t.Tmpfs,
		WorkspaceSize: t.WorkspaceSize, AllowRoot: t.AllowRoot,
		Mounts: slices.Clone(t.Mounts), Env: maps.Clone(t.Env),
	}
}

// setExecution copies e's settings into t (all but EnvFromHost, which a
// tool never has).
func (t *Tool) setExecution(e Execution) {
	t.Dir, t.Runtime, t.Image, t.Pull, t.Timeout, t.Output = e.Dir, e.Runtime, e.Image, e.Pull, e.Timeout, e.Output
	t.Network, t.Workspace, t.Resources, t.Tmpfs = e.Network, e.Workspace, e.Resources, e.Tmpfs
	t.WorkspaceSize, t.AllowRoot = e.WorkspaceSize, e.AllowRoot
	t.Mounts, t.Env = slices.Clone(e.Mounts), maps.Clone(e.Env)
}

// Spec returns the runtime spec that runs argv (already rendered) with the
// settings e, as the step id of run runID, in the repository work tree
// repo. The caller adds what is not a contract setting (ProcDir, Exclude,
// Caches, Stdin).
func (e Execution) Spec(runID, id string, argv []string, repo string) runtime.Spec {
	mounts := make([]runtime.Mount, len(e.Mounts))
	for i, m := range e.Mounts {
		mounts[i] = runtime.Mount{Source: m.Source, Target: m.Target, Writable: m.Writable}
	}
	env := make(map[string]string, len(e.Env))
	maps.Copy(env, e.Env)
	return runtime.Spec{
		RunID: runID, CheckID: id, Argv: slices.Clone(argv), Env: env,
		FromHost:  slices.Clone(e.EnvFromHost),
		Workspace: repo, Dir: e.Dir, Timeout: time.Duration(e.Timeout),
		Sandbox: runtime.Sandbox{
			Image: e.Image, Pull: e.Pull, Network: e.Network, Workspace: e.Workspace, AllowRoot: e.AllowRoot,
			Memory: int64(e.Resources.Memory), NanoCPUs: int64(e.Resources.CPUs) * 1_000_000, Pids: e.Resources.Pids,
			Tmpfs: int64(e.Tmpfs), WorkspaceSize: int64(e.WorkspaceSize), Mounts: mounts,
		},
	}
}
