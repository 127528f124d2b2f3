package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/proofgate/proofgate/internal/docker"
	"github.com/proofgate/proofgate/internal/testimage"
)

func TestMain(m *testing.M) {
	if os.Getenv(mainEnv) == "1" {
		os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
	}
	testscript.Main(m, map[string]func(){
		"proofgate": func() { os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr)) },
	})
}

// TestScripts runs the CLI scenarios in testdata/*.txt.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata",
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			for k, v := range map[string]string{
				"GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "test@example.invalid",
				"GIT_COMMITTER_NAME": "Test", "GIT_COMMITTER_EMAIL": "test@example.invalid",
				"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null",
			} {
				env.Setenv(k, v)
			}
			if d := os.Getenv("PROOFGATE_REQUIRE_DOCKER"); d != "" {
				env.Setenv("PROOFGATE_REQUIRE_DOCKER", d)
			}
			if h := os.Getenv("DOCKER_HOST"); h != "" {
				env.Setenv("DOCKER_HOST", h)
			}
			return nil
		},
		Condition: condition,
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"waitfile":       cmdWaitfile,
			"exits":          cmdExits,
			"replace":        cmdReplace,
			"flipbyte":       cmdFlipbyte,
			"dropline":       cmdDropline,
			"rundir":         cmdRundir,
			"testimage":      cmdTestimage,
			"imageidof":      cmdImageidOf,
			"helperregistry": cmdHelperRegistry,
			"example":        cmdExample,
			"gitsha":         cmdGitsha,
			"timeat":         cmdTimeat,
			"buildhelper":    cmdBuildhelper,
			"procgone":       cmdProcgone,
			"stopsgrowing":   cmdStopsgrowing,
			"grab":           cmdGrab,
			"mkfifo":         cmdMkfifo,
		},
	})
}

// waitfile PATH [SECONDS] waits until PATH exists.
func cmdWaitfile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 {
		ts.Fatalf("usage: waitfile path [seconds]")
	}
	limit := 20 * time.Second
	if len(args) > 1 {
		n, err := strconv.Atoi(args[1])
		ts.Check(err)
		limit = time.Duration(n) * time.Second
	}
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(ts.MkAbs(args[0])); err == nil {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	ts.Fatalf("%s did not appear within %s", args[0], limit)
}

// replace FILE OLD NEW replaces every OLD with NEW and fails when OLD is absent.
func cmdReplace(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: replace file old new")
	}
	p := ts.MkAbs(args[0])
	b, err := os.ReadFile(p)
	ts.Check(err)
	if !bytes.Contains(b, []byte(args[1])) {
		ts.Fatalf("%s does not contain %q", args[0], args[1])
	}
	ts.Check(os.Chmod(p, 0o644))
	ts.Check(os.WriteFile(p, bytes.ReplaceAll(b, []byte(args[1]), []byte(args[2])), 0o644))
}

// flipbyte FILE LINE flips one bit in the middle of 1-based line LINE.
func cmdFlipbyte(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: flipbyte file line")
	}
	editLines(ts, args[0], func(lines []string) []string {
		n, err := strconv.Atoi(args[1])
		ts.Check(err)
		l := []byte(lines[n-1])
		l[len(l)/2] ^= 0x01
		lines[n-1] = string(l)
		return lines
	})
}

// dropline FILE LINE deletes 1-based line LINE.
func cmdDropline(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: dropline file line")
	}
	editLines(ts, args[0], func(lines []string) []string {
		n, err := strconv.Atoi(args[1])
		ts.Check(err)
		return append(lines[:n-1], lines[n:]...)
	})
}

func editLines(ts *testscript.TestScript, file string, f func([]string) []string) {
	p := ts.MkAbs(file)
	b, err := os.ReadFile(p)
	ts.Check(err)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	out := strings.Join(f(lines), "\n") + "\n"
	ts.Check(os.MkdirAll(filepath.Dir(p), 0o755))
	ts.Check(os.WriteFile(p, []byte(out), 0o644))
}

