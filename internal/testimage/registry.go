package testimage

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	goruntime "runtime"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Registry is a real OCI distribution registry (go-containerregistry's
// pkg/registry, in memory) listening on 127.0.0.1 only. The Docker daemon
// pulls from it without configuration: loopback registries are insecure
// registries by default. It stands in for Docker Hub in tests: nothing
// leaves the machine.
type Registry struct {
	Host string // 127.0.0.1:PORT
	srv  *httptest.Server
}

// StartRegistry starts an empty registry on 127.0.0.1:0.
func StartRegistry() (*Registry, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("testimage: registry: %w", err)
	}
	srv := &httptest.Server{Listener: l, Config: &http.Server{
		Handler: registry.New(registry.Logger(log.New(io.Discard, "", 0)))}}
	srv.Start()
	return &Registry{Host: l.Addr().String(), srv: srv}, nil
}

// Close stops the registry.
func (r *Registry) Close() { r.srv.Close() }

// Push writes an image whose single layer is files, with the image
// configuration's environment env, as HOST/repo:tag and returns the
// manifest digest (sha256:<hex>) and the image ID (the config digest).
func (r *Registry) Push(ctx context.Context, repo, tag string, files []File, env ...string) (manifest, id string, err error) {
	ref, err := name.ParseReference(r.Host+"/"+repo+":"+tag, name.Insecure)
	if err != nil {
		return "", "", fmt.Errorf("testimage: registry: %w", err)
	}
	var buf bytes.Buffer
	if err := WriteTar(&buf, files); err != nil {
		return "", "", err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	if err != nil {
		return "", "", fmt.Errorf("testimage: registry: %w", err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return "", "", fmt.Errorf("testimage: registry: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return "", "", fmt.Errorf("testimage: registry: %w", err)
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS, cf.Config.Env = goruntime.GOARCH, "linux", env
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return "", "", fmt.Errorf("testimage: registry: %w", err)
	}
	if err := remote.Write(ref, img, remote.WithContext(ctx)); err != nil {
		return "", "", fmt.Errorf("testimage: push %s: %w", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		return "", "", fmt.Errorf("testimage: registry: %w", err)
	}
	c, err := img.ConfigName()
	if err != nil {
		return "", "", fmt.Errorf("testimage: registry: %w", err)
	}
	return d.String(), c.String(), nil
}
