package app

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/kernel/exit"
	"github.com/proofgate/proofgate/kernel/replay"
)

// A run awaiting approval takes an authorization; the same one again
// records nothing; a run that cannot take one is a *DecisionError naming
// it; a run that does not exist fails to open.
func TestAuthorize(t *testing.T) {
	state, r := executed(t)
	r.Close()
	repo := filepath.Dir(state)
	o := AuthorizeOptions{State: state, Run: "latest", Authorization: run.AuthorizeOptions{Target: "deploy/prod", Actor: "alice",
		Fresh: run.Freshness{RepoDir: repo, StateDir: state}}}
	a, err := Authorize(context.Background(), o)
	if err != nil || a.Recorded != nil || a.Report.RunID != r.ID || len(a.Report.Authorizations) != 1 || !replay.Authorized(a.Report.Authorizations, "deploy/prod") {
		t.Fatalf("Authorize = %+v, %v", a, err)
	}
	if a, err := Authorize(context.Background(), o); err != nil || a.Recorded == nil || len(a.Report.Authorizations) != 1 {
		t.Fatalf("the same authorization again = %+v, %v", a, err)
	}
	o.Authorization.Target = ""
	var de *DecisionError
	if _, err := Authorize(context.Background(), o); !errors.As(err, &de) || de.Run != r.ID || err.Error() != de.Err.Error() {
		t.Fatalf("an authorization without a target: %v", err)
	}
	o.Run = "nope"
	if _, err := Authorize(context.Background(), o); err == nil || errors.As(err, &de) || class(err) != exit.Usage {
		t.Fatalf("an unknown run: %v (class %v)", err, class(err))
	}
}
