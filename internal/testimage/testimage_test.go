package testimage

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestTarDeterministicWithParents(t *testing.T) {
	files := []File{{Path: "/a/b/c", Mode: 0o644, Body: []byte("x")}, {Path: "/s", Mode: 0o755 | os.ModeSetuid, Body: []byte("y")}}
	a, err := Tar(files)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Tar([]File{files[1], files[0]})
	if !bytes.Equal(a, b) {
		t.Fatal("tar depends on input order")
	}
	tr := tar.NewReader(bytes.NewReader(a))
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if h.Name == "s" && h.Mode&0o4000 == 0 {
			t.Fatalf("setuid bit lost: %o", h.Mode)
		}
	}
	if got := strings.Join(names, ","); got != "a/,a/b/,a/b/c,s" {
		t.Fatalf("entries %s", got)
	}
	if _, err := Tar([]File{{Path: "rel"}}); err == nil {
		t.Fatal("relative path accepted")
	}
}

func TestEnsureImportsRunnableImageIdempotently(t *testing.T) {
	RequireDaemon(t)
	ctx := context.Background()
	ref, err := Ensure(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(ref, HelperRepo+":") {
		t.Fatalf("ref %q", ref)
	}
	again, err := Ensure(ctx)
	if err != nil || again != ref {
		t.Fatalf("second Ensure = %q, %v; want %q", again, err, ref)
	}
	if _, err := exec.LookPath("docker"); err != nil {
		t.Skip("docker CLI absent; import verified through the API only")
	}
	out, err := exec.Command("docker", "run", "--rm", "--network", "none", "--user", "65534:65534", ref, "/bin/helper", "cat", "/etc/marker").CombinedOutput()
	if err != nil || string(out) != "proofgate-test-image\n" {
		t.Fatalf("marker: %q %v", out, err)
	}
	// The setuid bit survives the import: without no-new-privileges the
	// copy gains euid 0. The sandbox tests rely on this to be meaningful.
	out, err = exec.Command("docker", "run", "--rm", "--network", "none", "--user", "65534:65534", ref, "/bin/suid-helper", "id").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "euid=0") {
		t.Fatalf("suid-helper without no-new-privileges: %q %v", out, err)
	}
}
