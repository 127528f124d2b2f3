package session_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/proofgate/proofgate/internal/docker"
	"github.com/proofgate/proofgate/internal/lock"
	"github.com/proofgate/proofgate/internal/process"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/internal/session"
	"github.com/proofgate/proofgate/internal/testimage"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/eventlog"
	"github.com/proofgate/proofgate/kernel/replay"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// Issue 25, class 6: a recorder killed mid-call leaves its tool running.
// The tool "late" writes DIR/started, then leaves a worker that ignores
// SIGTERM, sleeps and writes DIR/marker: the side effect of a call that
// ran on after its recorder died. Resume must stop it (the marker never
// appears, the report says so), and retry must be refused while it runs.

// childRuntime is the runtime provider of a recorder child: PG_RUNTIME
// picks the process runtime's cgroup containment (default), its process
// group fallback, or Docker.
func childRuntime(kind string) (runtime.Runtime, error) {
	switch {
	case kind == "process" && os.Getenv("PG_RUNTIME") == "process-group":
		return process.New(process.WithoutCgroup()), nil
	case kind == "docker" && os.Getenv("PG_RUNTIME") == "docker":
		return docker.New(context.Background())
	}
	return processRuntime(kind)
}

// lateTool is the tool "late" in runtime rt (the Docker image when rt is
// docker): its side effects land in dir; its worker sleeps seconds.
func lateTool(rt, image, dir string, seconds int) contract.Tool {
	t := contract.Tool{Name: "late", Runtime: rt, Pull: "never", Network: "none", Workspace: "readonly",
		Timeout: contract.Duration(time.Minute), Output: contract.Size(1 << 20),
		Run: []string{helper, "late", dir, strconv.Itoa(seconds)}}
	if rt == "docker" {
		t.Image, t.Workspace = image, "none"
		t.Run = []string{"/bin/helper", "late", "/out", strconv.Itoa(seconds)}
		t.Mounts = []contract.Mount{{Source: dir, Target: "/out", Writable: true}}
	}
	return t
}

// newLateFixture plans an IMPLEMENTING run whose contract adds t, allowed.
func newLateFixture(t *testing.T, tl contract.Tool) *fixture {
	t.Helper()
	f := &fixture{repo: gitRepo(t), c: testContract(t)}
	f.c.Tools = append(f.c.Tools, tl)
	f.c.Policy = append(f.c.Policy, contract.Rule{ID: "rule-late", Tool: tl.Name, Effect: "allow"})
	f.state = filepath.Join(f.repo, ".proofgate")
	r, err := run.Plan(context.Background(), run.PlanOptions{RepoDir: f.repo, StateDir: f.state, Contract: f.c, Origin: "test", Implement: true})
	if err != nil {
		t.Fatal(err)
	}
	f.id = r.ID
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	return f
}

// sideEffects is a directory the tool (or its container, as nobody) writes.
func sideEffects(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	return dir
}

// crashed is a recorder killed while its call of "late" ran.
type crashed struct {
	session, action string
	started         time.Time // when the tool wrote DIR/started
	group           lock.Group
}

// crashMidCall starts a recorder child calling "late", waits for the tool
// to start (and, for the process runtime, for its process record to name
// its process group), kills the recorder with SIGKILL and returns what it
// left. mode is PG_RUNTIME.
func crashMidCall(t *testing.T, f *fixture, dir, mode string, env ...string) crashed {
	t.Helper()
	cmd := f.child(t, "late", append([]string{"PG_RUNTIME=" + mode}, env...)...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var c crashed
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(dir, "started")); err == nil && (mode == "docker" || recorded(f, &c.group)) {
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("the recorder ended before its tool started: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the tool never started")
		}
	}
	c.started = time.Now()
	if len(env) > 0 { // the crash hook kills it
		if err := <-exited; err == nil {
			t.Fatal("the recorder was not killed by its crash point")
		}
	} else {
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-exited
	}
	sv := f.replayed(t).Sessions[0]
	c.session = sv.ID
	for _, a := range sv.Calls {
		if a.Status == replay.CallStarted {
			c.action = a.ID
		}
	}
	if c.action == "" {
		t.Fatalf("no started action after the kill: %+v", sv.Calls)
	}
	return c
}

