package process

import (
	"strings"
	"testing"

	"github.com/proofgate/proofgate/kernel/runtime"
)

// Where the runtime does not exist, a check ends error, never passed, with
// a sentence naming the system and what to use instead.
func TestUnsupportedSaysWhatToUse(t *testing.T) {
	res := unsupported("windows")
	if res.Outcome != runtime.Error || res.ExitCode != -1 {
		t.Fatalf("outcome %s exit %d, want error -1", res.Outcome, res.ExitCode)
	}
	for _, want := range []string{ErrUnsupported.Error(), "windows", "runtime: docker"} {
		if !strings.Contains(res.Detail, want) {
			t.Fatalf("detail %q does not say %q", res.Detail, want)
		}
	}
	if res.Attestation.Provider != Provider || res.Attestation.Sandboxed {
		t.Fatalf("attestation %+v", res.Attestation)
	}
	if res.Finished.Before(res.Started) {
		t.Fatal("finished before started")
	}
}
