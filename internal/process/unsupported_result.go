package process

import (
	"errors"
	"fmt"
	"time"

	"github.com/proofgate/proofgate/kernel/runtime"
)

// ErrUnsupported is the reason every Run fails where the process runtime
// does not exist (Windows, unsupported.go): it contains a check with a Unix
// process group and signals, which that system does not have.
var ErrUnsupported = errors.New("runtime: process is not supported on this system")

// unsupported is the Result of a Run on goos where the runtime does not
// exist: outcome error, nothing started, and a detail that says what to
// use instead.
func unsupported(goos string) runtime.Result {
	res := runtime.Result{
		ExitCode: -1, Started: time.Now().UTC(),
		Attestation: runtime.Attestation{Provider: Provider, Sandboxed: false},
	}
	return res.Fail(fmt.Sprintf("%v (%s has no Unix process groups and signals): use runtime: docker with a Docker Engine (Docker Desktop), or run ProofGate on Linux or macOS", ErrUnsupported, goos))
}
