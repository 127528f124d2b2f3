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

	"github.com/moby/moby/client"

	"github.com/proofgate/proofgate/kernel/runtime"
)

// volumesOf lists the volumes labelled with run id.
func volumesOf(t testing.TB, r *Runtime, run string) []string {
	t.Helper()
	res, err := r.cli.VolumeList(context.Background(), client.VolumeListOptions{Filters: make(client.Filters).Add("label", LabelRun+"="+run)})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, v := range res.Items {
		names = append(names, v.Name)
	}
	return names
}

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
	// Copy mode: the orphan leaves a workspace volume and a copy holder too.
	spec.Workspace, spec.Sandbox.Workspace = t.TempDir(), "copy"
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
	running := func() bool {
		res, err := r.cli.ContainerList(context.Background(), client.ContainerListOptions{Filters: make(client.Filters).Add("label", LabelRun+"="+run)})
		return err == nil && len(res.Items) == 1
	}
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if running() {
			break
		}
	}
	if ids = containersOf(t, r, run); len(ids) != 2 || !running() {
		cmd.Process.Kill()
		t.Fatalf("harness check and copy holder never appeared: %v", ids)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if got := containersOf(t, r, run); len(got) != 2 {
		t.Fatalf("expected the orphan and its holder to survive the harness: %v", got)
	}
	if vols := volumesOf(t, r, run); len(vols) == 0 {
		t.Fatal("the orphan's workspace volume is missing")
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
	// The orphan is gone afterwards. Another gc on the same daemon (a
	// concurrent test's) may have removed it first; this GC then treats it
	// as gone (item 9), so the removed list is not asserted, only the
	// result.
	assertGone(t, r, run)
	if vols := volumesOf(t, r, run); len(vols) != 0 {
		t.Fatalf("GC left the orphan's volumes %v", vols)
	}
	if len(liveIDs) != 1 || slices.Contains(removed, liveIDs[0]) || !slices.Equal(containersOf(t, r, live.RunID), liveIDs) {
		t.Fatalf("GC removed a live harness's container (live %v, removed %v)", liveIDs, removed)
	}
}
