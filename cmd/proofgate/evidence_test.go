package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// evidenceAllowlist writes an allowlist outside any repository.
func evidenceAllowlist(t *testing.T, commands map[string]any, mode os.FileMode) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"version": 1, "commands": commands})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "allowlist.json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

func shCommand(t *testing.T, script string, timeout int, limit int) map[string]any {
	return map[string]any{"argv": []string{"/bin/sh", "-c", script}, "cwd": t.TempDir(),
		"env": map[string]string{"PATH": "/usr/bin:/bin"}, "timeout_seconds": timeout, "output_limit_bytes": limit}
}

type collectJSON struct {
	Dir    string `json:"dir"`
	Digest string `json:"report_digest"`
	Run    string `json:"run"`
	Report struct {
		Collection string `json:"collection"`
		Outcome    string `json:"outcome"`
		Limitation string `json:"limitation"`
		ExitCode   int    `json:"exit_code"`
		ArgvHash   string `json:"argv_hash"`
		Stdout     struct {
			Digest    string `json:"digest"`
			Truncated bool   `json:"truncated"`
		} `json:"stdout"`
	} `json:"report"`
}

type refusalJSON struct {
	Reason   string `json:"reason"`
	ExitCode int    `json:"exit_code"`
}

// refusal runs args (with --json) and requires exit code and reason.
func (p pg) refusal(code int, reason string, args ...string) {
	p.t.Helper()
	with := append([]string{}, args...)
	if i := slices.Index(with, "--"); i >= 0 {
		with = slices.Insert(with, i, "--json")
	} else {
		with = append(with, "--json")
	}
	r := p.run("", with...)
	var v refusalJSON
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || r.code != code || v.Reason != reason || v.ExitCode != code {
		p.t.Fatalf("%s: exit %d, %s, want %d %s\nstderr: %s", strings.Join(args, " "), r.code, r.stdout, code, reason, r.stderr)
	}
}

func (p pg) collect(args ...string) collectJSON {
	p.t.Helper()
	r := p.must([]int{0}, append(append([]string{"evidence", "collect"}, args...), "--json")...)
	var c collectJSON
	if err := json.Unmarshal([]byte(r.stdout), &c); err != nil {
		p.t.Fatalf("%v\n%s", err, r.stdout)
	}
	return c
}

