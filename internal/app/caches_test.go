package app

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/proofgate/proofgate/internal/cache"
	"github.com/proofgate/proofgate/kernel/exit"
)

// An old pull-request scope is listed, then removed; the default scope
// never is; a prune without a selection, or of the default scope, is a
// usage error.
func TestPruneCaches(t *testing.T) {
	root := t.TempDir()
	old := time.Now().Add(-30 * 24 * time.Hour)
	for _, p := range []string{"pr-7/go-mod/a", "default/go-mod/a"} {
		os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755)
		os.WriteFile(filepath.Join(root, p), []byte("abc"), 0o644)
		for d := filepath.Join(root, p); d != root; d = filepath.Dir(d) {
			os.Chtimes(d, old, old)
		}
	}
	o := CachePruneOptions{Root: root, OlderThan: "14d"}
	dry, err := PruneCaches(o)
	if err != nil || dry.Apply || dry.Removed != 1 || dry.Bytes != 3 || dry.OlderThan != "14d" {
		t.Fatalf("dry run %+v, %v", dry, err)
	}
	o.Apply = true
	res, err := PruneCaches(o)
	if err != nil || res.Removed != 1 || res.Scopes[0].Action != cache.ActionRemoved {
		t.Fatalf("apply %+v, %v", res, err)
	}
	if _, err := os.Stat(filepath.Join(root, "pr-7")); !os.IsNotExist(err) {
		t.Fatalf("pr-7 is still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "default", "go-mod", "a")); err != nil {
		t.Fatal(err)
	}
	if _, err := PruneCaches(CachePruneOptions{Root: root}); class(err) != exit.Usage {
		t.Fatalf("no selection: %v", err)
	}
	if _, err := PruneCaches(CachePruneOptions{Root: root, Scopes: []string{"default"}, Apply: true}); class(err) != exit.Usage {
		t.Fatalf("the default scope: %v", err)
	}
}
