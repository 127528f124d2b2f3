// Command mirror is the tests' stand-in for Docker Hub: a real OCI registry
// (go-containerregistry's pkg/registry) on a loopback address that the
// Docker daemon uses as its registry mirror, and the pusher of the toolchain
// images it serves. scripts/mirror-up.sh builds and runs it:
//
//	mirror serve -addr 127.0.0.1:5391 -dir DIR
//	mirror push -registry 127.0.0.1:5391 -cache DIR
//
// serve keeps blobs in DIR/blobs (they survive a restart); manifests live in
// memory, so push runs after every start: it builds the golang and node
// images from the host's toolchains (internal/toolimage; cached by a stamp of
// their inputs in the -cache directory) and pushes them as library/golang and
// library/node, the names under which a pull-through mirror serves Docker
// Hub's official images, under every tag of PROOFGATE_MIRROR_GOLANG_TAGS and
// PROOFGATE_MIRROR_NODE_TAGS (space-separated; by default 1.15 ... 1.26 and
// the host's exact Go version, 18 20 22 24 and the host's exact Node
// version). Every tag holds the host's toolchain, whatever its name says.
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: mirror serve|push [flags] (see the package doc)")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2:])
	case "push":
		err = push(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q: want serve or push", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mirror:", err)
		os.Exit(1)
	}
}
