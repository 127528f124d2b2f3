package testimage

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

// RequireDaemon fails the test when no Docker daemon answers and
// PROOFGATE_REQUIRE_DOCKER=1 (as scripts/test.sh sets), and skips it
// otherwise: what CI has is tested, never skipped.
func RequireDaemon(t testing.TB) {
	t.Helper()
	cli, err := client.New(client.FromEnv)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err = cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true})
		cancel()
		cli.Close()
	}
	if err != nil {
		if os.Getenv("PROOFGATE_REQUIRE_DOCKER") == "1" {
			t.Fatalf("no docker daemon and PROOFGATE_REQUIRE_DOCKER=1: %v", err)
		}
		t.Skipf("no docker daemon: %v", err)
	}
}
