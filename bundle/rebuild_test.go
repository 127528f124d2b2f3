package bundle

import (
	"github.com/proofgate/proofgate/kernel/input"
	"github.com/proofgate/proofgate/kernel/replay"
)

// The tests rebuild manifest inputs with kernel/input, as the CLI does
// through kernel/run.
func init() {
	if replay.DefaultRebuilder == nil {
		replay.DefaultRebuilder = input.Rebuild
	}
}
