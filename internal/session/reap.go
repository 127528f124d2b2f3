package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/proofgate/proofgate/kernel/exit"

	"github.com/proofgate/proofgate/internal/lock"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/kernel/replay"
)

// A recorder killed mid-call leaves its tool running: the process
// runtime's cgroup or process group (its main process dies with the
// recorder, its descendants do not), the Docker runtime's container. A
// human deciding retry would then run the call twice at once. So Resume
// stops what a provably dead recorder left (reap), before it reports the
// action, and Retry refuses while any of it still runs (stillRuns).

// ReapedByResume marks the process records Resume reaped (lock.Reaped.By).
const ReapedByResume = "resume"

// StopFailed is a Stopped result: what the call left could not be stopped
// (or not even looked at); Detail says why. Retry is refused while it runs.
const StopFailed = "not-stopped"

// stopWait bounds the daemon calls of one stop or liveness check.
const stopWait = 30 * time.Second

// containers is what Resume and Retry need of a runtime that runs tools
// in containers (internal/docker).
type containers interface {
	// StopDead removes the containers of run's check whose harness is
	// provably dead: id → killed | gone | owner-alive.
	StopDead(ctx context.Context, run, check string) (map[string]string, error)
	// Live lists the containers of run's check that may still run.
	Live(ctx context.Context, run, check string) ([]string, error)
}

// Stopped is one thing a dead recorder's call left running that Resume
// found, and what became of it.
type Stopped struct {
	Action  string `json:"action"`
	Runtime string `json:"runtime"` // process | docker
	// What names it: "cgroup DIR", "process group N", "container ID"
	// (12 hex), or "nothing" when the call left nothing.
	What string `json:"what"`
	// Result is internal/lock's word: killed (it ran and was killed), gone
	// (nothing of it ran any more), owner-alive, pid-reused, rebooted,
	// unsupported; or not-stopped (StopFailed).
	Result string `json:"result"`
	Detail string `json:"detail,omitempty"`
}

// Stopped is what Resume found left running by the dead recorder's calls
// (each action it reports ambiguous has at least one entry), and what
// became of it; nil for a session that was started, not resumed.
func (s *Session) Stopped() []Stopped { return slices.Clone(s.stopped) }

// StillRunningError refuses a retry while something the action's call
// left still runs, or while nothing can tell whether it does.
type StillRunningError struct {
	Action  string
	Running []string // "cgroup DIR", "process group N", "container ID", or why it cannot be told
}

func (e *StillRunningError) Error() string {
	return fmt.Sprintf("action %s still runs (%s): a retry now would run the call twice at once; stop it first ('proofgate clean orphans' kills what a dead recorder left running), then retry, or abandon the action",
		e.Action, strings.Join(e.Running, "; "))
}

// Is reports whether target is exit.Refused, the class of a refusal.
func (e *StillRunningError) Is(target error) bool { return target == exit.Refused }

// reap stops what the dead recorder left running for v's started,
// unfinished actions: every process record of a provably dead harness in
// the run (lock.Reap, as 'gc' does) and the containers of those actions
// whose tool runs in Docker.
func reap(ctx context.Context, o Options, r *run.Run, v replay.SessionView) []Stopped {
	var orphans []replay.CallView
	for _, a := range v.Calls {
		if a.Status == replay.CallStarted {
			orphans = append(orphans, a)
		}
	}
	if len(orphans) == 0 {
		return nil
	}
	var procs, boxed []replay.CallView
	for _, a := range orphans {
		if t, ok := r.Contract.Tool(a.Tool); ok && t.Runtime == "docker" {
			boxed = append(boxed, a)
		} else {
			procs = append(procs, a)
		}
	}
	out := reapProcesses(filepath.Join(r.Dir, run.ProcDir), procs)
	for _, a := range boxed {
		out = append(out, reapContainers(ctx, o, r.ID, a.ID)...)
	}
	return out
}

// reapProcesses kills every recorded group of a provably dead harness in
// dir and reports each, with an entry for every process-runtime orphan
// that had none (it left nothing) or whose record could not be handled.
func reapProcesses(dir string, orphans []replay.CallView) []Stopped {
	ks, err := lock.Reap(dir, ReapedByResume, time.Now(), true)
	var out []Stopped
	seen := map[string]bool{}
	for _, k := range ks {
		seen[k.Check] = true
		out = append(out, Stopped{Action: k.Check, Runtime: "process", What: groupWhat(k.Cgroup, k.PGID), Result: k.Result})
	}
	for _, a := range orphans {
		switch {
		case seen[a.ID]:
		case err != nil:
			out = append(out, Stopped{Action: a.ID, Runtime: "process", What: "its process record", Result: StopFailed, Detail: err.Error()})
		default:
			out = append(out, Stopped{Action: a.ID, Runtime: "process", What: "nothing", Result: lock.ResultGone})
		}
	}
	return out
}

