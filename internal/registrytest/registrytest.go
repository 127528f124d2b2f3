// Package registrytest gives tests the local registry mirror that stands in
// for Docker Hub (scripts/mirror-up.sh, command ./cmd/mirror): a real OCI
// registry on 127.0.0.1 holding library/golang and library/node images built
// from the host's toolchains, which the Docker daemon uses as its registry
// mirror, so that `docker pull golang:1.26` resolves as on a GitHub runner.
//
// The environment names it: PROOFGATE_MIRROR is its host:port;
// PROOFGATE_REQUIRE_MIRROR=1 (set by scripts/test.sh) makes a missing
// mirror fail a test instead of skipping it.
//
// Start runs a registry in the test's own process instead (server.go):
// go-containerregistry's pkg/registry behind httptest on 127.0.0.1, with
// images pushed under the names Docker Hub gives official images and
// hostile modes that answer the way a broken or malicious registry would.
package registrytest

import (
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
)

// Environment variables.
const (
	EnvMirror        = "PROOFGATE_MIRROR"
	EnvRequireMirror = "PROOFGATE_REQUIRE_MIRROR"
)

// Mirror returns the mirror's address ("127.0.0.1:5391") once it answers
// the registry API (GET /v2/). When PROOFGATE_MIRROR is unset or the
// registry does not answer, the test fails if PROOFGATE_REQUIRE_MIRROR=1
// and is skipped otherwise.
func Mirror(t testing.TB) string {
	t.Helper()
	addr := os.Getenv(EnvMirror)
	err := fmt.Errorf("%s is not set (run: export %s=\"$(bash scripts/mirror-up.sh)\")", EnvMirror, EnvMirror)
	if addr != "" {
		err = Ping(addr)
	}
	if err != nil {
		if os.Getenv(EnvRequireMirror) == "1" {
			t.Fatalf("registry mirror required (%s=1): %v", EnvRequireMirror, err)
		}
		t.Skipf("no registry mirror: %v", err)
	}
	return addr
}

// Ping checks that a registry answers GET /v2/ on addr over plain HTTP.
func Ping(addr string) error {
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + addr + "/v2/")
	if err != nil {
		return fmt.Errorf("registry mirror %s: %w (start it: bash scripts/mirror-up.sh)", addr, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("registry mirror %s: GET /v2/ answered %s", addr, resp.Status)
	}
	return nil
}

// Ref maps a Docker Hub reference ("golang:1.26", "node:20@sha256:...")
// to the same repository on the mirror at addr
// ("127.0.0.1:5391/library/golang:1.26"), for go-containerregistry's remote
// calls (remote.Head, remote.Get), which reach the mirror over plain HTTP.
// Only Docker Hub references are accepted.
func Ref(addr, hub string) (name.Reference, error) {
	r, err := name.ParseReference(hub)
	if err != nil {
		return nil, fmt.Errorf("registrytest: %q: %w", hub, err)
	}
	if r.Context().RegistryStr() != name.DefaultRegistry {
		return nil, fmt.Errorf("registrytest: %q is not a Docker Hub reference", hub)
	}
	return name.ParseReference(addr+"/"+r.Context().RepositoryStr()+sep(r)+r.Identifier(), name.Insecure)
}

func sep(r name.Reference) string {
	if _, ok := r.(name.Digest); ok {
		return "@"
	}
	return ":"
}
