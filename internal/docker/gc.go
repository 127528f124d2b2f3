package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// procStart returns the start time of pid in clock ticks since boot (field
// 22 of /proc/<pid>/stat), or "" when the process does not exist.
func procStart(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	return parseStatStart(string(b))
}

// parseStatStart extracts field 22 from a /proc/<pid>/stat line. The comm
// field (2) may contain spaces and parentheses, so fields are counted after
// the last ')'.
func parseStatStart(line string) string {
	i := strings.LastIndexByte(line, ')')
	if i < 0 || len(line) > 4096 {
		return ""
	}
	f := strings.Fields(line[i+1:])
	// After comm come fields 3..; start time is field 22 → index 19.
	if len(f) < 20 {
		return ""
	}
	if _, err := strconv.ParseUint(f[19], 10, 64); err != nil {
		return ""
	}
	return f[19]
}

// parseOwner splits an owner label "<pid>/<start>/<host>[/<pid namespace>]";
// host is returned with the namespace part, if any.
func parseOwner(label string) (pid int, start, host string, ok bool) {
	p, rest, ok1 := strings.Cut(label, "/")
	s, h, ok2 := strings.Cut(rest, "/")
	if !ok1 || !ok2 {
		return 0, "", "", false
	}
	n, err := strconv.Atoi(p)
	if err != nil || n <= 0 {
		return 0, "", "", false
	}
	return n, s, h, true
}

// pidNamespace is this process's pid namespace ("pid:[4026531836]"), or ""
// when /proc does not say.
func pidNamespace() string {
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil || strings.ContainsAny(ns, "/ ") || len(ns) > 64 {
		return ""
	}
	return ns
}

// ownerDead reports whether the owner label names a harness that provably
// no longer runs: on this host and in this pid namespace (so its pid means
// the same process here), its pid is gone or reused by a process with
// another start time. Owners on other hosts or in other pid namespaces
// (two harness containers sharing the host's hostname under --network
// host), labels without a start time, and unparsable labels are never
// "dead" here: only the age bound removes them.
func (r *Runtime) ownerDead(label string) bool {
	pid, start, hostNS, ok := parseOwner(label)
	if !ok || start == "" {
		return false
	}
	host, ns, hasNS := strings.Cut(hostNS, "/")
	if host != r.host || (hasNS && ns != r.pidNS) {
		return false
	}
	cur := procStart(pid)
	return cur == "" || cur != start
}

// gone reports a daemon answer meaning the container is going away or is
// already gone: "no such container" (404), or "removal of container ... is
// already in progress" (409, another remover — a concurrent gc or cleanup —
// got there first).
func gone(err error) bool {
	if err == nil || isNotFound(err) {
		return err != nil
	}
	return cerrdefs.IsConflict(err) && strings.Contains(err.Error(), "already in progress")
}

// remove force-removes a container with its anonymous volumes. A container
// that another remover is already removing counts as removed once it is
// gone: remove waits for that (bounded by ctx) and tries again if it is
// still there, so "removed" never hides a leak.
func (r *Runtime) remove(ctx context.Context, id string) error {
	for {
		_, err := r.cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		if err == nil || isNotFound(err) {
			return nil
		}
		if !gone(err) {
			return err
		}
		// Removal in progress elsewhere: wait for the container to vanish.
		for {
			t := time.NewTimer(100 * time.Millisecond)
			select {
			case <-ctx.Done():
				t.Stop()
				return fmt.Errorf("waiting for a concurrent removal: %w", ctx.Err())
			case <-t.C:
			}
			ins, err := r.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
			if isNotFound(err) {
				return nil
			}
			if err != nil {
				return err
			}
			if st := ins.Container.State; st == nil || st.Status != "removing" {
				break // the other removal gave up: try again
			}
		}
	}
}

// GC removes ProofGate containers (and their anonymous volumes) whose owner
// is dead or that are older than the orphan age, and returns the removed
// container ids. Containers of live harnesses, including this one, stay. A
// container that disappears or is being removed by someone else meanwhile
// (another gc, its own harness) is no error.
func (r *Runtime) GC(ctx context.Context) ([]string, error) {
	res, err := r.cli.ContainerList(ctx, client.ContainerListOptions{
		All:     true,
		Filters: make(client.Filters).Add("label", LabelOwner),
	})
	if err != nil {
		return nil, fmt.Errorf("docker: gc: list: %w", err)
	}
	var removed []string
	var errs []error
	now := time.Now()
	for _, c := range res.Items {
		label := c.Labels[LabelOwner]
		old := r.orphanAge > 0 && now.Sub(time.Unix(c.Created, 0)) > r.orphanAge
		if !old && !r.ownerDead(label) {
			continue
		}
		if err := r.remove(ctx, c.ID); err != nil {
			errs = append(errs, fmt.Errorf("docker: gc: remove %s: %w", c.ID, err))
			continue
		}
		removed = append(removed, c.ID)
	}
	vols, err := r.gcVolumes(ctx, now)
	removed = append(removed, vols...)
	if err != nil {
		errs = append(errs, err)
	}
	return removed, errors.Join(errs...)
}

