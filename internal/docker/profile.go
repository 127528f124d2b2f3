package docker

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"

	"github.com/proofgate/proofgate/kernel/runtime"
)

// SpecError is a spec the provider refuses to run (bad field, a mount of
// the Docker socket, a path that escapes the workspace). Run reports it as
// Outcome Error with the message as Detail.
type SpecError struct {
	Field string
	Msg   string
}

func (e *SpecError) Error() string { return "docker: " + e.Field + ": " + e.Msg }

// plan is everything needed to create one container, plus the profile that
// describes it.
type plan struct {
	config   *container.Config
	host     *container.HostConfig
	profile  map[string]any
	copyWS   bool   // copy the workspace into the /workspace volume
	wsVolume string // that volume's name (copy mode)
	wsSize   int64  // and its size
	// exclude are the subtrees the copy leaves out: spec.Exclude and the
	// workspace paths run caches are mounted at (copy mode).
	exclude []string
	uid     int
	gid     int
}

// effective returns the sandbox with defaults applied.
func (r *Runtime) effective(sb runtime.Sandbox) runtime.Sandbox {
	if sb.Pull == "" {
		sb.Pull = "never"
	}
	if sb.Network == "" {
		sb.Network = "none"
	}
	if sb.Workspace == "" {
		sb.Workspace = "readonly"
	}
	if sb.Memory == 0 {
		sb.Memory = DefaultMemory
	}
	if sb.Pids == 0 {
		sb.Pids = DefaultPids
	}
	if sb.Tmpfs == 0 {
		sb.Tmpfs = DefaultTmpfs
	}
	if sb.NanoCPUs == 0 {
		sb.NanoCPUs = r.defaultCPUs
	}
	if sb.WorkspaceSize == 0 {
		sb.WorkspaceSize = DefaultWorkspaceSize
	}
	return sb
}

// validate checks the spec's fields that do not need the filesystem.
func validate(spec runtime.Spec, sb runtime.Sandbox) error {
	if len(spec.Argv) == 0 || spec.Argv[0] == "" {
		return &SpecError{"argv", "empty command"}
	}
	if sb.Image == "" {
		return &SpecError{"image", "no image"}
	}
	switch sb.Pull {
	case "never", "missing", "always":
	default:
		return &SpecError{"pull", fmt.Sprintf("%q is not never, missing or always", sb.Pull)}
	}
	switch sb.Network {
	case "none", "host":
	default:
		return &SpecError{"network", fmt.Sprintf("%q is not none or host", sb.Network)}
	}
	switch sb.Workspace {
	case "readonly", "copy", "none":
	default:
		return &SpecError{"workspace", fmt.Sprintf("%q is not readonly, copy or none", sb.Workspace)}
	}
	if sb.Memory < 6<<20 || sb.Pids < 0 || sb.NanoCPUs < 0 || sb.Tmpfs < 0 || sb.WorkspaceSize < 0 {
		return &SpecError{"resources", "memory below 6MiB or a negative limit"}
	}
	if spec.Timeout < 0 {
		return &SpecError{"timeout", "negative"}
	}
	if spec.Dir != "" && (filepath.IsAbs(spec.Dir) || !filepath.IsLocal(spec.Dir)) {
		return &SpecError{"dir", fmt.Sprintf("%q is not a relative path inside the workspace", spec.Dir)}
	}
	if sb.Workspace == "none" && spec.Dir != "" && spec.Dir != "." {
		return &SpecError{"dir", "set with workspace none"}
	}
	for k, v := range spec.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			return &SpecError{"env", fmt.Sprintf("invalid variable %q", k)}
		}
	}
	return nil
}

