package testimage

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proofgate/proofgate/internal/docker"
	"github.com/proofgate/proofgate/kernel/runtime"
)

func TestKeepGoRoot(t *testing.T) {
	for rel, want := range map[string]bool{
		"VERSION": true, "go.env": true, "bin/go": true, "lib/time/zoneinfo.zip": true,
		"pkg/include/textflag.h": true, "pkg/tool/linux_amd64/compile": true, "src/fmt/print.go": true,
		"api/go1.txt": false, "doc/go_spec.html": false, "test/run.go": false, "misc/x": false,
		"pkg/tool/linux_arm64/compile": false, "pkg/linux_amd64_race/x.a": false,
		"src/fmt/fmt_test.go": false, "src/fmt/testdata": false, "README.md": false,
	} {
		dir := !strings.Contains(filepath.Base(rel), ".") && rel != "VERSION" && !strings.HasPrefix(rel, "bin/") && !strings.Contains(rel, "tool/")
		if rel == "src/fmt/testdata" {
			dir = true
		}
		if got := keepGoRoot(rel, dir, "linux_amd64"); got != want {
			t.Errorf("keepGoRoot(%q) = %v, want %v", rel, got, want)
		}
	}
}

// TestGoRootFilesRefusesSpecialFiles: a symlink in a kept part of GOROOT
// is an error, never followed out of the tree.
func TestGoRootFilesRefusesSpecialFiles(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "src", "fmt"), 0o755)
	os.WriteFile(filepath.Join(root, "VERSION"), []byte("go1.x\n"), 0o644)
	if err := os.Symlink("/etc/passwd", filepath.Join(root, "src", "fmt", "print.go")); err != nil {
		t.Fatal(err)
	}
	if _, err := GoRootFiles(root, "linux_amd64"); err == nil || !strings.Contains(err.Error(), "neither a directory nor a regular file") {
		t.Fatalf("symlink accepted: %v", err)
	}
	if _, err := GoRootFiles(t.TempDir(), "linux_amd64"); err == nil {
		t.Fatal("empty GOROOT accepted")
	}
}

// TestWriteTarSourceMissing: a Source file that cannot be read fails the
// tar (one that shrinks while copied fails in io.CopyN the same way).
func TestWriteTarSourceMissing(t *testing.T) {
	err := WriteTar(&bytes.Buffer{}, []File{{Path: "/x", Mode: 0o644, Source: filepath.Join(t.TempDir(), "absent")}})
	if err == nil {
		t.Fatal("missing source accepted")
	}
}

// goModule writes a module at dir whose package uses github.com/gowebpki/jcs
// and fills modcache with it (RequireJCS).
func goModule(t *testing.T, dir, modcache string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	RequireJCS(t, dir, modcache)
}

const gmGo = `package gm

import "github.com/gowebpki/jcs"

// Canon canonicalises a JSON text.
func Canon(s string) (string, error) {
	b, err := jcs.Transform([]byte(s))
	return string(b), err
}
`

const gmTest = `package gm

import "testing"

func TestCanon(t *testing.T) {
	got, err := Canon(` + "`" + `{"b":1, "a":2}` + "`" + `)
	if err != nil || got != ` + "`" + `{"a":2,"b":1}` + "`" + ` {
		t.Fatalf("%q %v", got, err)
	}
}
`

// goBuildCache is a build cache kept between test runs (the first run
// compiles the standard library: about a minute on two cores), one per
// image, writable by the sandbox user. Go's cache is safe for concurrent
// use.
func goBuildCache(t *testing.T, ref string) string {
	base, err := os.UserCacheDir()
	if err != nil {
		return t.TempDir()
	}
	dir := filepath.Join(base, "proofgate-test", "go-build-"+ref[strings.LastIndex(ref, ":")+1:])
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	return dir
}

type goCheck struct {
	r        *docker.Runtime
	ref, ws  string
	modcache string
	gocache  string
}

func (g *goCheck) run(t *testing.T, env map[string]string, argv ...string) (runtime.Result, string) {
	t.Helper()
	e := map[string]string{"HOME": "/home/sandbox", "GOCACHE": "/cache/go-build", "GOMODCACHE": "/cache/go-mod",
		"GOFLAGS": "-mod=readonly", "GOPROXY": "off"}
	for k, v := range env {
		e[k] = v
	}
	var out bytes.Buffer
	so, se := runtime.NewCapture(&out, 1<<20), runtime.NewCapture(&out, 1<<20)
	spec := runtime.Spec{
		RunID: "run-goimage", CheckID: strings.ReplaceAll(t.Name(), "/", "-"),
		Argv: argv, Workspace: g.ws, Env: e, Timeout: 5 * time.Minute,
		Sandbox: runtime.Sandbox{Image: g.ref, Network: "none", Workspace: "readonly", Memory: 2 << 30, Pids: 512, Tmpfs: 256 << 20,
			Mounts: []runtime.Mount{{Source: g.modcache, Target: "/cache/go-mod"}, {Source: g.gocache, Target: "/cache/go-build", Writable: true}}},
	}
	res := g.r.Run(context.Background(), spec, so, se)
	return res, out.String()
}

