package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

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

// parseOwner splits an owner label "<pid>/<start>/<host>".
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

// ownerDead reports whether the owner label names a harness on this host
// that no longer runs (its pid is gone, or reused by a process with another
// start time). Owners on other hosts, and unparsable labels, are never
// "dead" here: only the age bound removes them.
func (r *Runtime) ownerDead(label string) bool {
	pid, start, host, ok := parseOwner(label)
	if !ok || host != r.host {
		return false
	}
	cur := procStart(pid)
	return cur == "" || cur != start
}

// GC removes ProofGate containers (and their anonymous volumes) whose owner
// is dead or that are older than the orphan age, and returns the removed
// container ids. Containers of live harnesses, including this one, stay.
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
		_, err := r.cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		if err != nil && !isNotFound(err) {
			errs = append(errs, fmt.Errorf("docker: gc: remove %s: %w", c.ID, err))
			continue
		}
		removed = append(removed, c.ID)
	}
	return removed, errors.Join(errs...)
}
