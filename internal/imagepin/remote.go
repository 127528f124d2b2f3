package imagepin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// DockerHub is the registry host of official images, as Pin.Registry
// names it.
const DockerHub = name.DefaultRegistry

// DefaultTimeout bounds one Resolve over every registry it asks.
const DefaultTimeout = 60 * time.Second

// Remote resolves tags at registries.
type Remote struct {
	// Mirrors are registry mirror URLs (http://127.0.0.1:5000,
	// https://mirror.example), asked in order for Docker Hub images.
	Mirrors []string
	// DockerHub: ask Docker Hub after the mirrors (always, when there are
	// none).
	DockerHub bool
	// Timeout bounds one Resolve (DefaultTimeout when zero).
	Timeout time.Duration
	// Transport is the HTTP transport under the bound (a clone of
	// http.DefaultTransport when nil).
	Transport http.RoundTripper
}

// Resolve returns image pinned by the digest a registry gives for its tag.
// An image that already has a digest is an error: there is nothing to
// resolve.
func (r Remote) Resolve(ctx context.Context, image string) (Pin, error) {
	tag, err := name.NewTag(image)
	if err != nil {
		return Pin{}, fmt.Errorf("image %q: %w", image, err)
	}
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ends, err := r.endpoints(tag.Context())
	if err != nil {
		return Pin{}, err
	}
	unreachable := &UnreachableError{Image: image}
	for _, e := range ends {
		p, err := r.at(ctx, e.repo.Tag(tag.TagStr()))
		if err == nil {
			p.Image, p.Ref, p.Source = image, image+"@"+p.Digest, e.source
			return p, nil
		}
		unreachable.Attempts = append(unreachable.Attempts, Attempt{Registry: e.repo.RegistryStr(), Err: err})
	}
	return Pin{}, unreachable
}

type endpoint struct {
	repo   name.Repository
	source string
}

// endpoints are the registries to ask, in order.
func (r Remote) endpoints(repo name.Repository) ([]endpoint, error) {
	if repo.RegistryStr() != name.DefaultRegistry {
		return []endpoint{{repo, SourceRegistry}}, nil
	}
	var out []endpoint
	for _, m := range r.Mirrors {
		reg, err := MirrorRegistry(m)
		if err != nil {
			return nil, err
		}
		mr, err := name.NewRepository(repo.RepositoryStr(), name.WithDefaultRegistry(reg.RegistryStr()))
		if err != nil {
			return nil, fmt.Errorf("registry mirror %q: %w", m, err)
		}
		mr.Registry = reg
		out = append(out, endpoint{mr, SourceMirror})
	}
	if r.DockerHub || len(out) == 0 {
		out = append(out, endpoint{repo, SourceRegistry})
	}
	return out, nil
}

// MirrorRegistry parses a registry mirror as dockerd's registry-mirrors
// and docker info give it (http://host:port/, https://host) or a bare
// host[:port]. An http:// mirror is asked over plain HTTP.
func MirrorRegistry(mirror string) (name.Registry, error) {
	host, opts := mirror, []name.Option{name.StrictValidation}
	if strings.Contains(mirror, "://") {
		u, err := url.Parse(mirror)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") ||
			(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil || u.Fragment != "" {
			return name.Registry{}, fmt.Errorf("registry mirror %q: want http://HOST[:PORT] or https://HOST[:PORT] (no path, query or credentials)", mirror)
		}
		host = u.Host
		if u.Scheme == "http" {
			opts = append(opts, name.Insecure)
		}
	}
	reg, err := name.NewRegistry(host, opts...)
	if err != nil {
		return name.Registry{}, fmt.Errorf("registry mirror %q: %w", mirror, err)
	}
	return reg, nil
}

// at asks one registry: HEAD of the tag for its digest (GET when the
// registry refuses HEAD), then GET by that digest, which go-containerregistry
// checks against the manifest's bytes.
func (r Remote) at(ctx context.Context, tag name.Tag) (Pin, error) {
	opts := r.options(ctx)
	desc, err := remote.Head(tag, opts...)
	if isStatus(err, http.StatusMethodNotAllowed, http.StatusNotImplemented) {
		var d *remote.Descriptor
		if d, err = remote.Get(tag, opts...); err == nil {
			desc = &d.Descriptor
		}
	}
	if err != nil {
		return Pin{}, classify(err)
	}
	if err := acceptable(desc); err != nil {
		return Pin{}, err
	}
	got, err := remote.Get(tag.Context().Digest(desc.Digest.String()), opts...)
	if err != nil {
		return Pin{}, fmt.Errorf("%w: the manifest %s does not verify: %w", ErrBadAnswer, desc.Digest, classify(err))
	}
	if err := acceptable(&got.Descriptor); err != nil {
		return Pin{}, err
	}
	return Pin{Digest: desc.Digest.String(), Registry: tag.RegistryStr(), MediaType: string(got.MediaType)}, nil
}

func (r Remote) options(ctx context.Context) []remote.Option {
	base := r.Transport
	if base == nil {
		base = http.DefaultTransport.(*http.Transport).Clone()
	}
	return []remote.Option{
		remote.WithContext(ctx),
		remote.WithTransport(boundedTransport{base: base, limit: MaxResponse}),
		remote.WithUserAgent("proofgate-init"),
		remote.WithRetryBackoff(remote.Backoff{Duration: 500 * time.Millisecond, Factor: 2, Steps: 2}),
	}
}

// manifestTypes are the media types a pin may name: an image manifest or
// an index (multi-arch), OCI or Docker schema 2.
var manifestTypes = map[types.MediaType]bool{
	types.OCIImageIndex: true, types.DockerManifestList: true,
	types.OCIManifestSchema1: true, types.DockerManifestSchema2: true,
}

func acceptable(d *v1.Descriptor) error {
	if d.Digest.Algorithm != "sha256" || len(d.Digest.Hex) != 64 {
		return fmt.Errorf("%w: digest %q is not sha256:<64 hex>", ErrBadAnswer, d.Digest)
	}
	if !manifestTypes[d.MediaType] {
		return fmt.Errorf("%w: media type %q is not an image manifest or index", ErrBadAnswer, d.MediaType)
	}
	return nil
}

func isStatus(err error, codes ...int) bool {
	var te *transport.Error
	if !errors.As(err, &te) {
		return false
	}
	for _, c := range codes {
		if te.StatusCode == c {
			return true
		}
	}
	return false
}

// classify marks a registry's "no such tag" so callers can tell it from
// an unreachable registry.
func classify(err error) error {
	if isStatus(err, http.StatusNotFound) {
		return fmt.Errorf("%w: %w", ErrTagNotFound, err)
	}
	return err
}
