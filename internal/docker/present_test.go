package docker

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/kernel/runtime"
)

// TestFromHostRefused: a spec naming harness variables never starts a
// container; the contract refuses env_from_host on docker checks, and the
// provider does too.
func TestFromHostRefused(t *testing.T) {
	r, ref := sandbox(t)
	t.Setenv("PG_SECRET_FROM_HOST", "must-not-reach")
	spec := helperSpec(ref, "env")
	spec.FromHost = []string{"PG_SECRET_FROM_HOST"}
	res := check(t, r, spec, 1<<20)
	if res.Outcome != runtime.Error || !strings.Contains(res.Detail, "env_from_host is for runtime: process checks only") {
		t.Fatalf("outcome %s detail %q, want error refusing env_from_host", res.Outcome, res.Detail)
	}
	if strings.Contains(res.stdout.String(), "must-not-reach") {
		t.Fatal("the harness variable reached the sandbox")
	}
}

// TestImagePresent: the helper image is present with its ID; an absent
// digest reference is ErrImageNotPresent, not another error.
func TestImagePresent(t *testing.T) {
	r, ref := sandbox(t)
	id, err := r.ImagePresent(context.Background(), ref)
	if err != nil || !strings.HasPrefix(id, "sha256:") {
		t.Fatalf("ImagePresent(%s) = %q, %v", ref, id, err)
	}
	_, err = r.ImagePresent(context.Background(), "proofgate-test/absent@sha256:"+strings.Repeat("0", 64))
	if !errors.Is(err, ErrImageNotPresent) {
		t.Fatalf("absent image: %v, want ErrImageNotPresent", err)
	}
}
