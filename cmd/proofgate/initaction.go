package main

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
)

// actionPlaceholder is the pin the example workflows carry until a
// maintainer names the ProofGate release they reviewed; `doctor` fails
// while a workflow still holds it.
const (
	actionPlaceholderOwner = "OWNER/proofgate"
	actionPlaceholderSHA   = "1111111111111111111111111111111111111111"
)

// actionPin is --action: OWNER/REPO@<40 hex>, a full commit SHA (a tag or
// branch can be moved to other code).
var actionPin = regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9-]{0,38})/([A-Za-z0-9._-]{1,100})@([0-9a-f]{40})$`)

// checkActionFlag validates --action; "" keeps the placeholder.
func checkActionFlag(ref string, workflow bool) error {
	if ref == "" {
		return nil
	}
	if !workflow {
		return usageErr(fmt.Errorf("--action pins the action in the workflows that --workflow writes: pass both"))
	}
	m := actionPin.FindStringSubmatch(ref)
	if m == nil || m[3] == actionPlaceholderSHA || m[1] == "OWNER" || m[2] == ".." || m[2] == "." {
		return usageErr(fmt.Errorf("--action %q: want OWNER/REPO@<full 40-hex commit SHA> of the ProofGate release you reviewed, e.g. proofgate/proofgate@<sha> (a tag or branch can be moved: see docs/action.md)", ref))
	}
	return nil
}

// pinAction replaces the example workflow's placeholder pins (the action
// and its verify step) with ref, and their PLACEHOLDER comments with one
// line saying what the pin is. ref is valid (checkActionFlag).
func pinAction(workflow []byte, ref string) []byte {
	repo, sha, _ := strings.Cut(ref, "@")
	out := bytes.ReplaceAll(workflow, []byte(actionPlaceholderOwner+"/verify@"+actionPlaceholderSHA), []byte(repo+"/verify@"+sha))
	out = bytes.ReplaceAll(out, []byte(actionPlaceholderOwner+"@"+actionPlaceholderSHA), []byte(repo+"@"+sha))
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

// hasActionPlaceholder reports whether a workflow still uses the
// placeholder pin.
func hasActionPlaceholder(workflow []byte) bool {
	return bytes.Contains(workflow, []byte("@"+actionPlaceholderSHA))
}
