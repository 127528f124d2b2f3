package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/moby/moby/client"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/proofgate/proofgate/internal/registrytest"
	"github.com/proofgate/proofgate/internal/starter"
)

// TestInitScripts runs the init and doctor scenarios in testdata/init.
// $REAL_HOME is the test's own HOME, so that a process check that takes
// HOME from the harness (env_from_host) can use the warm Go build cache.
func TestInitScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 filepath.Join("testdata", "init"),
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			examplesDir, err := filepath.Abs(filepath.Join("..", "..", "examples"))
			if err != nil {
				return err
			}
			env.Setenv("EXAMPLES", examplesDir)
			for k, v := range map[string]string{
				"GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "test@example.invalid",
				"GIT_COMMITTER_NAME": "Test", "GIT_COMMITTER_EMAIL": "test@example.invalid",
				"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null",
				"REAL_HOME": os.Getenv("HOME"), "ORIG_DOCKER_HOST": os.Getenv("DOCKER_HOST"), "XDG_CONFIG_HOME": filepath.Join(env.WorkDir, "config"),
			} {
				env.Setenv(k, v)
			}
			for _, k := range []string{"PROOFGATE_REQUIRE_DOCKER", "DOCKER_HOST", "PROOFGATE_MIRROR"} {
				if v := os.Getenv(k); v != "" {
					env.Setenv(k, v)
				}
			}
			// No scenario may ask Docker Hub: unless it starts its own
			// registry, the mirror is a loopback port nobody listens on.
			dead, err := closedLoopback()
			if err != nil {
				return err
			}
			env.Setenv(starter.MirrorEnv, "http://"+dead)
			env.Setenv("DEAD_REGISTRY", dead)
			return nil
		},
		Condition: initCondition,
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exits":          cmdExits,
			"replace":        cmdReplace,
			"nopem":          cmdNopem,
			"testimage":      cmdTestimage,
			"imageidof":      cmdImageidOf,
			"helperregistry": cmdHelperRegistry,
			"registry":       cmdRegistry,
			"imageid":        cmdImageID,
		},
	})
}

// nopem DIR fails when any file under DIR holds a PEM private key.
func cmdNopem(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: nopem dir")
	}
	ts.Check(filepath.WalkDir(ts.MkAbs(args[0]), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(b), "PRIVATE KEY-----") {
			ts.Fatalf("private key inside %s: %s", args[0], p)
		}
		return err
	}))
}

// TestShellQuote: a printed path with a space or quote stays one word.
func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/a/b.pem":                             "/a/b.pem",
		"/Users/x/Library/Application Support": "'/Users/x/Library/Application Support'",
		"it's":                                 `'it'\''s'`,
		"":                                     "''",
		"$(id)":                                "'$(id)'",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

// initCondition adds [mirror]: the Docker daemon has the registry mirror
// that CI starts (PROOFGATE_MIRROR=127.0.0.1:PORT).
func initCondition(cond string) (bool, error) {
	if cond == "mirror" {
		return os.Getenv("PROOFGATE_MIRROR") != "", nil
	}
	return condition(cond)
}

// servers are the registries the running scenarios started.
var servers sync.Map // *testscript.TestScript → *registrytest.Server

func closedLoopback() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// registry start: an OCI registry in this process on 127.0.0.1; sets
// $REGISTRY (http://HOST:PORT) and points $PROOFGATE_REGISTRY_MIRROR at it.
// registry push REF VAR: pushes a random two-platform index as REF
// (library/ for official names), the index digest into $VAR.
// registry mode MODE: honest ("") or hostile (registrytest's modes).
func cmdRegistry(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: registry start | push REF VAR | mode MODE")
	}
	if args[0] == "start" && len(args) == 1 {
		srv := registrytest.Start()
		servers.Store(ts, srv)
		ts.Defer(func() { servers.Delete(ts); srv.Close() })
		ts.Setenv("REGISTRY", srv.URL())
		ts.Setenv("REGISTRY_HOST", srv.Host())
		ts.Setenv(starter.MirrorEnv, srv.URL())
		return
	}
	v, ok := servers.Load(ts)
	if !ok {
		ts.Fatalf("registry start first")
	}
	srv := v.(*registrytest.Server)
	switch {
	case args[0] == "push" && len(args) == 3:
		d, err := srv.Push(args[1])
		ts.Check(err)
		ts.Setenv(args[2], d)
	case args[0] == "mode" && len(args) <= 2:
		srv.SetMode(strings.Join(args[1:], ""))
	default:
		ts.Fatalf("usage: registry start | push REF VAR | mode MODE")
	}
}

// imageid IMAGE VAR: the local daemon's ID of IMAGE (sha256:<hex>) into $VAR.
func cmdImageID(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: imageid image var")
	}
	cli, err := client.New(client.FromEnv)
	ts.Check(err)
	defer cli.Close()
	img, err := cli.ImageInspect(context.Background(), args[0])
	ts.Check(err)
	if len(img.RepoDigests) != 0 {
		ts.Fatalf("%s has repo digests %v", args[0], img.RepoDigests)
	}
	ts.Setenv(args[1], img.ID)
}
