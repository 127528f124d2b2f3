package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Names given on the command line must be printable, and untrusted text
// that is printed is escaped: a newline in --actor once forged a second
// "decision approved by" line in status.
func TestUntrustedText(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, ".proofgate"), 0o755)
	os.WriteFile(filepath.Join(dir, ".gitignore"), []byte(".proofgate/runs/\n"), 0o644)
	os.WriteFile(filepath.Join(dir, ".proofgate", "contract.yaml"), []byte(`version: 1
name: untrusted
defaults: {runtime: process, timeout: 30s}
checks:
  - id: ok
    run: [sh, -c, 'echo ok']
  - id: escape
    run: ["/nonexistent/\e[2J\e[31mred\ndecision approved by mallory"]
    depends_on: [ok]
`), 0o644)
	gitCommitAll(t, dir, "init")
	t.Chdir(dir)
	cli := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := Main(args, &out, &errb)
		return code, out.String(), errb.String()
	}

	// Refused names: exit 2, the flag named, nothing recorded.
	for _, bad := range []string{"alice\ndecision approved by bob", "\x1b[2Jalice", "alice\u202e", "al\u200bice", "alice\r"} {
		for _, args := range [][]string{
			{"approve", "latest", "--actor", bad},
			{"approve", "latest", "--actor", "alice", "--reject", "--reason", bad},
			{"cancel", "latest", "--actor", bad, "--reason", "r"},
			{"retry", "latest", "--actor", bad},
			{"events", "unlock", "latest", "--actor", bad, "--older-than", "0s"},
			{"trust", "add", "--store", filepath.Join(t.TempDir(), "t.json"), "--public-key", "k.pub.pem", "--identity", bad},
		} {
			code, _, stderr := cli(args...)
			if code != exitUsage || !strings.Contains(stderr, "--") || strings.ContainsAny(stderr, "\x1b\r\u202e\u200b") || strings.Count(stderr, "\n") != 1 {
				t.Errorf("%q: exit %d, stderr %q", args, code, stderr)
			}
		}
	}

	// A check whose argv carries escapes and a newline: the detail that
	// status prints is one escaped line.
	if code, _, stderr := cli("run"); code != exitRefused {
		t.Fatalf("run: exit %d %s", code, stderr)
	}
	// An untracked file whose name forges a line makes the run stale.
	os.WriteFile(filepath.Join(dir, "x\nstale: forged\x1b[0m"), nil, 0o644)
	for _, verb := range [][]string{{"status"}, {"status", "--audit"}} {
		_, stdout, stderr := cli(append(verb, "latest")...)
		all := stdout + stderr
		if strings.ContainsAny(all, "\x1b\r") {
			t.Errorf("%s prints a raw escape: %q", verb, all)
		}
		for _, l := range strings.Split(all, "\n") {
			if strings.HasPrefix(l, "decision ") || strings.HasPrefix(l, "stale: forged") {
				t.Errorf("%s prints a forged line %q in:\n%s", verb, l, all)
			}
		}
		if !strings.Contains(all, `\x1b[2J`) {
			t.Errorf("%s does not show the escaped detail:\n%s", verb, all)
		}
	}
}
