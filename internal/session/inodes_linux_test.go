//go:build linux

package session_test

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// inodes counts the ext4 inodes a child recorder making n calls
// allocates and frees (perf's ext4 tracepoints, in the child's tasks only).
func (f *fixture) inodes(t *testing.T, perf string, n int) (alloc, freed int) {
	t.Helper()
	cmd := exec.Command(perf, "stat", "-x", ",", "-e", "ext4:ext4_allocate_inode,ext4:ext4_free_inode", "--", os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "PG_SESSION_CHILD=calls", "PG_STATE="+f.state, "PG_RUN="+f.id, "PG_REPO="+f.repo, fmt.Sprintf("PG_CALLS=%d", n))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("perf stat of the child: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		fs := strings.Split(line, ",")
		if len(fs) < 3 {
			continue
		}
		v, err := strconv.Atoi(fs[0])
		switch {
		case err != nil:
		case fs[2] == "ext4:ext4_allocate_inode":
			alloc = v
		case fs[2] == "ext4:ext4_free_inode":
			freed = v
		}
	}
	return alloc, freed
}

// A governed call frees no inode and allocates the two it must (its new
// input and output blobs), counted by the kernel's ext4 tracepoints as the
// difference between a session of 21 calls and one of 1 (ADR 0028: on ext4
// without a journal each freed inode made every later create search past
// it; before, a call freed 4, 80 over the 20). A session frees once per
// session what it made ahead and did not use (blob.Spares: one or two
// files at its end, as the last fill got ahead of the last put or not),
// so the 20 calls' difference may hold one free and one allocation more.
// It needs perf, its ext4 tracepoints and a state directory on ext4.
func TestInodesPerCall(t *testing.T) {
	perf, err := exec.LookPath("perf")
	if err != nil {
		t.Skip("perf not installed: the inodes are counted with its ext4 tracepoints")
	}
	one := newFixture(t)
	var st syscall.Statfs_t
	if err := syscall.Statfs(one.state, &st); err != nil || st.Type != 0xEF53 {
		t.Skipf("the state directory is not on ext4 (statfs type %#x, %v): nothing to count", st.Type, err)
	}
	if out, err := exec.Command(perf, "stat", "-e", "ext4:ext4_free_inode", "--", "true").CombinedOutput(); err != nil {
		t.Skipf("perf cannot count ext4:ext4_free_inode here: %v\n%s", err, out)
	}
	const calls = 20
	a1, f1 := one.inodes(t, perf, 1)
	an, fn := newFixture(t).inodes(t, perf, 1+calls)
	alloc, freed := an-a1, fn-f1
	t.Logf("ext4 inodes over %d governed calls: %d allocated, %d freed (sessions of 1 and %d calls: %d/%d and %d/%d)", calls, alloc, freed, 1+calls, a1, f1, an, fn)
	if freed > 1 || alloc < 2*calls || alloc > 2*calls+1 {
		t.Fatalf("%d governed calls allocate %d and free %d inodes, want %d (or %d) and 0 (or 1: the session's spare blob files)", calls, alloc, freed, 2*calls, 2*calls+1)
	}
}