// build turns a spec into a container configuration and its profile.
// img is the resolved image the container is created from.
func (r *Runtime) build(spec runtime.Spec, sb runtime.Sandbox, img image) (*plan, error) {
	p := &plan{uid: 65534, gid: 65534}
	user := SandboxUser
	if sb.AllowRoot {
		user, p.uid, p.gid = "0:0", 0, 0
	}
	tmpOpts := fmt.Sprintf("rw,nosuid,nodev,exec,size=%d,mode=1777", sb.Tmpfs)
	homeOpts := fmt.Sprintf("rw,nosuid,nodev,exec,size=%d,mode=0700,uid=%d,gid=%d", sb.Tmpfs, p.uid, p.gid)

	env, envList, ce := containerEnv(spec.Env, img.env)
	m, err := r.allMounts(spec, sb, p)
	if err != nil {
		return nil, err
	}
	mounts, workdir, wsProfile, mountProfile, cacheProfile, netns := m.mounts, m.workdir, m.workspace, m.extra, m.caches, m.netns

	labels := map[string]string{LabelRun: spec.RunID, LabelCheck: spec.CheckID, LabelOwner: r.owner}
	p.config = &container.Config{
		Image:           img.id,
		Cmd:             spec.Argv,
		Entrypoint:      []string{},
		Env:             envList,
		User:            user,
		WorkingDir:      workdir,
		AttachStdout:    true,
		AttachStderr:    true,
		NetworkDisabled: netns == "private",
		Labels:          labels,
	}
	p.host = hostConfig(sb, append(mounts, tmpfsVolume("/tmp", tmpOpts, labels), tmpfsVolume(Home, homeOpts, labels)))
	p.profile = map[string]any{
		"provider":          Provider,
		"pull":              sb.Pull,
		"network":           sb.Network,
		"network_namespace": netns,
		"readonly_rootfs":   true,
		"cap_drop":          []any{"ALL"},
		"security_opt":      []any{"no-new-privileges"},
		"privileged":        false,
		"user":              user,
		"allow_root":        sb.AllowRoot,
		"memory":            sb.Memory,
		"memory_swap":       sb.Memory,
		"nano_cpus":         sb.NanoCPUs,
		"pids":              sb.Pids,
		"tmpfs":             map[string]any{"/tmp": tmpOpts, Home: homeOpts},
		"tmpfs_copy_up":     false,
		"home":              env["HOME"],
		"workspace":         wsProfile,
		"mounts":            mountProfile,
		"env_keys":          stringsToAny(ce.declared),
		"image_env_keys":    stringsToAny(ce.image),
		"daemon_env_keys":   stringsToAny(ce.daemon),
		"docker_socket":     "refused",
		"log_driver":        "none",
		"timeout":           spec.Timeout.String(),
		"image_pinned_by":   "id",
	}
	if cacheProfile != nil {
		p.profile["caches"] = cacheProfile
	}
	if spec.Stdin != nil {
		// The container's stdin is attached once and closed after the
		// bytes (StdinOnce); without Stdin it stays closed as before, and
		// the profile (and its hash) is unchanged.
		p.config.OpenStdin, p.config.AttachStdin, p.config.StdinOnce = true, true, true
		p.profile["stdin"] = runtime.StdinProfile(spec.Stdin)
	}
	return p, nil
}

// mountSet is every bind mount of a check with the parts of the profile
// that describe them.
type mountSet struct {
	mounts         []mount.Mount
	workdir, netns string
	workspace      map[string]any
	extra          []any
	caches         []any
}

// allMounts gathers the workspace, the contract's extra mounts, the caches
// and the network namespace's hosts file.
func (r *Runtime) allMounts(spec runtime.Spec, sb runtime.Sandbox, p *plan) (mountSet, error) {
	var m mountSet
	var err error
	m.mounts, m.workdir, m.workspace, err = r.workspaceMount(spec, sb, p)
	if err != nil {
		return m, err
	}
	extra, extraProfile, err := r.extraMounts(spec, sb)
	if err != nil {
		return m, err
	}
	m.mounts, m.extra = append(m.mounts, extra...), extraProfile
	caches, cacheProfile, err := r.cacheMounts(sb)
	if err != nil {
		return m, err
	}
	m.mounts, m.caches = append(m.mounts, caches...), cacheProfile
	netns, hosts := r.networkNamespace(sb)
	if hosts != nil {
		m.mounts = append(m.mounts, *hosts)
	}
	m.netns = netns
	return m, nil
}

