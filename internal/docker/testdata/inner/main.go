// Command inner plays ProofGate inside a GitHub container action: it runs in
// a container with the host's Docker socket and the workspace mounted at
// /github/workspace, and uses the docker provider to run sandboxed checks
// that read the workspace. It prints one JSON line per check.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/proofgate/proofgate/internal/docker"
	"github.com/proofgate/proofgate/kernel/runtime"
)

func main() {
	ctx := context.Background()
	r, err := docker.New(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	defer r.Close()
	for _, mode := range []string{"readonly", "copy"} {
		var out, errb bytes.Buffer
		res := r.Run(ctx, runtime.Spec{
			RunID: os.Getenv("RUN_ID"), CheckID: "read-" + mode,
			Argv:      []string{"/bin/helper", "cat", "data.txt"},
			Workspace: "/github/workspace",
			Timeout:   time.Minute,
			Sandbox:   runtime.Sandbox{Image: os.Getenv("HELPER_IMAGE"), Workspace: mode, Memory: 64 << 20, Pids: 32, Tmpfs: 4 << 20},
		}, runtime.NewCapture(&out, 1<<20), runtime.NewCapture(&errb, 1<<20))
		b, _ := json.Marshal(map[string]any{"mode": mode, "in_container": r.InContainer(), "self_container": r.SelfContainer(), "netns": res.Attestation.Profile["network_namespace"], "outcome": res.Outcome, "detail": res.Detail, "stdout": out.String(), "stderr": errb.String()})
		fmt.Println(string(b))
	}
}
