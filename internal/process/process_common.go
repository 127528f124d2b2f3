// Package process is the unsandboxed runtime provider: it runs a check as a
// plain child process of the harness, records that it did so
// (attestation provider "process", sandboxed false) and ignores the
// container settings of the spec, recording that it ignored them.
//
// What it guarantees: argv is executed directly (never through a shell); the
// environment is exactly spec.Env plus the harness variables spec.FromHost
// names (attested by value digest); the working directory stays inside the
// workspace; the check runs in its own process group, and that whole group
// is killed on timeout, on output overflow, on cancellation and as soon as
// the main process exits, so neither children that ignore SIGTERM nor
// grandchildren holding the output pipes outlive the check or hang the
// harness. What it cannot guarantee: a descendant that leaves the process
// group (setsid, setpgid) escapes the kill; Run still returns within a bounded
// time, but the escaped process keeps running. Use the Docker provider for
// isolation.
//
// It exists on Unix systems (Linux, macOS, the BSDs): process groups and
// signals are what it contains a check with. On Windows, New returns a
// runtime whose every Run ends with outcome error and ErrUnsupported's
// sentence (unsupported.go): use runtime: docker there.
package process

// DefaultPath is the command search path used when spec.Env declares no PATH.
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Provider is the attestation provider name.
const Provider = "process"

// Option configures New.
type Option func(*Runtime)

// WithoutCgroup keeps checks out of cgroups even where the host delegates
// one: the containment is the process group alone (attested as such).
func WithoutCgroup() Option { return func(r *Runtime) { r.noCgroup = true } }