// workspaceMount returns the workspace's mount (none with workspace none),
// the check's working directory and the workspace part of the profile. In
// copy mode it names the volume the copy goes into, in p.
func (r *Runtime) workspaceMount(spec runtime.Spec, sb runtime.Sandbox, p *plan) ([]mount.Mount, string, map[string]any, error) {
	if sb.Workspace != "readonly" && sb.Workspace != "copy" {
		return nil, "/", map[string]any{"mode": "none"}, nil
	}
	if spec.Workspace == "" || !filepath.IsAbs(spec.Workspace) {
		return nil, "", nil, &SpecError{"workspace", fmt.Sprintf("workspace path %q is not absolute", spec.Workspace)}
	}
	fi, err := os.Stat(spec.Workspace)
	if err != nil || !fi.IsDir() {
		return nil, "", nil, &SpecError{"workspace", fmt.Sprintf("workspace %q is not a directory", spec.Workspace)}
	}
	workdir := WorkspaceTarget
	if spec.Dir != "" && spec.Dir != "." {
		workdir = WorkspaceTarget + "/" + filepath.ToSlash(filepath.Clean(spec.Dir))
	}
	var m mount.Mount
	if sb.Workspace == "readonly" {
		src, err := r.hostSource("workspace", spec.Workspace)
		if err != nil {
			return nil, "", nil, err
		}
		m = mount.Mount{Type: mount.TypeBind, Source: src, Target: WorkspaceTarget, ReadOnly: true,
			BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate}}
	} else {
		shadowed, err := workspaceCaches(spec.Workspace, sb)
		if err != nil {
			return nil, "", nil, err
		}
		p.copyWS, p.wsVolume, p.wsSize = true, newVolumeName(), sb.WorkspaceSize
		p.exclude = append(slices.Clone(spec.Exclude), shadowed...)
		m = mount.Mount{Type: mount.TypeVolume, Source: p.wsVolume, Target: WorkspaceTarget,
			VolumeOptions: &mount.VolumeOptions{NoCopy: true}}
	}
	wsProfile := map[string]any{"mode": sb.Workspace, "target": WorkspaceTarget, "workdir": workdir, "writable": sb.Workspace == "copy", "reaches_host": false}
	if sb.Workspace == "copy" {
		wsProfile["storage"] = "tmpfs-volume-removed-with-container"
		wsProfile["size"] = sb.WorkspaceSize
		wsProfile["mount_options"] = workspaceVolumeOpts(sb.WorkspaceSize, p.uid, p.gid)
		wsProfile["symlinks_leaving_workspace"] = "skipped"
		wsProfile["excluded"] = stringsToAny(p.exclude)
	}
	return []mount.Mount{m}, workdir, wsProfile, nil
}

// extraMounts returns the contract's bind mounts and their part of the
// profile (never nil: no mounts are []).
func (r *Runtime) extraMounts(spec runtime.Spec, sb runtime.Sandbox) ([]mount.Mount, []any, error) {
	var mounts []mount.Mount
	profile := []any{}
	for i, m := range sb.Mounts {
		field := fmt.Sprintf("mounts[%d]", i)
		src := m.Source
		if !filepath.IsAbs(src) {
			if spec.Workspace == "" || !filepath.IsLocal(src) {
				return nil, nil, &SpecError{field + ".source", fmt.Sprintf("%q is neither absolute nor inside the workspace", m.Source)}
			}
			src = filepath.Join(spec.Workspace, src)
		}
		tgt := filepath.Clean(m.Target)
		if !filepath.IsAbs(m.Target) || tgt == "/" || tgt == WorkspaceTarget || tgt == "/etc/hosts" || under(tgt, "/proc") || under(tgt, "/sys") || under(tgt, "/dev") {
			return nil, nil, &SpecError{field + ".target", fmt.Sprintf("%q is not an allowed container path", m.Target)}
		}
		if _, err := os.Stat(src); err != nil {
			return nil, nil, &SpecError{field + ".source", fmt.Sprintf("%q: %v", m.Source, err)}
		}
		host, err := r.hostSource(field+".source", src)
		if err != nil {
			return nil, nil, err
		}
		mounts = append(mounts, mount.Mount{Type: mount.TypeBind, Source: host, Target: tgt, ReadOnly: !m.Writable,
			BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate}})
		profile = append(profile, map[string]any{"source": m.Source, "target": tgt, "writable": m.Writable})
	}
	return mounts, profile, nil
}