// TestGoImageOffline runs the Go toolchain image as ProofGate runs a
// check (network none, read-only root, read-only workspace, user nobody)
// on a module whose dependency comes from a read-only module cache mount.
func TestGoImageOffline(t *testing.T) {
	RequireDaemon(t)
	ctx := context.Background()
	t0 := time.Now()
	ref, err := EnsureGo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("EnsureGo %s in %v", ref, time.Since(t0))
	r, err := docker.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	g := &goCheck{r: r, ref: ref, ws: t.TempDir(), modcache: t.TempDir(), gocache: goBuildCache(t, ref)}
	os.Chmod(g.ws, 0o755)
	goModule(t, g.ws, g.modcache, map[string]string{
		"go.mod": "module example.com/gm\n\ngo 1.26\n",
		"gm.go":  gmGo, "gm_test.go": gmTest,
	})
	want, _ := exec.Command("go", "env", "GOVERSION").Output()

	t.Run("version", func(t *testing.T) {
		res, out := g.run(t, nil, "go", "version")
		if res.Outcome != runtime.Passed || !strings.Contains(out, "go version "+strings.TrimSpace(string(want))+" linux/") {
			t.Fatalf("%s %q: %s", res.Outcome, res.Detail, out)
		}
	})
	for _, argv := range [][]string{{"go", "vet", "./..."}, {"go", "test", "-count=1", "./..."}, {"go", "build", "./..."}} {
		t.Run(argv[1], func(t *testing.T) {
			t0 := time.Now()
			res, out := g.run(t, nil, argv...)
			if res.Outcome != runtime.Passed {
				t.Fatalf("%v: %s (%s): %s", argv, res.Outcome, res.Detail, out)
			}
			t.Logf("%v: %v", argv, time.Since(t0))
		})
	}
	t.Run("hostile", func(t *testing.T) { goImageHostile(t, g) })
}

// goImageHostile: the sandbox, not the image, is what keeps the check in.
func goImageHostile(t *testing.T, g *goCheck) {
	cases := []struct {
		name string
		env  map[string]string
		argv []string
		want string
	}{
		// The check cannot fetch: network none, whatever GOPROXY says.
		{"fetch-offline", map[string]string{"GOPROXY": "https://proxy.golang.org", "GOMODCACHE": "/tmp/empty-mod", "GOFLAGS": "-mod=mod"},
			[]string{"go", "mod", "download", "github.com/gowebpki/jcs"}, "dial tcp: lookup proxy.golang.org"},
		// The read-only module cache mount cannot be written.
		{"modcache-readonly", map[string]string{"GOFLAGS": "-modcacherw"},
			[]string{"go", "clean", "-modcache"}, "read-only file system"},
		// Nor can GOROOT (read-only root filesystem).
		{"goroot-readonly", nil, []string{"/bin/helper", "write", GoRoot + "/VERSION", "1"}, "read-only file system"},
		// vet and test really run: a printf mismatch and a failing test fail.
		{"vet-finds", nil, []string{"go", "vet", "./bad/vet"}, "wrong type"},
		{"test-fails", nil, []string{"go", "test", "-count=1", "./bad/test"}, "FAIL"},
	}
	for _, dir := range []string{"bad/vet", "bad/test"} {
		os.MkdirAll(filepath.Join(g.ws, dir), 0o755)
	}
	os.WriteFile(filepath.Join(g.ws, "bad/vet/v.go"), []byte("package vet\n\nimport \"fmt\"\n\nfunc F() string { return fmt.Sprintf(\"%d\", \"s\") }\n"), 0o644)
	os.WriteFile(filepath.Join(g.ws, "bad/test/t_test.go"), []byte("package test\n\nimport \"testing\"\n\nfunc TestNo(t *testing.T) { t.Fatal(\"no\") }\n"), 0o644)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, out := g.run(t, c.env, c.argv...)
			if res.Outcome != runtime.Failed || !strings.Contains(strings.ToLower(out), strings.ToLower(c.want)) {
				t.Fatalf("%v: %s (exit %d, %s), want failed with %q: %s", c.argv, res.Outcome, res.ExitCode, res.Detail, c.want, out)
			}
		})
	}
}
