package docker

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/proofgate/proofgate/internal/testimage"
	"github.com/proofgate/proofgate/kernel/runtime"
)

func TestNetworkNoneReachesNothing(t *testing.T) {
	r, ref := sandbox(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	addr := ln.Addr().String()
	for _, argv := range [][]string{
		{"connect", addr},
		{"lookup", "example.com"},
		{"lookup", "localhost.proofgate.invalid"},
		{"connect", "192.0.2.1:80"},
	} {
		spec := helperSpec(ref, argv...)
		spec.RunID = uniqueRun(t)
		res := check(t, r, spec, 1<<20)
		assertOutcome(t, res, runtime.Failed)
		if res.Attestation.Profile["network"] != "none" {
			t.Fatalf("profile network %v", res.Attestation.Profile["network"])
		}
	}
	if n := accepted.Load(); n != 0 {
		t.Fatalf("host listener accepted %d connections from a network-none sandbox", n)
	}
	// Control: with network host the same probe connects, so the probe can
	// detect a leak (loopback only: the daemon runs without a bridge).
	spec := helperSpec(ref, "connect", addr)
	spec.Sandbox.Network = "host"
	res := check(t, r, spec, 1<<20)
	assertOutcome(t, res, runtime.Passed)
	if res.Attestation.Profile["network"] != "host" {
		t.Fatalf("profile network %v", res.Attestation.Profile["network"])
	}
}

func TestWritesOutsideTmpfsFail(t *testing.T) {
	r, ref := sandbox(t)
	cases := []struct {
		argv []string
		want runtime.Outcome
	}{
		{[]string{"write", "/x"}, runtime.Failed},
		{[]string{"write", "/etc/passwd"}, runtime.Failed},
		{[]string{"write", "/etc/new"}, runtime.Failed},
		{[]string{"write", "/bin/helper"}, runtime.Failed},
		{[]string{"write", "/tmp/ok", "1000"}, runtime.Passed},
		{[]string{"write", Home + "/ok", "1000"}, runtime.Passed},
		// tmpfs is 8 MiB in helperSpec
		{[]string{"write", "/tmp/big", strconv.Itoa(16 << 20)}, runtime.Failed},
		{[]string{"write", Home + "/big", strconv.Itoa(16 << 20)}, runtime.Failed},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.argv, " "), func(t *testing.T) {
			res := check(t, r, helperSpec(ref, c.argv...), 1<<20)
			assertOutcome(t, res, c.want)
		})
	}
}