// networkNamespace names the check's network namespace for the profile and
// returns the /etc/hosts mount it needs, if any.
//
// Network none: by default no libnetwork sandbox at all. runc creates
// the container's own network namespace with only loopback (up), and
// the daemon skips its network setup and the prestart hook that re-execs
// dockerd (about half of a trivial check's time). Docker then writes no
// /etc/hosts, so the harness's read-only one (localhost only, as
// Docker's for network none) is mounted. Where that file cannot be
// given to the daemon (a container action whose temp dir is no mount),
// the daemon's "none" sandbox is used as before.
func (r *Runtime) networkNamespace(sb runtime.Sandbox) (string, *mount.Mount) {
	switch {
	case sb.Network == "host":
		return "host", nil
	case r.hostsFile != "":
		return "private", &mount.Mount{Type: mount.TypeBind, Source: r.hostsFile, Target: "/etc/hosts", ReadOnly: true,
			BindOptions: &mount.BindOptions{Propagation: mount.PropagationRPrivate}}
	}
	return "docker-none", nil
}

// hostConfig is the hardened host configuration with the given mounts.
func hostConfig(sb runtime.Sandbox, mounts []mount.Mount) *container.HostConfig {
	pids := sb.Pids
	return &container.HostConfig{
		NetworkMode:    container.NetworkMode(sb.Network),
		ReadonlyRootfs: true,
		CapDrop:        []string{"ALL"},
		SecurityOpt:    []string{"no-new-privileges"},
		Privileged:     false,
		Mounts:         mounts,
		LogConfig:      container.LogConfig{Type: "none"},
		Resources: container.Resources{
			Memory:     sb.Memory,
			MemorySwap: sb.Memory,
			NanoCPUs:   sb.NanoCPUs,
			PidsLimit:  &pids,
		},
	}
}

// envKeys says where each variable of a check's environment comes from.
type envKeys struct {
	declared []string // the spec's, plus HOME unless declared
	image    []string // the image configuration's, not overridden
	daemon   []string // what Docker adds: PATH when neither sets it
}

// containerEnv returns the check's declared environment (HOME defaults to
// Home), the Config.Env list for it, and where every variable the process
// will see comes from. Docker merges the image's environment under the
// declared one, adds PATH when neither has it, and sets HOSTNAME from the
// container's hostname unless Config.Env names HOSTNAME: a bare "HOSTNAME"
// entry (no "=") unsets it, so nothing undeclared but the image's own
// variables and PATH reaches the check.
func containerEnv(declared map[string]string, imageEnv []string) (map[string]string, []string, envKeys) {
	env := map[string]string{}
	for k, v := range declared {
		env[k] = v
	}
	if _, ok := env["HOME"]; !ok {
		env["HOME"] = Home
	}
	var ks envKeys
	for k := range env {
		ks.declared = append(ks.declared, k)
	}
	sort.Strings(ks.declared)
	list := make([]string, 0, len(ks.declared)+1)
	for _, k := range ks.declared {
		list = append(list, k+"="+env[k])
	}
	if _, ok := env["HOSTNAME"]; !ok {
		list = append(list, "HOSTNAME")
	}
	fromImage := map[string]bool{}
	for _, kv := range imageEnv {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := env[k]; !ok && k != "" && !fromImage[k] {
			fromImage[k] = true
			ks.image = append(ks.image, k)
		}
	}
	sort.Strings(ks.image)
	if _, ok := env["PATH"]; !ok && !fromImage["PATH"] {
		ks.daemon = []string{"PATH"}
	}
	return env, list, ks
}

