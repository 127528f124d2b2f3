package session_test

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/proofgate/proofgate/internal/lock"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/internal/session"
	"github.com/proofgate/proofgate/kernel/replay"
)

// recordSession appends a session.started naming owner o, as a recorder
// that is not this process would have.
func (f *fixture) recordSession(t *testing.T, id string, o replay.Owner) {
	t.Helper()
	r, err := run.Open(f.state, f.id)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.AppendSession(replay.TypeSessionStarted, replay.SessionStartedData{Session: id, Agent: "agent-x", Owner: o}); err != nil {
		t.Fatal(err)
	}
}

// Only a provably dead owner is taken over: a live one, one on another
// host, or one from another boot (unknown) is refused with
// *LiveSessionError; a gone pid on this host and boot is resumed.
func TestResumeOnlyProvablyDead(t *testing.T) {
	self, err := lock.Self(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	parent := os.Getppid()
	pstart, err := lock.StartTime(parent)
	if err != nil {
		t.Fatal(err)
	}
	own := func(pid int, start uint64, boot, host string) replay.Owner {
		return replay.Owner{PID: pid, Start: start, BootID: boot, Host: host, Created: time.Now().UTC()}
	}
	for _, tc := range []struct {
		name  string
		owner replay.Owner
		why   string
	}{
		{"live", own(parent, pstart, self.BootID, self.Host), "alive"},
		{"foreign host", own(4194000, 1, self.BootID, self.Host+"-other"), "foreign host"},
		{"other boot", own(4194000, 1, "another-boot", self.Host), "unknown"},
		{"dead", own(4194000, 1, self.BootID, self.Host), ""},
		{"pid reused", own(parent, pstart+1, self.BootID, self.Host), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.recordSession(t, "s-0000000000aa", tc.owner)
			_, amb, err := session.Resume(ctx, f.opts("agent-x"), "s-0000000000aa")
			var live *session.LiveSessionError
			switch {
			case tc.why == "" && err != nil:
				t.Fatalf("resume of a dead owner: %v", err)
			case tc.why == "" && len(amb) != 0:
				t.Fatalf("ambiguous %v", amb)
			case tc.why != "" && (!errors.As(err, &live) || live.Why != tc.why):
				t.Fatalf("resume: %v, want *LiveSessionError %q", err, tc.why)
			}
			if tc.why != "" {
				if _, err := session.Start(ctx, f.opts("agent-y")); !errors.As(err, &live) {
					t.Fatalf("start beside it: %v", err)
				}
			}
		})
	}
}

// Without a provider for the tool's runtime the call is denied: started,
// never run, recorded.
func TestRuntimeUnavailableDenied(t *testing.T) {
	f := newFixture(t)
	o := f.opts("agent-1")
	o.Runtime = nil
	s, err := session.Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	res := call(t, s, "greet", `{"name":"Ada"}`)
	if res.Result != "denied" || res.Outcome != "error" {
		t.Fatalf("%+v", res)
	}
	if err := s.End(""); err != nil {
		t.Fatal(err)
	}
	f.audit(t)
}
