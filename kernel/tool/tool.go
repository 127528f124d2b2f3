// Package tool renders one call of a contract tool: it decodes the call's
// arguments strictly, checks them against the tool's typed parameters, and
// builds the argv (and stdin) the runtime executes. No I/O.
package tool

import (
	"errors"
	"fmt"

	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// MaxArgs bounds the arguments object, in bytes.
const MaxArgs = 64 << 10

// ArgError is a refused argument.
type ArgError struct {
	Param string
	Why   string
}

func (e *ArgError) Error() string {
	if e.Param == "" {
		return fmt.Sprintf("tool arguments: %s", e.Why)
	}
	return fmt.Sprintf("tool argument %q: %s", e.Param, e.Why)
}

// Call is a rendered call.
type Call struct {
	Argv  []string
	Stdin []byte // canonical JSON of the arguments when the tool's stdin is "json", else nil
}

// Render checks args (a JSON object) against t's parameters and renders the call.
func Render(t contract.Tool, args []byte) (Call, error) {
	return Call{}, errors.New("tool: not implemented yet")
}

// Spec returns the runtime spec of a rendered call.
func Spec(runID, action string, t contract.Tool, c Call, repo string) runtime.Spec {
	return runtime.Spec{RunID: runID, CheckID: action, Argv: c.Argv, Workspace: repo, Stdin: c.Stdin}
}
