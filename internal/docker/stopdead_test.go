package docker

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/proofgate/proofgate/kernel/runtime"
)

// StopDead (session resume) never touches a container whose harness lives,
// nor one of another check or run; Live lists a running one, and not it
// once it has exited.
func TestStopDeadSparesALiveHarness(t *testing.T) {
	r, ref := sandbox(t)
	run := uniqueRun(t)
	spec := helperSpec(ref, "sleep", "60")
	spec.RunID, spec.CheckID = run, "a-000000000001"
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan runtime.Result, 1)
	go func() {
		var o, e strings.Builder
		done <- r.Run(ctx, spec, runtime.NewCapture(&o, 1<<10), runtime.NewCapture(&e, 1<<10))
	}()
	defer func() { cancel(); <-done }()
	var live []string
	for deadline := time.Now().Add(60 * time.Second); len(live) == 0 && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		var err error
		if live, err = r.Live(context.Background(), run, spec.CheckID); err != nil {
			t.Fatal(err)
		}
	}
	if len(live) != 1 {
		t.Fatalf("live containers of the running check: %v", live)
	}
	found, err := r.StopDead(context.Background(), run, spec.CheckID)
	if err != nil || len(found) != 1 || found[live[0]] != StopOwnerAlive {
		t.Fatalf("StopDead of a live harness's container: %v %v, want it left alone (owner-alive)", found, err)
	}
	for _, other := range [][2]string{{run, "a-000000000002"}, {run + "-x", spec.CheckID}} {
		if found, err := r.StopDead(context.Background(), other[0], other[1]); err != nil || len(found) != 0 {
			t.Fatalf("StopDead(%s, %s) found %v %v, want nothing", other[0], other[1], found, err)
		}
	}
	if l, err := r.Live(context.Background(), run, spec.CheckID); err != nil || len(l) != 1 {
		t.Fatalf("after StopDead: live %v %v, want the container still running", l, err)
	}
	cancel()
	<-done
	done <- runtime.Result{}
	if l, err := r.Live(context.Background(), run, spec.CheckID); err != nil || len(l) != 0 {
		t.Fatalf("after the check ended: live %v %v, want none", l, err)
	}
}
