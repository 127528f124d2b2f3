package docker

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/proofgate/proofgate/kernel/runtime"
)

// Spec.Stdin reaches the container byte for byte, then end of file, and
// the profile records its digest and length; without Stdin the container
// reads nothing, as before, and the profile has no stdin entry.
func TestDockerStdin(t *testing.T) {
	r, ref := sandbox(t)
	big := make([]byte, 200<<10)
	for i := range big {
		big[i] = byte(i*13 + i>>8)
	}
	for _, in := range [][]byte{[]byte(`{"name":"Ada; rm -rf /"}`), {0, 0xff, '\n', 0}, big} {
		spec := helperSpec(ref, "cat", "/dev/stdin")
		spec.Stdin = in
		out := check(t, r, spec, 1<<20)
		if out.Outcome != runtime.Passed {
			t.Fatalf("outcome %s (%s), stderr %q", out.Outcome, out.Detail, out.stderr.String())
		}
		if !bytes.Equal(out.stdout.Bytes(), in) {
			t.Fatalf("%d bytes in, %d bytes out", len(in), out.stdout.Len())
		}
		sum := sha256.Sum256(in)
		st, ok := out.Attestation.Profile["stdin"].(map[string]any)
		if !ok || st["sha256"] != "sha256:"+hex.EncodeToString(sum[:]) || st["bytes"] != int64(len(in)) {
			t.Fatalf("profile stdin %v", out.Attestation.Profile["stdin"])
		}
	}

	spec := helperSpec(ref, "cat", "/dev/stdin")
	start := time.Now()
	out := check(t, r, spec, 1<<20)
	if out.Outcome != runtime.Passed || out.stdout.Len() != 0 || time.Since(start) > 30*time.Second {
		t.Fatalf("nil stdin: stdout %q after %v (%s %s)", out.stdout.String(), time.Since(start), out.Outcome, out.Detail)
	}
	if _, ok := out.Attestation.Profile["stdin"]; ok {
		t.Fatalf("nil stdin recorded: %v", out.Attestation.Profile)
	}
	withStdin := helperSpec(ref, "cat", "/dev/stdin")
	withStdin.Stdin = []byte("x")
	with := check(t, r, withStdin, 1<<20)
	if with.Attestation.ProfileHash == out.Attestation.ProfileHash {
		t.Fatal("stdin does not change the profile hash")
	}
	delete(with.Attestation.Profile, "stdin")
	if fmt.Sprint(with.Attestation.Profile) != fmt.Sprint(out.Attestation.Profile) {
		t.Fatalf("stdin changed more than the stdin entry:\n%v\n%v", with.Attestation.Profile, out.Attestation.Profile)
	}
}

// A container that never reads a large stdin, and one killed at its
// timeout, do not hang Run on the pending write.
func TestDockerUnreadStdin(t *testing.T) {
	r, ref := sandbox(t)
	spec := helperSpec(ref, "exit", "4")
	spec.Stdin = bytes.Repeat([]byte("y"), 4<<20)
	start := time.Now()
	out := check(t, r, spec, 0)
	if out.Outcome != runtime.Failed || out.ExitCode != 4 || time.Since(start) > 60*time.Second {
		t.Fatalf("outcome %s exit %d (%s) after %v", out.Outcome, out.ExitCode, out.Detail, time.Since(start))
	}
	spec = helperSpec(ref, "sleep", "60")
	spec.Stdin = bytes.Repeat([]byte("y"), 4<<20)
	spec.Timeout = 2 * time.Second
	start = time.Now()
	out = check(t, r, spec, 0)
	if out.Outcome != runtime.Timeout || time.Since(start) > 60*time.Second {
		t.Fatalf("outcome %s (%s) after %v", out.Outcome, out.Detail, time.Since(start))
	}
}