func workspace(t *testing.T) string {
	t.Helper()
	// World-readable, as a checkout is: in readonly mode the check's
	// unprivileged user reads the host's files through the bind mount.
	ws := t.TempDir()
	if err := os.Chmod(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "sub", "file.txt"), []byte("original\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return ws
}

func TestWorkspaceReadonlyAndCopy(t *testing.T) {
	r, ref := sandbox(t)
	ws := workspace(t)

	// readonly: readable, with Dir as working directory, not writable.
	spec := helperSpec(ref, "cat", "file.txt")
	spec.Workspace, spec.Dir, spec.Sandbox.Workspace = ws, "sub", "readonly"
	res := check(t, r, spec, 1<<20)
	assertOutcome(t, res, runtime.Passed)
	if res.stdout.String() != "original\n" {
		t.Fatalf("readonly read %q", res.stdout.String())
	}
	spec.Argv = []string{"/bin/helper", "write", "/workspace/sub/file.txt"}
	assertOutcome(t, check(t, r, spec, 1<<20), runtime.Failed)

	// copy: writable inside, nothing reaches the host tree.
	for _, argv := range [][]string{
		{"/bin/helper", "write", "/workspace/sub/file.txt", "5"},
		{"/bin/helper", "write", "/workspace/new.txt", "5"},
		{"/bin/helper", "write", "new-in-dir.txt", "5"},
	} {
		spec.Argv, spec.Sandbox.Workspace = argv, "copy"
		res := check(t, r, spec, 1<<20)
		assertOutcome(t, res, runtime.Passed)
		if res.Attestation.Profile["workspace"].(map[string]any)["mode"] != "copy" {
			t.Fatalf("profile %v", res.Attestation.Profile["workspace"])
		}
	}
	b, err := os.ReadFile(filepath.Join(ws, "sub", "file.txt"))
	if err != nil || string(b) != "original\n" {
		t.Fatalf("host file changed: %q %v", b, err)
	}
	for _, p := range []string{"new.txt", "sub/new-in-dir.txt"} {
		if _, err := os.Lstat(filepath.Join(ws, p)); !os.IsNotExist(err) {
			t.Fatalf("%s reached the host: %v", p, err)
		}
	}
	// The copy really carried the content.
	spec.Argv = []string{"/bin/helper", "cat", "file.txt"}
	res = check(t, r, spec, 1<<20)
	assertOutcome(t, res, runtime.Passed)
	if res.stdout.String() != "original\n" {
		t.Fatalf("copy read %q", res.stdout.String())
	}
}

func TestCopyModeSymlinksDoNotExposeHost(t *testing.T) {
	r, ref := sandbox(t)
	ws := workspace(t)
	outside := t.TempDir()
	secret := "host-secret-" + strconv.FormatInt(time.Now().UnixNano(), 10)
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte(secret), 0o644); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"etc":         "/etc",
		"abs-secret":  filepath.Join(outside, "secret"),
		"abs-dir":     outside,
		"rel-secret":  filepath.Join("..", filepath.Base(outside), "secret"),
		"sub/up":      "../../",
		"inside-link": "sub/file.txt",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(ws, name)); err != nil {
			t.Fatal(err)
		}
	}
	hostPasswd, _ := os.ReadFile("/etc/passwd")
	for _, p := range []string{"etc/passwd", "etc/hostname", "abs-secret", "abs-dir/secret", "rel-secret", "sub/up/" + filepath.Base(outside) + "/secret"} {
		spec := helperSpec(ref, "cat", "/workspace/"+p)
		spec.Workspace, spec.Sandbox.Workspace = ws, "copy"
		res := check(t, r, spec, 1<<20)
		out := res.stdout.String()
		if strings.Contains(out, secret) || (len(hostPasswd) > 0 && strings.Contains(out, string(hostPasswd))) {
			t.Fatalf("%s exposed host content: %q", p, trim(out))
		}
		assertOutcome(t, res, runtime.Failed)
	}
	// Control: an in-workspace relative link still works.
	spec := helperSpec(ref, "cat", "/workspace/inside-link")
	spec.Workspace, spec.Sandbox.Workspace = ws, "copy"
	res := check(t, r, spec, 1<<20)
	assertOutcome(t, res, runtime.Passed)
	if res.stdout.String() != "original\n" {
		t.Fatalf("inside link read %q", res.stdout.String())
	}
}

func TestForkBombStoppedByPidsLimit(t *testing.T) {
	r, ref := sandbox(t)
	spec := helperSpec(ref, "forkbomb")
	spec.RunID = uniqueRun(t)
	spec.Sandbox.Pids = 48
	spec.Timeout = 60 * time.Second
	start := time.Now()
	res := check(t, r, spec, 1<<20)
	assertOutcome(t, res, runtime.Failed)
	if res.ExitCode != 3 {
		t.Fatalf("exit %d", res.ExitCode)
	}
	var started, refused int
	if _, err := fmtSscan(res.stdout.String(), &started, &refused); err != nil {
		t.Fatalf("forkbomb report %q: %v", res.stdout.String(), err)
	}
	if started >= 48 || refused == 0 {
		t.Fatalf("pids limit 48 not enforced: started=%d refused=%d", started, refused)
	}
	t.Logf("fork bomb: started=%d refused=%d in %s", started, refused, time.Since(start))
	if res.Attestation.Profile["pids"] != int64(48) {
		t.Fatalf("profile pids %v", res.Attestation.Profile["pids"])
	}
	assertGone(t, r, spec.RunID)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.Ping(ctx); err != nil {
		t.Fatalf("daemon unhealthy after fork bomb: %v", err)
	}
	// The harness still runs checks.
	assertOutcome(t, check(t, r, helperSpec(ref, "true"), 1<<20), runtime.Passed)
}

