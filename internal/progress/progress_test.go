package progress_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/proofgate/proofgate/internal/progress"
	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/kernel/runtime"
)

func TestTextLines(t *testing.T) {
	var buf bytes.Buffer
	p := progress.NewText(&buf)
	p.Started("build", "")
	p.Started("test", "caches go-mod:ro@default")
	p.Running("build", 1520*time.Millisecond, 12345)
	p.Running("build", 90*time.Minute+400*time.Millisecond, 0)
	p.Finished("build", runtime.Passed, 2*time.Second, "")
	p.Finished("lint", runtime.Failed, 3*time.Second, "exit 1")
	p.Finished("deploy", runtime.Skipped, 0, `dependency "lint" did not pass (failed)`)
	want := `start   build
start   test  caches go-mod:ro@default
running build                1.5s, 12345 bytes of output
running build                1h30m0s, 0 bytes of output
passed  build                2s
failed  lint                 3s  exit 1
skipped deploy               dependency "lint" did not pass (failed)
`
	if buf.String() != want {
		t.Fatalf("got:\n%s\nwant:\n%s", buf.String(), want)
	}
	if progress.NewText(nil) != nil {
		t.Fatal("a nil writer must give no Progress at all")
	}
}

func TestHeartbeatEnv(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == progress.EnvHeartbeat {
				return v
			}
			return ""
		}
	}
	if d, err := progress.Heartbeat(env("")); err != nil || d != run.DefaultHeartbeat || d > 30*time.Second {
		t.Fatalf("default: %s %v", d, err)
	}
	if d, err := progress.Heartbeat(env("500ms")); err != nil || d != 500*time.Millisecond {
		t.Fatalf("500ms: %s %v", d, err)
	}
	for _, bad := range []string{"abc", "10", "-1s", "0s", "99ms", "31s", "1h", " 1s"} {
		_, err := progress.Heartbeat(env(bad))
		var ie *progress.IntervalError
		if !errors.As(err, &ie) || ie.Value != bad || !strings.Contains(err.Error(), progress.EnvHeartbeat) {
			t.Errorf("%q: want IntervalError, got %v", bad, err)
		}
	}
}
