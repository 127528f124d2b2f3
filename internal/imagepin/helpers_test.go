package imagepin

import (
	"net/http"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
)

func mustTag(t *testing.T, s string) name.Tag {
	t.Helper()
	tag, err := name.NewTag(s)
	if err != nil {
		t.Fatal(err)
	}
	return tag
}

func newTransport() http.RoundTripper { return http.DefaultTransport.(*http.Transport).Clone() }

func newGet(url string) (*http.Request, error) { return http.NewRequest(http.MethodGet, url, nil) }
