package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
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
			for _, k := range []string{"PROOFGATE_REQUIRE_DOCKER", "DOCKER_HOST"} {
				if v := os.Getenv(k); v != "" {
					env.Setenv(k, v)
				}
			}
			return nil
		},
		Condition: condition,
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exits":     cmdExits,
			"replace":   cmdReplace,
			"nopem":     cmdNopem,
			"testimage": cmdTestimage,
			"imageid":   cmdImageid,
			"registry":  cmdRegistry,
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
