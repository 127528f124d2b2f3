package eventlog_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/proofgate/proofgate/kernel/eventlog"
)

// TestCrashHookInertOutsideTests builds an ordinary program that appends
// with this package and runs it with every form of the crash hook set: it
// must not be killed, and its log must hold every event. (In this test
// binary the same settings kill: batch_test.go and seal_crash_test.go.)
func TestCrashHookInertOutsideTests(t *testing.T) {
	dir := t.TempDir()
	probe := filepath.Join(dir, "crashprobe")
	if out, err := exec.Command("go", "build", "-o", probe, "./testdata/crashprobe").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	for _, hook := range []string{"before:1", "torn:2", "after:3", "seal1:1"} {
		path := filepath.Join(dir, hook[:len(hook)-2]+".ndjson")
		cmd := exec.Command(probe, path)
		cmd.Env = append(os.Environ(), eventlog.CrashEnv+"="+hook)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s=%s killed or failed an ordinary program: %v\n%s", eventlog.CrashEnv, hook, err, out)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if n := bytes.Count(b, []byte("\n")); n < 3 {
			t.Fatalf("%s: %d lines in the log, want the 3 appended events and more", hook, n)
		}
	}
}
