//go:build unix

package evidence

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/process"
	"github.com/proofgate/proofgate/kernel/replay"
)

// writeAllowlist writes an allowlist of commands (id → entry fields) into
// a fresh directory and returns its path.
func writeAllowlist(t *testing.T, commands map[string]map[string]any) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"version": 1, "commands": commands})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "allowlist.json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func cmd(t *testing.T, script string, timeout int, limit int64) map[string]any {
	return map[string]any{"argv": []string{"/bin/sh", "-c", script}, "cwd": t.TempDir(),
		"env": map[string]string{"PATH": "/usr/bin:/bin"}, "timeout_seconds": timeout, "output_limit_bytes": limit}
}

func wantAllowlistError(t *testing.T, err error, reason Reason, field string) {
	t.Helper()
	var ae *AllowlistError
	if !errors.As(err, &ae) {
		t.Fatalf("got %v, want *AllowlistError %s", err, reason)
	}
	if ae.Reason != reason || !strings.Contains(ae.Field, field) {
		t.Fatalf("got reason %s field %q (%v), want %s field %q", ae.Reason, ae.Field, ae, reason, field)
	}
}

// Hostile allowlists: every bound and the file's owner and mode.
func TestAllowlistRefuses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		edit   func(e map[string]any)
		reason Reason
		field  string
	}{
		{"timeout 301 s", func(e map[string]any) { e["timeout_seconds"] = 301 }, ReasonInvalid, "timeout_seconds"},
		{"timeout 0", func(e map[string]any) { e["timeout_seconds"] = 0 }, ReasonInvalid, "timeout_seconds"},
		{"timeout overflowing a Duration", func(e map[string]any) { e["timeout_seconds"] = int64(math.MaxInt64) }, ReasonInvalid, "timeout_seconds"},
		{"cap 1 MiB + 1", func(e map[string]any) { e["output_limit_bytes"] = MaxOutput + 1 }, ReasonInvalid, "output_limit_bytes"},
		{"relative cwd", func(e map[string]any) { e["cwd"] = "srv/app" }, ReasonInvalid, "cwd"},
		{"no cwd", func(e map[string]any) { delete(e, "cwd") }, ReasonInvalid, "cwd"},
		{"no env", func(e map[string]any) { delete(e, "env") }, ReasonInvalid, "env"},
		{"relative argv[0]", func(e map[string]any) { e["argv"] = []string{"sh", "-c", "true"} }, ReasonInvalid, "argv[0]"},
		{"empty argv", func(e map[string]any) { e["argv"] = []string{} }, ReasonInvalid, "argv"},
		{"unknown field", func(e map[string]any) { e["shell"] = true }, ReasonDecode, "shell"},
		{"case variant", func(e map[string]any) { e["Cwd"] = "/tmp" }, ReasonDecode, "Cwd"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := cmd(t, "true", 10, 1024)
			tc.edit(e)
			_, err := Load(writeAllowlist(t, map[string]map[string]any{"ok": e}), "")
			wantAllowlistError(t, err, tc.reason, tc.field)
		})
	}
	t.Run("bad id", func(t *testing.T) {
		_, err := Load(writeAllowlist(t, map[string]map[string]any{"../x": cmd(t, "true", 1, 1)}), "")
		wantAllowlistError(t, err, ReasonInvalid, "commands")
	})
	t.Run("unknown top-level field", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "a.json")
		os.WriteFile(p, []byte(`{"version":1,"commands":{},"include":"/etc"}`), 0o600)
		_, err := Load(p, "")
		wantAllowlistError(t, err, ReasonDecode, "include")
	})
	t.Run("the bounds themselves are accepted", func(t *testing.T) {
		a, err := Load(writeAllowlist(t, map[string]map[string]any{"ok": cmd(t, "true", 300, MaxOutput)}), "")
		if err != nil {
			t.Fatal(err)
		}
		if e := a.Entries["ok"]; e.Timeout != MaxTimeout || e.OutputLimit != MaxOutput {
			t.Fatalf("entry %+v", e)
		}
	})
}

