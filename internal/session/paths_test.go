//go:build unix

package session_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/proofgate/proofgate/internal/process"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/internal/session"
	"github.com/proofgate/proofgate/internal/tool"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/replay"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// secret is a file outside the work tree a path argument must never reach.
const secret = "outside-the-tree-secret\n"

// pathFixture plans a run whose one tool, read, cats its path argument
// (process runtime: the tool opens the path itself, in the work tree).
func pathFixture(t *testing.T) (*fixture, string) {
	t.Helper()
	f := &fixture{repo: gitRepo(t)}
	c, err := contract.Parse("contract.yaml", []byte(base), "")
	if err != nil {
		t.Fatal(err)
	}
	read := contract.Tool{Name: "read", Run: []string{"/bin/cat", "--", "{{path}}"}, Runtime: "process", Pull: "never",
		Network: "none", Workspace: "readonly", Timeout: contract.Duration(3 * time.Second), Output: 1 << 20,
		Params: map[string]contract.Param{"path": {Type: contract.ParamPath, Required: true}}}
	c.Tools = []contract.Tool{read}
	c.Policy = []contract.Rule{{ID: "read", Tool: "read", Effect: "allow"}}
	f.c = c
	f.state = filepath.Join(f.repo, ".proofgate")
	r, err := run.Plan(context.Background(), run.PlanOptions{RepoDir: f.repo, StateDir: f.state, Contract: c, Origin: "test", Implement: true})
	if err != nil {
		t.Fatal(err)
	}
	f.id = r.ID
	r.Close()
	out := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(out, []byte(secret), 0o644); err != nil {
		t.Fatal(err)
	}
	return f, out
}

func in(t *testing.T, f *fixture, rel string, make func(p string) error) {
	t.Helper()
	p := filepath.Join(f.repo, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := make(p); err != nil {
		t.Fatal(err)
	}
}

func link(target string) func(string) error {
	return func(p string) error { return os.Symlink(target, p) }
}

// readPath calls read with path and returns the result and the error.
func readPath(t *testing.T, o session.Options, path string) (session.Result, error) {
	t.Helper()
	s, err := session.Start(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.End("test")
	args, _ := jsonObject("path", path)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return s.Call(ctx, session.Call{Tool: "read", Args: args})
}

func jsonObject(k, v string) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"` + k + `":"`)
	b.WriteString(strings.ReplaceAll(v, `"`, `\"`))
	b.WriteString(`"}`)
	return b.Bytes(), nil
}

func TestPathArgumentStaysInTheTree(t *testing.T) {
	f, outside := pathFixture(t)
	outDir := filepath.Dir(outside)
	rel, err := filepath.Rel(f.repo, outside)
	if err != nil {
		t.Fatal(err)
	}
	in(t, f, "abs-link", link(outside))
	in(t, f, "sub/rel-link", link("../"+rel))
	in(t, f, "chain-1", link("chain-2"))
	in(t, f, "chain-2", link("sub/rel-link"))
	in(t, f, "dir-link", link(outDir))
	in(t, f, "fifo", func(p string) error { return syscall.Mkfifo(p, 0o600) })
	in(t, f, "proc-link", link("/proc/self/root"+outside))
	in(t, f, "docs/alias", link("../README.md")) // a link that stays inside is fine
	for _, c := range []struct {
		path, why string
	}{
		{"abs-link", "an absolute link out of the tree"},
		{"sub/rel-link", "a relative ../ link out of the tree"},
		{"chain-1", "a chain of links whose last one leaves the tree"},
		{"dir-link/secret", "a directory link out of the tree"},
		{"proc-link", "a link through /proc"},
		{"sub/../../" + rel, "a .. element"},
		{"fifo", "a named pipe (cat would block until the timeout)"},
	} {
		res, err := readPath(t, f.opts("agent"), c.path)
		if strings.Contains(string(res.Stdout), "secret") {
			t.Fatalf("%s: %s: the tool read the file outside the tree: %q", c.path, c.why, res.Stdout)
		}
		var ae *tool.ArgError
		if !errors.As(err, &ae) || ae.Reason != tool.ReasonPath || ae.Param != "path" {
			t.Errorf("%s (%s): %v, %+v; want a path ArgError", c.path, c.why, err, res)
		}
	}
	res, err := readPath(t, f.opts("agent"), "docs/alias")
	if err != nil || string(res.Stdout) != "hi\n" {
		t.Fatalf("a link inside the tree: %v %q", err, res.Stdout)
	}
	// A missing path (a tool may create it) is allowed when its
	// directory is inside the tree, refused when that directory is not.
	if _, err := readPath(t, f.opts("agent"), "sub/new-file"); err != nil {
		t.Fatalf("a missing file in the tree: %v", err)
	}
	var ae *tool.ArgError
	if _, err := readPath(t, f.opts("agent"), "dir-link/new-file"); !errors.As(err, &ae) {
		t.Fatalf("a missing file under a link out of the tree: %v", err)
	}
}

func TestPathArgumentRefusesADevice(t *testing.T) {
	f, _ := pathFixture(t)
	p := filepath.Join(f.repo, "zero")
	if err := syscall.Mknod(p, syscall.S_IFCHR|0o600, int(1<<8|5)); err != nil {
		t.Skipf("mknod needs privileges here: %v", err) // not root: no device can be made in the tree either
	}
	var ae *tool.ArgError
	if _, err := readPath(t, f.opts("agent"), "zero"); !errors.As(err, &ae) || ae.Reason != tool.ReasonPath {
		t.Fatalf("a device in the tree: %v", err)
	}
}

// swapping runs the process runtime after replacing the file at p with a
// link out of the tree: the moment between ProofGate's check and the
// tool's own open.
type swapping struct {
	p, target string
}

func (s swapping) Run(ctx context.Context, spec runtime.Spec, stdout, stderr *runtime.Capture) runtime.Result {
	os.Remove(s.p)
	os.Symlink(s.target, s.p)
	return process.New().Run(ctx, spec, stdout, stderr)
}

func TestPathArgumentSwappedForALinkAfterTheCheck(t *testing.T) {
	f, outside := pathFixture(t)
	in(t, f, "doc.txt", func(p string) error { return os.WriteFile(p, []byte("inside\n"), 0o644) })
	o := f.opts("agent")
	o.Runtime = func(string) (runtime.Runtime, error) {
		return swapping{p: filepath.Join(f.repo, "doc.txt"), target: outside}, nil
	}
	res, err := readPath(t, o, "doc.txt")
	if strings.Contains(string(res.Stdout), "secret") {
		t.Fatalf("the swapped link was read: %q", res.Stdout)
	}
	if err != nil || res.Result != replay.ResultDenied || res.Outcome != runtime.Error {
		t.Fatalf("a path swapped during the call: %v %+v; want the call finished as denied (error)", err, res)
	}
	// The evidence holds no byte of the secret either.
	for _, e := range f.events(t) {
		if bytes.Contains(e.Data, []byte("outside-the-tree")) {
			t.Fatalf("event %s holds the secret", e.Type)
		}
	}
}
