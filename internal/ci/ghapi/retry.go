// Package ghapi builds GitHub API clients for ProofGate's CI integration: the
// API root comes from the environment (GitHub Enterprise Server works), the
// token is sent through oauth2, and transient failures (429, 5xx, secondary
// rate limits) are retried with bounded backoff that honours Retry-After.
package ghapi

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"
)

// Retry defaults.
const (
	DefaultMaxAttempts = 5
	DefaultBaseDelay   = 500 * time.Millisecond
	DefaultMaxDelay    = 30 * time.Second
)

// Retry is an http.RoundTripper that retries 429, 5xx (except 501) and 403
// responses carrying Retry-After, and transport errors, with exponential
// backoff. A Retry-After longer than MaxDelay is not waited for: the response
// is returned as is, so callers see the failure instead of hanging.
//
// Requests with a body are retried only when the body can be replayed
// (req.GetBody is set, as http.NewRequest does for in-memory bodies).
type Retry struct {
	Base        http.RoundTripper // nil means http.DefaultTransport
	MaxAttempts int               // 0 means DefaultMaxAttempts
	BaseDelay   time.Duration     // 0 means DefaultBaseDelay
	MaxDelay    time.Duration     // 0 means DefaultMaxDelay
	// Sleep waits d or until ctx is done; nil means a timer. Tests inject it.
	Sleep func(ctx context.Context, d time.Duration) error
}

// RoundTrip implements http.RoundTripper.
func (r *Retry) RoundTrip(req *http.Request) (*http.Response, error) {
	base := r.Base
	if base == nil {
		base = http.DefaultTransport
	}
	attempts := r.MaxAttempts
	if attempts <= 0 {
		attempts = DefaultMaxAttempts
	}
	replayable := req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
	for attempt := 1; ; attempt++ {
		try := req
		if attempt > 1 && req.Body != nil && req.Body != http.NoBody {
			body, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			try = req.Clone(req.Context())
			try.Body = body
		}
		resp, err := base.RoundTrip(try)
		last := attempt >= attempts || !replayable
		if err != nil {
			if last || req.Context().Err() != nil {
				return nil, err
			}
			if serr := r.sleep(req.Context(), r.backoff(attempt)); serr != nil {
				return nil, err
			}
			continue
		}
		if !Retryable(resp) || last {
			return resp, nil
		}
		d, ok := RetryAfter(resp.Header, time.Now())
		if !ok {
			d = r.backoff(attempt)
		}
		if d > r.maxDelay() {
			return resp, nil
		}
		// Drain a bounded amount so the connection can be reused.
		_, _ = io.CopyN(io.Discard, resp.Body, 64<<10)
		resp.Body.Close()
		if err := r.sleep(req.Context(), d); err != nil {
			return nil, err
		}
	}
}

// Retryable reports whether a response is worth retrying.
func Retryable(resp *http.Response) bool {
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		return true
	case resp.StatusCode >= 500 && resp.StatusCode != http.StatusNotImplemented:
		return true
	case resp.StatusCode == http.StatusForbidden && resp.Header.Get("Retry-After") != "":
		return true // GitHub's secondary rate limit
	}
	return false
}

// RetryAfter parses a Retry-After header (delay seconds or HTTP date).
func RetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	v := h.Get("Retry-After")
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		if secs > 1<<20 {
			secs = 1 << 20
		}
		return time.Duration(secs) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		d := t.Sub(now)
		if d < 0 {
			d = 0
		}
		return d, true
	}
	return 0, false
}

func (r *Retry) maxDelay() time.Duration {
	if r.MaxDelay > 0 {
		return r.MaxDelay
	}
	return DefaultMaxDelay
}

func (r *Retry) backoff(attempt int) time.Duration {
	base := r.BaseDelay
	if base <= 0 {
		base = DefaultBaseDelay
	}
	d := base << min(attempt-1, 10)
	if d > r.maxDelay() {
		d = r.maxDelay()
	}
	// Up to 25% jitter.
	return d - time.Duration(rand.Int64N(int64(d)/4+1))
}

func (r *Retry) sleep(ctx context.Context, d time.Duration) error {
	if r.Sleep != nil {
		return r.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

var errNoToken = errors.New("github token is empty")
