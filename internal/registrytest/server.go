package registrytest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	goruntime "runtime"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/proofgate/proofgate/internal/testimage"
)

// Hostile modes (Server.SetMode).
const (
	Honest    = ""
	NonDigest = "non-digest" // HEAD of a manifest answers Docker-Content-Digest: latest
	Lying     = "lying"      // HEAD answers the digest of other bytes
	Oversized = "oversized"  // manifests are 5 MiB (HEAD says so; GET streams it)
	NotImage  = "not-image"  // manifests are served as text/html
)

// Server is a real OCI distribution registry (go-containerregistry's
// pkg/registry, in memory) on 127.0.0.1 only, standing in for Docker Hub
// or a user's own registry: nothing leaves the machine. The Docker daemon
// pulls from it without configuration (loopback registries are insecure
// registries by default).
type Server struct {
	srv  *httptest.Server
	mu   sync.Mutex
	mode string
}

// Start starts a registry; Close stops it.
func Start() *Server {
	s := &Server{}
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.serve(reg, w, r)
	}))
	return s
}

// Host is host:port.
func (s *Server) Host() string { return strings.TrimPrefix(s.srv.URL, "http://") }

// URL is http://host:port.
func (s *Server) URL() string { return s.srv.URL }

// Close stops the registry.
func (s *Server) Close() { s.srv.Close() }

// SetMode makes the registry honest or hostile.
func (s *Server) SetMode(mode string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mode = mode
}

// Push writes a random two-platform image index (linux/amd64,
// linux/arm64) under ref (Docker Hub naming: golang:1.26 goes to
// library/golang:1.26) and returns the index digest.
func (s *Server) Push(ref string) (string, error) {
	tag, err := name.NewTag(ref)
	if err != nil {
		return "", err
	}
	dst, err := name.NewTag(s.Host()+"/"+tag.Context().RepositoryStr()+":"+tag.TagStr(), name.Insecure)
	if err != nil {
		return "", err
	}
	idx, err := randomIndex()
	if err != nil {
		return "", err
	}
	if err := remote.WriteIndex(dst, idx); err != nil {
		return "", err
	}
	d, err := idx.Digest()
	return d.String(), err
}

func randomIndex() (v1.ImageIndex, error) {
	var adds []mutate.IndexAddendum
	for _, arch := range []string{"amd64", "arm64"} {
		img, err := random.Image(256, 1)
		if err != nil {
			return nil, err
		}
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch}}})
	}
	return mutate.AppendManifests(empty.Index, adds...), nil
}

func (s *Server) serve(reg http.Handler, w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	mode := s.mode
	s.mu.Unlock()
	if mode == Honest || !strings.Contains(r.URL.Path, "/manifests/") {
		reg.ServeHTTP(w, r)
		return
	}
	switch mode {
	case NonDigest:
		w.Header().Set("Content-Type", "application/vnd.oci.image.index.v1+json")
		w.Header().Set("Docker-Content-Digest", "latest")
		w.Header().Set("Content-Length", "2")
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			io.WriteString(w, "{}")
		}
	case Lying:
		if r.Method == http.MethodHead {
			w.Header().Set("Content-Type", "application/vnd.oci.image.index.v1+json")
			w.Header().Set("Docker-Content-Digest", "sha256:"+strings.Repeat("ab", 32))
			w.Header().Set("Content-Length", "2")
			w.WriteHeader(http.StatusOK)
			return
		}
		w.Header().Set("Content-Type", "application/vnd.oci.image.index.v1+json")
		io.WriteString(w, `{"schemaVersion":2,"manifests":[]}`)
	case Oversized:
		const n = 5 << 20
		w.Header().Set("Content-Type", "application/vnd.oci.image.index.v1+json")
		w.Header().Set("Docker-Content-Digest", "sha256:"+strings.Repeat("cd", 32))
		if r.Method == http.MethodHead {
			w.Header().Set("Content-Length", fmt.Sprint(n))
			w.WriteHeader(http.StatusOK)
			return
		}
		// No Content-Length: the client sees the size only by reading.
		w.WriteHeader(http.StatusOK)
		chunk := []byte(strings.Repeat(" ", 64<<10))
		for i := 0; i < n/len(chunk); i++ {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	case NotImage:
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Docker-Content-Digest", "sha256:"+strings.Repeat("ef", 32))
		w.Header().Set("Content-Length", "2")
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			io.WriteString(w, "{}")
		}
	}
}

// PushFiles writes a runnable image whose single layer is files, with the image
// configuration's environment env, as HOST/repo:tag and returns the
// manifest digest (sha256:<hex>) and the image ID (the config digest).
func (s *Server) PushFiles(ctx context.Context, repo, tag string, files []testimage.File, env ...string) (manifest, id string, err error) {
	ref, err := name.ParseReference(s.Host()+"/"+repo+":"+tag, name.Insecure)
	if err != nil {
		return "", "", fmt.Errorf("registrytest: %w", err)
	}
	var buf bytes.Buffer
	if err := testimage.WriteTar(&buf, files); err != nil {
		return "", "", err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf.Bytes())), nil })
	if err != nil {
		return "", "", fmt.Errorf("registrytest: %w", err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return "", "", fmt.Errorf("registrytest: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return "", "", fmt.Errorf("registrytest: %w", err)
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS, cf.Config.Env = goruntime.GOARCH, "linux", env
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return "", "", fmt.Errorf("registrytest: %w", err)
	}
	if err := remote.Write(ref, img, remote.WithContext(ctx)); err != nil {
		return "", "", fmt.Errorf("registrytest: push %s: %w", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		return "", "", fmt.Errorf("registrytest: %w", err)
	}
	c, err := img.ConfigName()
	if err != nil {
		return "", "", fmt.Errorf("registrytest: %w", err)
	}
	return d.String(), c.String(), nil
}
