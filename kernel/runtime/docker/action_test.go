package docker

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
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
	cmd := exec.CommandContext(ctx, dockerCLI, "run", "--rm", "--network", "none",
		"-v", sock+":/var/run/docker.sock",
		"-v", ws+":/github/workspace",
		"-e", "HELPER_IMAGE="+ref, "-e", "RUN_ID="+run,
		outer, "/bin/inner")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("outer container: %v\n%s\n%s", err, out, stderr.String())
	}
	modes := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var line struct {
			Mode        string `json:"mode"`
			InContainer bool   `json:"in_container"`
			Outcome     string `json:"outcome"`
			Detail      string `json:"detail"`
			Stdout      string `json:"stdout"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("%q: %v", sc.Text(), err)
		}
		if !line.InContainer || line.Outcome != "passed" || line.Stdout != content {
			t.Fatalf("%s: %+v", line.Mode, line)
		}
		modes[line.Mode] = true
	}
	if !modes["readonly"] || !modes["copy"] {
		t.Fatalf("modes %v; output %s", modes, out)
	}
	assertGone(t, r, run)
}
