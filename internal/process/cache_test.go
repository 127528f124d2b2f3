package process_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proofgate/proofgate/internal/process"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// TestCachesRefused: the process runtime refuses a spec with caches before
// running anything (the contract refuses them too).
func TestCachesRefused(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	var out, errb bytes.Buffer
	spec := runtime.Spec{Argv: []string{"/bin/sh", "-c", "touch " + marker}, Workspace: dir, Timeout: 10 * time.Second,
		Sandbox: runtime.Sandbox{Caches: []runtime.Cache{{Name: "c", Mount: "/c", Mode: "rw", Source: dir}}}}
	res := process.New().Run(context.Background(), spec, runtime.NewCapture(&out, 1<<10), runtime.NewCapture(&errb, 1<<10))
	if res.Outcome != runtime.Error || !strings.Contains(res.Detail, "caches need the docker runtime") {
		t.Fatalf("%+v", res)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the check ran")
	}
}
