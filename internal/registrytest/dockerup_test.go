package registrytest

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
)

// dockerUp runs scripts/docker-up.sh with DOCKERD_CONFIG at config, against
// the running daemon (which already uses the mirror, so it is not
// signalled).
func dockerUp(t *testing.T, addr, config string) ([]byte, error) {
	t.Helper()
	cmd := exec.Command("sh", filepath.Join("..", "..", "scripts", "docker-up.sh"))
	cmd.Env = append(os.Environ(), "DOCKERD_CONFIG="+config, EnvMirror+"="+addr)
	return cmd.CombinedOutput()
}

// docker-up.sh puts the mirror first in registry-mirrors and keeps the
// configuration's other keys and mirrors; run again, it changes nothing.
func TestDockerUpMergesMirror(t *testing.T) {
	addr := daemonWithMirror(t)
	config := filepath.Join(t.TempDir(), "daemon.json")
	if err := os.WriteFile(config, []byte(`{"log-level": "warn", "registry-mirrors": ["http://mirror.example"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if out, err := dockerUp(t, addr, config); err != nil {
			t.Fatalf("docker-up.sh: %v\n%s", err, out)
		}
	}
	raw, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"log-level": "warn", "registry-mirrors": []any{"http://" + addr, "http://mirror.example"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s = %v, want %v", config, got, want)
	}
}

// A configuration that is not JSON is an error and left as it was.
func TestDockerUpRefusesBadConfig(t *testing.T) {
	addr := daemonWithMirror(t)
	config := filepath.Join(t.TempDir(), "daemon.json")
	const bad = "{not json"
	if err := os.WriteFile(config, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := dockerUp(t, addr, config); err == nil {
		t.Fatalf("docker-up.sh accepted a bad %s:\n%s", config, out)
	}
	if raw, _ := os.ReadFile(config); string(raw) != bad {
		t.Fatalf("%s rewritten to %q", config, raw)
	}
	if left, _ := filepath.Glob(config + ".tmp.*"); len(left) != 0 {
		t.Fatalf("temporary files left: %q", left)
	}
}
