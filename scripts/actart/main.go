// Command actart serves nektos/act's artifact server (the v4 Twirp routes
// that act gives a workflow's steps, from act's own pkg/artifacts) on
// 127.0.0.1:PORT, storing under DIR, until interrupted. It first prints
// the ACTIONS_RUNTIME_TOKEN act gives a job of run 42 (act's own
// common.CreateAuthorizationToken), one line. internal/ci/artifact's
// TestUploadToActArtifactServer uploads to it. It is its own module so that
// act's dependencies stay out of ProofGate's go.mod; build it with
// scripts/act-artifacts-up.sh.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/nektos/act/pkg/artifacts"
	"github.com/nektos/act/pkg/common"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: actart DIR PORT")
		os.Exit(2)
	}
	tok, err := common.CreateAuthorizationToken(42, 42, 42)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(tok)
	cancel := artifacts.Serve(context.Background(), os.Args[1], "127.0.0.1", os.Args[2])
	defer cancel()
	c := make(chan os.Signal, 1)
	signal.Notify(c, os.Interrupt, syscall.SIGTERM)
	<-c
}
