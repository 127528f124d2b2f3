package docker

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/proofgate/proofgate/internal/testimage"
)

// TestInsideContainerActionTranslatesWorkspace runs the provider the way a
// GitHub container action runs ProofGate: inside a container that has the
// host's socket and the workspace at /github/workspace. The sandboxed check
// must read the workspace file, which needs /github/workspace translated to
// the host path (the daemon resolves bind sources on the host).
func TestInsideContainerActionTranslatesWorkspace(t *testing.T) {
	r, ref := sandbox(t)
	dockerCLI, err := exec.LookPath("docker")
	if err != nil {
		if os.Getenv("PROOFGATE_REQUIRE_DOCKER") == "1" {
			t.Fatal("docker CLI needed to start the outer container")
		}
		t.Skip("docker CLI absent")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	src, err := filepath.Abs(filepath.Join("testdata", "inner"))
	if err != nil {
		t.Fatal(err)
	}
	inner, err := testimage.BuildStatic(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	outer, err := testimage.Import(ctx, "proofgate-test/inner", []testimage.File{
		{Path: "/bin/inner", Mode: 0o755, Body: inner},
		{Path: "/etc/passwd", Mode: 0o644, Body: []byte("root:x:0:0:root:/root:/bin/inner\n")},
		{Path: "/tmp", Mode: os.ModeDir | os.ModeSticky | 0o777},
	})
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	os.Chmod(ws, 0o755)
	content := "workspace-content-" + strconv.FormatInt(time.Now().UnixNano(), 10) + "\n"
	if err := os.WriteFile(filepath.Join(ws, "data.txt"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	sock := strings.TrimPrefix(r.cli.DaemonHost(), "unix://")
	run := uniqueRun(t)
	// The runner's own setup (bridge network: the hostname is the short
	// id), host networking (the hostname is the host's), and custom
	// hostnames: the provider must find its container by id in each.
	// With a mounted $HOME (the runner's /github/home) the sandbox hosts
	// file lives there and network none gets its own namespace; without,
	// Docker's none sandbox is used.
	home := t.TempDir()
	os.Chmod(home, 0o755)
	withHome := []string{"-v", home + ":/github/home", "-e", "HOME=/github/home"}
	for _, net := range [][]string{
		{"--network", "none"},
		append([]string{"--network", "host"}, withHome...),
		{"--network", "none", "--hostname", "custom-harness"},
		append([]string{"--network", "host", "--hostname", "custom-harness"}, withHome...),
	} {
		wantNetns := "docker-none"
		if slices.Contains(net, "HOME=/github/home") {
			wantNetns = "private"
		}
		t.Run(strings.Join(net[:2], " ")+" "+wantNetns, func(t *testing.T) {
			cidfile := filepath.Join(t.TempDir(), "cid")
			args := append([]string{"run", "--rm", "--cidfile", cidfile}, net...)
			args = append(args,
				"-v", sock+":/var/run/docker.sock",
				"-v", ws+":/github/workspace",
				"-e", "HELPER_IMAGE="+ref, "-e", "RUN_ID="+run,
				outer, "/bin/inner")
			cmd := exec.CommandContext(ctx, dockerCLI, args...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("outer container: %v\n%s\n%s", err, out, stderr.String())
			}
			cid, err := os.ReadFile(cidfile)
			if err != nil || !isContainerID(string(cid)) {
				t.Fatalf("cidfile: %q %v", cid, err)
			}
			modes := map[string]bool{}
			sc := bufio.NewScanner(bytes.NewReader(out))
			for sc.Scan() {
				var line struct {
					Mode          string `json:"mode"`
					InContainer   bool   `json:"in_container"`
					SelfContainer string `json:"self_container"`
					Outcome       string `json:"outcome"`
					Detail        string `json:"detail"`
					Stdout        string `json:"stdout"`
					Netns         string `json:"netns"`
				}
				if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
					t.Fatalf("%q: %v", sc.Text(), err)
				}
				if !line.InContainer || line.SelfContainer != string(cid) || line.Outcome != "passed" || line.Stdout != content || line.Netns != wantNetns {
					t.Fatalf("%s: %+v (outer container %s)", line.Mode, line, cid)
				}
				modes[line.Mode] = true
			}
			if !modes["readonly"] || !modes["copy"] {
				t.Fatalf("modes %v; output %s", modes, out)
			}
			if left, _ := filepath.Glob(filepath.Join(home, "proofgate-sandbox-*")); len(left) != 0 {
				t.Fatalf("hosts dir left behind: %v", left)
			}
		})
	}
	assertGone(t, r, run)
}

// startSleeper starts a detached container of the helper image that sleeps,
// with args before the image, and returns its full id; it is removed at the
// end of the test.
func startSleeper(t *testing.T, ref string, args ...string) string {
	t.Helper()
	dockerCLI, err := exec.LookPath("docker")
	if err != nil {
		if os.Getenv("PROOFGATE_REQUIRE_DOCKER") == "1" {
			t.Fatal("docker CLI needed")
		}
		t.Skip("docker CLI absent")
	}
	argv := append([]string{"run", "-d", "--network", "none", "--label", LabelRun + "=" + uniqueRun(t)}, args...)
	argv = append(argv, ref, "/bin/helper", "sleep", "300")
	out, err := exec.Command(dockerCLI, argv...).CombinedOutput()
	if err != nil {
		t.Fatalf("docker run -d: %v %s", err, out)
	}
	id := strings.TrimSpace(string(out))
	if !isContainerID(id) {
		t.Fatalf("docker run -d printed %q", out)
	}
	t.Cleanup(func() { exec.Command(dockerCLI, "rm", "-f", id).Run() })
	return id
}

// TestFindSelfRealDaemon verifies candidates against real containers: the
// id found in mountinfo or cgroup, or the hostname, must name a running
// container one of whose mount destinations is a mount point of ours.
func TestFindSelfRealDaemon(t *testing.T) {
	r, ref := sandbox(t)
	ctx := context.Background()
	ws := t.TempDir()
	host := "pg-self-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	id := startSleeper(t, ref, "--hostname", host, "-v", ws+":/github/workspace:ro")
	decoy := startSleeper(t, ref, "--name", host, "-v", ws+":/github/workspace:ro") // named like our hostname, another hostname
	mine := func(id string) mountinfo {
		return parseMountinfo([]byte("1 0 8:1 /var/lib/docker/containers/" + id + "/hostname /etc/hostname rw - ext4 /dev/vda rw\n" +
			"2 0 8:1 " + ws + " /github/workspace ro - ext4 /dev/vda rw\n"))
	}
	wantSelf := func(name, gotID string, mounts []MountPoint, want string) {
		t.Helper()
		if gotID != want {
			t.Fatalf("%s: found %q, want %q", name, gotID, want)
		}
		if want == "" {
			if mounts != nil {
				t.Fatalf("%s: mounts %v without a container", name, mounts)
			}
			return
		}
		if hp, ok := TranslatePath(mounts, "/github/workspace/a"); !ok || hp != filepath.Join(ws, "a") {
			t.Fatalf("%s: translate: %q %v (mounts %v)", name, hp, ok, mounts)
		}
	}

	got, mounts := findSelf(ctx, r.cli, mine(id), nil, "runner-host", true)
	wantSelf("mountinfo", got, mounts, id)

	noWS := mine(id)
	delete(noWS.points, "/github/workspace")
	got, mounts = findSelf(ctx, r.cli, noWS, nil, "", false)
	wantSelf("mountinfo, its mounts are not ours", got, mounts, "")

	got, mounts = findSelf(ctx, r.cli, mountinfo{points: mine(id).points}, []byte("4:memory:/docker/"+id+"\n"), "", false)
	wantSelf("cgroup", got, mounts, id)

	// A stale id (a container that no longer exists) falls through to cgroup.
	gone := strings.Repeat("0", 63) + "1"
	got, mounts = findSelf(ctx, r.cli, mine(gone), []byte("0::/system.slice/docker-"+id+".scope\n"), "", false)
	wantSelf("stale mountinfo id, then cgroup", got, mounts, id)

	// By hostname, the daemon resolves the name to the decoy, whose own
	// hostname is its short id: refused, as outside a container.
	got, mounts = findSelf(ctx, r.cli, mountinfo{points: mine(id).points}, nil, host, true)
	wantSelf("hostname naming another container", got, mounts, "")
	got, mounts = findSelf(ctx, r.cli, mountinfo{points: mine(id).points}, nil, decoy[:12], true)
	wantSelf("hostname = short id (bridge network)", got, mounts, decoy)

	// A stopped container is not ours.
	if out, err := exec.Command("docker", "kill", id).CombinedOutput(); err != nil {
		t.Fatalf("docker kill: %v %s", err, out)
	}
	exec.Command("docker", "wait", id).Run()
	got, mounts = findSelf(ctx, r.cli, mine(id), nil, "", false)
	wantSelf("stopped container", got, mounts, "")
}
