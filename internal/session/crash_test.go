package session_test

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/internal/session"
	"github.com/proofgate/proofgate/kernel/eventlog"
	"github.com/proofgate/proofgate/kernel/replay"
)

// child runs a recorder in a process of its own (re-executed test binary),
// so that tests can kill it or race it.
func child(mode string) int {
	o := session.Options{StateDir: os.Getenv("PG_STATE"), Run: os.Getenv("PG_RUN"), RepoDir: os.Getenv("PG_REPO"),
		Agent: "agent-child", Runtime: childRuntime, LockWait: 10 * time.Second}
	if every, err := time.ParseDuration(os.Getenv("PG_PROGRESS")); err == nil {
		o.ProgressEvery = every
	}
	fail := func(err error) int { fmt.Fprintln(os.Stderr, "child:", err); return 1 }
	s, err := session.Start(ctx, o)
	if err != nil {
		return fail(err)
	}
	fmt.Printf("session %s\n", s.ID())
	switch mode {
	case "crash": // two calls and an end; PROOFGATE_TEST_CRASH kills it on the way
		for _, name := range []string{"Ada", "Bob"} {
			if _, err := s.Call(ctx, session.Call{Tool: "greet", Args: []byte(`{"name":"` + name + `"}`)}); err != nil {
				return fail(err)
			}
		}
		if err := s.End(""); err != nil {
			return fail(err)
		}
	case "calls": // PG_CALLS greet calls with distinct arguments, then an end
		n, _ := strconv.Atoi(os.Getenv("PG_CALLS"))
		for i := range n {
			if _, err := s.Call(ctx, session.Call{Tool: "greet", Args: []byte(fmt.Sprintf(`{"name":"n%d"}`, i))}); err != nil {
				return fail(err)
			}
		}
		if err := s.End(""); err != nil {
			return fail(err)
		}
	case "late": // one call of the tool "late" (reap_test.go), killed while it runs
		res, err := s.Call(ctx, session.Call{Tool: "late", Args: []byte(`{}`)})
		if err != nil {
			return fail(err)
		}
		fmt.Printf("%s %s\n", res.Status, res.Result)
	case "hold": // a pending call, then wait for "go" to call it again, then wait to be killed
		res, err := s.Call(ctx, session.Call{Tool: "deploy", Args: []byte(`{"env":"prod"}`)})
		if err != nil {
			return fail(err)
		}
		fmt.Printf("pending %s\n", res.Action)
		in := bufio.NewScanner(os.Stdin)
		for in.Scan() {
			res, err := s.Call(ctx, session.Call{Tool: "deploy", Args: []byte(`{"env":"prod"}`)})
			if err != nil {
				return fail(err)
			}
			fmt.Printf("%s %s\n", res.Status, res.Result)
		}
	}
	return 0
}

func (f *fixture) child(t *testing.T, mode string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{"PG_SESSION_CHILD=" + mode, "PG_STATE=" + f.state, "PG_RUN=" + f.id, "PG_REPO=" + f.repo}, env...)...)
	return cmd
}

// replayed is the run as a reader sees it after a crash: the intact lines
// when the tail is torn.
func (f *fixture) replayed(t *testing.T) *replay.Report {
	t.Helper()
	rep, _, err := replay.AuditReplay(f.dir())
	if err == nil || replay.IsReason(err, replay.ReasonProjectionLag) {
		return rep
	}
	rep, _, ok, ierr := replay.AuditIntact(f.dir())
	if !ok || (ierr != nil && !replay.IsReason(ierr, replay.ReasonProjectionLag)) {
		t.Fatalf("after the kill the run does not replay: %v / %v", err, ierr)
	}
	return rep
}

// kill -9 at every append of a session's calls (before the write, with a
// torn line, after the fsync), then resume: exactly the actions that
// started are ambiguous; retry and abandon both work; the log verifies.
func TestCrashAtEveryAppend(t *testing.T) {
	if testing.Short() {
		t.Skip("kills 30 processes")
	}
	kills := 0
	for _, when := range []string{"before", "torn", "after"} {
		for n := 1; n <= 10; n++ {
			t.Run(fmt.Sprintf("%s-%d", when, n), func(t *testing.T) {
				f := newFixture(t)
				cmd := f.child(t, "crash", eventlog.CrashEnv+fmt.Sprintf("=%s:%d", when, n))
				out, err := cmd.CombinedOutput()
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
					t.Fatalf("child was not killed: %v\n%s", err, out)
				}
				kills++
				f.recoverAfterKill(t, n)
			})
		}
	}
	if kills < 20 {
		t.Fatalf("%d kills, want ≥ 20", kills)
	}
}

