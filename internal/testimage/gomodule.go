package testimage

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// JCSModule is the one real dependency of the Go modules the toolchain
// tests build: small, and already in this repository's module graph, so the
// host's module cache holds it without a network.
const JCSModule = "github.com/gowebpki/jcs@v1.0.2"

// RequireJCS makes the module in dir require JCSModule, filling modcache
// from the host's module download cache (GOPROXY=file://, no network), as
// a fetch phase would, and returns that download cache (a GOPROXY tree).
func RequireJCS(t testing.TB, dir, modcache string) (downloads string) {
	t.Helper()
	host, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	dl := filepath.Join(strings.TrimSpace(string(host)), "cache", "download")
	if _, err := os.Stat(filepath.Join(dl, "github.com", "gowebpki", "jcs", "@v", "v1.0.2.zip")); err != nil {
		// A dependency of this module: `go mod download` fills the host cache.
		if out, err := exec.Command("go", "mod", "download", "github.com/gowebpki/jcs").CombinedOutput(); err != nil {
			t.Fatalf("host module cache lacks jcs: %v %s", err, out)
		}
	}
	// go get, not tidy: tidy would want the zips of jcs's own test deps.
	cmd := exec.Command("go", "get", JCSModule)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOMODCACHE="+modcache, "GOPROXY=file://"+dl, "GOSUMDB=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go get: %v %s", err, out)
	}
	return dl
}
