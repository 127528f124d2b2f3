package release

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

const (
	image  = "ghcr.io/acme/proofgate:v1.2.3"
	digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	commit = "89abcdef0123456789abcdef0123456789abcdef"
)

var pinned = []string{"action.yml", "verify/action.yml", ".github/workflows/proofgate.yml"}

// tree copies the files the script rewrites into a temporary root.
func tree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for _, f := range pinned {
		b, err := os.ReadFile(filepath.Join("..", "..", f))
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func snapshot(t *testing.T, root string) map[string][]byte {
	t.Helper()
	m := map[string][]byte{}
	for _, f := range pinned {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		m[f] = b
	}
	return m
}

// pin runs scripts/release-pin.sh and returns its exit code and stderr.
func pin(t *testing.T, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command("bash", append([]string{filepath.Join("..", "..", "scripts", "release-pin.sh")}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, stderr.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), stderr.String()
	}
	t.Fatal(err)
	return -1, ""
}

// runsImage is runs.image of an action.yml, parsed as YAML.
func runsImage(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var a struct {
		Runs struct {
			Using string `yaml:"using"`
			Image string `yaml:"image"`
		} `yaml:"runs"`
	}
	if err := yaml.Unmarshal(b, &a); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if a.Runs.Using != "docker" {
		t.Fatalf("%s: runs.using %q", path, a.Runs.Using)
	}
	return a.Runs.Image
}

func TestPinActionRewritesBothFiles(t *testing.T) {
	root := tree(t)
	before := snapshot(t, root)
	if code, stderr := pin(t, "action", image, digest, root); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := "docker://" + image + "@" + digest
	for _, f := range []string{"action.yml", "verify/action.yml"} {
		if got := runsImage(t, filepath.Join(root, f)); got != want {
			t.Fatalf("%s: runs.image %q, want %q", f, got, want)
		}
		// Only the image line changed.
		after := snapshot(t, root)[f]
		if d := diffLines(before[f], after); d != 1 {
			t.Fatalf("%s: %d lines changed, want 1", f, d)
		}
	}
	// A second run finds nothing to pin and says so: never pinned twice.
	again := snapshot(t, root)
	code, stderr := pin(t, "action", image, digest, root)
	if code != 1 || !strings.Contains(stderr, "already pinned") {
		t.Fatalf("second run: exit %d, %s", code, stderr)
	}
	assertUnchanged(t, root, again)
}

func TestPinActionRefusesWhatIsNotADigest(t *testing.T) {
	for name, args := range map[string][2]string{
		"a tag for the digest":   {image, "v1.2.3"},
		"a digest without algo":  {image, strings.TrimPrefix(digest, "sha256:")},
		"a short digest":         {image, digest[:70]},
		"uppercase hex":          {image, strings.ToUpper(digest)},
		"another algorithm":      {image, "sha512:" + strings.Repeat("a", 64)},
		"a digest plus a suffix": {image, digest + "\n  image: Dockerfile"},
		"an empty digest":        {image, ""},
		"an image without a tag": {"ghcr.io/acme/proofgate", digest},
		"an uppercase owner":     {"ghcr.io/Acme/proofgate:v1", digest},
		"an image with a digest": {image + "@" + digest, digest},
		"an image with a space":  {"ghcr.io/acme/proofgate:v1 x", digest},
		"a docker:// image":      {"docker://" + image, digest},
	} {
		t.Run(name, func(t *testing.T) {
			root := tree(t)
			before := snapshot(t, root)
			code, stderr := pin(t, "action", args[0], args[1], root)
			if code != 2 {
				t.Fatalf("exit %d, want 2 (%s)", code, stderr)
			}
			assertUnchanged(t, root, before)
		})
	}
}

// A tree where one file is not in its development state is refused before
// anything is written: a release never ships one pinned file and one not.
func TestPinActionWritesNothingUnlessBothMatch(t *testing.T) {
	root := tree(t)
	vf := filepath.Join(root, "verify", "action.yml")
	b, _ := os.ReadFile(vf)
	os.WriteFile(vf, bytes.Replace(b, []byte("  image: ../Dockerfile"), []byte("  image: docker://elsewhere:1"), 1), 0o644)
	before := snapshot(t, root)
	code, stderr := pin(t, "action", image, digest, root)
	if code != 1 || !strings.Contains(stderr, "verify/action.yml") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	assertUnchanged(t, root, before)
}

func TestPinWorkflow(t *testing.T) {
	root := tree(t)
	if code, stderr := pin(t, "workflow", "acme/proofgate", commit, root); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	b, _ := os.ReadFile(filepath.Join(root, ".github/workflows/proofgate.yml"))
	if !bytes.Contains(b, []byte("\n        uses: acme/proofgate@"+commit+"\n")) || bytes.Contains(b, []byte("uses: ./\n")) {
		t.Fatalf("workflow not pinned:\n%s", b)
	}
	for name, args := range map[string][2]string{
		"a tag":          {"acme/proofgate", "v1"},
		"a short sha":    {"acme/proofgate", commit[:12]},
		"uppercase":      {"acme/proofgate", strings.ToUpper(commit)},
		"no owner":       {"proofgate", commit},
		"a path":         {"acme/proofgate/verify", commit},
		"already pinned": {"acme/proofgate", commit},
	} {
		t.Run(name, func(t *testing.T) {
			before := snapshot(t, root)
			code, _ := pin(t, "workflow", args[0], args[1], root)
			want := 2
			if name == "already pinned" {
				want = 1
			}
			if code != want {
				t.Fatalf("exit %d, want %d", code, want)
			}
			assertUnchanged(t, root, before)
		})
	}
}

func TestPinUsage(t *testing.T) {
	for _, args := range [][]string{{}, {"action", image}, {"unpin", image, digest}} {
		if code, _ := pin(t, args...); code != 2 {
			t.Fatalf("%v: exit %d, want 2", args, code)
		}
	}
}

func assertUnchanged(t *testing.T, root string, before map[string][]byte) {
	t.Helper()
	for f, b := range snapshot(t, root) {
		if !bytes.Equal(b, before[f]) {
			t.Fatalf("%s changed by a refused run", f)
		}
	}
}

func diffLines(a, b []byte) int {
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	if len(la) != len(lb) {
		return -1
	}
	n := 0
	for i := range la {
		if la[i] != lb[i] {
			n++
		}
	}
	return n
}