// Collect and judge evidence chained into a run: the log records both,
// the run still reconciles, the streams are blobs of the run and travel in
// its bundle.
func TestEvidenceChainedIntoRun(t *testing.T) {
	k := keys(t)
	p, id := authRepo(t, false)
	al := evidenceAllowlist(t, map[string]any{
		"health": shCommand(t, `echo 503; echo "$HOME" >&2`, 10, 4096),
		"hang":   shCommand(t, `sleep 30`, 1, 64),
	}, 0o600)
	c := p.collect("health", "--claim", "health returns 503", "--run", id, "--allowlist", al)
	if c.Report.Outcome != "exited" || c.Run != id || !strings.HasPrefix(c.Dir, filepath.Join(p.dir, ".proofgate", "runs", id, "evidence")) {
		t.Fatalf("collect: %+v", c)
	}
	for _, f := range []string{"health.stdout", "health.stderr", "health.json"} {
		if _, err := os.Stat(filepath.Join(c.Dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	blob := filepath.Join(p.dir, ".proofgate", "runs", id, "blobs", "sha256", strings.TrimPrefix(c.Report.Stdout.Digest, "sha256:"))
	if b, err := os.ReadFile(blob); err != nil || string(b) != "503\n" {
		t.Fatalf("stdout blob: %q %v", b, err)
	}
	// The work tree is still clean: the run is not STALE.
	if st := p.status(id); st.State != "AWAITING_APPROVAL" {
		t.Fatalf("state %s after collecting", st.State)
	}
	r := p.must([]int{0}, "evidence", "verdict", c.Report.Collection, "--run", id, "--verdict", "confirmed", "--reason", "503 seen", "--actor", "alice", "--json")
	var v struct{ Verdict, Report string }
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || v.Verdict != "confirmed" || v.Report != c.Digest {
		t.Fatalf("verdict: %s", r.stdout)
	}
	// One verdict per collection.
	p.refusal(1, "exists", "evidence", "verdict", c.Report.Collection, "--run", id, "--verdict", "refuted", "--reason", "x", "--actor", "bob")

	// A timed-out collection admits only unable-to-check.
	h := p.collect("hang", "--claim", "it answers", "--run", id, "--allowlist", al)
	if h.Report.Limitation != "timeout" || h.Report.ExitCode != -1 {
		t.Fatalf("hang: %+v", h.Report)
	}
	p.refusal(1, "limitation", "evidence", "verdict", h.Report.Collection, "--run", id, "--verdict", "confirmed", "--reason", "x", "--actor", "alice")
	r = p.must([]int{0}, "evidence", "verdict", h.Report.Collection, "--run", id, "--verdict", "unable-to-check", "--reason", "it hung", "--actor", "alice", "--json")
	if !strings.Contains(r.stdout, `"limitation": "timeout"`) {
		t.Fatalf("unable-to-check: %s", r.stdout)
	}

	var types []string
	for _, l := range p.readLog(id) {
		if strings.HasPrefix(l.Type, "evidence.") {
			types = append(types, l.Type)
		}
	}
	if strings.Join(types, ",") != "evidence.collected,evidence.verdict,evidence.collected,evidence.verdict" {
		t.Fatalf("log: %v", types)
	}
	p.must([]int{0}, "events", "verify", id)
	p.must([]int{3}, "status", id, "--audit")
	p.must([]int{0}, "approve", id, "--actor", "alice")
	b := p.exportBundle(id, k)
	if code, reason := p.verifyAuth(b, k); code != 0 {
		t.Fatalf("bundle with evidence: exit %d %s", code, reason)
	}
}

// Hostile allowlists and arguments, through the CLI with their typed
// reasons.
func TestEvidenceAllowlistRefusals(t *testing.T) {
	p, id := authRepo(t, false)
	good := map[string]any{"probe": shCommand(t, "echo ok", 5, 64)}
	al := evidenceAllowlist(t, good, 0o600)
	dir := t.TempDir()
	collect := func(args ...string) []string {
		return append([]string{"evidence", "collect"}, args...)
	}
	p.refusal(2, "extra-arguments", collect("probe", "http://evil.invalid", "--claim", "c", "--dir", dir, "--allowlist", al)...)
	p.must([]int{2}, collect("probe", "--insecure", "--claim", "c", "--dir", dir, "--allowlist", al)...)
	p.refusal(2, "extra-arguments", collect("probe", "--claim", "c", "--dir", dir, "--allowlist", al, "--", "-k")...)
	p.refusal(2, "unknown-id", collect("nope", "--claim", "c", "--dir", dir, "--allowlist", al)...)
	p.refusal(1, "group-or-world-writable", collect("probe", "--claim", "c", "--dir", dir, "--allowlist", evidenceAllowlist(t, good, 0o666))...)
	big := shCommand(t, "true", 301, 64)
	p.refusal(1, "invalid", collect("probe", "--claim", "c", "--dir", dir, "--allowlist", evidenceAllowlist(t, map[string]any{"probe": big}, 0o600))...)
	over := shCommand(t, "true", 5, 1<<20+1)
	p.refusal(1, "invalid", collect("probe", "--claim", "c", "--dir", dir, "--allowlist", evidenceAllowlist(t, map[string]any{"probe": over}, 0o600))...)
	rel := shCommand(t, "true", 5, 64)
	rel["cwd"] = "relative/dir"
	p.refusal(1, "invalid", collect("probe", "--claim", "c", "--dir", dir, "--allowlist", evidenceAllowlist(t, map[string]any{"probe": rel}, 0o600))...)
	// Inside the repository, through the environment variable.
	inRepo := filepath.Join(p.dir, "allowlist.json")
	b, _ := os.ReadFile(al)
	os.WriteFile(inRepo, b, 0o600)
	t.Setenv("PROOFGATE_EVIDENCE_ALLOWLIST", inRepo)
	p.refusal(1, "inside-repository", collect("probe", "--claim", "c", "--dir", dir)...)
	t.Setenv("PROOFGATE_EVIDENCE_ALLOWLIST", al)
	os.Remove(inRepo)
	if os.Getuid() == 0 {
		foreign := evidenceAllowlist(t, good, 0o600)
		if err := os.Chown(foreign, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		p.refusal(1, "owner", collect("probe", "--claim", "c", "--dir", dir, "--allowlist", foreign)...)
	} else {
		t.Log("not root: the foreign-owner subcase is skipped (internal/evidence tests it as root)")
	}
	// The environment variable works; without --run, --dir is required.
	p.must([]int{2}, collect("probe", "--claim", "c")...)
	p.must([]int{2}, collect("probe", "--dir", dir)...)
	c1 := p.collect("probe", "--claim", "c", "--dir", dir)
	c2 := p.collect("probe", "--claim", "c", "--dir", dir)
	if c1.Dir == c2.Dir || c1.Report.ArgvHash != c2.Report.ArgvHash {
		t.Fatalf("two collections: %s %s", c1.Dir, c2.Dir)
	}

	// Verdicts on collections outside a run.
	verdict := func(col string, args ...string) []string {
		return append([]string{"evidence", "verdict", col, "--verdict", "confirmed", "--reason", "ok", "--actor", "alice"}, args...)
	}
	p.refusal(2, "observation", verdict(c1.Dir, "--observation", "tool=browser@http://127.0.0.1/x")...)
	p.must([]int{2}, verdict(c1.Dir, "--artifact", al)...)
	// A collection not chained into the run is refused for --run.
	p.refusal(1, "missing", verdict(c1.Dir, "--run", id)...)
	shot := filepath.Join(t.TempDir(), "shot.txt")
	os.WriteFile(shot, []byte("HTTP/1.1 503\n"), 0o644)
	p.must([]int{0}, verdict(c1.Report.Collection, "--dir", dir, "--observation", "tool=browser@http://127.0.0.1/x", "--artifact", shot)...)
	if b, err := os.ReadFile(filepath.Join(c1.Dir, "observations", "01-shot.txt")); err != nil || string(b) != "HTTP/1.1 503\n" {
		t.Fatalf("artifact copy: %q %v", b, err)
	}
	// A tampered stream is refused.
	os.WriteFile(filepath.Join(c2.Dir, "probe.stdout"), []byte("forged\n"), 0o644)
	p.refusal(1, "tampered", verdict(c2.Dir)...)
}

func TestEvidenceHelp(t *testing.T) {
	p := pg{t: t, dir: t.TempDir()}
	for _, tc := range [][]string{{"evidence", "--help"}, {"evidence", "collect", "--help"}, {"evidence", "verdict", "--help"}, {"authorize", "--help"}} {
		r := p.must([]int{0}, tc...)
		for _, want := range []string{"Example", "--json"} {
			if tc[len(tc)-2] == "evidence" && len(tc) == 2 {
				want = "allowlist"
			}
			if !strings.Contains(r.stdout, want) {
				t.Errorf("%v: no %q in\n%s", tc, want, r.stdout)
			}
		}
	}
}
