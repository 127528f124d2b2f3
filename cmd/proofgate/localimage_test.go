package main

import (
	"context"
	"time"

	"github.com/moby/moby/client"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/proofgate/proofgate/internal/registrytest"
	"github.com/proofgate/proofgate/internal/testimage"
)

// imageidof VAR REF sets $VAR to the image ID (sha256:<hex>) of image REF on
// the daemon. Scripts guard it with [docker].
func cmdImageidOf(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: imageidof VAR REF")
	}
	cli, err := client.New(client.FromEnv)
	ts.Check(err)
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	img, err := cli.ImageInspect(ctx, args[1])
	ts.Check(err)
	ts.Setenv(args[0], img.ID)
}

// helperregistry starts a real OCI registry on 127.0.0.1 for the rest of the
// script, pushes the helper image's files to it as proofgate-test/pushed:v1
// and sets $REGISTRY (127.0.0.1:PORT) and $PUSHED_DIGEST (its manifest
// digest). Nothing is pulled into the daemon.
func cmdHelperRegistry(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: helperregistry")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	reg := registrytest.Start()
	ts.Defer(reg.Close)
	bin, err := testimage.HelperBinary(ctx)
	ts.Check(err)
	manifest, _, err := reg.PushFiles(ctx, "proofgate-test/pushed", "v1", testimage.HelperFiles(bin))
	ts.Check(err)
	ts.Setenv("REGISTRY", reg.Host())
	ts.Setenv("PUSHED_DIGEST", manifest)
}
