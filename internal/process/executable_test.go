//go:build unix

package process_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/internal/process"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// shimAndReal makes a version manager's layout: shims/pg-tool, a script
// that runs the interpreter, and real/pg-tool, a symlink to the helper
// binary (as /usr/bin/python3 -> python3.12 is).
func shimAndReal(t *testing.T) (shims, real string) {
	t.Helper()
	root := t.TempDir()
	shims, real = filepath.Join(root, "shims"), filepath.Join(root, "real")
	for _, d := range []string{shims, real} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script := "#!/bin/sh\nexec " + helper + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(shims, "pg-tool"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	linkHelper(t, real, "pg-tool")
	return shims, real
}

// TestExecutableAttested: the attestation records the file argv[0]
// resolved to on the check's PATH: the first match, so a shim directory
// earlier on the harness's PATH wins over the real interpreter; a symlink
// is recorded with what it resolves to.
func TestExecutableAttested(t *testing.T) {
	shims, real := shimAndReal(t)
	t.Setenv("PATH", shims+string(os.PathListSeparator)+real)
	spec := runtime.Spec{Argv: []string{"pg-tool", "exit", "0"}, FromHost: []string{"PATH"}}
	r := run(t, context.Background(), spec, 0)
	want(t, r, runtime.Passed, 0)
	wantExecutable(t, r.Attestation, map[string]any{"path": filepath.Join(shims, "pg-tool")})

	// The real directory first: the symlink, and the binary it names.
	r = run(t, context.Background(), runtime.Spec{Argv: []string{"pg-tool", "exit", "0"},
		Env: map[string]string{"PATH": real + ":" + shims}}, 0)
	want(t, r, runtime.Passed, 0)
	target, err := filepath.EvalSymlinks(helper)
	if err != nil {
		t.Fatal(err)
	}
	wantExecutable(t, r.Attestation, map[string]any{"path": filepath.Join(real, "pg-tool"), "resolved": target})

	// Not found: nothing to record.
	r = run(t, context.Background(), runtime.Spec{Argv: []string{"pg-tool"}, Env: map[string]string{"PATH": t.TempDir()}}, 0)
	want(t, r, runtime.Error, -1)
	if _, has := r.Attestation.Profile["executable"]; has {
		t.Fatalf("executable recorded for a check that did not start: %v", r.Attestation.Profile)
	}
}

func wantExecutable(t *testing.T, a runtime.Attestation, w map[string]any) {
	t.Helper()
	got, ok := a.Profile["executable"].(map[string]any)
	if !ok || len(got) != len(w) {
		t.Fatalf("profile executable %#v, want %#v", a.Profile["executable"], w)
	}
	for k, v := range w {
		if got[k] != v {
			t.Fatalf("profile executable %#v, want %#v", got, w)
		}
	}
}

// TestFind: Find resolves as Run does (doctor's view of a check), says
// where the PATH came from, and names the PATH searched when nothing is
// found.
func TestFind(t *testing.T) {
	shims, real := shimAndReal(t)
	ws := t.TempDir()
	host := func(k string) (string, bool) {
		if k == "PATH" {
			return shims + ":" + real, true
		}
		return "", false
	}
	l, err := process.Find(runtime.Spec{Argv: []string{"pg-tool"}, FromHost: []string{"PATH"}, Workspace: ws}, host)
	if err != nil {
		t.Fatal(err)
	}
	if l.Executable.Path != filepath.Join(shims, "pg-tool") || l.Executable.Resolved != "" || l.PathFrom != process.PathFromHost {
		t.Fatalf("lookup %+v", l)
	}
	if !l.Executable.Script {
		t.Fatalf("the shim is a script: %+v", l)
	}
	l, err = process.Find(runtime.Spec{Argv: []string{"pg-tool"}, Env: map[string]string{"PATH": real}, Workspace: ws}, host)
	if err != nil || l.PathFrom != process.PathFromEnv || l.SearchPath != real || l.Executable.Script || l.Executable.Resolved == "" {
		t.Fatalf("the declared PATH, and the symlink it finds: %+v %v", l, err)
	}
	_, err = process.Find(runtime.Spec{Argv: []string{"pg-tool"}, Workspace: ws}, host)
	var nf *process.NotFoundError
	if !errors.As(err, &nf) || nf.PathFrom != process.PathFromDefault || !strings.Contains(err.Error(), process.DefaultPath) || !strings.Contains(err.Error(), "default PATH") {
		t.Fatalf("without PATH the default is searched: %v", err)
	}
	// A directory that is not there is not "not found".
	_, err = process.Find(runtime.Spec{Argv: []string{"pg-tool"}, Dir: "no-such-dir", Workspace: ws}, host)
	if err == nil || errors.As(err, &nf) {
		t.Fatalf("missing dir: %v", err)
	}
	_, err = process.Find(runtime.Spec{Argv: []string{"pg-tool"}, FromHost: []string{"PATH"}, Workspace: ws},
		func(string) (string, bool) { return t.TempDir(), true })
	if err == nil || !strings.Contains(err.Error(), "PATH from the harness (env_from_host)") {
		t.Fatalf("error names where PATH came from: %v", err)
	}
}