// tmpfsVolume is a tmpfs at target as an anonymous volume of the local
// driver, removed with the container. HostConfig.Tmpfs would copy the
// image directory's content and mode into the tmpfs (Docker's tmpcopyup,
// which 20.10 cannot turn off), so an image whose /tmp is root 0755 would
// get an unwritable /tmp whatever mode= says; a volume with NoCopy mounts
// exactly opts.
func tmpfsVolume(target, opts string, labels map[string]string) mount.Mount {
	return mount.Mount{Type: mount.TypeVolume, Target: target, VolumeOptions: &mount.VolumeOptions{
		NoCopy: true,
		Labels: labels,
		DriverConfig: &mount.Driver{Name: "local", Options: map[string]string{
			"type": "tmpfs", "device": "tmpfs", "o": opts,
		}},
	}}
}

func stringsToAny(s []string) []any {
	out := make([]any, len(s)) // never nil: an empty list stays [] in the profile
	for i, v := range s {
		out[i] = v
	}
	return out
}

// under reports whether p is dir or lies beneath it (both clean, absolute).
func under(p, dir string) bool {
	if dir == "/" {
		return true
	}
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// socketPaths lists the paths at which the daemon socket may be reached:
// the unix socket named by the client's host plus the conventional
// locations, each also in its symlink-resolved form.
func socketPaths(daemonHost string) []string {
	cands := []string{"/var/run/docker.sock", "/run/docker.sock"}
	if s, ok := strings.CutPrefix(daemonHost, "unix://"); ok && s != "" {
		cands = append(cands, s)
	}
	seen := map[string]bool{}
	var out []string
	for _, c := range cands {
		for _, p := range []string{filepath.Clean(c), resolve(c)} {
			if p != "" && !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out
}

func resolve(p string) string {
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		return ""
	}
	return r
}

// refuseSocket fails when src (a local path) is, resolves to, or contains a
// path at which the daemon socket is reachable, or is any unix socket.
func refuseSocket(field, src string, sockets []string) error {
	cands := []string{filepath.Clean(src)}
	if r := resolve(src); r != "" {
		cands = append(cands, r)
		if fi, err := os.Stat(r); err == nil && fi.Mode()&os.ModeSocket != 0 {
			return &SpecError{field, fmt.Sprintf("%q is a unix socket: the Docker socket is never mounted", src)}
		}
	}
	for _, c := range cands {
		for _, s := range sockets {
			if under(s, c) {
				return &SpecError{field, fmt.Sprintf("%q exposes the Docker socket %s: refused", src, s)}
			}
		}
	}
	return nil
}

// hostSource checks a local bind source against the socket rule and, inside
// a container action, translates it to the daemon host's path.
func (r *Runtime) hostSource(field, src string) (string, error) {
	if err := refuseSocket(field, src, r.sockets); err != nil {
		return "", err
	}
	local := resolve(src)
	if local == "" {
		local = filepath.Clean(src)
	}
	if r.self == nil {
		return local, nil
	}
	host, ok := TranslatePath(r.self, local)
	if !ok {
		return "", &SpecError{field, fmt.Sprintf("%q is not under any mount of the harness container, so the daemon cannot see it", src)}
	}
	// The host side is checked again against the conventional socket paths.
	for _, s := range []string{"/var/run/docker.sock", "/run/docker.sock"} {
		if under(s, host) {
			return "", &SpecError{field, fmt.Sprintf("%q maps to host path %q, which exposes the Docker socket: refused", src, host)}
		}
	}
	return host, nil
}

// ownerLabel is "<pid>/<start>/<host>/<pid namespace>" (the namespace
// part is left out when /proc does not name it).
func ownerLabel(pid int, host, pidNS string) string {
	l := strconv.Itoa(pid) + "/" + procStart(pid) + "/" + host
	if pidNS != "" {
		l += "/" + pidNS
	}
	return l
}
