package session_test

import (
	"errors"
	"testing"

	"github.com/proofgate/proofgate/internal/session"
	"github.com/proofgate/proofgate/kernel/actor"
)

// TestToolApprovalActorVariants (issue 25 class 7): every whitespace,
// case, invisible and lookalike variant of the session's agent is refused
// as an approver of its own call, as the agent itself is; invisible and
// mixed-script actors are refused outright; a session cannot start under
// such an agent name either.
func TestToolApprovalActorVariants(t *testing.T) {
	f := newFixture(t)
	s := start(t, f)
	pend := call(t, s, "deploy", `{"env":"prod"}`)
	if pend.Status != session.PendingApproval {
		t.Fatalf("deploy: %+v", pend)
	}
	o := f.opts("")
	var self *session.SelfApprovalError
	for _, v := range []string{"agent-1 ", " agent-1", "AGENT-1\t", "\u0430gent-1", "ＡＧＥＮＴ-1", "agent-1\u00a0", "agent\u200b-1", "agent-1\u3164"} {
		for _, decide := range []func() error{
			func() error { return session.Approve(o, pend.Action, v) },
			func() error { return session.Reject(o, pend.Action, v, "no") },
		} {
			if err := decide(); err == nil {
				t.Fatalf("decision by %q accepted: the session's own agent is agent-1", v)
			} else if !errors.As(err, &self) && !isActorError(err) {
				t.Fatalf("decision by %q: %v, want a self-approval or an actor refusal", v, err)
			}
		}
	}
	for _, agent := range []string{"agent\u200b-2", "\u0430gent-2", "agent-2\u00a0"} {
		if _, err := session.Start(ctx, f.opts(agent)); err == nil {
			t.Fatalf("session started under agent %q", agent)
		}
	}
	if err := session.Approve(o, pend.Action, "alice"); err != nil {
		t.Fatal(err)
	}
}

func isActorError(err error) bool {
	var ae *actor.Error
	return errors.As(err, &ae)
}
