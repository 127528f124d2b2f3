package bundle

import (
	"fmt"
	"slices"
	"strings"
)

// Sandboxed is the runtime provider whose checks count as sandboxed: the
// attestation must name it and say sandboxed: true.
const Sandboxed = "docker"

// WithRequireSandbox requires every check of the run to have run with
// runtime: docker, as the signed predicate's attestation summary records
// it (provider docker, sandboxed true). A check that ran as a plain host
// process (runtime: process) or has no runtime attestation is refused
// with UnsandboxedCheck naming it. Without it such a bundle is accepted
// and its verdict lists the checks (Verdict.Unsandboxed).
func WithRequireSandbox() PolicyOption { return func(p *Policy) { p.requireSandbox = true } }

// Unsandboxed returns the ids, in run order, of the checks of s that did
// not run sandboxed: no runtime summary, another provider than Sandboxed,
// or sandboxed false. The predicate equals the audit of the bundled log
// (verify requires it), so the summary is what the runtime attested.
func Unsandboxed(s *RunSummary) []string {
	var ids []string
	for _, c := range s.Checks {
		if r := c.Runtime; r == nil || r.Provider != Sandboxed || !r.Sandboxed {
			ids = append(ids, c.ID)
		}
	}
	return ids
}

// checkSandbox refuses, when the policy requires the sandbox, a run with
// unsandboxed checks, naming them and their runtime.
func (p *Policy) checkSandbox(s *RunSummary, id string) error {
	ids := Unsandboxed(s)
	if !p.requireSandbox || len(ids) == 0 {
		return nil
	}
	var named []string
	for _, c := range s.Checks {
		if len(named) < 16 && slices.Contains(ids, c.ID) {
			named = append(named, fmt.Sprintf("%s (%s)", c.ID, runtimeName(c.Runtime)))
		}
	}
	more := ""
	if len(ids) > len(named) {
		more = fmt.Sprintf(" and %d more", len(ids)-len(named))
	}
	return refuse(UnsandboxedCheck, fmt.Sprintf("%d of %d checks did not run in the docker sandbox: %s%s", len(ids), len(s.Checks),
		strings.Join(named, ", "), more), id, nil)
}

func runtimeName(r *RuntimeSummary) string {
	switch {
	case r == nil:
		return "no runtime attestation"
	case r.Provider == Sandboxed && !r.Sandboxed:
		return "runtime docker, not sandboxed"
	}
	return "runtime " + clip(r.Provider)
}
