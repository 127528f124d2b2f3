package toolimage

import (
	"compress/gzip"
	"fmt"
	"io"
	goruntime "runtime"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/proofgate/proofgate/internal/testimage"
)

// Spec is one image: its layers, bottom first, and its configuration.
type Spec struct {
	Name   string // a short name for caches and messages: "golang", "node"
	Layers [][]testimage.File
	Config v1.Config
}

// Build makes the image of s, with Docker's media types as Docker Hub
// serves its official images, wrapped in a manifest list with the one
// platform linux/GOARCH: what a pull of "golang:1.26" resolves and what the
// daemon records as its repo digest.
func Build(s Spec) (v1.ImageIndex, error) {
	img := mutate.MediaType(empty.Image, types.DockerManifestSchema2)
	img = mutate.ConfigMediaType(img, types.DockerConfigJSON)
	for i, files := range s.Layers {
		l, err := tarball.LayerFromOpener(opener(files),
			tarball.WithCompressionLevel(gzip.BestSpeed),
			tarball.WithMediaType(types.DockerLayer),
			tarball.WithCompressedCaching)
		if err != nil {
			return nil, fmt.Errorf("toolimage: %s layer %d: %w", s.Name, i, err)
		}
		if img, err = mutate.AppendLayers(img, l); err != nil {
			return nil, fmt.Errorf("toolimage: %s layer %d: %w", s.Name, i, err)
		}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("toolimage: %s: %w", s.Name, err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Config = "linux", goruntime.GOARCH, s.Config
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return nil, fmt.Errorf("toolimage: %s: %w", s.Name, err)
	}
	idx := mutate.IndexMediaType(empty.Index, types.DockerManifestList)
	return mutate.AppendManifests(idx, mutate.IndexAddendum{
		Add: img,
		Descriptor: v1.Descriptor{
			MediaType: types.DockerManifestSchema2,
			Platform:  &v1.Platform{OS: "linux", Architecture: goruntime.GOARCH},
		},
	}), nil
}

// opener writes the layer's tar through a pipe each time it is opened.
func opener(files []testimage.File) tarball.Opener {
	return func() (io.ReadCloser, error) {
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(testimage.WriteTar(pw, files)) }()
		return pr, nil
	}
}
