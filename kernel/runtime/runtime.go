// Package runtime is the seam between the kernel and the things that execute
// a check: the unsandboxed process provider and the Docker sandbox provider
// live in subpackages and implement Runtime.
//
// The kernel owns everything that decides completion. A provider only reports
// what it observed: the exit code, whether the process was killed for a
// timeout, an output overflow or memory, and a runtime attestation describing
// how it ran the check. Output is never held by the provider: it writes both
// streams into Capture values that the kernel created, which enforce the
// per-stream byte cap and signal an overflow so the provider can kill.
package runtime

import (
	"context"
	"time"
)

// Outcome is what was observed about a check. It never claims more than that:
// "passed" means the process exited 0 within its limits.
type Outcome string

// Outcomes. Providers report the first seven; the kernel adds Skipped (a
// dependency did not pass) and Interrupted (the harness died mid-check and a
// later reconcile found no check.finished event). WorkspaceLimit means a
// copy-mode workspace filled its declared size (workspace_size): the copy
// did not fit, or the check's writes used up the room.
const (
	Passed         Outcome = "passed"
	Failed         Outcome = "failed"
	Timeout        Outcome = "timeout"
	OutputLimit    Outcome = "output-limit"
	OOM            Outcome = "oom"
	WorkspaceLimit Outcome = "workspace-limit"
	Error          Outcome = "error"
	Skipped        Outcome = "skipped"
	Interrupted    Outcome = "interrupted"
)

// Valid reports whether o is one of the defined outcomes.
func (o Outcome) Valid() bool {
	switch o {
	case Passed, Failed, Timeout, OutputLimit, OOM, WorkspaceLimit, Error, Skipped, Interrupted:
		return true
	}
	return false
}

// Spec is one check, fully resolved, as a provider must run it. Nothing is
// inherited from the harness: Env is the complete environment.
type Spec struct {
	RunID   string
	CheckID string
	// Argv is executed directly, never through a shell.
	Argv []string
	// Env is the complete environment of the check, but for FromHost.
	Env map[string]string
	// FromHost names variables of the harness's own environment that the
	// process provider adds to Env with their values when the check starts,
	// and attests by name and value digest (contract env_from_host, ADR
	// 0012). A name the harness does not have stays unset. The Docker
	// provider refuses a spec that names any.
	FromHost []string
	// Workspace is the absolute host path of the repository work tree.
	Workspace string
	// Dir is the working directory relative to the workspace ("" = root).
	Dir string
	// Exclude lists subtrees of the workspace (slash-separated, relative)
	// that a copy of it leaves out: the harness's own live state (the
	// state directory's runs/, with its locks and temporary blob files).
	Exclude []string
	// Timeout bounds the wall time of the check; 0 means no bound.
	Timeout time.Duration
	// Sandbox holds the container settings; the process provider records
	// that it ignored them.
	Sandbox Sandbox
	// ProcDir is the run's directory of process records (internal/lock): a
	// provider that starts host processes records each check there before
	// it can outlive the harness, so that 'events unlock' and 'gc' can kill
	// what a dead harness left. Empty: nothing is recorded.
	ProcDir string
	// KeepRecords keeps the record files in ProcDir for the next check of
	// this process (lock.TakeSlot), for a caller that runs many checks in
	// a row there and calls lock.DropSlots(ProcDir) when it is done (an
	// agent session's tool calls, ADR 0028). False: each check's record
	// files are removed with it.
	KeepRecords bool
	// Stdin is fed to the process's standard input, then closed; nil means
	// no input (/dev/null).
	Stdin []byte
	// Produces are the check's product globs (contract produces:, ADR
	// 0039). After a passed check the provider walks ProductRoots of its
	// workspace, offers each entry to Products{Produces, Collect}, and
	// makes the outcome error when that fails; without globs it walks
	// nothing.
	Produces []string
	Collect  Collector
}

// Sandbox is the effective isolation profile requested for a check.
type Sandbox struct {
	Image     string `json:"image,omitempty"`
	Pull      string `json:"pull,omitempty"`      // never | missing | always
	Network   string `json:"network,omitempty"`   // none | host
	Workspace string `json:"workspace,omitempty"` // readonly | copy | none
	AllowRoot bool   `json:"allow_root,omitempty"`
	Memory    int64  `json:"memory,omitempty"`    // bytes, 0 = provider default
	NanoCPUs  int64  `json:"nano_cpus,omitempty"` // 1e9 = one CPU
	Pids      int64  `json:"pids,omitempty"`
	Tmpfs     int64  `json:"tmpfs,omitempty"` // bytes for /tmp and $HOME each
	// WorkspaceSize bounds a copy-mode workspace (copy plus writes), bytes;
	// 0 = provider default.
	WorkspaceSize int64   `json:"workspace_size,omitempty"`
	Mounts        []Mount `json:"mounts,omitempty"`
	// Caches are the cache directories the kernel prepared for the check
	// (internal/cache), each bind-mounted at its Mount.
	Caches []Cache `json:"caches,omitempty"`
}

// Mount is an extra bind mount declared by the contract.
type Mount struct {
	Source   string `json:"source"` // absolute host path, or relative to the workspace
	Target   string `json:"target"` // absolute path in the container
	Writable bool   `json:"writable,omitempty"`
}

// Attestation describes how a check was run. It is recorded in the
// check.finished event and summarised in the evidence bundle.
type Attestation struct {
	Provider      string         `json:"provider"`
	Sandboxed     bool           `json:"sandboxed"`
	DaemonVersion string         `json:"daemon_version,omitempty"`
	APIVersion    string         `json:"api_version,omitempty"`
	ImageRef      string         `json:"image_ref,omitempty"`
	ImageID       string         `json:"image_id,omitempty"`
	ImagePin      string         `json:"image_pin,omitempty"` // "image-id" for a local image pinned by its ID (ADR 0031); absent otherwise
	Profile       map[string]any `json:"profile,omitempty"`
	ProfileHash   string         `json:"profile_hash,omitempty"`
}

// Result is what a provider observed.
type Result struct {
	ExitCode    int
	Outcome     Outcome
	Started     time.Time
	Finished    time.Time
	Attestation Attestation
	// Detail explains an error, timeout, oom or output-limit outcome in one
	// line (for example the missing image's name).
	Detail string
}

// Runtime runs one check. Implementations write the check's streams into
// stdout and stderr, stop the check as soon as either reports Full, apply
// spec.Timeout, and always return a Result (Outcome Error with Detail when
// the check could not be run). Run must be safe for concurrent use.
type Runtime interface {
	Run(ctx context.Context, spec Spec, stdout, stderr *Capture) Result
}
