package ghapi

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestRetryHonoursRetryAfterAndReplaysBody(t *testing.T) {
	var bodies []string
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies = append(bodies, string(b))
		calls++
		switch calls {
		case 1:
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusTooManyRequests)
		case 2:
			w.WriteHeader(http.StatusBadGateway)
		default:
			w.WriteHeader(http.StatusOK)
		}
	}))
	defer srv.Close()
	var sleeps []time.Duration
	rt := &Retry{BaseDelay: time.Millisecond, Sleep: func(_ context.Context, d time.Duration) error { sleeps = append(sleeps, d); return nil }}
	req, _ := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader([]byte("payload")))
	resp, err := (&http.Client{Transport: rt}).Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%v %v", resp, err)
	}
	if len(sleeps) != 2 || sleeps[0] != 7*time.Second || sleeps[1] > 2*time.Millisecond {
		t.Fatalf("sleeps %v", sleeps)
	}
	for _, b := range bodies {
		if b != "payload" {
			t.Fatalf("body not replayed: %q", bodies)
		}
	}
}

func TestRetryBounded(t *testing.T) {
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		if r.URL.Path == "/long" {
			w.Header().Set("Retry-After", "3600")
			w.WriteHeader(http.StatusForbidden)
			return
		}
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer srv.Close()
	rt := &Retry{MaxAttempts: 4, Sleep: func(context.Context, time.Duration) error { return nil }}
	c := &http.Client{Transport: rt}
	resp, err := c.Get(srv.URL + "/x")
	if err != nil || resp.StatusCode != 500 || calls != 4 {
		t.Fatalf("want 4 attempts then the 500: %v %v %d", resp, err, calls)
	}
	calls = 0
	resp, err = c.Get(srv.URL + "/long")
	if err != nil || resp.StatusCode != 403 || calls != 1 {
		t.Fatalf("an hour-long Retry-After must not be waited: %v %v %d", resp, err, calls)
	}
	// 404 and 501 are not retried.
	if Retryable(&http.Response{StatusCode: 404, Header: http.Header{}}) || Retryable(&http.Response{StatusCode: 501, Header: http.Header{}}) {
		t.Fatal("non-transient status retried")
	}
}

func TestRetryAfterParse(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{"0": 0, "12": 12 * time.Second, now.Add(90 * time.Second).Format(http.TimeFormat): 90 * time.Second} {
		if d, ok := RetryAfter(http.Header{"Retry-After": {v}}, now); !ok || d != want {
			t.Errorf("%q: %v %v", v, d, ok)
		}
	}
	for _, v := range []string{"", "-1", "soon"} {
		if _, ok := RetryAfter(http.Header{"Retry-After": {v}}, now); ok {
			t.Errorf("%q accepted", v)
		}
	}
}

func TestNewClientURLs(t *testing.T) {
	ctx := context.Background()
	if _, err := NewClient(ctx, "", ""); err == nil {
		t.Fatal("empty token accepted")
	}
	c, err := NewClient(ctx, "t", "")
	if err != nil || c.BaseURL.String() != "https://api.github.com/" {
		t.Fatalf("default: %v %v", c.BaseURL, err)
	}
	c, err = NewClient(ctx, "t", "https://ghe.example.com/api/v3")
	if err != nil || c.BaseURL.String() != "https://ghe.example.com/api/v3/" || c.UploadURL.String() != "https://ghe.example.com/api/uploads/" {
		t.Fatalf("GHES: %v %v %v", c.BaseURL, c.UploadURL, err)
	}
	if _, err := NewClient(ctx, "t", "ftp://x"); err == nil {
		t.Fatal("ftp accepted")
	}
}
