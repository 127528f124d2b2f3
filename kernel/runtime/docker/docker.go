// Package docker is ProofGate's sandbox provider: it runs each check in a
// fresh, hardened container through the Docker Engine API (no docker CLI),
// and reports what it observed as a runtime.Result with an attestation of
// the effective security profile.
//
// Defaults, each recorded in the attestation's Profile: the image must be
// present (pull "never") and is pinned by the ID resolved before start;
// network "none"; read-only root filesystem; size-limited tmpfs at /tmp and
// at $HOME (/home/sandbox); all capabilities dropped; no-new-privileges;
// user 65534:65534 unless AllowRoot; pids, memory (no swap) and CPU limits;
// the json log driver is off (streams go only through attach); the Docker
// socket is never mounted.
//
// Workspace modes: "readonly" bind-mounts the workspace at /workspace
// read-only; "copy" creates an anonymous volume at /workspace (the root
// filesystem is read-only, and tmpfs content cannot be filled before start),
// copies the workspace into it through the archive API, owned by the check's
// user, and removes the volume with the container, so writes never reach the
// host tree; "none" mounts nothing. Symlinks whose target leaves the
// workspace are skipped in copy mode, never followed.
//
// The tmpfs mounts are nosuid,nodev but not noexec: build tools (go test)
// execute binaries from /tmp.
//
// When the harness itself runs inside a container with the host's socket
// mounted (a GitHub container action), bind-mount sources are translated to
// host paths through the harness container's own mounts (TranslatePath).
package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	goruntime "runtime"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/proofgate/proofgate/kernel/runtime"
)

// Provider is the attestation's provider name.
const Provider = "docker"

// Container labels.
const (
	LabelRun   = "io.proofgate.run"
	LabelCheck = "io.proofgate.check"
	LabelOwner = "io.proofgate.owner" // "<pid>/<start ticks>/<host>" of the harness
)

// Defaults applied when the spec leaves a resource at zero.
const (
	DefaultMemory    = 1 << 30  // 1 GiB, swap disabled
	DefaultPids      = 512      //
	DefaultTmpfs     = 64 << 20 // 64 MiB for /tmp and for $HOME each
	DefaultCopyLimit = 2 << 30  // bytes copied into the container in copy mode
	DefaultOrphanAge = 24 * time.Hour
	Home             = "/home/sandbox"
	WorkspaceTarget  = "/workspace"
	SandboxUser      = "65534:65534"
)

// Runtime runs checks in Docker containers. It is safe for concurrent use.
type Runtime struct {
	cli           *client.Client
	daemonVersion string
	apiVersion    string
	owner         string
	host          string
	self          []MountPoint // the harness container's mounts; nil outside one
	sockets       []string     // paths that resolve to the daemon socket
	orphanAge     time.Duration
	copyLimit     int64
	defaultCPUs   int64
}

type options struct {
	clientOpts []client.Opt
	orphanAge  time.Duration
	copyLimit  int64
	noSelf     bool
}

// Option configures New.
type Option func(*options)

// WithClientOptions adds Engine API client options after client.FromEnv.
func WithClientOptions(opts ...client.Opt) Option {
	return func(o *options) { o.clientOpts = append(o.clientOpts, opts...) }
}

// WithOrphanAge sets the age beyond which GC removes a ProofGate container
// even when its owner still looks alive (default DefaultOrphanAge).
func WithOrphanAge(d time.Duration) Option { return func(o *options) { o.orphanAge = d } }

// WithCopyLimit bounds the bytes copied into a container in copy mode.
func WithCopyLimit(n int64) Option { return func(o *options) { o.copyLimit = n } }

// WithoutSelfDetection disables the container-action detection (bind
// sources are then used as given).
func WithoutSelfDetection() Option { return func(o *options) { o.noSelf = true } }

// ErrNoDaemon is wrapped by New when no daemon answers.
var ErrNoDaemon = errors.New("docker: no daemon answers")

// New connects to the daemon named by the environment (DOCKER_HOST etc.),
// pings it with API version negotiation, and records the daemon and API
// versions. It detects whether the harness runs in a container that can see
// its own record through the socket, to translate bind-mount sources.
func New(ctx context.Context, opts ...Option) (*Runtime, error) {
	o := options{orphanAge: DefaultOrphanAge, copyLimit: DefaultCopyLimit}
	for _, f := range opts {
		f(&o)
	}
	cli, err := client.New(append([]client.Opt{client.FromEnv}, o.clientOpts...)...)
	if err != nil {
		return nil, fmt.Errorf("docker: client: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := cli.Ping(pctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		cli.Close()
		return nil, fmt.Errorf("%w: %w", ErrNoDaemon, err)
	}
	v, err := cli.ServerVersion(pctx, client.ServerVersionOptions{})
	if err != nil {
		cli.Close()
		return nil, fmt.Errorf("%w: version: %w", ErrNoDaemon, err)
	}
	host, _ := os.Hostname()
	r := &Runtime{
		cli:           cli,
		daemonVersion: v.Version,
		apiVersion:    cli.ClientVersion(),
		owner:         ownerLabel(os.Getpid(), host),
		host:          host,
		orphanAge:     o.orphanAge,
		copyLimit:     o.copyLimit,
		sockets:       socketPaths(cli.DaemonHost()),
	}
	cpus := int64(goruntime.NumCPU())
	if cpus > 2 {
		cpus = 2
	}
	r.defaultCPUs = cpus * 1e9
	if !o.noSelf {
		r.self = detectSelf(pctx, cli, host)
	}
	return r, nil
}

// DaemonVersion is the daemon's engine version.
func (r *Runtime) DaemonVersion() string { return r.daemonVersion }

// APIVersion is the negotiated Engine API version.
func (r *Runtime) APIVersion() string { return r.apiVersion }

// InContainer reports whether bind sources are translated through the
// harness container's mounts.
func (r *Runtime) InContainer() bool { return r.self != nil }

// Ping checks that the daemon still answers.
func (r *Runtime) Ping(ctx context.Context) error {
	_, err := r.cli.Ping(ctx, client.PingOptions{})
	return err
}

// Close releases the client's connections.
func (r *Runtime) Close() error { return r.cli.Close() }

var _ runtime.Runtime = (*Runtime)(nil)

// isNotFound reports the daemon's "no such object".
func isNotFound(err error) bool { return cerrdefs.IsNotFound(err) }

// drain reads a progress stream to its end (bounded) and reports an error
// message embedded in it.
func drain(rc io.ReadCloser) error {
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, 8<<20))
	if err != nil {
		return err
	}
	if i := strings.LastIndex(string(b), `"error"`); i >= 0 {
		return fmt.Errorf("%s", strings.TrimSpace(string(b[i:])))
	}
	return nil
}