func (f *fixture) recoverAfterKill(t *testing.T, n int) {
	rep := f.replayed(t)
	if len(rep.Sessions) == 0 {
		// killed before session.started reached the log
		if n != 1 {
			t.Fatalf("no session after append %d", n)
		}
		s := start(t, f)
		call(t, s, "greet", `{"name":"Ada"}`)
		if err := s.End(""); err != nil {
			t.Fatal(err)
		}
		f.audit(t)
		return
	}
	sv := rep.Sessions[0]
	var want []string
	args := map[string]string{}
	for i, a := range sv.Calls {
		args[a.ID] = []string{`{"name":"Ada"}`, `{"name":"Bob"}`}[i]
		if a.Status == replay.CallStarted {
			want = append(want, a.ID)
		}
	}
	if !sv.Open {
		// killed after session.ended: nothing to recover; the next writer
		// repairs the lagging projection
		if _, err := run.Unlock(f.state, f.id, "test", 0, time.Now()); err != nil {
			t.Fatal(err)
		}
		f.audit(t)
		f.noProcFiles(t)
		return
	}
	var live *session.LiveSessionError
	if _, err := session.Start(ctx, f.opts("agent-2")); err == nil || errors.As(err, &live) {
		t.Fatalf("start beside a dead session: %v", err)
	}
	s, amb, err := session.Resume(ctx, f.opts("agent-child"), sv.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(amb, want) && !(len(amb) == 0 && len(want) == 0) {
		t.Fatalf("ambiguous %v, want the started actions %v", amb, want)
	}
	for _, a := range amb {
		var ae *session.AmbiguousError
		if _, err := s.Call(ctx, session.Call{Tool: "greet", Args: []byte(`{"name":"Eve"}`)}); !errors.As(err, &ae) {
			t.Fatalf("a call beside an ambiguous action: %v", err)
		}
		if err := s.End(""); !errors.As(err, &ae) {
			t.Fatalf("end beside an ambiguous action: %v", err)
		}
		if n%2 == 0 {
			if err := session.Retry(f.opts(""), a, "alice"); err != nil {
				t.Fatal(err)
			}
		} else if err := session.Abandon(f.opts(""), a, "alice", "may have run"); err != nil {
			t.Fatal(err)
		}
		res := call(t, s, "greet", args[a])
		if res.Result != "success" {
			t.Fatalf("after the decision: %+v", res)
		}
		var nv replay.CallView
		for _, x := range f.audit(t).Sessions[0].Calls {
			if x.ID == res.Action {
				nv = x
			}
		}
		if wantRetry := n%2 == 0; (nv.RetryOf == a) != wantRetry {
			t.Fatalf("new action %+v: retry_of %q, retried=%v", nv, nv.RetryOf, wantRetry)
		}
	}
	if err := s.End("recovered"); err != nil {
		t.Fatal(err)
	}
	f.audit(t)
	f.noProcFiles(t) // the killed recorder's slots were swept
}

// Two recorders on one run: the second is refused while the first lives,
// naming its pid; a human approves from a third process mid-session (the
// recorder holds no lock between calls); once the first is dead the run
// refuses a fresh start and its session is resumed.
func TestTwoRecorders(t *testing.T) {
	f := newFixture(t)
	cmd := f.child(t, "hold")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(stdout)
	next := func() []string {
		if !lines.Scan() {
			t.Fatalf("child ended: %v", lines.Err())
		}
		return strings.Fields(lines.Text())
	}
	sid := next()[1]
	action := next()[1]
	var live *session.LiveSessionError
	_, err = session.Start(ctx, f.opts("agent-2"))
	if !errors.As(err, &live) || live.Owner.PID != cmd.Process.Pid || !strings.Contains(err.Error(), fmt.Sprint(cmd.Process.Pid)) {
		t.Fatalf("second recorder: %v, want *LiveSessionError naming pid %d", err, cmd.Process.Pid)
	}
	if _, _, err := session.Resume(ctx, f.opts("agent-2"), sid); !errors.As(err, &live) {
		t.Fatalf("resume of a live session: %v", err)
	}
	if err := session.Approve(f.opts(""), action, "alice"); err != nil {
		t.Fatalf("approve while the recorder lives: %v", err)
	}
	fmt.Fprintln(stdin, "go")
	if got := strings.Join(next(), " "); got != "finished success" {
		t.Fatalf("approved call in the child: %q", got)
	}
	cmd.Process.Kill()
	cmd.Wait()
	var rr *session.ResumeRequiredError
	if _, err := session.Start(ctx, f.opts("agent-2")); !errors.As(err, &rr) || rr.Session != sid {
		t.Fatalf("start beside a dead recorder's session: %v", err)
	}
	s, amb, err := session.Resume(ctx, f.opts("agent-child"), sid)
	if err != nil || len(amb) != 0 {
		t.Fatalf("resume: %v %v", amb, err)
	}
	if err := s.End(""); err != nil {
		t.Fatal(err)
	}
	f.audit(t)
}
