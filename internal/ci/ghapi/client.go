package ghapi

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/google/go-github/v62/github"
	"golang.org/x/oauth2"
)

// PublicAPIURL is github.com's API root.
const PublicAPIURL = "https://api.github.com"

// NewClient returns a go-github client for apiURL (the value of
// GITHUB_API_URL; empty means github.com) authenticated with token. Any other
// host than api.github.com is treated as GitHub Enterprise Server. Requests
// are retried on 429/5xx with the Retry transport.
func NewClient(ctx context.Context, token, apiURL string) (*github.Client, error) {
	if token == "" {
		return nil, errNoToken
	}
	return newClient(ctx, oauth2.StaticTokenSource(&oauth2.Token{AccessToken: token, TokenType: "Bearer"}), apiURL, &Retry{})
}

// NewClientTransport is NewClient with the retry transport given by the
// caller (tests inject a recording Sleep).
func NewClientTransport(ctx context.Context, token, apiURL string, rt *Retry) (*github.Client, error) {
	if token == "" {
		return nil, errNoToken
	}
	return newClient(ctx, oauth2.StaticTokenSource(&oauth2.Token{AccessToken: token, TokenType: "Bearer"}), apiURL, rt)
}

func newClient(_ context.Context, ts oauth2.TokenSource, apiURL string, rt *Retry) (*github.Client, error) {
	hc := &http.Client{Transport: &oauth2.Transport{Source: ts, Base: rt}}
	c := github.NewClient(hc)
	if apiURL == "" {
		apiURL = PublicAPIURL
	}
	u, err := url.Parse(apiURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("GITHUB_API_URL %q: not an http(s) URL", apiURL)
	}
	if strings.EqualFold(u.Host, "api.github.com") {
		return c, nil
	}
	upload := strings.TrimSuffix(apiURL, "/")
	if strings.HasSuffix(upload, "/api/v3") {
		upload = strings.TrimSuffix(upload, "/api/v3") + "/api/uploads"
	}
	c, err = c.WithEnterpriseURLs(apiURL, upload)
	if err != nil {
		return nil, fmt.Errorf("GITHUB_API_URL %q: %w", apiURL, err)
	}
	return c, nil
}
