package registrytest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// daemonWithMirror returns the mirror's address once the Docker daemon
// answers and lists it among its registry mirrors; a daemon that does not
// answer fails the test under PROOFGATE_REQUIRE_DOCKER=1 and skips it
// otherwise.
func daemonWithMirror(t *testing.T) string {
	t.Helper()
	addr := Mirror(t)
	out, err := exec.Command("docker", "info", "--format", "{{range .RegistryConfig.Mirrors}}{{println .}}{{end}}").CombinedOutput()
	if err != nil {
		if os.Getenv("PROOFGATE_REQUIRE_DOCKER") == "1" {
			t.Fatalf("docker required (PROOFGATE_REQUIRE_DOCKER=1): docker info: %v: %s", err, out)
		}
		t.Skipf("no docker daemon: %v", err)
	}
	want := "http://" + addr + "/"
	for _, m := range strings.Fields(string(out)) {
		if m == want {
			return addr
		}
	}
	t.Fatalf("the Docker daemon's registry mirrors are %q, want %s among them (run scripts/docker-up.sh)", strings.Fields(string(out)), want)
	return ""
}

// run runs a command with a deadline and returns its combined output,
// failing the test when it fails.
func run(t *testing.T, timeout time.Duration, dir string, env []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func docker(t *testing.T, args ...string) string {
	t.Helper()
	return run(t, 5*time.Minute, "", nil, "docker", args...)
}

// TestPullGolangThroughMirror pulls golang:1.26 as a GitHub runner would
// (a Docker Hub name, no registry in it), runs the host's go in it without
// a network, and checks that the digest the daemon records is the one the
// registry gives for the tag (what `proofgate init` pins), and that a pull
// by that digest works too.
func TestPullGolangThroughMirror(t *testing.T) {
	addr := daemonWithMirror(t)
	docker(t, "pull", "golang:1.26")
	host := run(t, time.Minute, "", nil, "go", "env", "GOVERSION")
	got := docker(t, "run", "--rm", "--network", "none", "golang:1.26", "go", "version")
	if !strings.HasPrefix(got, "go version "+host+" linux/") {
		t.Fatalf("go version in golang:1.26 = %q, want the host's %s", got, host)
	}
	ref, err := Ref(addr, "golang:1.26")
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Head(ref)
	if err != nil {
		t.Fatalf("remote.Head %s: %v", ref, err)
	}
	want := "golang@" + desc.Digest.String()
	digests := docker(t, "image", "inspect", "--format", "{{range .RepoDigests}}{{println .}}{{end}}", "golang:1.26")
	if !containsLine(digests, want) {
		t.Fatalf("RepoDigests of golang:1.26 = %q, want %s (the registry's digest for the tag)", digests, want)
	}
	docker(t, "pull", "golang:1.26@"+desc.Digest.String())
}

// TestPullNodeThroughMirror pulls node:20 and runs the host's node and npm
// in it without a network.
func TestPullNodeThroughMirror(t *testing.T) {
	daemonWithMirror(t)
	docker(t, "pull", "node:20")
	for _, tool := range []string{"node", "npm"} {
		host := run(t, time.Minute, "", nil, tool, "--version")
		if got := docker(t, "run", "--rm", "--network", "none", "node:20", tool, "--version"); got != host {
			t.Errorf("%s --version in node:20 = %q, want the host's %q", tool, got, host)
		}
	}
}

func containsLine(s, want string) bool {
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) == want {
			return true
		}
	}
	return false
}

// writeFiles writes name → content under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