// recorded finds the process record that names the tool's process group.
func recorded(f *fixture, g *lock.Group) bool {
	paths, _ := lock.GroupPaths(filepath.Join(f.dir(), run.ProcDir))
	for _, p := range paths {
		if rg, err := lock.ReadGroup(p); err == nil && rg.PGID > 0 {
			*g = rg
			return true
		}
	}
	return false
}

// groupRuns says whether anything of the recorded group still runs.
func groupRuns(t *testing.T, g lock.Group) bool {
	t.Helper()
	if g.Cgroup != "" {
		b, err := os.ReadFile(filepath.Join(g.Cgroup, "cgroup.procs"))
		return err == nil && len(strings.TrimSpace(string(b))) > 0
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// after the command name's last ')': state, ppid, pgrp
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) > 2 && f[2] == strconv.Itoa(g.PGID) && f[0] != "Z" {
			return true
		}
	}
	return false
}

// requireContainment skips (or with PROOFGATE_REQUIRE_CGROUP=1 fails) the
// cgroup case on a host without a writable cgroup v2.
func requireContainment(t *testing.T, g lock.Group, want string) {
	t.Helper()
	if g.Containment == want {
		return
	}
	if want == lock.ContainCgroup && os.Getenv("PROOFGATE_REQUIRE_CGROUP") != "1" {
		t.Skipf("no writable cgroup v2 here: the tool ran in a %s", g.Containment)
	}
	t.Fatalf("the tool ran in a %s, want %s (PROOFGATE_REQUIRE_CGROUP=%q)", g.Containment, want, os.Getenv("PROOFGATE_REQUIRE_CGROUP"))
}

// neverMarked waits until the worker would have written its marker and
// fails if it did.
func neverMarked(t *testing.T, dir string, c crashed, seconds int) {
	t.Helper()
	time.Sleep(time.Until(c.started.Add(time.Duration(seconds)*time.Second + 1500*time.Millisecond)))
	if b, err := os.ReadFile(filepath.Join(dir, "marker")); err == nil {
		t.Fatalf("the dead recorder's call ran on after resume and wrote its marker: %q", b)
	}
}

// stoppedFor is the resume report's entry for action, failing without one.
func stoppedFor(t *testing.T, s *session.Session, action string) session.Stopped {
	t.Helper()
	for _, st := range s.Stopped() {
		if st.Action == action {
			return st
		}
	}
	t.Fatalf("resume reports nothing stopped for action %s: %+v", action, s.Stopped())
	return session.Stopped{}
}

// The process runtime, with the cgroup (where the host delegates one) and
// with the process-group fallback: resume kills what the killed recorder's
// call left running before it reports the action, says so, and a retry
// is then allowed.
func TestResumeStopsTheDeadRecordersTool(t *testing.T) {
	const seconds = 4
	for _, tc := range []struct{ mode, containment string }{
		{"process", lock.ContainCgroup},
		{"process-group", lock.ContainGroup},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			dir := sideEffects(t)
			f := newLateFixture(t, lateTool("process", "", dir, seconds))
			c := crashMidCall(t, f, dir, tc.mode)
			if !groupRuns(t, c.group) {
				t.Fatalf("nothing of the call outlived its recorder: the test proves nothing (%+v)", c.group)
			}
			requireContainment(t, c.group, tc.containment)
			s, amb, err := session.Resume(ctx, f.opts("agent-child"), c.session)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(amb, []string{c.action}) {
				t.Fatalf("ambiguous %v, want [%s]", amb, c.action)
			}
			if groupRuns(t, c.group) {
				t.Fatalf("after resume the call's processes still run (%+v); resume reports %+v", c.group, s.Stopped())
			}
			neverMarked(t, dir, c, seconds)
			st := stoppedFor(t, s, c.action)
			if st.Result != lock.ResultKilled || st.Runtime != "process" || !strings.Contains(st.What, strconv.Itoa(c.group.PGID)) && !strings.Contains(st.What, c.group.Cgroup) {
				t.Fatalf("resume report %+v, want the call's group killed", st)
			}
			if err := session.Retry(f.opts(""), c.action, "alice"); err != nil {
				t.Fatalf("retry once the call was stopped: %v", err)
			}
			f.audit(t)
		})
	}
}

