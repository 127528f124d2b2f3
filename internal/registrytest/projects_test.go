package registrytest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestGoModuleBuildsOfflineInGolangImage builds and runs a module that
// requires a real third-party module (golang.org/x/mod, whose go.mod
// requires golang.org/x/tools in turn) in golang:1.26 with network none,
// from a module cache filled on the host (from the host's module download
// cache, falling back to the Go module proxy) and mounted read-only, as a
// sandboxed check after a fetch check would. The program is small (semver
// needs only strings and slices), so that compiling it with the image's
// empty build cache stays quick.
func TestGoModuleBuildsOfflineInGolangImage(t *testing.T) {
	daemonWithMirror(t)
	docker(t, "pull", "golang:1.26")
	src, modcache := t.TempDir(), t.TempDir()
	writeFiles(t, src, map[string]string{
		"go.mod": "module example.com/hello\n\ngo 1.22\n\nrequire golang.org/x/mod v0.37.0\n",
		"main.go": `package main

import "golang.org/x/mod/semver"

func main() { println("max", semver.Max("v1.2.3", "v1.10.0")) }
`,
	})
	hostCache := run(t, time.Minute, "", nil, "go", "env", "GOMODCACHE")
	env := []string{
		"GOMODCACHE=" + modcache, "GOFLAGS=-modcacherw", "GOSUMDB=off", "GOTOOLCHAIN=local",
		"GOPROXY=file://" + filepath.Join(hostCache, "cache", "download") + ",https://proxy.golang.org",
	}
	run(t, 3*time.Minute, src, env, "go", "mod", "tidy")
	got := docker(t, "run", "--rm", "--network", "none",
		"-v", src+":/src", "-v", modcache+":/go/pkg/mod:ro", "-w", "/src",
		"-e", "GOFLAGS=-mod=readonly", "-e", "GOPROXY=off",
		"golang:1.26", "sh", "-c", "go build -o /tmp/hello . && /tmp/hello")
	if want := "max v1.10.0"; !strings.HasSuffix(got, want) {
		t.Fatalf("offline build in golang:1.26 printed %q, want it to end with %q", got, want)
	}
}

// TestNpmCiInNodeImage installs a package's dependencies and
// devDependencies (is-number and tape, real packages from the npm
// registry, which this test reaches) with `npm ci` from its lock file in
// node:20 with the host's network, then runs its tests there (`npm test`,
// tape from node_modules/.bin through /bin/sh).
func TestNpmCiInNodeImage(t *testing.T) {
	daemonWithMirror(t)
	docker(t, "pull", "node:20")
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"package.json": `{
  "name": "proofgate-npm-ci-probe",
  "version": "1.0.0",
  "private": true,
  "scripts": { "test": "tape test.js" },
  "dependencies": { "is-number": "7.0.0" },
  "devDependencies": { "tape": "^5.9.0" }
}
`,
		"test.js": `const test = require('tape');
const isNumber = require('is-number');
test('is-number', (t) => { t.ok(isNumber(5)); t.notOk(isNumber('x')); t.end(); });
`,
	})
	run(t, 3*time.Minute, dir, nil, "npm", "install", "--package-lock-only", "--ignore-scripts", "--no-audit", "--no-fund")
	if _, err := os.Stat(filepath.Join(dir, "package-lock.json")); err != nil {
		t.Fatal(err)
	}
	got := docker(t, "run", "--rm", "--network", "host", "-v", dir+":/app", "-w", "/app",
		"node:20", "sh", "-c", "npm ci --no-audit --no-fund && npm test")
	if !strings.Contains(got, "# pass  2") || strings.Contains(got, "# fail") {
		t.Fatalf("npm ci && npm test in node:20:\n%s\nwant tape's \"# pass  2\" and no failure", got)
	}
}
