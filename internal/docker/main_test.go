package docker

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/proofgate/proofgate/internal/testimage"
	"github.com/proofgate/proofgate/kernel/runtime"
)

var (
	setupOnce sync.Once
	shared    *Runtime
	helperRef string
	setupErr  error
)

// sandbox returns the shared provider and the helper image. Without a
// daemon the test is skipped, unless PROOFGATE_REQUIRE_DOCKER=1, where that
// is a failure.
func sandbox(t testing.TB) (*Runtime, string) {
	t.Helper()
	setupOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		shared, setupErr = New(ctx)
		if setupErr != nil {
			return
		}
		helperRef, setupErr = testimage.Ensure(ctx)
	})
	if setupErr != nil {
		if os.Getenv("PROOFGATE_REQUIRE_DOCKER") == "1" {
			t.Fatalf("docker required (PROOFGATE_REQUIRE_DOCKER=1): %v", setupErr)
		}
		t.Skipf("no docker daemon: %v", setupErr)
	}
	return shared, helperRef
}

type ran struct {
	runtime.Result
	stdout, stderr       bytes.Buffer
	outStream, errStream runtime.Stream
}

// check runs argv in the helper image with the given sandbox tweaks.
func check(t testing.TB, r *Runtime, spec runtime.Spec, limit int64) *ran {
	t.Helper()
	out := &ran{}
	so := runtime.NewCapture(&out.stdout, limit)
	se := runtime.NewCapture(&out.stderr, limit)
	if spec.RunID == "" {
		spec.RunID = "run-test"
	}
	if spec.CheckID == "" {
		spec.CheckID = t.Name()
	}
	out.Result = r.Run(context.Background(), spec, so, se)
	out.outStream, out.errStream = so.Stream(), se.Stream()
	return out
}

func helperSpec(ref string, argv ...string) runtime.Spec {
	return runtime.Spec{
		Argv:    append([]string{"/bin/helper"}, argv...),
		Timeout: time.Minute,
		Sandbox: runtime.Sandbox{Image: ref, Workspace: "none", Memory: 128 << 20, Pids: 64, Tmpfs: 8 << 20},
	}
}

// uniqueRun returns a run id no other test uses.
func uniqueRun(t testing.TB) string {
	return fmt.Sprintf("run-%s-%d", strings.ReplaceAll(t.Name(), "/", "-"), time.Now().UnixNano())
}

// containersOf lists containers (any state) labelled with run id.
func containersOf(t testing.TB, r *Runtime, run string) []string {
	t.Helper()
	res, err := r.cli.ContainerList(context.Background(), client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", LabelRun+"="+run)})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range res.Items {
		ids = append(ids, c.ID)
	}
	return ids
}

func assertGone(t testing.TB, r *Runtime, run string) {
	t.Helper()
	if ids := containersOf(t, r, run); len(ids) != 0 {
		t.Fatalf("containers of %s left behind: %v", run, ids)
	}
}

func assertOutcome(t testing.TB, res *ran, want runtime.Outcome) {
	t.Helper()
	if res.Outcome != want {
		t.Fatalf("outcome %s (exit %d, detail %q), want %s; stdout=%q stderr=%q", res.Outcome, res.ExitCode, res.Detail, want, trim(res.stdout.String()), trim(res.stderr.String()))
	}
}

func trim(s string) string {
	if len(s) > 300 {
		return s[:300] + "..."
	}
	return s
}

// TestMain closes the shared provider (removing its sandbox hosts file)
// after the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if shared != nil {
		shared.Close()
	}
	os.Exit(code)
}
