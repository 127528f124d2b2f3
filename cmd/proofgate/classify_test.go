package main

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"github.com/proofgate/proofgate/internal/lock"
	"github.com/proofgate/proofgate/internal/printable"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/internal/session"
	"github.com/proofgate/proofgate/internal/source"
	"github.com/proofgate/proofgate/internal/tool"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/eventlog"
	"github.com/proofgate/proofgate/kernel/exit"
	"github.com/proofgate/proofgate/kernel/input"
	"github.com/proofgate/proofgate/kernel/replay"
)

// Each typed error's exit code, as the CLI gives it: the class its type
// declares (kernel/exit), wrapped or not; a file system error is the
// environment's; an unclassed error is a refusal. This is the table
// classify switched over before the types declared their classes.
func TestClassify(t *testing.T) {
	usage, refused, env := exit.Usage.Code(), exit.Refused.Code(), exit.Environment.Code()
	pathErr := &fs.PathError{Op: "open", Path: "x", Err: fs.ErrPermission}
	for name, c := range map[string]struct {
		err  error
		want int
		f    func(error) error
	}{
		"contract":         {&contract.Error{File: "c.yaml", Msg: "bad", Err: pathErr}, usage, classify},
		"dirty":            {&run.DirtyError{Changes: []string{"a"}}, usage, classify},
		"context":          {&run.ContextError{File: "f"}, usage, classify},
		"not found":        {&run.NotFoundError{ID: "x"}, usage, classify},
		"invalid id":       {&run.InvalidIDError{ID: "x"}, usage, classify},
		"no runs":          {fmt.Errorf("latest: %w", run.ErrNoRuns), usage, classify},
		"not a repository": {fmt.Errorf("d: %w", source.ErrNotRepository), usage, classify},
		"no commit":        {fmt.Errorf("git: %w", source.ErrNoCommit), usage, classify},
		"held":             {&lock.HeldError{Path: "p", Err: pathErr}, refused, classify},
		"chain":            {&eventlog.ChainError{Reason: "bad-hash"}, refused, classify},
		"audit of a chain": {&replay.AuditError{Reason: replay.ReasonChain, Err: pathErr}, refused, classify},
		"path":             {fmt.Errorf("write: %w", pathErr), env, classify},
		"plain":            {errors.New("x"), refused, classify},
		"already classed":  {exit.Wrap(exit.Environment, &run.NotFoundError{ID: "x"}), env, classify},
		"unknown call":     {&session.UnknownCallError{Call: "a-1"}, usage, classifySession},
		"unknown session":  {&session.UnknownSessionError{}, usage, classifySession},
		"call":             {&session.CallError{Field: "tool", Err: errors.New("x")}, usage, classifySession},
		"arg":              {&tool.ArgError{Param: "p"}, usage, classifySession},
		"input":            {&input.Error{Reason: "r"}, usage, classifySession},
		"printable":        {&printable.Error{Field: "--agent"}, usage, classifySession},
		"not implementing": {&session.NotImplementingError{}, refused, classifySession},
		"resume required":  {&session.ResumeRequiredError{}, refused, classifySession},
		"live session":     {&session.LiveSessionError{}, refused, classifySession},
		"ambiguous":        {&session.AmbiguousError{}, refused, classifySession},
		"self approval":    {&session.SelfApprovalError{}, refused, classifySession},
		"decided":          {&session.DecidedError{}, refused, classifySession},
		"still running":    {&session.StillRunningError{}, refused, classifySession},
		"session path":     {fmt.Errorf("x: %w", pathErr), env, classifySession},
	} {
		got := c.f(c.err)
		var ee *exit.Error
		if !errors.As(got, &ee) {
			t.Errorf("%s: %v is not an *exit.Error: the CLI would call it cobra's", name, got)
			continue
		}
		if ee.Class.Code() != c.want {
			t.Errorf("%s: exit %d, want %d", name, ee.Class.Code(), c.want)
		}
	}
	if classify(nil) != nil || classifySession(nil) != nil {
		t.Error("nil is classified")
	}
}
