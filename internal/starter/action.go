package starter

import (
	"bytes"
	"fmt"
	"strings"
)

// actionPlaceholder is the pin the example workflows carry until a
// maintainer names the ProofGate release they reviewed; `doctor` fails
// while a workflow still holds it.
const (
	ActionPlaceholderOwner = "OWNER/proofgate"
	ActionPlaceholderSHA   = "1111111111111111111111111111111111111111"
)

// PinAction replaces the example workflow's placeholder pins (the action
// and its verify step) with ref, and their PLACEHOLDER comments with one
// line saying what the pin is. ref is valid (internal/app checks --action).
func PinAction(workflow []byte, ref string) []byte {
	repo, sha, _ := strings.Cut(ref, "@")
	out := bytes.ReplaceAll(workflow, []byte(ActionPlaceholderOwner+"/verify@"+ActionPlaceholderSHA), []byte(repo+"/verify@"+sha))
	out = bytes.ReplaceAll(out, []byte(ActionPlaceholderOwner+"@"+ActionPlaceholderSHA), []byte(repo+"@"+sha))
	var b bytes.Buffer
	inPlaceholder := false
	for _, line := range strings.SplitAfter(string(out), "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "# PLACEHOLDER:"):
			inPlaceholder = true
			indent := line[:len(line)-len(strings.TrimLeft(line, " "))]
			fmt.Fprintf(&b, "%s# ProofGate pinned by full commit SHA (proofgate init --action): re-pin\n%s# to each release you review; never a branch or tag.\n", indent, indent)
		case inPlaceholder && strings.HasPrefix(trimmed, "#"):
		default:
			inPlaceholder = false
			b.WriteString(line)
		}
	}
	return b.Bytes()
}

// HasActionPlaceholder reports whether a workflow still uses the
// placeholder pin.
func HasActionPlaceholder(workflow []byte) bool {
	return bytes.Contains(workflow, []byte("@"+ActionPlaceholderSHA))
}
