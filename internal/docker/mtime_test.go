package docker

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A copy-mode workspace keeps the checkout's modification times, files
// and directories alike, while the check runs. Go's test cache keys a
// test's opened files and listed directories by size and mtime, not
// content: with one fixed mtime for every file, a data file changed at
// the same size was answered from the cache of an older commit; with
// directory mtimes set by the unpacking (the time the copy ran), a test
// that lists its package directory never hit the cache.
func TestCopyModeKeepsModTimes(t *testing.T) {
	r, ref := sandbox(t)
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, "sub", "deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"a.txt", "sub/b.txt", "sub/deep/c.txt"} {
		if err := os.WriteFile(filepath.Join(ws, f), []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("a.txt", filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	base := time.Date(2024, 5, 1, 12, 0, 0, 123456789, time.UTC)
	want := map[string]time.Time{}
	// Children first: setting a directory's time does not touch its parent's.
	for i, p := range []string{"sub/deep/c.txt", "sub/deep", "sub/b.txt", "sub", "a.txt", "."} {
		ts := base.Add(time.Duration(i) * time.Hour)
		if err := os.Chtimes(filepath.Join(ws, p), ts, ts); err != nil {
			t.Fatal(err)
		}
		want[filepath.Join(WorkspaceTarget, p)] = ts
	}
	argv := []string{"mtime"}
	for p := range want {
		argv = append(argv, p)
	}
	spec := helperSpec(ref, argv...)
	spec.Workspace, spec.Sandbox.Workspace = ws, "copy"
	out := check(t, r, spec, 1<<20)
	if out.Outcome != "passed" {
		t.Fatalf("%+v\n%s%s", out.Result, out.stdout.String(), out.stderr.String())
	}
	for _, l := range strings.Split(strings.TrimSpace(out.stdout.String()), "\n") {
		var p string
		var ns int64
		if _, err := fmt.Sscanf(l, "%s %d", &p, &ns); err != nil {
			t.Fatalf("helper said %q: %v", l, err)
		}
		if got := time.Unix(0, ns).UTC(); !got.Equal(want[p]) {
			t.Errorf("%s: mtime %s in the sandbox, %s in the checkout", p, got, want[p])
		}
	}
}