func TestAllowlistFile(t *testing.T) {
	good := func(t *testing.T) string {
		return writeAllowlist(t, map[string]map[string]any{"ok": cmd(t, "true", 1, 1)})
	}
	t.Run("world writable", func(t *testing.T) {
		p := good(t)
		os.Chmod(p, 0o666)
		_, err := Load(p, "")
		wantAllowlistError(t, err, ReasonWritable, "")
		if !strings.Contains(err.Error(), "0666") {
			t.Errorf("the refusal does not give the mode: %v", err)
		}
	})
	t.Run("group writable", func(t *testing.T) {
		p := good(t)
		os.Chmod(p, 0o620)
		_, err := Load(p, "")
		wantAllowlistError(t, err, ReasonWritable, "")
	})
	t.Run("foreign owner", func(t *testing.T) {
		if os.Getuid() != 0 {
			t.Skip("not root: cannot chown a file to another uid (only this subcase is skipped)")
		}
		p := good(t)
		if err := os.Chown(p, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		_, err := Load(p, "")
		wantAllowlistError(t, err, ReasonOwner, "")
		if !strings.Contains(err.Error(), "uid 65534") {
			t.Errorf("the refusal does not name the owner: %v", err)
		}
	})
	t.Run("inside the repository", func(t *testing.T) {
		repo := t.TempDir()
		p := filepath.Join(repo, ".proofgate", "allowlist.json")
		os.MkdirAll(filepath.Dir(p), 0o755)
		b, _ := os.ReadFile(good(t))
		os.WriteFile(p, b, 0o600)
		_, err := Load(p, repo)
		wantAllowlistError(t, err, ReasonInsideRepo, "")
		// A symlink outside pointing inside is the same file.
		link := filepath.Join(t.TempDir(), "link.json")
		os.Symlink(p, link)
		_, err = Load(link, repo)
		wantAllowlistError(t, err, ReasonInsideRepo, "")
	})
	t.Run("not regular", func(t *testing.T) {
		_, err := Load(t.TempDir(), "")
		wantAllowlistError(t, err, ReasonNotRegular, "")
	})
	t.Run("no path", func(t *testing.T) {
		_, err := Load("", "")
		wantAllowlistError(t, err, ReasonNoAllowlist, "")
	})
	t.Run("appended arguments and unknown id", func(t *testing.T) {
		a, err := Load(good(t), "")
		if err != nil {
			t.Fatal(err)
		}
		_, err = a.Lookup("ok", []string{"--insecure"})
		wantAllowlistError(t, err, ReasonExtraArgs, "")
		_, err = a.Lookup("nope", nil)
		wantAllowlistError(t, err, ReasonUnknownID, "")
	})
}

func collect(t *testing.T, e map[string]any, root string) *Collection {
	t.Helper()
	a, err := Load(writeAllowlist(t, map[string]map[string]any{"probe": e}), "")
	if err != nil {
		t.Fatal(err)
	}
	ent, err := a.Lookup("probe", nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Collect(context.Background(), CollectOptions{Entry: ent, Allowlist: a, Claim: "the probe says ok", Root: root, Runtime: process.New()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCollect(t *testing.T) {
	root := t.TempDir()
	e := cmd(t, `printf 'ok %s\n' "$GREETING"; printf 'warn\n' >&2; exit 3`, 10, 1024)
	e["env"] = map[string]string{"GREETING": "$HOME;`id`"}
	c := collect(t, e, root)
	r := c.Report
	if r.Outcome != replay.EvidenceExited || r.ExitCode != 3 || r.Limitation != "" {
		t.Fatalf("report %+v", r)
	}
	out, _ := os.ReadFile(filepath.Join(c.Dir, "probe.stdout"))
	// No interpolation: the value is passed as the bytes it is.
	if string(out) != "ok $HOME;`id`\n" {
		t.Fatalf("stdout %q", out)
	}
	if r.Stdout.Digest != canon.SumBytes(out) || r.Stdout.Size != int64(len(out)) {
		t.Fatalf("stdout digest %s size %d", r.Stdout.Digest, r.Stdout.Size)
	}
	b, _ := os.ReadFile(filepath.Join(c.Dir, "probe.json"))
	if canon.SumBytes(b) != c.Digest {
		t.Fatal("report digest is not the file's")
	}
	if h, _ := canon.Digest(r.Argv); h != r.ArgvHash {
		t.Fatal("argv hash")
	}
	if r.Env[0] != "GREETING" || len(r.Env) != 1 {
		t.Fatalf("env names %v (values are not recorded)", r.Env)
	}
	// A second collection is a fresh directory; the first is untouched.
	c2 := collect(t, e, root)
	if c2.Dir == c.Dir || c2.Report.Collection == r.Collection {
		t.Fatal("collection id reused")
	}
	if b2, _ := os.ReadFile(filepath.Join(c.Dir, "probe.json")); string(b2) != string(b) {
		t.Fatal("first collection changed")
	}
	l, err := Open(c.Dir)
	if err != nil || l.Digest != c.Digest {
		t.Fatalf("open: %v", err)
	}
}

// Hostile: an artifact already in the collection directory is never
// overwritten (O_EXCL), and the collection is refused.
func TestCollectArtifactExists(t *testing.T) {
	testHookDir = func(dir string) {
		os.WriteFile(filepath.Join(dir, "probe.stdout"), []byte("planted"), 0o644)
	}
	defer func() { testHookDir = nil }()
	root := t.TempDir()
	a, _ := Load(writeAllowlist(t, map[string]map[string]any{"probe": cmd(t, "echo hi", 5, 64)}), "")
	ent, _ := a.Lookup("probe", nil)
	_, err := Collect(context.Background(), CollectOptions{Entry: ent, Allowlist: a, Claim: "x", Root: root, Runtime: process.New()})
	var ae *ArtifactError
	if !errors.As(err, &ae) || ae.Reason != ArtifactExists {
		t.Fatalf("got %v, want ArtifactError exists", err)
	}
	m, _ := filepath.Glob(filepath.Join(root, "*", "probe.stdout"))
	if len(m) != 1 {
		t.Fatal(m)
	}
	if b, _ := os.ReadFile(m[0]); string(b) != "planted" {
		t.Fatalf("the planted artifact was overwritten: %q", b)
	}
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// A timeout kills the whole process group (a background child too) and
// forces unable-to-check; so does an overflow and a spawn failure.
func TestCollectLimitations(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	started := time.Now()
	c := collect(t, cmd(t, `sleep 60 & echo $! > `+pidFile+`; sleep 60`, 1, 1024), t.TempDir())
	if c.Report.Outcome != replay.EvidenceTimeout || c.Report.Limitation != replay.EvidenceTimeout || c.Report.ExitCode != -1 {
		t.Fatalf("report %+v", c.Report)
	}
	if d := time.Since(started); d > 20*time.Second {
		t.Fatalf("timeout of 1 s took %s", d)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if alive(pid) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("background child %d outlived the timeout", pid)
	}
	refuseConfirmed(t, c, replay.EvidenceTimeout)

	over := collect(t, cmd(t, `while :; do echo yyyyyyyyyyyyyyyy; done`, 20, 1000), t.TempDir())
	if over.Report.Limitation != replay.EvidenceOutputLimit || !over.Report.Stdout.Truncated || over.Report.Stdout.Size != 1000 {
		t.Fatalf("overflow report %+v", over.Report)
	}
	refuseConfirmed(t, over, replay.EvidenceOutputLimit)

	e := cmd(t, "true", 5, 10)
	e["argv"] = []string{"/nonexistent/probe"}
	spawn := collect(t, e, t.TempDir())
	if spawn.Report.Limitation != replay.EvidenceSpawnFailure || spawn.Report.Detail == "" {
		t.Fatalf("spawn report %+v", spawn.Report)
	}
	refuseConfirmed(t, spawn, replay.EvidenceSpawnFailure)
}

func refuseConfirmed(t *testing.T, c *Collection, limitation string) {
	t.Helper()
	l, err := Open(c.Dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"confirmed", "refuted", "dubious"} {
		_, _, err := Record(l, VerdictOptions{Verdict: v, Reason: "r", Actor: "a"})
		var ve *VerdictError
		if !errors.As(err, &ve) || ve.Reason != VerdictLimitation || ve.Limitation != limitation || !strings.Contains(err.Error(), limitation) {
			t.Fatalf("%s on a %s collection: %v", v, limitation, err)
		}
	}
	rec, _, err := Record(l, VerdictOptions{Verdict: "unable-to-check", Reason: "r", Actor: "a"})
	if err != nil || rec.Limitation != limitation {
		t.Fatalf("unable-to-check: %v %+v", err, rec)
	}
}

func TestVerdict(t *testing.T) {
	c := collect(t, cmd(t, "echo 503", 5, 64), t.TempDir())
	l, err := Open(c.Dir)
	if err != nil {
		t.Fatal(err)
	}
	var ve *VerdictError
	if _, _, err := Record(l, VerdictOptions{Verdict: "true", Reason: "r", Actor: "a"}); !errors.As(err, &ve) || ve.Reason != VerdictInvalid {
		t.Fatalf("bad verdict: %v", err)
	}
	if _, _, err := Record(l, VerdictOptions{Verdict: "confirmed", Reason: "r\x1b[2J", Actor: "a"}); !errors.As(err, &ve) {
		t.Fatalf("unprintable reason: %v", err)
	}
	if _, _, err := Record(l, VerdictOptions{Verdict: "confirmed", Reason: "r", Actor: "a", Observation: &ObservationInput{Tool: "browser", Target: "http://127.0.0.1/x"}}); !errors.As(err, &ve) || ve.Reason != VerdictObservation {
		t.Fatalf("observation without artifact: %v", err)
	}
	empty := filepath.Join(t.TempDir(), "empty.png")
	os.WriteFile(empty, nil, 0o644)
	var ae *ArtifactError
	if _, _, err := Record(l, VerdictOptions{Verdict: "confirmed", Reason: "r", Actor: "a", Observation: &ObservationInput{Tool: "browser", Target: "t", Artifacts: []string{empty}}}); !errors.As(err, &ae) || ae.Reason != ArtifactInvalid {
		t.Fatalf("empty artifact: %v", err)
	}
	os.RemoveAll(filepath.Join(c.Dir, "observations"))
	shot := filepath.Join(t.TempDir(), "shot.png")
	os.WriteFile(shot, []byte("PNG..."), 0o644)
	rec, blobs, err := Record(l, VerdictOptions{Verdict: "confirmed", Reason: "returns 503", Actor: "alice", Observation: &ObservationInput{Tool: "browser", Target: "http://127.0.0.1/x", Artifacts: []string{shot}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(blobs) != 1 || rec.Observations[0].Artifacts[0].Digest != canon.SumBytes([]byte("PNG...")) {
		t.Fatalf("%+v", rec)
	}
	if b, err := os.ReadFile(filepath.Join(c.Dir, rec.Observations[0].Artifacts[0].File)); err != nil || string(b) != "PNG..." {
		t.Fatalf("copied artifact: %q %v", b, err)
	}
	if _, _, err := Record(l, VerdictOptions{Verdict: "refuted", Reason: "r", Actor: "bob"}); !errors.As(err, &ae) || ae.Reason != ArtifactExists {
		t.Fatalf("second verdict: %v", err)
	}
}

// A tampered stream or report is refused when the collection is read.
func TestOpenTampered(t *testing.T) {
	c := collect(t, cmd(t, "echo 503", 5, 64), t.TempDir())
	os.WriteFile(filepath.Join(c.Dir, "probe.stdout"), []byte("200\n"), 0o644)
	var ae *ArtifactError
	if _, err := Open(c.Dir); !errors.As(err, &ae) || ae.Reason != ArtifactTampered {
		t.Fatalf("tampered stdout: %v", err)
	}
	c = collect(t, cmd(t, "echo 503", 5, 64), t.TempDir())
	p := filepath.Join(c.Dir, "probe.json")
	b, _ := os.ReadFile(p)
	// A report edited by hand (not the collector's canonical bytes).
	os.WriteFile(p, []byte(strings.Replace(string(b), `"exit_code":0`, `"exit_code": 1`, 1)), 0o644)
	if _, err := Open(c.Dir); !errors.As(err, &ae) || ae.Reason != ArtifactTampered {
		t.Fatalf("hand-edited report: %v", err)
	}
	// A consistent rewrite of the report alone is caught where it is
	// bound: its digest in the run's log (evidence.collected) or in a
	// verdict; on its own it only must still match its streams.
	os.WriteFile(p, []byte(strings.Replace(string(b), `"size":4`, `"size":5`, 1)), 0o644)
	if _, err := Open(c.Dir); !errors.As(err, &ae) || ae.Reason != ArtifactTampered {
		t.Fatalf("report not matching its stream: %v", err)
	}
}
