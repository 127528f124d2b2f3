package imagepin

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/proofgate/proofgate/internal/registrytest"
)

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func mirrorOnly(urls ...string) Remote {
	return Remote{Mirrors: urls, Timeout: 20 * time.Second}
}

// The pin is the index digest of a multi-arch image, resolved at the
// mirror, named as asked.
func TestResolveIndexDigestAtMirror(t *testing.T) {
	reg := registrytest.Start()
	defer reg.Close()
	want, err := reg.Push("golang:1.26.8")
	if err != nil {
		t.Fatal(err)
	}
	p, err := mirrorOnly(reg.URL()).Resolve(context.Background(), "golang:1.26.8")
	if err != nil {
		t.Fatal(err)
	}
	if p.Digest != want || p.Ref != "golang:1.26.8@"+want || p.Source != SourceMirror || p.Registry != reg.Host() {
		t.Fatalf("pin %+v, want digest %s at mirror %s", p, want, reg.Host())
	}
	if p.MediaType != "application/vnd.oci.image.index.v1+json" {
		t.Fatalf("media type %q, want the OCI index", p.MediaType)
	}
}

// Mirrors are asked in order; a dead one is skipped, as dockerd does.
// Docker Hub is never asked when DockerHub is false.
func TestResolveFallsBackToNextMirror(t *testing.T) {
	reg := registrytest.Start()
	defer reg.Close()
	want, err := reg.Push("node:22")
	if err != nil {
		t.Fatal(err)
	}
	p, err := mirrorOnly("http://"+closedAddr(t), reg.Host()).Resolve(context.Background(), "node:22")
	if err != nil {
		t.Fatal(err)
	}
	if p.Digest != want || p.Registry != reg.Host() {
		t.Fatalf("pin %+v, want %s from %s", p, want, reg.Host())
	}
}

func TestResolveUnreachable(t *testing.T) {
	dead := closedAddr(t)
	start := time.Now()
	_, err := mirrorOnly("http://"+dead).Resolve(context.Background(), "golang:1.26")
	var u *UnreachableError
	if !errors.As(err, &u) || u.NotFound() || len(u.Attempts) != 1 || u.Attempts[0].Registry != dead {
		t.Fatalf("err %v, want one unreachable attempt at %s", err, dead)
	}
	if !strings.Contains(err.Error(), "image golang:1.26") || !strings.Contains(err.Error(), dead) {
		t.Fatalf("message %q names neither the image nor the registry", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("a refused connection took %s", d)
	}
}

func TestResolveTagNotFound(t *testing.T) {
	reg := registrytest.Start()
	defer reg.Close()
	if _, err := reg.Push("golang:1.26"); err != nil {
		t.Fatal(err)
	}
	_, err := mirrorOnly(reg.URL()).Resolve(context.Background(), "golang:1.99")
	var u *UnreachableError
	if !errors.As(err, &u) || !u.NotFound() || !errors.Is(err, ErrTagNotFound) {
		t.Fatalf("err %v, want tag not found", err)
	}
}

// A registry that answers with anything but the digest of an image
// manifest or index is refused: a non-digest, a digest of other bytes, an
// oversized manifest (declared or streamed), a page that is not a manifest.
func TestResolveRefusesHostileAnswers(t *testing.T) {
	reg := registrytest.Start()
	defer reg.Close()
	if _, err := reg.Push("golang:1.26"); err != nil {
		t.Fatal(err)
	}
	for mode, want := range map[string]string{
		registrytest.NonDigest: `Docker-Content-Digest "latest" is not sha256:<64 hex>`,
		registrytest.Lying:     "does not verify",
		registrytest.Oversized: "larger than 4194304",
		registrytest.NotImage:  `media type "text/html" is not an image manifest or index`,
	} {
		t.Run(mode, func(t *testing.T) {
			reg.SetMode(mode)
			defer reg.SetMode(registrytest.Honest)
			p, err := mirrorOnly(reg.URL()).Resolve(context.Background(), "golang:1.26")
			if err == nil {
				t.Fatalf("accepted %+v", p)
			}
			if !errors.Is(err, ErrBadAnswer) || !strings.Contains(err.Error(), want) {
				t.Fatalf("err %v, want ErrBadAnswer saying %q", err, want)
			}
		})
	}
}

// A body that grows past the bound without declaring its length is cut
// with an error, not truncated.
func TestBoundedBodyStreams(t *testing.T) {
	reg := registrytest.Start()
	defer reg.Close()
	reg.SetMode(registrytest.Oversized)
	tr := boundedTransport{base: newTransport(), limit: MaxResponse}
	req, _ := newGet(reg.URL() + "/v2/library/golang/manifests/1.26")
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 1<<20)
	total := 0
	for {
		n, err := resp.Body.Read(buf)
		total += n
		if err != nil {
			if !errors.Is(err, ErrBadAnswer) {
				t.Fatalf("read ended with %v after %d bytes, want ErrBadAnswer", err, total)
			}
			break
		}
	}
	if total > MaxResponse+1 {
		t.Fatalf("read %d bytes past a bound of %d", total, MaxResponse)
	}
}

// Only Docker Hub images go through the mirrors; another registry is
// asked directly. Docker Hub is asked last, or only, when allowed.
func TestEndpoints(t *testing.T) {
	for _, c := range []struct {
		r     Remote
		image string
		want  []string
	}{
		{Remote{Mirrors: []string{"http://127.0.0.1:5000/"}}, "golang:1.26", []string{"127.0.0.1:5000/library/golang mirror"}},
		{Remote{Mirrors: []string{"https://m.example"}, DockerHub: true}, "golang:1.26", []string{"m.example/library/golang mirror", "index.docker.io/library/golang registry"}},
		{Remote{}, "node:22", []string{"index.docker.io/library/node registry"}},
		{Remote{Mirrors: []string{"http://127.0.0.1:5000"}}, "ghcr.io/o/i:1", []string{"ghcr.io/o/i registry"}},
	} {
		ends, err := c.r.endpoints(mustTag(t, c.image).Context())
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range ends {
			got = append(got, e.repo.Name()+" "+e.source)
		}
		if strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("%+v %s: endpoints %v, want %v", c.r, c.image, got, c.want)
		}
	}
}

func TestMirrorRegistry(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:5391/": "127.0.0.1:5391 http",
		"https://mirror.gcr.io":  "mirror.gcr.io https",
		"127.0.0.1:5000":         "127.0.0.1:5000 http",
		"mirror.example:443":     "mirror.example:443 https",
	} {
		r, err := MirrorRegistry(in)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if got := r.RegistryStr() + " " + r.Scheme(); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
	for _, bad := range []string{"ftp://x", "http://", "https://u:p@m.example", "https://m.example/prefix", "http://m.example/?q=1", "not a host", ""} {
		if _, err := MirrorRegistry(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
