//go:build unix

package docker

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// A killed harness leaves its hosts directory behind; the next one removes
// it, and only it: never a live process's, this process's, a symlink, a
// name without a pid, or anything else in the parent.
func TestSweepHostsRemovesOnlyDeadHarnesses(t *testing.T) {
	parent := t.TempDir()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	deadPID := dead.ProcessState.Pid()
	if !pidGone(deadPID) {
		t.Skipf("pid %d was reused at once", deadPID)
	}
	ns := pidNamespaceNumber()
	if ns == "" {
		t.Fatal("no pid namespace in /proc/self/ns/pid on Linux")
	}
	pre := hostsPrefix + ns + "-"
	mk := func(name string) string {
		p := filepath.Join(parent, name)
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "hosts"), []byte(sandboxHosts), 0o444); err != nil {
			t.Fatal(err)
		}
		return p
	}
	gone := mk(pre + strconv.Itoa(deadPID) + "-123")
	live := mk(pre + "1-456")                            // init is alive
	self := mk(pre + strconv.Itoa(os.Getpid()) + "-789") // this harness
	old := mk(hostsPrefix + "1000045640")                // the old name: no pid
	padded := mk(pre + "0" + strconv.Itoa(deadPID) + "-1")
	other := mk(hostsPrefix + "1" + ns + "-" + strconv.Itoa(deadPID) + "-2") // another pid namespace
	outside := t.TempDir()
	link := filepath.Join(parent, pre+strconv.Itoa(deadPID)+"-link")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}

	dir, err := mkHostsDir(parent)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(filepath.Base(dir), pre+strconv.Itoa(os.Getpid())+"-") {
		t.Fatalf("new hosts dir %s does not carry this pid", dir)
	}
	if _, err := os.Lstat(gone); !os.IsNotExist(err) {
		t.Fatalf("a dead harness's hosts dir survived: %v", err)
	}
	for _, p := range []string{live, self, old, padded, other, link, outside, dir} {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s removed: %v", filepath.Base(p), err)
		}
	}
}
