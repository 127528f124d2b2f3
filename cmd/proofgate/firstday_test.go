package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proofgate/proofgate/internal/registrytest"
	"github.com/proofgate/proofgate/internal/thirdparty"
)

// A maintainer's first day, on code nobody here wrote: a real module or
// package, fetched at test time by its own package manager (the Go module
// proxy, the npm registry), made into a git repository with the origin
// remote its project has, and walked through the README's "Add it to your
// repository" block verbatim. The generated contract runs its checks in the
// ecosystem's image, pulled through the Docker daemon's registry mirror
// (scripts/mirror-up.sh: the host's toolchains under the official names),
// with the fetch check downloading the real dependencies over the network
// and every other check offline. Then the local bundle steps: approve,
// export (the tree stays clean), the trust store init told the maintainer
// to make, and bundle verify accepting the bundle.
type thirdParty struct {
	name   string // the test's name for it
	origin string // the origin remote of its real repository
	fetch  thirdparty.Source
	// bare runs the same commands as the generated checks, on the host,
	// for the warm ratio.
	bare [][]string
	// docker is the environment the generated contract gives every
	// check (cache mounts, the fetch check's network): the raw docker run
	// baseline of the warm ratio (firstday_bench_test.go).
	docker rawDocker
}

var firstDayProjects = []thirdParty{
	{
		name:   "go-cobra",
		origin: "https://github.com/spf13/cobra.git",
		fetch:  thirdparty.GoModule("github.com/spf13/cobra@v1.10.1"),
		bare:   [][]string{{"go", "mod", "download"}, {"go", "vet", "./..."}, {"go", "test", "./..."}},
		docker: rawDocker{
			caches: []string{"go-build:/cache/go-build", "go-mod:/cache/go-mod"},
			deps:   "go-mod",
			env:    []string{"GOCACHE=/cache/go-build", "GOMODCACHE=/cache/go-mod", "GOFLAGS=-mod=readonly", "GOTOOLCHAIN=local"},
			fetch:  []string{"GOPROXY=https://proxy.golang.org", "GOSUMDB=sum.golang.org"},
			rest:   []string{"GOPROXY=off"},
		},
	},
	{
		name:   "node-fastq",
		origin: "https://github.com/mcollina/fastq.git",
		fetch:  thirdparty.NpmPackage("fastq@1.20.3"),
		bare:   [][]string{{"npm", "ci"}, {"npm", "run", "lint"}, {"npm", "test"}},
		docker: rawDocker{
			caches: []string{"npm:/cache/npm"},
			env:    []string{"npm_config_cache=/cache/npm", "npm_config_update_notifier=false", "npm_config_fund=false", "npm_config_audit=false"},
		},
	},
}

func TestFirstDay(t *testing.T) {
	if testing.Short() {
		t.Skip("fetches real third-party code and pulls toolchain images")
	}
	requireDocker(t)
	registrytest.Mirror(t)
	// Mostly waits on package managers and containers: beside the
	// package's other tests, and the two projects side by side.
	t.Parallel()
	bin := cliWrapper(t)
	for _, p := range firstDayProjects {
		t.Run(p.name, func(t *testing.T) {
			if os.Getenv("PROOFGATE_FIRSTDAY_WARM") != "1" { // a benchmark runs one project at a time
				t.Parallel()
			}
			firstDay(t, p, bin)
		})
	}
}

