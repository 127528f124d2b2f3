package docker

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/proofgate/proofgate/kernel/runtime"
)

// TestOrphanHelperProcess is not a test on its own: TestKill9HarnessThenGC
// runs the test binary with PROOFGATE_ORPHAN_RUN set, and this function then
// plays a harness that starts a long check and is killed with SIGKILL.
func TestOrphanHelperProcess(t *testing.T) {
	run := os.Getenv("PROOFGATE_ORPHAN_RUN")
	if run == "" {
		t.Skip("helper process for TestKill9HarnessThenGC")
	}
	r, err := New(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	spec := helperSpec(os.Getenv("PROOFGATE_ORPHAN_IMAGE"), "sleep", "3600")
	spec.RunID = run
	spec.Timeout = time.Hour
	var o, e strings.Builder
	r.Run(context.Background(), spec, runtime.NewCapture(&o, 1<<10), runtime.NewCapture(&e, 1<<10))
	t.Fatal("the harness should have been killed")
}

func TestKill9HarnessThenGC(t *testing.T) {
	r, ref := sandbox(t)
	run := uniqueRun(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestOrphanHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), "PROOFGATE_ORPHAN_RUN="+run, "PROOFGATE_ORPHAN_IMAGE="+ref)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if ids = containersOf(t, r, run); len(ids) == 1 {
			break
		}
	}
	if len(ids) != 1 {
		cmd.Process.Kill()
		t.Fatalf("harness container never appeared: %v", ids)
	}
	time.Sleep(500 * time.Millisecond) // let it reach the running state
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if got := containersOf(t, r, run); len(got) != 1 {
		t.Fatalf("expected the orphan to survive the harness: %v", got)
	}

	// A live check of this harness runs meanwhile and must survive GC.
	live := helperSpec(ref, "sleep", "60")
	live.RunID = uniqueRun(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		var o, e strings.Builder
		r.Run(ctx, live, runtime.NewCapture(&o, 1<<10), runtime.NewCapture(&e, 1<<10))
		close(done)
	}()
	defer func() { cancel(); <-done }()
	var liveIDs []string
	for deadline := time.Now().Add(30 * time.Second); len(liveIDs) == 0 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		liveIDs = containersOf(t, r, live.RunID)
	}

	removed, err := r.GC(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(removed, ids[0]) {
		t.Fatalf("GC removed %v, not the orphan %s", removed, ids[0])
	}
	assertGone(t, r, run)
	if len(liveIDs) != 1 || slices.Contains(removed, liveIDs[0]) {
		t.Fatalf("GC removed a live harness's container (live %v, removed %v)", liveIDs, removed)
	}
}
