//go:build unix

package process_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/internal/process"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// TestFromHost: exactly the named harness variables reach the check, with
// the harness's values; one the harness lacks stays unset; nothing else of
// the harness leaks; the attestation records each name with the digest of
// its value (null when unset), never the value itself.
func TestFromHost(t *testing.T) {
	t.Setenv("PG_FROM_HOST", "secret-value-123")
	t.Setenv("GITHUB_TOKEN", "ghs_must_not_leak")
	t.Setenv("PG_UNSET_VAR", "")
	t.Setenv("PG_EMPTY", "")
	unsetEnv(t, "PG_UNSET_VAR")
	spec := runtime.Spec{Argv: []string{helper, "env"}, Env: map[string]string{"A": "1"},
		FromHost: []string{"PG_EMPTY", "PG_FROM_HOST", "PG_UNSET_VAR"}}
	r := run(t, context.Background(), spec, 0)
	want(t, r, runtime.Passed, 0)
	var got []string
	if err := json.Unmarshal(r.stdout.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if w := []string{"A=1", "PG_EMPTY=", "PG_FROM_HOST=secret-value-123"}; !slices.Equal(got, w) {
		t.Fatalf("env %q, want %q", got, w)
	}
	if spec.Env["PG_FROM_HOST"] != "" {
		t.Fatal("Run modified the caller's Env map")
	}
	rec, ok := r.Attestation.Profile["env_from_host"].(map[string]any)
	if !ok {
		t.Fatalf("no env_from_host in %v", r.Attestation.Profile)
	}
	sum := sha256.Sum256([]byte("secret-value-123"))
	empty := sha256.Sum256(nil)
	wantRec := map[string]any{"PG_FROM_HOST": "sha256:" + hex.EncodeToString(sum[:]),
		"PG_EMPTY": "sha256:" + hex.EncodeToString(empty[:]), "PG_UNSET_VAR": nil}
	if len(rec) != len(wantRec) {
		t.Fatalf("record %v, want %v", rec, wantRec)
	}
	for k, v := range wantRec {
		if rec[k] != v {
			t.Errorf("record[%s] = %v, want %v", k, rec[k], v)
		}
	}
	b, _ := json.Marshal(r.Attestation)
	if strings.Contains(string(b), "secret-value-123") {
		t.Fatalf("value in the attestation: %s", b)
	}
}

// TestFromHostPath: PATH taken from the harness is what the executable is
// looked up in, and is attested in clear as "path".
func TestFromHostPath(t *testing.T) {
	dir := t.TempDir()
	linkHelper(t, dir, "pg-only-here")
	t.Setenv("PATH", dir)
	r := run(t, context.Background(), runtime.Spec{Argv: []string{"pg-only-here", "exit", "0"}, FromHost: []string{"PATH"}}, 0)
	want(t, r, runtime.Passed, 0)
	if r.Attestation.Profile["path"] != dir {
		t.Fatalf("path %v, want %s", r.Attestation.Profile["path"], dir)
	}
	// Without FromHost the same check does not find it: the default PATH.
	r = run(t, context.Background(), runtime.Spec{Argv: []string{"pg-only-here", "exit", "0"}}, 0)
	want(t, r, runtime.Error, -1)
	if r.Attestation.Profile["path"] != process.DefaultPath {
		t.Fatalf("path %v", r.Attestation.Profile["path"])
	}
	if _, has := r.Attestation.Profile["env_from_host"]; has {
		t.Fatal("env_from_host recorded for a check that takes nothing")
	}
}

func unsetEnv(t *testing.T, k string) {
	t.Helper()
	if err := os.Unsetenv(k); err != nil {
		t.Fatal(err)
	}
}

func linkHelper(t *testing.T, dir, name string) {
	t.Helper()
	if err := os.Symlink(helper, filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}
