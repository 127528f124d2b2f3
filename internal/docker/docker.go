// Package docker is ProofGate's sandbox provider: it runs each check in a
// fresh, hardened container through the Docker Engine API (no docker CLI),
// and reports what it observed as a runtime.Result with an attestation of
// the effective security profile.
//
// Defaults, each recorded in the attestation's Profile: the image must be
// present (pull "never") and is pinned by the ID resolved before start (a
// reference's digest is a repository digest, or the image ID of a local
// build: see LookUp and ADR 0031);
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
// user and with the checkout's modification times (Go's test cache keys
// files by size and mtime), and removes the volume with the container, so
// writes never reach the host tree; "none" mounts nothing. Symlinks whose target leaves the
// workspace are skipped in copy mode, never followed.
//
// Network "none" gives the container its own network namespace with only
// loopback, created by runc (Config.NetworkDisabled): Docker's libnetwork
// sandbox and its prestart hook, which re-executes dockerd, cost about half
// of a trivial check. Docker then provides no /etc/hosts, so a read-only
// one naming localhost (as Docker's for "none") is bind-mounted from a
// private directory that Close removes; where the daemon cannot see that
// file (inside a container action without a mounted $HOME), Docker's own
// "none" sandbox is used. The profile records which ("network_namespace":
// "private" or "docker-none"). /etc/resolv.conf is then the image's own.
//
// The tmpfs mounts are nosuid,nodev but not noexec: build tools (go test)
// execute binaries from /tmp.
//
// When the harness itself runs inside a container with the host's socket
// mounted (a GitHub container action), bind-mount sources are translated to
// host paths through the harness container's own mounts (TranslatePath).
// The harness finds its container by id, not by hostname (which is the
// host's under --network host, or anything under --hostname): first from
// /proc/self/mountinfo (the sources of the /etc/hostname, /etc/hosts and
// /etc/resolv.conf bind mounts are <docker root>/containers/<id>/...), then
// from /proc/self/cgroup (/docker/<id> or docker-<id>.scope), and only then
// from the hostname. A candidate counts only if the daemon reports it
// running with a bind or volume mount whose destination is a mount point in
// the harness's own mount namespace.
package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
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
	LabelOwner = "io.proofgate.owner" // "<pid>/<start ticks>/<host>/<pid namespace>" of the harness
)

// Defaults applied when the spec leaves a resource at zero.
const (
	DefaultMemory    = 1 << 30  // 1 GiB, swap disabled
	DefaultPids      = 512      //
	DefaultTmpfs     = 64 << 20 // 64 MiB for /tmp and for $HOME each
	DefaultCopyLimit = 2 << 30  // bytes copied into the container in copy mode
	// DefaultWorkspaceSize bounds a copy-mode workspace (copy plus writes)
	// when the spec leaves it at zero.
	DefaultWorkspaceSize = 1 << 30
	DefaultOrphanAge     = 24 * time.Hour
	Home                 = "/home/sandbox"
	WorkspaceTarget      = "/workspace"
	SandboxUser          = "65534:65534"
)

// Runtime runs checks in Docker containers. It is safe for concurrent use.
type Runtime struct {
	cli           *client.Client
	daemonVersion string
	apiVersion    string
	owner         string
	host          string
	pidNS         string       // this process's pid namespace, part of the owner label
	selfID        string       // the harness container's id; "" outside one
	self          []MountPoint // the harness container's mounts; nil outside one
	sockets       []string     // paths that resolve to the daemon socket
	hostsDir      string       // private dir holding the sandbox's /etc/hosts; removed by Close
	hostsFile     string       // that file as the daemon sees it; "" to use Docker's none sandbox
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
	pidNS := pidNamespace()
	r := &Runtime{
		cli:           cli,
		daemonVersion: v.Version,
		apiVersion:    cli.ClientVersion(),
		owner:         ownerLabel(os.Getpid(), host, pidNS),
		host:          host,
		pidNS:         pidNS,
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
		r.selfID, r.self = detectSelf(pctx, cli, host)
	}
	r.hostsDir, r.hostsFile = r.prepareHosts()
	return r, nil
}

// DaemonVersion is the daemon's engine version.
func (r *Runtime) DaemonVersion() string { return r.daemonVersion }

// APIVersion is the negotiated Engine API version.
func (r *Runtime) APIVersion() string { return r.apiVersion }

// InContainer reports whether bind sources are translated through the
// harness container's mounts.
func (r *Runtime) InContainer() bool { return r.self != nil }

// SelfContainer is the full id of the container the harness runs in, as
// detected by New, or "" outside one.
func (r *Runtime) SelfContainer() string { return r.selfID }

// Ping checks that the daemon still answers.
func (r *Runtime) Ping(ctx context.Context) error {
	_, err := r.cli.Ping(ctx, client.PingOptions{})
	return err
}

// Close releases the client's connections and removes the sandbox hosts
// file. Run must not be called after Close.
func (r *Runtime) Close() error {
	if r.hostsDir != "" {
		os.RemoveAll(r.hostsDir)
	}
	return r.cli.Close()
}

// sandboxHosts is the /etc/hosts of a network-none sandbox: what Docker
// writes for network none.
const sandboxHosts = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"

// prepareHosts writes the network-none sandbox's /etc/hosts into a fresh
// private directory and returns the directory and the file's path as the
// daemon sees it, or "" and "" when that cannot be done (then Docker's own
// none sandbox is used). Inside a container action the temp dir is rarely a
// mount the daemon can see, so $HOME (/github/home there) is tried next.
func (r *Runtime) prepareHosts() (dir, file string) {
	parents := []string{os.TempDir()}
	if r.self != nil {
		if h := os.Getenv("HOME"); filepath.IsAbs(h) {
			parents = append(parents, h)
		}
	}
	for _, parent := range parents {
		dir, err := mkHostsDir(parent)
		if err != nil {
			continue
		}
		f := filepath.Join(dir, "hosts")
		if os.Chmod(dir, 0o755) != nil || os.WriteFile(f, []byte(sandboxHosts), 0o444) != nil {
			os.RemoveAll(dir)
			continue
		}
		host, err := r.hostSource("hosts", f)
		if err != nil {
			os.RemoveAll(dir)
			continue
		}
		return dir, host
	}
	return "", ""
}

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
