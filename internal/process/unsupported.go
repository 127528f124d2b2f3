//go:build !unix

package process

import (
	"context"
	goruntime "runtime"

	"github.com/proofgate/proofgate/kernel/runtime"
)

// Runtime is the process runtime where it does not exist: Run refuses.
type Runtime struct{ noCgroup bool }

var _ runtime.Runtime = (*Runtime)(nil)

// New returns a runtime whose Run always ends with outcome error and
// ErrUnsupported's sentence as its detail.
func New(opts ...Option) *Runtime {
	r := &Runtime{}
	for _, o := range opts {
		o(r)
	}
	return r
}

// Run starts nothing and reports ErrUnsupported.
func (r *Runtime) Run(ctx context.Context, spec runtime.Spec, stdout, stderr *runtime.Capture) runtime.Result {
	return unsupported(goruntime.GOOS)
}