// gcVolumes removes unused ProofGate volumes (copy-mode workspaces and
// tmpfs volumes whose container went away without them) under the same
// rule as containers, and returns their names. A volume that another
// container still uses, or that is already gone, is left alone.
func (r *Runtime) gcVolumes(ctx context.Context, now time.Time) ([]string, error) {
	res, err := r.cli.VolumeList(ctx, client.VolumeListOptions{Filters: make(client.Filters).Add("label", LabelOwner).Add("dangling", "true")})
	if err != nil {
		return nil, fmt.Errorf("docker: gc: list volumes: %w", err)
	}
	var removed []string
	var errs []error
	for _, v := range res.Items {
		created, _ := time.Parse(time.RFC3339, v.CreatedAt)
		old := r.orphanAge > 0 && !created.IsZero() && now.Sub(created) > r.orphanAge
		if !old && !r.ownerDead(v.Labels[LabelOwner]) {
			continue
		}
		_, err := r.cli.VolumeRemove(ctx, v.Name, client.VolumeRemoveOptions{})
		switch {
		case err == nil:
			removed = append(removed, v.Name)
		case isNotFound(err) || cerrdefs.IsConflict(err):
		default:
			errs = append(errs, fmt.Errorf("docker: gc: remove volume %s: %w", v.Name, err))
		}
	}
	return removed, errors.Join(errs...)
}

// Results of StopDead, the words of internal/lock's process records.
const (
	StopKilled     = "killed"      // it was running: killed and removed
	StopGone       = "gone"        // it had exited (or never started): removed
	StopOwnerAlive = "owner-alive" // its harness lives, or is not provably dead: left alone
)

// StopDead force-removes the containers of run's check (for an agent
// session, the action) whose harness is provably dead, as GC does, and
// returns each container it found (full id) with what became of it
// (StopKilled, StopGone, StopOwnerAlive). A container gone meanwhile is
// no error.
func (r *Runtime) StopDead(ctx context.Context, run, check string) (map[string]string, error) {
	items, err := r.checkContainers(ctx, run, check)
	if err != nil {
		return nil, err
	}
	found := map[string]string{}
	var errs []error
	for _, c := range items {
		if !r.ownerDead(c.Labels[LabelOwner]) {
			found[c.ID] = StopOwnerAlive
			continue
		}
		if err := r.remove(ctx, c.ID); err != nil {
			errs = append(errs, fmt.Errorf("docker: stop %s: %w", c.ID, err))
			continue
		}
		found[c.ID] = StopGone
		if !finished(string(c.State)) {
			found[c.ID] = StopKilled
		}
	}
	return found, errors.Join(errs...)
}

// Live lists the containers of run's check that may still run: every one
// that has not exited (created, running, paused, restarting, removing).
func (r *Runtime) Live(ctx context.Context, run, check string) ([]string, error) {
	items, err := r.checkContainers(ctx, run, check)
	if err != nil {
		return nil, err
	}
	var live []string
	for _, c := range items {
		if !finished(string(c.State)) {
			live = append(live, c.ID)
		}
	}
	return live, nil
}

// finished says whether a container in state st can no longer run.
func finished(st string) bool { return st == "exited" || st == "dead" }

// checkContainers lists every ProofGate container of run's check.
func (r *Runtime) checkContainers(ctx context.Context, run, check string) ([]container.Summary, error) {
	res, err := r.cli.ContainerList(ctx, client.ContainerListOptions{All: true,
		Filters: make(client.Filters).Add("label", LabelRun+"="+run, LabelCheck+"="+check)})
	if err != nil {
		return nil, fmt.Errorf("docker: list the containers of %s/%s: %w", run, check, err)
	}
	var out []container.Summary
	for _, c := range res.Items {
		// the daemon ANDs label filters; checked again here all the same
		if c.Labels[LabelRun] == run && c.Labels[LabelCheck] == check {
			out = append(out, c)
		}
	}
	return out, nil
}