// A run resumed while its tool still ran (by a build that did not stop
// it, or whose stop failed): retry is refused, naming the action and what
// runs, until it has stopped ('proofgate clean orphans' kills it); abandon stays
// possible.
func TestRetryRefusedWhileTheToolRuns(t *testing.T) {
	const seconds = 30
	dir := sideEffects(t)
	f := newLateFixture(t, lateTool("process", "", dir, seconds))
	c := crashMidCall(t, f, dir, "process")
	defer lock.KillGroup(c.group)
	resumeWithoutStopping(t, f, c)
	if !groupRuns(t, c.group) {
		t.Fatal("the worker (it ignores SIGTERM) is not running: the test proves nothing")
	}
	err := session.Retry(f.opts(""), c.action, "alice")
	var sr *session.StillRunningError
	if !errors.As(err, &sr) || sr.Action != c.action || len(sr.Running) == 0 {
		t.Fatalf("retry while the call's processes run: %v, want *StillRunningError for %s", err, c.action)
	}
	for _, want := range []string{c.action, "still runs", "proofgate clean orphans"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("refusal %q does not say %q", err, want)
		}
	}
	if ps, err := run.GCProcesses(f.state, time.Now()); err != nil || len(ps) == 0 {
		t.Fatalf("gc: %v %v", ps, err)
	}
	if err := session.Retry(f.opts(""), c.action, "alice"); err != nil {
		t.Fatalf("retry once gc stopped the call: %v", err)
	}
	f.audit(t)
}

// resumeWithoutStopping records what a resume that does not stop the
// dead recorder's processes wrote: session.resumed and the action closed
// as crashed by recovery.
func resumeWithoutStopping(t *testing.T, f *fixture, c crashed) {
	t.Helper()
	if _, err := run.Unlock(f.state, f.id, "test", 0, time.Now()); err != nil && !errors.Is(err, run.ErrNoLock) {
		t.Fatal(err)
	}
	r, err := run.Open(f.state, f.id)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var v replay.SessionView
	r.Session(func(fo *replay.Folder) { v, _ = fo.OpenSession() })
	o := r.LockOwner()
	owner := replay.Owner{PID: o.PID, Start: o.Start, BootID: o.BootID, Host: o.Host, Created: o.Created}
	if _, err := r.AppendSession(replay.TypeSessionResumed, replay.SessionResumedData{Session: c.session, Owner: owner, PreviousOwner: v.Owner, Ambiguous: []string{c.action}}); err != nil {
		t.Fatal(err)
	}
	oh, _ := replay.OutputHash(-1, "", nil, nil)
	var receipt string
	for _, a := range v.Calls {
		if a.ID == c.action {
			receipt = a.Receipt
		}
	}
	if _, err := r.AppendSession(replay.TypeToolFinished, replay.ToolFinishedData{Call: c.action, Receipt: receipt, Result: replay.ResultCrashed,
		ExitCode: -1, OutputHash: oh, ClosedBy: replay.ClosedByRecovery}); err != nil {
		t.Fatal(err)
	}
}

var (
	imageOnce sync.Once
	imageRef  string
	imageErr  error
)

