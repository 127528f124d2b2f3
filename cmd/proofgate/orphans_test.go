package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/proofgate/proofgate/internal/lock"
	"github.com/proofgate/proofgate/internal/process"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// buildhelper builds internal/process/testdata/helper into the
// script's work directory and sets $HELPER to it.
func cmdBuildhelper(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: buildhelper")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		gobin = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	out := ts.MkAbs(".bin/helper")
	build := exec.Command(gobin, "build", "-o", out, "./internal/process/testdata/helper")
	build.Dir = repoRoot
	if b, err := build.CombinedOutput(); err != nil {
		ts.Fatalf("building helper: %v\n%s", err, b)
	}
	ts.Setenv("HELPER", out)
	ts.Defer(func() { killHelpers(ts.MkAbs("out"), out) })
}

// killHelpers kills what a failed scenario left running: every process
// named by a pid file under dir whose command line is still the helper's.
func killHelpers(dir, helper string) {
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".pid") {
			return nil
		}
		b, _ := os.ReadFile(p)
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 1 {
			return nil
		}
		if cl, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); strings.HasPrefix(string(cl), helper+"\x00") {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		return nil
	})
}

// procgone PIDFILE... waits up to 3s for each process named by a pid file
// to be dead (a zombie is dead) and fails if one survives.
func cmdProcgone(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) == 0 {
		ts.Fatalf("usage: [!] procgone pidfile...")
	}
	for _, f := range args {
		pid := readPid(ts, f)
		deadline := time.Now().Add(3 * time.Second)
		for lock.Running(pid) && time.Now().Before(deadline) && !neg {
			time.Sleep(10 * time.Millisecond)
		}
		switch alive := lock.Running(pid); {
		case alive && !neg:
			ts.Fatalf("process %d (%s) is still running", pid, f)
		case !alive && neg:
			ts.Fatalf("process %d (%s) is not running", pid, f)
		}
	}
}

// stopsgrowing FILE... fails when any of the files grows within 300ms.
func cmdStopsgrowing(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: stopsgrowing file...")
	}
	size := func() []int64 {
		var s []int64
		for _, f := range args {
			fi, err := os.Stat(ts.MkAbs(f))
			ts.Check(err)
			s = append(s, fi.Size())
		}
		return s
	}
	before := size()
	time.Sleep(300 * time.Millisecond)
	after := size()
	for i, f := range args {
		if after[i] != before[i] {
			ts.Fatalf("%s grew from %d to %d bytes: a writer is still running", f, before[i], after[i])
		}
	}
}

func readPid(ts *testscript.TestScript, f string) int {
	b, err := os.ReadFile(ts.MkAbs(f))
	ts.Check(err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	ts.Check(err)
	return pid
}

// cgroupCondition answers [cgroup]: whether the process runtime contains
// checks in a cgroup here. With PROOFGATE_REQUIRE_CGROUP=1 its absence is
// an error, never a silent fallback.
func cgroupCondition() (bool, error) {
	var b bytes.Buffer
	o, e := runtime.NewCapture(&b, 0), runtime.NewCapture(&b, 0)
	res := process.New().Run(context.Background(), runtime.Spec{Argv: []string{"true"}, Workspace: os.TempDir()}, o, e)
	if res.Outcome != runtime.Passed {
		return false, fmt.Errorf("probing the process runtime: %s %s", res.Outcome, res.Detail)
	}
	ok := res.Attestation.Profile["containment"] == lock.ContainCgroup
	if !ok && os.Getenv("PROOFGATE_REQUIRE_CGROUP") == "1" {
		return false, fmt.Errorf("PROOFGATE_REQUIRE_CGROUP=1 but checks run without a cgroup (containment %v)", res.Attestation.Profile["containment"])
	}
	return ok, nil
}
