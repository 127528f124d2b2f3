package app

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/proofgate/proofgate/internal/cache"
	"github.com/proofgate/proofgate/kernel/exit"
)

// The run-lifetime caches of a run that is gone are removed before the
// containers are; a Docker daemon that does not answer is an environment
// error that keeps what was done before it. A missing cache root is none.
func TestCollectOrphans(t *testing.T) {
	state, r := executed(t)
	r.Close()
	root := t.TempDir()
	gone := filepath.Join(root, "run-0123456789abcdef")
	os.MkdirAll(filepath.Join(gone, "go-mod"), 0o755)
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "no.sock"))
	o := OrphanOptions{State: state, CacheRoot: root, Now: time.Now()}
	res, err := CollectOrphans(context.Background(), o)
	if class(err) != exit.Environment || len(res.Processes) != 0 || len(res.RunCaches) != 1 || res.RunCaches[0].Action != cache.ActionRemoved {
		t.Fatalf("no daemon: %+v, %v", res, err)
	}
	if _, err := os.Stat(gone); !os.IsNotExist(err) {
		t.Fatalf("the run cache is still there: %v", err)
	}
	o.CacheRoot = filepath.Join(root, "none")
	if res, err := CollectOrphans(context.Background(), o); class(err) != exit.Environment || res.RunCaches != nil {
		t.Fatalf("no cache root: %+v, %v", res, err)
	}
}
