package imagepin

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
)

// MaxResponse bounds every response body a registry sends (a manifest, an
// index, a token): 4 MiB, the manifest size the OCI distribution spec lets
// registries refuse above. go-containerregistry's own bound is 100 MiB.
const MaxResponse = 4 << 20

var sha256Digest = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// boundedTransport refuses a response declared larger than limit, cuts one
// that grows past it, and refuses a manifest HEAD whose
// Docker-Content-Digest is not sha256:<64 hex>.
type boundedTransport struct {
	base  http.RoundTripper
	limit int64
}

func (t boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.ContentLength > t.limit {
		resp.Body.Close()
		return nil, fmt.Errorf("%w: %s %s: response of %d bytes is larger than %d", ErrBadAnswer, req.Method, req.URL.Path, resp.ContentLength, t.limit)
	}
	if req.Method == http.MethodHead && resp.StatusCode == http.StatusOK && strings.Contains(req.URL.Path, "/manifests/") {
		if d := resp.Header.Get("Docker-Content-Digest"); !sha256Digest.MatchString(d) {
			resp.Body.Close()
			return nil, fmt.Errorf("%w: HEAD %s: Docker-Content-Digest %.80q is not sha256:<64 hex>", ErrBadAnswer, req.URL.Path, d)
		}
	}
	resp.Body = &boundedBody{rc: resp.Body, left: t.limit, what: req.Method + " " + req.URL.Path}
	return resp, nil
}

// boundedBody fails a read past its limit instead of truncating silently.
type boundedBody struct {
	rc   io.ReadCloser
	left int64
	what string
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, fmt.Errorf("%w: %s: response larger than %d bytes", ErrBadAnswer, b.what, MaxResponse)
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n, fmt.Errorf("%w: %s: response larger than %d bytes", ErrBadAnswer, b.what, MaxResponse)
	}
	return n, err
}

func (b *boundedBody) Close() error { return b.rc.Close() }
