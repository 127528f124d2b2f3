package registrytest

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestRef(t *testing.T) {
	for hub, want := range map[string]string{
		"golang:1.26":                               "127.0.0.1:5391/library/golang:1.26",
		"docker.io/library/node:20":                 "127.0.0.1:5391/library/node:20",
		"someone/tool:v1":                           "127.0.0.1:5391/someone/tool:v1",
		"node:20@sha256:" + strings.Repeat("a", 64): "127.0.0.1:5391/library/node@sha256:" + strings.Repeat("a", 64),
	} {
		got, err := Ref("127.0.0.1:5391", hub)
		if err != nil || got.String() != want {
			t.Errorf("Ref(%q) = %v, %v; want %s", hub, got, err, want)
		}
	}
}

// Only Docker Hub names map to the mirror: another registry's image is not
// Docker Hub's, and a bad reference is refused.
func TestRefRefuses(t *testing.T) {
	for _, hub := range []string{"ghcr.io/o/n:1", "127.0.0.1:5000/x:1", "Golang:1.26", "golang:1.26@sha256:bad"} {
		if got, err := Ref("127.0.0.1:5391", hub); err == nil {
			t.Errorf("Ref(%q) = %v, want an error", hub, got)
		}
	}
}

func TestPing(t *testing.T) {
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v2/" {
			http.NotFound(w, r)
		}
	}))
	defer ok.Close()
	if err := Ping(strings.TrimPrefix(ok.URL, "http://")); err != nil {
		t.Fatal(err)
	}
	notRegistry := httptest.NewServer(http.NotFoundHandler())
	defer notRegistry.Close()
	if err := Ping(strings.TrimPrefix(notRegistry.URL, "http://")); err == nil {
		t.Error("Ping accepted a server without /v2/")
	}
	addr := strings.TrimPrefix(notRegistry.URL, "http://")
	notRegistry.Close()
	if err := Ping(addr); err == nil {
		t.Error("Ping accepted a closed port")
	}
}