// unlocked adds to stopped what breaking the dead recorder's lock killed
// (run.Unlock reaps before resume looks), in place of resume's "nothing"
// for the same action.
func unlocked(stopped []Stopped, killed []lock.Killed) []Stopped {
	var out []Stopped
	handled := map[string]bool{}
	for _, k := range killed {
		if k.Result != lock.ResultOwnerLive {
			handled[k.Check] = true
			out = append(out, Stopped{Action: k.Check, Runtime: "process", What: groupWhat(k.Cgroup, k.PGID), Result: k.Result})
		}
	}
	for _, st := range stopped {
		if !(handled[st.Action] && st.Runtime == "process" && st.What == "nothing") {
			out = append(out, st)
		}
	}
	return out
}

// reapContainers removes action's containers of a dead harness.
func reapContainers(ctx context.Context, o Options, runID, action string) []Stopped {
	c, err := containersOf(o)
	if err != nil {
		return []Stopped{{Action: action, Runtime: "docker", What: "its container", Result: StopFailed, Detail: err.Error()}}
	}
	ctx, cancel := context.WithTimeout(ctx, stopWait)
	defer cancel()
	found, err := c.StopDead(ctx, runID, action)
	var out []Stopped
	for _, id := range sortedKeys(found) {
		out = append(out, Stopped{Action: action, Runtime: "docker", What: "container " + short(id), Result: found[id]})
	}
	switch {
	case err != nil:
		out = append(out, Stopped{Action: action, Runtime: "docker", What: "its container", Result: StopFailed, Detail: err.Error()})
	case len(out) == 0:
		out = append(out, Stopped{Action: action, Runtime: "docker", What: "nothing", Result: lock.ResultGone})
	}
	return out
}

// containersOf is o's Docker runtime, as a containers.
func containersOf(o Options) (containers, error) {
	if o.Runtime == nil {
		return nil, errors.New("no runtime provider configured: cannot reach the Docker daemon")
	}
	rt, err := o.Runtime("docker")
	if err != nil {
		return nil, err
	}
	c, ok := rt.(containers)
	if !ok {
		return nil, fmt.Errorf("the docker runtime (%T) cannot list or stop containers", rt)
	}
	return c, nil
}

// stillRuns refuses (*StillRunningError) while anything action a's call
// left still runs: a process of a recorded group naming it, a container
// of it; and while that cannot be told (an unreadable record, no daemon).
func stillRuns(o Options, r *run.Run, a replay.CallView) error {
	running := runningGroups(filepath.Join(r.Dir, run.ProcDir), a.ID)
	if t, ok := r.Contract.Tool(a.Tool); ok && t.Runtime == "docker" {
		running = append(running, runningContainers(o, r.ID, a.ID)...)
	}
	if len(running) > 0 {
		return &StillRunningError{Action: a.ID, Running: running}
	}
	return nil
}

// runningGroups names the recorded groups of action in dir that run.
func runningGroups(dir, action string) []string {
	paths, err := lock.GroupPaths(dir)
	if err != nil {
		return []string{fmt.Sprintf("cannot tell: %v", err)}
	}
	var out []string
	for _, p := range paths {
		g, err := lock.ReadGroup(p)
		switch {
		case errors.Is(err, lock.ErrRecordGone) || errors.Is(err, os.ErrNotExist):
			continue
		case err != nil:
			out = append(out, fmt.Sprintf("cannot tell: %v", err)) // it may be this action's
			continue
		case g.Check != action:
			continue
		}
		if runs, err := lock.GroupRuns(g); err != nil {
			out = append(out, fmt.Sprintf("%s (cannot tell: %v)", groupWhat(g.Cgroup, g.PGID), err))
		} else if runs {
			out = append(out, groupWhat(g.Cgroup, g.PGID))
		}
	}
	return out
}

// runningContainers names action's containers that may still run.
func runningContainers(o Options, runID, action string) []string {
	c, err := containersOf(o)
	if err != nil {
		return []string{fmt.Sprintf("its container (cannot tell: %v)", err)}
	}
	ctx, cancel := context.WithTimeout(context.Background(), stopWait)
	defer cancel()
	live, err := c.Live(ctx, runID, action)
	if err != nil {
		return []string{fmt.Sprintf("its container (cannot tell: %v)", err)}
	}
	var out []string
	for _, id := range live {
		out = append(out, "container "+short(id))
	}
	return out
}

// groupWhat names a recorded group.
func groupWhat(cgroup string, pgid int) string {
	var parts []string
	if cgroup != "" {
		parts = append(parts, "cgroup "+cgroup)
	}
	if pgid > 0 {
		parts = append(parts, "process group "+strconv.Itoa(pgid))
	}
	if len(parts) == 0 {
		return "a process not yet started"
	}
	return strings.Join(parts, " and ")
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