func fmtSscan(s string, started, refused *int) (int, error) {
	i := strings.Index(s, "started=")
	if i < 0 {
		return 0, os.ErrNotExist
	}
	var n int
	var err error
	for _, part := range strings.Fields(s[i:]) {
		if v, ok := strings.CutPrefix(part, "started="); ok {
			*started, err = strconv.Atoi(v)
			n++
		}
		if v, ok := strings.CutPrefix(part, "refused="); ok {
			*refused, err = strconv.Atoi(v)
			n++
		}
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func TestMemoryBalloonIsOOM(t *testing.T) {
	r, ref := sandbox(t)
	// The helper runs a second before ballooning, as a real process does:
	// Docker 20.10 misses an OOM kill in the first moments after start
	// (below).
	spec := helperSpec(ref, "alloc", "256", "1s")
	spec.Sandbox.Memory = 32 << 20
	res := check(t, r, spec, 1<<20)
	assertOutcome(t, res, runtime.OOM)
	// Ballooning at once: oom, or (when the daemon missed it) a failure that
	// says so; never a pass.
	spec.Argv = []string{"/bin/helper", "alloc", "256"}
	if res := check(t, r, spec, 1<<20); res.Outcome != runtime.OOM &&
		(res.Outcome != runtime.Failed || res.ExitCode != 137 || !strings.Contains(res.Detail, "no OOM kill")) {
		t.Fatalf("immediate balloon: %s (exit %d, %q)", res.Outcome, res.ExitCode, res.Detail)
	}
	if res.Attestation.Profile["memory_swap"] != int64(32<<20) {
		t.Fatalf("swap not disabled: %v", res.Attestation.Profile["memory_swap"])
	}
	// Control: the same helper within the limit passes.
	spec.Argv = []string{"/bin/helper", "alloc", "8"}
	assertOutcome(t, check(t, r, spec, 1<<20), runtime.Passed)
}

func TestOutputLimitKillsAndKeepsExactlyTheCap(t *testing.T) {
	r, ref := sandbox(t)
	for _, stream := range []string{"out", "err"} {
		spec := helperSpec(ref, stream, strconv.Itoa(100<<20))
		spec.RunID = uniqueRun(t)
		res := check(t, r, spec, 1<<20)
		assertOutcome(t, res, runtime.OutputLimit)
		s, buf := res.outStream, res.stdout.Len()
		if stream == "err" {
			s, buf = res.errStream, res.stderr.Len()
		}
		if s.Size != 1<<20 || buf != 1<<20 || !s.Truncated {
			t.Fatalf("%s kept %d bytes (stream %+v), want exactly 1 MiB truncated", stream, buf, s)
		}
		assertGone(t, r, spec.RunID)
	}
}

func TestTimeoutKillsPromptly(t *testing.T) {
	r, ref := sandbox(t)
	spec := helperSpec(ref, "sleep", "3600")
	spec.RunID = uniqueRun(t)
	spec.Timeout = 2 * time.Second
	start := time.Now()
	res := check(t, r, spec, 1<<20)
	took := time.Since(start)
	assertOutcome(t, res, runtime.Timeout)
	if took > 10*time.Second {
		t.Fatalf("timeout took %s", took)
	}
	assertGone(t, r, spec.RunID)
}

func TestSetuidCannotGainRoot(t *testing.T) {
	r, ref := sandbox(t)
	for _, bin := range []string{"/bin/helper", "/bin/suid-helper"} {
		spec := helperSpec(ref, "id")
		spec.Argv[0] = bin
		res := check(t, r, spec, 1<<20)
		assertOutcome(t, res, runtime.Passed)
		if got := res.stdout.String(); got != "uid=65534 gid=65534 euid=65534 egid=65534\n" {
			t.Fatalf("%s: %q", bin, got)
		}
	}
	// (internal/testimage's test proves the same setuid copy gains euid 0
	// without no-new-privileges.)
	spec := helperSpec(ref, "id")
	spec.Sandbox.AllowRoot = true
	res := check(t, r, spec, 1<<20)
	assertOutcome(t, res, runtime.Passed)
	if !strings.HasPrefix(res.stdout.String(), "uid=0 ") || res.Attestation.Profile["allow_root"] != true || res.Attestation.Profile["user"] != "0:0" {
		t.Fatalf("allow_root: %q %v", res.stdout.String(), res.Attestation.Profile)
	}
}

func TestEnvironmentIsExactlyDeclared(t *testing.T) {
	r, ref := sandbox(t)
	t.Setenv("GITHUB_TOKEN", "ghs_harnesssecret")
	t.Setenv("ACTIONS_RUNTIME_TOKEN", "runtime-secret")
	t.Setenv("PROOFGATE_HARNESS_ONLY", "x")
	spec := helperSpec(ref, "env")
	spec.Env = map[string]string{"DECLARED": "yes", "GOFLAGS": "-mod=readonly"}
	res := check(t, r, spec, 1<<20)
	assertOutcome(t, res, runtime.Passed)
	var env map[string]string
	if err := json.Unmarshal(res.stdout.Bytes(), &env); err != nil {
		t.Fatal(err)
	}
	if env["DECLARED"] != "yes" || env["GOFLAGS"] != "-mod=readonly" || env["HOME"] != Home {
		t.Fatalf("declared env missing: %v", env)
	}
	for k, v := range env {
		switch k {
		case "DECLARED", "GOFLAGS", "HOME":
		case "PATH": // set by the daemon (attested in daemon_env_keys); HOSTNAME is unset
		default:
			t.Fatalf("undeclared variable %s=%q reached the check", k, v)
		}
		if strings.Contains(v, "secret") {
			t.Fatalf("harness secret in %s", k)
		}
	}
}

func TestDockerSocketMountRefused(t *testing.T) {
	r, ref := sandbox(t)
	sock := strings.TrimPrefix(r.cli.DaemonHost(), "unix://")
	link := filepath.Join(t.TempDir(), "innocent")
	if err := os.Symlink(sock, link); err != nil {
		t.Fatal(err)
	}
	dirLink := filepath.Join(t.TempDir(), "rundir")
	if err := os.Symlink(filepath.Dir(sock), dirLink); err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{sock, "/var/run/docker.sock", "/var/run", "/run", "/", link, dirLink} {
		spec := helperSpec(ref, "true")
		spec.RunID = uniqueRun(t)
		spec.Sandbox.Mounts = []runtime.Mount{{Source: src, Target: "/mnt/x"}}
		res := check(t, r, spec, 1<<20)
		assertOutcome(t, res, runtime.Error)
		if !strings.Contains(res.Detail, "socket") {
			t.Fatalf("%s: detail %q", src, res.Detail)
		}
		assertGone(t, r, spec.RunID)
	}
	// Also as the workspace itself.
	spec := helperSpec(ref, "true")
	spec.Workspace, spec.Sandbox.Workspace = filepath.Dir(sock), "readonly"
	assertOutcome(t, check(t, r, spec, 1<<20), runtime.Error)
}

func TestDeclaredMountsReadOnlyUnlessWritable(t *testing.T) {
	r, ref := sandbox(t)
	ws := workspace(t)
	cache := t.TempDir()
	if err := os.Chmod(cache, 0o777); err != nil {
		t.Fatal(err)
	}
	spec := helperSpec(ref, "write", "/cache/f")
	spec.Workspace = ws
	spec.Sandbox.Mounts = []runtime.Mount{{Source: cache, Target: "/cache"}, {Source: "sub", Target: "/sub"}}
	assertOutcome(t, check(t, r, spec, 1<<20), runtime.Failed)
	spec.Argv = []string{"/bin/helper", "cat", "/sub/file.txt"}
	assertOutcome(t, check(t, r, spec, 1<<20), runtime.Passed)
	spec.Argv = []string{"/bin/helper", "write", "/cache/f"}
	spec.Sandbox.Mounts[0].Writable = true
	assertOutcome(t, check(t, r, spec, 1<<20), runtime.Passed)
	if _, err := os.Stat(filepath.Join(cache, "f")); err != nil {
		t.Fatalf("writable mount: %v", err)
	}
	spec.Sandbox.Mounts = []runtime.Mount{{Source: "../escape", Target: "/x"}}
	res := check(t, r, spec, 1<<20)
	assertOutcome(t, res, runtime.Error)
	if !strings.Contains(res.Detail, "mounts[0].source") {
		t.Fatalf("detail %q", res.Detail)
	}
}

func TestMissingImageWithPullNeverIsErrorAndNoPull(t *testing.T) {
	r, _ := sandbox(t)
	ref := "proofgate-test/absent:" + strconv.FormatInt(time.Now().UnixNano(), 36)
	spec := helperSpec(ref, "true")
	spec.RunID = uniqueRun(t)
	start := time.Now()
	res := check(t, r, spec, 1<<20)
	assertOutcome(t, res, runtime.Error)
	if !strings.Contains(res.Detail, ref) || !strings.Contains(res.Detail, "pull: never") {
		t.Fatalf("detail %q does not name the image", res.Detail)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("took %s: a pull was attempted?", took)
	}
	if _, err := r.cli.ImageInspect(context.Background(), ref); !isNotFound(err) {
		t.Fatalf("image appeared: %v", err)
	}
	assertGone(t, r, spec.RunID)
}

func TestExitCodeAndSeparateConcurrentOutput(t *testing.T) {
	r, ref := sandbox(t)
	res := check(t, r, helperSpec(ref, "exit", "7"), 1<<20)
	assertOutcome(t, res, runtime.Failed)
	if res.ExitCode != 7 {
		t.Fatalf("exit %d", res.ExitCode)
	}
	results := make(chan *ran, 6)
	for i := range 6 {
		go func() {
			spec := helperSpec(ref, "cat", "/etc/marker")
			if i%2 == 1 {
				spec = helperSpec(ref, "out", strconv.Itoa(1000*(i+1)))
			}
			results <- check(t, r, spec, 1<<20)
		}()
	}
	sizes := map[int]bool{}
	for range 6 {
		res := <-results
		assertOutcome(t, res, runtime.Passed)
		if out := res.stdout.String(); out != "proofgate-test-image\n" {
			sizes[len(out)] = true
		}
	}
	if len(sizes) != 3 || !sizes[2000] || !sizes[4000] || !sizes[6000] {
		t.Fatalf("outputs mixed between checks: sizes %v", sizes)
	}
}

func TestEffectiveConfigAndCancelRemoves(t *testing.T) {
	r, ref := sandbox(t)
	ws := workspace(t)
	spec := helperSpec(ref, "sleep", "600")
	spec.RunID = uniqueRun(t)
	spec.Workspace, spec.Sandbox.Workspace = ws, "readonly"
	spec.Sandbox.NanoCPUs = 5e8
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan runtime.Result, 1)
	go func() {
		var o, e strings.Builder
		done <- r.Run(ctx, spec, runtime.NewCapture(&o, 1<<10), runtime.NewCapture(&e, 1<<10))
	}()
	var ids []string
	for deadline := time.Now().Add(20 * time.Second); len(ids) == 0 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		ids = containersOf(t, r, spec.RunID)
	}
	if len(ids) != 1 {
		cancel()
		t.Fatalf("containers %v", ids)
	}
	ins, err := r.cli.ContainerInspect(context.Background(), ids[0], client.ContainerInspectOptions{})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	hc, cfg := ins.Container.HostConfig, ins.Container.Config
	cancel()
	if !hc.ReadonlyRootfs || hc.Privileged || strings.Join(hc.CapDrop, ",") != "ALL" || strings.Join(hc.SecurityOpt, ",") != "no-new-privileges" ||
		hc.NetworkMode != "none" || hc.Memory != 128<<20 || hc.MemorySwap != 128<<20 || hc.NanoCPUs != 5e8 || hc.PidsLimit == nil || *hc.PidsLimit != 64 ||
		cfg.User != SandboxUser || cfg.WorkingDir != WorkspaceTarget || len(hc.Binds) != 0 || len(hc.Tmpfs) != 0 {
		t.Fatalf("effective config not hardened: %+v %+v", hc, cfg)
	}
	// The workspace, and (own network namespace) the harness's /etc/hosts,
	// both read-only, then the two tmpfs volumes (no copy-up, the attested
	// options); nothing else.
	wantMounts := 3
	if r.hostsFile != "" {
		wantMounts = 4
		if !cfg.NetworkDisabled || hc.Mounts[1].Target != "/etc/hosts" || hc.Mounts[1].Source != r.hostsFile || !hc.Mounts[1].ReadOnly {
			t.Fatalf("network-none sandbox without the daemon's network: %v %+v", cfg.NetworkDisabled, hc.Mounts)
		}
	}
	if len(hc.Mounts) != wantMounts || hc.Mounts[0].Target != WorkspaceTarget || !hc.Mounts[0].ReadOnly {
		t.Fatalf("mounts %+v", hc.Mounts)
	}
	for i, dir := range []string{"/tmp", Home} {
		m := hc.Mounts[wantMounts-2+i]
		if m.Target != dir || m.Type != "volume" || m.Source != "" || m.VolumeOptions == nil || !m.VolumeOptions.NoCopy ||
			m.VolumeOptions.DriverConfig == nil || m.VolumeOptions.DriverConfig.Options["type"] != "tmpfs" ||
			!strings.HasPrefix(m.VolumeOptions.DriverConfig.Options["o"], "rw,nosuid,nodev,exec,size=8388608,mode=") {
			t.Fatalf("%s mount %+v", dir, m)
		}
	}
	if e := strings.Join(cfg.Env, " "); !strings.Contains(" "+e+" ", " HOSTNAME ") {
		t.Fatalf("env %q does not unset HOSTNAME", e)
	}
	if cfg.Labels[LabelCheck] != spec.CheckID || cfg.Labels[LabelOwner] != r.owner || cfg.Image != ins.Container.Image {
		t.Fatalf("labels/image %v %s", cfg.Labels, cfg.Image)
	}
	select {
	case res := <-done:
		if res.Outcome != runtime.Error || !strings.Contains(res.Detail, "cancel") {
			t.Fatalf("cancelled run: %+v", res)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("cancel did not stop the run")
	}
	assertGone(t, r, spec.RunID)
}

func TestImageRetaggedMidRunIsError(t *testing.T) {
	r, ref := sandbox(t)
	ctx := context.Background()
	bin, err := testimage.HelperBinary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	other, err := testimage.Import(ctx, "proofgate-test/other", append(testimage.HelperFiles(bin), testimage.File{Path: "/etc/other", Mode: 0o644, Body: []byte("other")}))
	if err != nil {
		t.Fatal(err)
	}
	live := "proofgate-test/retag:" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if _, err := r.cli.ImageTag(ctx, client.ImageTagOptions{Source: ref, Target: live}); err != nil {
		t.Fatal(err)
	}
	defer r.cli.ImageRemove(ctx, live, client.ImageRemoveOptions{})
	spec := helperSpec(live, "sleep", "3")
	spec.RunID = uniqueRun(t)
	done := make(chan *ran, 1)
	go func() { done <- check(t, r, spec, 1<<20) }()
	for deadline := time.Now().Add(20 * time.Second); len(containersOf(t, r, spec.RunID)) == 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := r.cli.ImageTag(ctx, client.ImageTagOptions{Source: other, Target: live}); err != nil {
		t.Fatal(err)
	}
	res := <-done
	assertOutcome(t, res, runtime.Error)
	if !strings.Contains(res.Detail, "changed during the run") {
		t.Fatalf("detail %q", res.Detail)
	}
}

// TestNetworkNoneOwnNamespace: the network-none sandbox has only loopback,
// "localhost" resolves (the harness's read-only /etc/hosts), and that file
// cannot be written from the check.
func TestNetworkNoneOwnNamespace(t *testing.T) {
	r, ref := sandbox(t)
	if r.hostsFile == "" {
		t.Fatal("no sandbox hosts file outside a container: the fast network-none path is off")
	}
	res := check(t, r, helperSpec(ref, "cat", "/proc/net/dev"), 1<<20)
	assertOutcome(t, res, runtime.Passed)
	if res.Attestation.Profile["network_namespace"] != "private" {
		t.Fatalf("profile network_namespace %v", res.Attestation.Profile["network_namespace"])
	}
	var ifaces []string
	for _, l := range strings.Split(res.stdout.String(), "\n")[2:] {
		if name, _, ok := strings.Cut(strings.TrimSpace(l), ":"); ok {
			ifaces = append(ifaces, name)
		}
	}
	if strings.Join(ifaces, ",") != "lo" {
		t.Fatalf("interfaces %v, want lo only:\n%s", ifaces, res.stdout.String())
	}
	res = check(t, r, helperSpec(ref, "lookup", "localhost"), 1<<20)
	assertOutcome(t, res, runtime.Passed)
	if !strings.Contains(res.stdout.String(), "127.0.0.1") {
		t.Fatalf("localhost: %q", res.stdout.String())
	}
	spec := helperSpec(ref, "write", "/etc/hosts", "1")
	spec.Sandbox.AllowRoot = true
	res = check(t, r, spec, 1<<20)
	assertOutcome(t, res, runtime.Failed)
	if b, err := os.ReadFile(r.hostsFile); err != nil || string(b) != sandboxHosts {
		t.Fatalf("hosts file changed: %q %v", b, err)
	}
	// A check may not mount over it either.
	spec = helperSpec(ref, "true")
	spec.Sandbox.Mounts = []runtime.Mount{{Source: r.hostsFile, Target: "/etc/hosts"}}
	res = check(t, r, spec, 1<<20)
	assertOutcome(t, res, runtime.Error)
}

// The tmpfs mounts must allow exec (go test runs its binaries from /tmp)
// but never setuid binaries or device files.
func TestTmpfsExecButNosuidNodev(t *testing.T) {
	r, ref := sandbox(t)
	res := check(t, r, helperSpec(ref, "cat", "/proc/self/mountinfo"), 1<<20)
	assertOutcome(t, res, runtime.Passed)
	found := 0
	for _, line := range strings.Split(res.stdout.String(), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || (f[4] != "/tmp" && f[4] != Home) {
			continue
		}
		found++
		opts := "," + f[5] + ","
		if strings.Contains(opts, ",noexec,") || !strings.Contains(opts, ",nosuid,") || !strings.Contains(opts, ",nodev,") {
			t.Errorf("%s mounted %s, want exec,nosuid,nodev", f[4], f[5])
		}
	}
	if found != 2 {
		t.Fatalf("found %d of the 2 tmpfs mounts in:\n%s", found, res.stdout.String())
	}
}
