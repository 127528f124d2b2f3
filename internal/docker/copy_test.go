//go:build unix

package docker

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/proofgate/proofgate/kernel/runtime"
)

// volumeDiskBytes is the size of the regular files on the daemon's disk
// under <root>/volumes: a walk that does not descend into other
// filesystems (tmpfs volumes are mounted there), so other processes'
// writes elsewhere on a shared disk do not count.
func volumeDiskBytes(root string) int64 {
	dir := filepath.Join(root, "volumes")
	var top syscall.Stat_t
	if syscall.Stat(dir, &top) != nil {
		return 0
	}
	var n int64
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		var st syscall.Stat_t
		if syscall.Lstat(p, &st) != nil {
			return nil
		}
		if st.Dev != top.Dev {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			n += st.Blocks * 512
		}
		return nil
	})
	return n
}

// dockerRoot is the daemon's root directory when this process can read its
// volumes directory (a local daemon, run as root).
func dockerRoot(t *testing.T, r *Runtime) (string, bool) {
	info, err := r.cli.Info(context.Background(), client.InfoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := info.Info.DockerRootDir
	if dir == "" {
		return "", false
	}
	if _, err := os.ReadDir(filepath.Join(dir, "volumes")); err != nil {
		return "", false
	}
	return dir, true
}

// TestCopyModeWorkspaceLimit: a copy-mode check that tries to write 1 GiB
// into a workspace declared at 64 MiB ends workspace-limit, whether it then
// fails (write) or ignores the error and exits 0 (fill); it got at most the
// declared room, and the daemon's disk (its volumes directory, sampled
// during the check when this process can read it) grew by no more than the
// limit.
func TestCopyModeWorkspaceLimit(t *testing.T) {
	r, ref := sandbox(t)
	ws := workspace(t)
	const limit = 64 << 20
	root, local := dockerRoot(t, r)
	for _, argv := range [][]string{{"write", "/workspace/big", strconv.Itoa(1 << 30)}, {"fill", "/workspace/big", strconv.Itoa(1 << 30)}} {
		t.Run(argv[0], func(t *testing.T) {
			spec := helperSpec(ref, argv...)
			spec.Workspace, spec.Sandbox.Workspace, spec.Sandbox.WorkspaceSize = ws, "copy", limit
			spec.Sandbox.Memory = 512 << 20
			var peak atomic.Int64
			stop := make(chan struct{})
			var wg sync.WaitGroup
			if local {
				before := volumeDiskBytes(root)
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						if d := volumeDiskBytes(root) - before; d > peak.Load() {
							peak.Store(d)
						}
						select {
						case <-stop:
							return
						case <-time.After(20 * time.Millisecond):
						}
					}
				}()
			}
			res := check(t, r, spec, 1<<20)
			close(stop)
			wg.Wait()
			assertOutcome(t, res, runtime.WorkspaceLimit)
			if !strings.Contains(res.Detail, "workspace_size") {
				t.Errorf("detail %q does not name workspace_size", res.Detail)
			}
			if argv[0] == "fill" {
				var n int64
				if _, err := fmt.Sscanf(res.stdout.String(), "filled %d", &n); err != nil || n > limit {
					t.Errorf("the check wrote %d bytes (%q) into a %d-byte workspace", n, res.stdout.String(), limit)
				}
			}
			ws := res.Attestation.Profile["workspace"].(map[string]any)
			if ws["size"] != int64(limit) || ws["storage"] != "tmpfs-volume-removed-with-container" {
				t.Errorf("attested workspace %v", ws)
			}
			// Nothing of it landed on the daemon's disk (other checks on a
			// shared daemon may add a little: tolerated up to the limit).
			if local && peak.Load() > limit {
				t.Errorf("the daemon's disk grew by %d bytes during a check bounded to %d", peak.Load(), limit)
			}
			t.Logf("disk growth peak %d bytes (local=%v)", peak.Load(), local)
		})
	}
	// A workspace bigger than its bound is refused before the check runs.
	big := workspace(t)
	if err := os.WriteFile(filepath.Join(big, "blob"), make([]byte, 2<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := helperSpec(ref, "true")
	spec.Workspace, spec.Sandbox.Workspace, spec.Sandbox.WorkspaceSize = big, "copy", 1<<20
	res := check(t, r, spec, 1<<20)
	assertOutcome(t, res, runtime.WorkspaceLimit)
	// Within the bound all is as before.
	spec = helperSpec(ref, "fill", "/workspace/ok", strconv.Itoa(1<<20))
	spec.Workspace, spec.Sandbox.Workspace, spec.Sandbox.WorkspaceSize = ws, "copy", limit
	res = check(t, r, spec, 1<<20)
	assertOutcome(t, res, runtime.Passed)
	if res.stdout.String() != "filled 1048576\n" {
		t.Fatalf("fill: %q", res.stdout.String())
	}
}

// TestCopyUnderChurningSibling: copies of a workspace whose state
// directory and build directory are churned by a sibling (blob temp files
// created and removed as fast as possible) all succeed; the state
// directory's runs/ is not copied, the contract next to it is.
func TestCopyUnderChurningSibling(t *testing.T) {
	r, ref := sandbox(t)
	ws := workspace(t)
	blobs := filepath.Join(ws, ".proofgate", "runs", "r1", "blobs", "sha256")
	build := filepath.Join(ws, "build", "cache")
	for _, d := range []string{blobs, build} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(ws, ".proofgate", "contract.yaml"), []byte("version: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, ".proofgate", "runs", "r1", "events.lock"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var churned atomic.Int64
	for _, dir := range []string{blobs, build, filepath.Join(ws, "build")} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				// A new directory now and then, removed again: a vanishing
				// directory as well as vanishing files.
				p := filepath.Join(dir, fmt.Sprintf(".tmp-%d", i))
				if i%7 == 0 {
					os.Mkdir(p, 0o755)
					os.WriteFile(filepath.Join(p, "f"), []byte("x"), 0o644)
					os.RemoveAll(p)
				} else {
					os.WriteFile(p, make([]byte, 4096), 0o644)
					os.Remove(p)
				}
				churned.Add(1)
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()
	exclude := []string{".proofgate/runs"}
	for i := range 8 {
		spec := helperSpec(ref, "cat", "/workspace/sub/file.txt")
		spec.Workspace, spec.Sandbox.Workspace, spec.Exclude = ws, "copy", exclude
		res := check(t, r, spec, 1<<20)
		assertOutcome(t, res, runtime.Passed)
		if res.stdout.String() != "original\n" {
			t.Fatalf("copy %d read %q", i, res.stdout.String())
		}
	}
	for p, want := range map[string]runtime.Outcome{
		"/workspace/.proofgate/contract.yaml":       runtime.Passed,
		"/workspace/.proofgate/runs":                runtime.Failed,
		"/workspace/.proofgate/runs/r1/events.lock": runtime.Failed,
	} {
		spec := helperSpec(ref, "stat", p)
		spec.Workspace, spec.Sandbox.Workspace, spec.Exclude = ws, "copy", exclude
		res := check(t, r, spec, 1<<20)
		assertOutcome(t, res, want)
		if want == runtime.Failed && !strings.Contains(res.stdout.String(), "no such file") {
			t.Fatalf("%s: %q", p, res.stdout.String())
		}
	}
	if churned.Load() < 100 {
		t.Fatalf("the sibling churned only %d files", churned.Load())
	}
}
