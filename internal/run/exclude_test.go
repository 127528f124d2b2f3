package run

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestStateExclude: a workspace copy leaves out the state directory's runs/
// (run directories, blob temp files, events.lock) when the state directory
// lies in the workspace, by whatever path --state names it; not otherwise.
func TestStateExclude(t *testing.T) {
	repo := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(repo, link); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	for _, c := range []struct {
		state string
		want  []string
	}{
		{filepath.Join(repo, ".proofgate"), []string{".proofgate/runs"}},
		{filepath.Join(link, "build", "pg"), []string{"build/pg/runs"}},
		{repo, []string{"runs"}},
		{outside, nil},
	} {
		if got := stateExclude(repo, c.state); !slices.Equal(got, c.want) {
			t.Errorf("state %s: %v, want %v", c.state, got, c.want)
		}
	}
}