// firstDay walks one project.
func firstDay(t *testing.T, p thirdParty, bin string) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	parent := t.TempDir()
	repo := filepath.Join(parent, "your-repository")
	p.fetch(t, repo)
	gitInit(t, repo, p.origin)
	config, caches := t.TempDir(), t.TempDir()
	env := append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "XDG_CONFIG_HOME="+config,
		"PROOFGATE_CACHE_ROOT="+caches, "RELEASE_SHA="+strings.Repeat("5a", 20), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x.invalid",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x.invalid", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")

	start := time.Now()
	walk(t, parent, env, "init", readmeBlock(t, readme, "init"), 3)
	green := time.Since(start)
	assertClean(t, repo, "init")
	st := firstDayStatusOf(t, repo, env)
	for _, c := range st.Checks {
		if c.Outcome != "passed" {
			t.Fatalf("check %s: %s", c.ID, c.Outcome)
		}
	}
	t.Logf("FIRSTDAY %s: init to a green run %.1f s (%d checks)", p.name, green.Seconds(), len(st.Checks))

	// The local bundle steps, with the trust store init's printed command
	// makes (init ran in the README block; its --json names the key).
	keys, _ := filepath.Glob(filepath.Join(config, "proofgate", "keys", "your-repository-*.pem"))
	var priv, pub string
	for _, k := range keys {
		if strings.HasSuffix(k, ".pub.pem") {
			pub = k
		} else {
			priv = k
		}
	}
	if priv == "" || pub == "" {
		t.Fatalf("init wrote keys %v", keys)
	}
	bundle := filepath.Join(t.TempDir(), "bundle.tar.gz")
	trust := filepath.Join(t.TempDir(), "trust.json")
	identity := "repo:" + strings.TrimSuffix(strings.TrimPrefix(p.origin, "https://github.com/"), ".git")
	walk(t, repo, env, "local bundle", []string{
		"proofgate approve latest --actor maintainer",
		"proofgate bundle export latest --key " + priv,
		"proofgate bundle export latest --key " + priv + " -o " + bundle,
		"proofgate trust add --store " + trust + " --public-key " + pub + " --identity " + identity,
		"proofgate bundle verify " + bundle + " --trust " + trust + " --commit $(git rev-parse HEAD) --contract .proofgate/contract.yaml",
	}, 0)
	assertClean(t, repo, "bundle export")

	// The warm ratio is a benchmark (it asserts nothing): bash
	// scripts/bench.sh firstday runs it; the test suite does not.
	if os.Getenv("PROOFGATE_FIRSTDAY_WARM") == "1" {
		firstDayWarm(t, p, repo, env)
	}
}

type firstDayStatus struct {
	State  string `json:"state"`
	Checks []struct {
		ID      string `json:"id"`
		Outcome string `json:"outcome"`
	} `json:"checks"`
}

func firstDayStatusOf(t *testing.T, dir string, env []string) firstDayStatus {
	t.Helper()
	cmd := exec.Command("proofgate", "status", "latest", "--json")
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.Output()
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 3) { // 3: awaiting approval
		t.Fatalf("status: %v\n%s", err, out)
	}
	var st firstDayStatus
	if err := json.Unmarshal(out, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// cliWrapper puts a `proofgate` on a directory it returns: the test binary
// running the CLI (TestMain, mainEnv).
func cliWrapper(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeExec(t, filepath.Join(dir, "proofgate"), fmt.Sprintf("#!/bin/sh\n%s=1 exec %q \"$@\"\n", mainEnv, self))
	return dir
}

// gitInit makes dir a repository with one commit, on main, with origin.
func gitInit(t *testing.T, dir, origin string) {
	t.Helper()
	for _, argv := range [][]string{
		{"init", "-q", "-b", "main"},
		{"remote", "add", "origin", origin},
	} {
		if out, err := gitOut(dir, argv...); err != nil {
			t.Fatalf("git %v: %v %s", argv, err, out)
		}
	}
	gitCommitAll(t, dir, "upstream source")
	if st := must(gitOut(dir, "status", "--porcelain")); strings.TrimSpace(st) != "" {
		t.Fatalf("not clean after commit: %s", st)
	}
}

// requireDocker fails (PROOFGATE_REQUIRE_DOCKER=1) or skips without a daemon.
func requireDocker(t *testing.T) {
	t.Helper()
	ok, err := dockerCondition("docker")
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Skip("no Docker daemon")
	}
}
