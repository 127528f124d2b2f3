package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// shardContract is a contract of n trivial checks, with a dependency
// chain of three and one pair among them.
func shardContract(n int) string {
	var b strings.Builder
	b.WriteString("version: 1\nname: shards\ndefaults: {runtime: process, timeout: 30s}\napproval: {required: 1}\nchecks:\n")
	for i := range n {
		dep := ""
		switch i {
		case 1, 2:
			dep = fmt.Sprintf(", depends_on: [c%03d]", i-1)
		case 11:
			dep = ", depends_on: [c010]"
		}
		fmt.Fprintf(&b, "  - {id: c%03d, run: [echo, c%03d]%s}\n", i, i, dep)
	}
	return b.String()
}

// copyRunDir copies a planned run into another state directory (what a shard
// job receives as an artifact).
func copyRunDir(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
}

// TestShardsThroughTheCLI plans a 200-check run once, executes it as 10
// shard processes (each in its own state directory, in parallel), merges
// the signed shards, approves, exports and verifies the bundle; then
// refuses the hostile merges by their reasons.
func TestShardsThroughTheCLI(t *testing.T) {
	p := pg{t: t, dir: t.TempDir()}
	p.write(".proofgate/contract.yaml", shardContract(200))
	p.write(".gitignore", ".proofgate/runs/\n")
	p.git("init", "-q", ".")
	p.git("add", "-A")
	p.git("commit", "-q", "-m", "init")
	k := t.TempDir() // keys, trust stores and the bundle, outside the work tree
	key, trust, other, otherTrust, bundleFile := filepath.Join(k, "key.pem"), filepath.Join(k, "trust.json"), filepath.Join(k, "other.pem"), filepath.Join(k, "other.json"), filepath.Join(k, "b.tgz")
	p.must([]int{0}, "keygen", "-o", key)
	p.must([]int{0}, "trust", "add", "--store", trust, "--public-key", filepath.Join(k, "key.pub.pem"))
	p.must([]int{0}, "plan")
	id := p.runs()[0]
	work := t.TempDir()
	// Usage errors name the flag (exit 2) and write nothing.
	r := p.must([]int{2}, "exec", id, "--shard", "0/10", "--out", filepath.Join(work, "x"), "--key", key)
	wantOut(t, r.stderr, `--shard "0/10"`)
	r = p.must([]int{2}, "exec", id, "--out", filepath.Join(work, "x"))
	wantOut(t, r.stderr, "--out needs --shard")
	r = p.must([]int{2}, "exec", id, "--shard", "1/10", "--key", key)
	wantOut(t, r.stderr, "--out")
	if _, err := os.Stat(filepath.Join(work, "x")); err == nil {
		t.Fatal("a refused exec wrote its --out")
	}
	const n = 10
	dirs := make([]string, n)
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan string, n)
	for i := 1; i <= n; i++ {
		state := filepath.Join(work, fmt.Sprintf("state-%d", i))
		copyRunDir(t, filepath.Join(p.dir, ".proofgate", "runs", id), filepath.Join(state, "runs", id))
		dirs[i-1] = filepath.Join(work, fmt.Sprintf("shard-%d", i))
		wg.Add(1)
		go func(i int, state string) {
			defer wg.Done()
			r := p.run("", "exec", id, "--state", state, "--shard", fmt.Sprintf("%d/%d", i, n), "--out", dirs[i-1], "--key", key, "--jobs", "2", "-q", "--json")
			if r.code != 0 {
				errs <- fmt.Sprintf("shard %d: exit %d\n%s%s", i, r.code, r.stdout, r.stderr)
			}
		}(i, state)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	t.Logf("10 shards of 200 checks executed in %s", time.Since(start).Round(time.Millisecond))

	// Hostile merges first: each refused with its reason, the run untouched.
	p.must([]int{2}, append([]string{"merge", id}, dirs...)...) // no --trust
	r = p.must([]int{1}, append([]string{"merge", id, "--trust", trust}, dirs[:n-1]...)...)
	wantOut(t, r.stderr, "missing")
	r = p.must([]int{1}, append([]string{"merge", id, "--trust", trust}, append(dirs, dirs[3])...)...)
	wantOut(t, r.stderr, "duplicate")
	p.must([]int{0}, "keygen", "-o", other)
	p.must([]int{0}, "trust", "add", "--store", otherTrust, "--public-key", filepath.Join(k, "other.pub.pem"))
	r = p.must([]int{1}, append([]string{"merge", id, "--trust", otherTrust}, dirs...)...)
	wantOut(t, r.stderr, "untrusted")
	// A written shard directory is never overwritten.
	r = p.must([]int{2}, "exec", id, "--state", filepath.Join(work, "state-1"), "--shard", "1/10", "--out", dirs[0], "--key", key)
	wantOut(t, r.stderr, "not empty")

	start = time.Now()
	r = p.must([]int{3}, append([]string{"merge", id, "--trust", trust, "--json"}, dirs...)...)
	t.Logf("merge of 10 shards, 200 checks: %s", time.Since(start).Round(time.Millisecond))
	var rep struct {
		State  string            `json:"state"`
		Checks []json.RawMessage `json:"checks"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.State != "AWAITING_APPROVAL" || len(rep.Checks) != 200 {
		t.Fatalf("merged run: %v %s %d checks\n%s", err, rep.State, len(rep.Checks), r.stdout)
	}
	p.must([]int{0}, "approve", id, "--actor", "alice")
	p.must([]int{0}, "bundle", "export", id, "--key", key, "-o", bundleFile)
	start = time.Now()
	r = p.must([]int{0}, "bundle", "verify", bundleFile, "--trust", trust, "--any-source", "--contract", ".proofgate/contract.yaml", "--require-approvals", "1")
	t.Logf("bundle verify of the merged bundle: %s", time.Since(start).Round(time.Millisecond))
	wantOut(t, r.stdout, "accepted")
	p.must([]int{1}, "bundle", "verify", bundleFile, "--trust", trust, "--any-source", "--any-contract", "--require-approvals", "2")
}

func wantOut(t *testing.T, out, want string) {
	t.Helper()
	if !strings.Contains(out, want) {
		t.Fatalf("output does not say %q:\n%s", want, out)
	}
}

// A shard executor killed with SIGKILL leaves a directory without
// shard.json: merge refuses it as running (its lock's owner is dead, the
// manifest never written), and a re-run into a new directory merges.
func TestShardExecutorKilled(t *testing.T) {
	p := pg{t: t, dir: t.TempDir()}
	marker := filepath.Join(t.TempDir(), "go")
	p.write(".proofgate/contract.yaml", "version: 1\nname: k\ndefaults: {runtime: process, timeout: 60s}\napproval: {required: 0}\nchecks:\n  - {id: slow, run: [sh, -c, 'test -e "+marker+" || sleep 30']}\n  - {id: quick, run: ['true']}\n")
	p.write(".gitignore", ".proofgate/runs/\n")
	p.git("init", "-q", ".")
	p.git("add", "-A")
	p.git("commit", "-q", "-m", "init")
	k := t.TempDir()
	key, trust := filepath.Join(k, "key.pem"), filepath.Join(k, "trust.json")
	p.must([]int{0}, "keygen", "-o", key)
	p.must([]int{0}, "trust", "add", "--store", trust, "--public-key", filepath.Join(k, "key.pub.pem"))
	p.must([]int{0}, "plan")
	id := p.runs()[0]
	work := t.TempDir()
	state := filepath.Join(work, "state")
	copyRunDir(t, filepath.Join(p.dir, ".proofgate", "runs", id), filepath.Join(state, "runs", id))
	killed := filepath.Join(work, "killed")
	cmd := exec.Command(os.Args[0], "exec", id, "--state", state, "--shard", "1/1", "--out", killed, "--key", key, "-q")
	cmd.Dir = p.dir
	cmd.Env = append(os.Environ(), mainEnv+"=1", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, _ := os.ReadFile(filepath.Join(killed, "events.ndjson"))
		if strings.Contains(string(b), `"check":"slow"`) {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the shard never started its slow check")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()
	r := p.must([]int{1}, "merge", id, killed, "--trust", trust)
	wantOut(t, r.stderr, "running")
	// The shard re-run, in a fresh copy of the planned run, merges.
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	state2 := filepath.Join(work, "state2")
	copyRunDir(t, filepath.Join(p.dir, ".proofgate", "runs", id), filepath.Join(state2, "runs", id))
	again := filepath.Join(work, "again")
	p.must([]int{0}, "exec", id, "--state", state2, "--shard", "1/1", "--out", again, "--key", key, "-q")
	r = p.must([]int{0}, "merge", id, again, "--trust", trust)
	wantOut(t, r.stdout, "COMPLETE")
}