// sessionImage is an image holding this package's helper at /bin/helper,
// built and imported here (no registry). Without a daemon the test is
// skipped, unless PROOFGATE_REQUIRE_DOCKER=1, where that is a failure.
func sessionImage(t *testing.T) string {
	t.Helper()
	imageOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		var d *docker.Runtime
		if d, imageErr = docker.New(ctx); imageErr != nil {
			return
		}
		d.Close()
		src, err := filepath.Abs("testdata/helper")
		if err != nil {
			imageErr = err
			return
		}
		bin, err := testimage.BuildStatic(ctx, src)
		if err != nil {
			imageErr = err
			return
		}
		imageRef, imageErr = testimage.Import(ctx, "proofgate-test/session-helper", []testimage.File{
			{Path: "/bin", Mode: os.ModeDir | 0o755},
			{Path: "/bin/helper", Mode: 0o755, Body: bin},
			{Path: "/tmp", Mode: os.ModeDir | os.ModeSticky | 0o777},
		})
	})
	if imageErr != nil {
		if os.Getenv("PROOFGATE_REQUIRE_DOCKER") == "1" {
			t.Fatalf("docker required (PROOFGATE_REQUIRE_DOCKER=1): %v", imageErr)
		}
		t.Skipf("no docker daemon: %v", imageErr)
	}
	return imageRef
}

// containers lists the run's containers that have not exited, and
// removes every container of the run when the test ends.
func containers(t *testing.T, runID string) []string {
	t.Helper()
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	res, err := cli.ContainerList(context.Background(), client.ContainerListOptions{All: true,
		Filters: make(client.Filters).Add("label", docker.LabelRun+"="+runID)})
	if err != nil {
		t.Fatal(err)
	}
	var live []string
	for _, c := range res.Items {
		if c.State != "exited" && c.State != "dead" {
			live = append(live, c.ID)
		}
	}
	return live
}

