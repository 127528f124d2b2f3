package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/proofgate/proofgate/bundle"
)

// printUnsandboxed names, under an accepted verdict, the checks that did
// not run in the docker sandbox, and how a gate would refuse them.
func printUnsandboxed(w io.Writer, v *bundle.Verdict) {
	if len(v.Unsandboxed) == 0 {
		return
	}
	ids := make([]string, len(v.Unsandboxed))
	for i, id := range v.Unsandboxed {
		ids[i] = esc(id)
	}
	fmt.Fprintf(w, "unsandboxed: %d check(s) did not run in the docker sandbox: %s (--require-sandbox refuses them)\n",
		len(ids), strings.Join(ids, ", "))
}