// rundir sets $RUNDIR to the newest run directory under .proofgate/runs.
func cmdRundir(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: rundir")
	}
	ents, err := os.ReadDir(ts.MkAbs(".proofgate/runs"))
	ts.Check(err)
	if len(ents) == 0 {
		ts.Fatalf("no runs")
	}
	ts.Setenv("RUNDIR", ts.MkAbs(filepath.Join(".proofgate/runs", ents[len(ents)-1].Name())))
	ts.Setenv("RUNID", ents[len(ents)-1].Name())
}

// gitCommitAll makes dir a git repository holding one commit of all its
// files, with a fixed identity and no user or system git config.
func gitCommitAll(t testing.TB, dir, msg string) {
	t.Helper()
	for _, args := range [][]string{{"init", "-q", "."}, {"add", "-A"}, {"commit", "-q", "-m", msg}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x.invalid", "GIT_COMMITTER_NAME=t",
			"GIT_COMMITTER_EMAIL=t@x.invalid", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}

// gitsha VAR [REV] sets $VAR to the full SHA of REV (default HEAD).
func cmdGitsha(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: gitsha VAR [REV]")
	}
	rev := "HEAD"
	if len(args) == 2 {
		rev = args[1]
	}
	cmd := exec.Command("git", "rev-parse", rev)
	cmd.Dir = ts.Getenv("WORK")
	out, err := cmd.Output()
	ts.Check(err)
	ts.Setenv(args[0], strings.TrimSpace(string(out)))
}

// timeat VAR DURATION sets $VAR to now + DURATION (e.g. 90s, -1h) in
// RFC 3339, for signing and trust times relative to a run made just now.
func cmdTimeat(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: timeat VAR DURATION")
	}
	d, err := time.ParseDuration(args[1])
	ts.Check(err)
	ts.Setenv(args[0], time.Now().Add(d).UTC().Format(time.RFC3339))
}

// exits N COMMAND [ARGS...] runs COMMAND and requires exit code N; its
// output is then available to stdout and stderr like exec's.
func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits code command [args...]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("%s: %v", args[1], err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Logf("[stdout]\n%s[stderr]\n%s", ts.ReadFile("stdout"), ts.ReadFile("stderr"))
		ts.Fatalf("%s exited %d, want %d", args[1], got, want)
	}
}

// testimage imports the sandbox test image (internal/testimage) and sets
// $HELPER_IMAGE. Scripts guard it with [docker].
func cmdTestimage(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: testimage")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ref, err := testimage.Ensure(ctx)
	if err != nil {
		ts.Fatalf("the test image is unavailable: %v", err)
	}
	ts.Setenv("HELPER_IMAGE", ref)
	// The sandbox user (65534) reads the bind-mounted work tree.
	ts.Check(os.Chmod(ts.MkAbs("."), 0o755))
}

// example NAME copies the repository's examples/NAME into $WORK/examples/NAME.
func cmdExample(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: example name")
	}
	src := filepath.Join(repoRoot, "examples", args[0])
	dst := ts.MkAbs(filepath.Join("examples", args[0]))
	ts.Check(filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	}))
}

// repoRoot is the repository root, two levels above this package.
var repoRoot = func() string {
	wd, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	return filepath.Clean(filepath.Join(wd, "..", ".."))
}()

func condition(cond string) (bool, error) {
	if cond == "cgroup" {
		return cgroupCondition()
	}
	return dockerCondition(cond)
}

// dockerCondition answers [docker]: whether a Docker daemon answers. With
// PROOFGATE_REQUIRE_DOCKER=1 a missing daemon is an error, never a skip: CI
// must not report a skipped Docker scenario as passing.
func dockerCondition(cond string) (bool, error) {
	if cond != "docker" {
		return false, fmt.Errorf("unknown condition %q", cond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, err := docker.New(ctx)
	if err != nil {
		if os.Getenv("PROOFGATE_REQUIRE_DOCKER") == "1" {
			return false, fmt.Errorf("PROOFGATE_REQUIRE_DOCKER=1 but %w", err)
		}
		return false, nil
	}
	d.Close()
	return true, nil
}
