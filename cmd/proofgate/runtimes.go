package main

import (
	"context"

	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/runtime"
	"github.com/proofgate/proofgate/kernel/runtime/process"
)

// runtimesFor connects the providers the contract's checks use.
func runtimesFor(ctx context.Context, c *contract.Resolved) (map[string]runtime.Runtime, map[string]string, func(), error) {
	rts := map[string]runtime.Runtime{"process": process.New()}
	return rts, map[string]string{}, func() {}, nil
}