func removeContainers(t *testing.T, runID string) {
	t.Cleanup(func() {
		cli, err := client.New(client.FromEnv)
		if err != nil {
			return
		}
		defer cli.Close()
		res, err := cli.ContainerList(context.Background(), client.ContainerListOptions{All: true,
			Filters: make(client.Filters).Add("label", docker.LabelRun+"="+runID)})
		if err != nil {
			return
		}
		for _, c := range res.Items {
			cli.ContainerRemove(context.Background(), c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		}
	})
}

// dockerOpts are session options whose Docker runtime is real.
func (f *fixture) dockerOpts(agent string) (session.Options, func()) {
	o := f.opts(agent)
	var d *docker.Runtime
	o.Runtime = func(kind string) (runtime.Runtime, error) {
		if kind != "docker" {
			return processRuntime(kind)
		}
		if d == nil {
			var err error
			if d, err = docker.New(context.Background()); err != nil {
				return nil, err
			}
		}
		return d, nil
	}
	return o, func() {
		if d != nil {
			d.Close()
		}
	}
}

// The Docker runtime: the killed recorder's container runs on; resume
// removes it before it reports the action, and says so.
func TestResumeStopsTheDeadRecordersContainer(t *testing.T) {
	const seconds = 5
	image := sessionImage(t)
	dir := sideEffects(t)
	f := newLateFixture(t, lateTool("docker", image, dir, seconds))
	removeContainers(t, f.id)
	c := crashMidCall(t, f, dir, "docker")
	live := containers(t, f.id)
	if len(live) != 1 {
		t.Fatalf("containers of the run after the recorder's death: %v, want the call's one still running", live)
	}
	o, done := f.dockerOpts("agent-child")
	defer done()
	s, amb, err := session.Resume(ctx, o, c.session)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(amb, []string{c.action}) {
		t.Fatalf("ambiguous %v, want [%s]", amb, c.action)
	}
	if l := containers(t, f.id); len(l) != 0 {
		t.Fatalf("after resume the call's container still runs: %v", l)
	}
	neverMarked(t, dir, c, seconds)
	st := stoppedFor(t, s, c.action)
	if st.Result != lock.ResultKilled || st.Runtime != "docker" || !strings.Contains(st.What, live[0][:12]) {
		t.Fatalf("resume report %+v, want container %s killed", st, live[0][:12])
	}
	if err := session.Retry(o, c.action, "alice"); err != nil {
		t.Fatalf("retry once the container was removed: %v", err)
	}
	f.audit(t)
}

// A resume that cannot reach the daemon cannot stop the container: it
// says so, and retry is refused while the container runs (and while no
// daemon says whether it does); removing it lets the retry through.
func TestRetryRefusedWhileTheContainerRuns(t *testing.T) {
	const seconds = 60
	image := sessionImage(t)
	dir := sideEffects(t)
	f := newLateFixture(t, lateTool("docker", image, dir, seconds))
	removeContainers(t, f.id)
	c := crashMidCall(t, f, dir, "docker")
	unreachable := f.opts("agent-child")
	unreachable.Runtime = func(kind string) (runtime.Runtime, error) {
		if kind == "docker" {
			return nil, fmt.Errorf("docker: no daemon answers (test)")
		}
		return processRuntime(kind)
	}
	s, _, err := session.Resume(ctx, unreachable, c.session)
	if err != nil {
		t.Fatal(err)
	}
	if st := stoppedFor(t, s, c.action); st.Result == lock.ResultKilled || !strings.Contains(st.Detail, "no daemon answers") {
		t.Fatalf("resume without a daemon reports %+v, want the container not stopped and why", st)
	}
	var sr *session.StillRunningError
	if err := session.Retry(unreachable, c.action, "alice"); !errors.As(err, &sr) {
		t.Fatalf("retry while no daemon says whether the container runs: %v, want *StillRunningError", err)
	}
	live := containers(t, f.id)
	if len(live) != 1 {
		t.Fatalf("containers of the run: %v, want the call's one running", live)
	}
	o, done := f.dockerOpts("")
	defer done()
	err = session.Retry(o, c.action, "alice")
	if !errors.As(err, &sr) || sr.Action != c.action || !strings.Contains(err.Error(), live[0][:12]) {
		t.Fatalf("retry while the container runs: %v, want *StillRunningError naming %s", err, live[0][:12])
	}
	d, err := docker.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if found, err := d.StopDead(ctx, f.id, c.action); err != nil || found[live[0]] != lock.ResultKilled {
		t.Fatalf("stopping the dead recorder's container: %v %v", found, err)
	}
	if err := session.Retry(o, c.action, "alice"); err != nil {
		t.Fatalf("retry once the container was removed: %v", err)
	}
	f.audit(t)
}

// The recorder dies holding the run's lock (a progress checkpoint of the
// running call, appended while the call runs): resume breaks the lock,
// which kills the call's processes (lock.broken records them), and the
// report still says the call was stopped, not that nothing ran.
func TestResumeAfterADeathHoldingTheLock(t *testing.T) {
	const seconds = 4
	dir := sideEffects(t)
	f := newLateFixture(t, lateTool("process", "", dir, seconds))
	// appends: session.started, tool.requested, tool.decided,
	// tool.started, then the first tool.progress (every 300 ms)
	c := crashMidCall(t, f, dir, "process", "PG_PROGRESS=300ms", eventlog.CrashEnv+"=after:5")
	if !groupRuns(t, c.group) {
		t.Fatal("nothing of the call outlived its recorder: the test proves nothing")
	}
	s, _, err := session.Resume(ctx, f.opts("agent-child"), c.session)
	if err != nil {
		t.Fatal(err)
	}
	var broken bool
	for _, e := range f.events(t) {
		broken = broken || e.Type == replay.TypeLockBroken
	}
	if !broken || groupRuns(t, c.group) {
		t.Fatalf("lock broken %v; the call's processes still run %v", broken, groupRuns(t, c.group))
	}
	neverMarked(t, dir, c, seconds)
	if st := stoppedFor(t, s, c.action); st.Result != lock.ResultKilled {
		t.Fatalf("resume report %+v, want the call's group killed (by breaking the lock)", s.Stopped())
	}
}
