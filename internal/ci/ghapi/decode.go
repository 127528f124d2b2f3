package ghapi

import (
	"bytes"
	"context"
	"fmt"
	"net/http"

	"github.com/google/go-github/v62/github"
	"github.com/proofgate/proofgate/internal/strictjson"
)

// go-github decodes replies with encoding/json, which matches member names
// case-insensitively and lets a later duplicate win. Every reply a decision
// depends on is therefore read with Get: raw bytes through go-github (so
// authentication, retries, errors and pagination stay go-github's), decoded
// by strictjson as an open format: unknown members are ignored, but a
// duplicate member or a case variant of a member the caller reads is
// refused with its path.

// MaxReply bounds one REST reply.
const MaxReply = 16 << 20

// boundedBuffer is an io.Writer that refuses more than MaxReply bytes.
type boundedBuffer struct{ bytes.Buffer }

func (b *boundedBuffer) Write(p []byte) (int, error) {
	if b.Len()+len(p) > MaxReply {
		return 0, fmt.Errorf("reply over %d bytes", MaxReply)
	}
	return b.Buffer.Write(p)
}

// Get reads the REST resource u (relative to the API root, with its query)
// and strictly decodes the body into v.
func Get(ctx context.Context, gh *github.Client, u string, v any) (*github.Response, error) {
	req, err := gh.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	var body boundedBuffer
	resp, err := gh.Do(ctx, req, &body)
	if err != nil {
		return resp, err
	}
	if err := strictjson.DecodeOpen(body.Bytes(), v); err != nil {
		return resp, fmt.Errorf("reply: %w", err)
	}
	return resp, nil
}
