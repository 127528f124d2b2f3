//go:build unix

package process_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/proofgate/proofgate/kernel/runtime"
)

// Spec.Stdin reaches the process byte for byte, then end of file: binary
// bytes, NUL, no trailing newline, and more than a pipe buffer holds.
func TestStdinBytesArriveExactly(t *testing.T) {
	big := make([]byte, 300<<10)
	for i := range big {
		big[i] = byte(i*7 + i>>9)
	}
	for _, in := range [][]byte{[]byte(`{"name":"Ada"}`), {0, 1, 2, 0xff, '\n', 0}, {}, big} {
		r := run(t, context.Background(), runtime.Spec{Argv: []string{"/bin/cat"}, Stdin: in, Timeout: 20 * time.Second}, 1<<20)
		want(t, r, runtime.Passed, 0)
		if !bytes.Equal(r.stdout.Bytes(), in) {
			t.Fatalf("%d bytes in, %d out (first difference matters)", len(in), r.stdout.Len())
		}
		sum := sha256.Sum256(in)
		st, ok := r.Attestation.Profile["stdin"].(map[string]any)
		if !ok || st["sha256"] != "sha256:"+hex.EncodeToString(sum[:]) || st["bytes"] != int64(len(in)) {
			t.Fatalf("profile stdin %v", r.Attestation.Profile["stdin"])
		}
	}
}

// Nil stdin is /dev/null as before, and the profile says nothing of stdin.
func TestNilStdinUnchanged(t *testing.T) {
	r := run(t, context.Background(), runtime.Spec{Argv: []string{"/bin/cat"}, Timeout: 10 * time.Second}, 0)
	want(t, r, runtime.Passed, 0)
	if r.stdout.Len() != 0 {
		t.Fatalf("stdout %q", r.stdout)
	}
	if _, ok := r.Attestation.Profile["stdin"]; ok {
		t.Fatalf("profile records stdin: %v", r.Attestation.Profile)
	}
	// An empty non-nil stdin is recorded: the spec did give stdin.
	r = run(t, context.Background(), runtime.Spec{Argv: []string{"/bin/cat"}, Stdin: []byte{}, Timeout: 10 * time.Second}, 0)
	if fmt.Sprint(r.Attestation.Profile["stdin"]) != fmt.Sprint(runtime.StdinProfile(nil)) {
		t.Fatalf("empty stdin profile %v", r.Attestation.Profile["stdin"])
	}
}

// A process that never reads a large stdin, or exits at once, or is killed
// at its timeout, does not hang the harness on the pending write.
func TestUnreadStdinDoesNotHang(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 1<<20)
	r := run(t, context.Background(), runtime.Spec{Argv: []string{helper, "exit", "3"}, Stdin: big, Timeout: 10 * time.Second}, 0)
	want(t, r, runtime.Failed, 3)
	if r.elapsed > 5*time.Second {
		t.Fatalf("took %v", r.elapsed)
	}
	r = run(t, context.Background(), runtime.Spec{Argv: []string{helper, "sleep", "30s"}, Stdin: big, Timeout: 500 * time.Millisecond}, 0)
	if r.Outcome != runtime.Timeout || r.elapsed > 10*time.Second {
		t.Fatalf("outcome %s after %v", r.Outcome, r.elapsed)
	}
}
