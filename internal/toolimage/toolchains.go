package toolimage

import (
	"context"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/proofgate/proofgate/internal/testimage"
)

// GoSpec is the Go image: the base layer and the GOROOT at goroot (whose
// version, "1.26.8", is version), configured as the official golang image
// is (GOPATH /go, PATH, GOLANG_VERSION, GOTOOLCHAIN=local, working directory
// /go). There is no C compiler: cgo is off by default, as the go command
// decides on its own.
func GoSpec(ctx context.Context, busybox, goroot, platform, version string) (Spec, error) {
	base, err := BaseFiles(ctx, busybox)
	if err != nil {
		return Spec{}, err
	}
	tool, err := GoFiles(goroot, platform)
	if err != nil {
		return Spec{}, err
	}
	return Spec{
		Name:   "golang",
		Layers: [][]testimage.File{base, tool},
		Config: v1.Config{
			Env: []string{
				"PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
				"GOLANG_VERSION=" + version,
				"GOTOOLCHAIN=local",
				"GOPATH=/go",
			},
			WorkingDir: "/go",
			Cmd:        []string{"sh"},
		},
	}, nil
}

// NodeSpec is the Node image: the base layer and the host's node (at node,
// version "20.20.2" without the v) with its libraries and npm (the package
// directory npmDir), configured as the official node image is (PATH,
// NODE_VERSION, command node).
func NodeSpec(ctx context.Context, busybox, node, npmDir, version string) (Spec, error) {
	base, err := BaseFiles(ctx, busybox)
	if err != nil {
		return Spec{}, err
	}
	tool, err := NodeFiles(ctx, node, npmDir)
	if err != nil {
		return Spec{}, err
	}
	return Spec{
		Name:   "node",
		Layers: [][]testimage.File{base, tool},
		Config: v1.Config{
			Env: []string{
				"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
				"NODE_VERSION=" + version,
			},
			Cmd: []string{"node"},
		},
	}, nil
}
