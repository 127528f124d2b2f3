package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/proofgate/proofgate/internal/docker"
	"github.com/proofgate/proofgate/internal/testimage"
)

// TestConcurrentHarnessesAndGC runs, on one daemon and for about a minute,
// two real `proofgate run` loops (each on its own repository, Docker checks
// in readonly and copy mode, --jobs 2), a loop of `proofgate gc`, and a
// loop of harnesses killed with SIGKILL mid-check (their orphans give the
// gc of every `run` and of `proofgate gc` something to race on). No check
// of the two harnesses may end in error, every gc must succeed, and
// afterwards no container or volume of the test is left.
// PROOFGATE_CONCURRENCY_SECONDS changes the duration (default 60, as the
// issue that found the race asks).
func TestConcurrentHarnessesAndGC(t *testing.T) {
	if testing.Short() {
		t.Skip("a minute of real harnesses")
	}
	ok, err := dockerCondition("docker")
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Skip("no Docker daemon")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ref, err := testimage.Ensure(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seconds := 60
	if s := os.Getenv("PROOFGATE_CONCURRENCY_SECONDS"); s != "" {
		if seconds, err = strconv.Atoi(s); err != nil {
			t.Fatal(err)
		}
	}
	bin, err := exec.LookPath("proofgate")
	if err != nil {
		t.Fatal(err)
	}
	tag := fmt.Sprintf("cc%d", time.Now().UnixNano())
	var ids []string
	harness := func(checks string) string {
		dir := gitRepo(t, ref, checks)
		for _, l := range strings.Split(checks, "\n") {
			if i := strings.Index(l, "id: "); i >= 0 {
				ids = append(ids, strings.Fields(l[i+4:])[0])
			}
		}
		return dir
	}
	repoA := harness(fmt.Sprintf(`  - {id: %[1]s-a-ro, run: [/bin/helper, cat, /workspace/README]}
  - {id: %[1]s-a-copy, workspace: copy, run: [/bin/helper, write, /workspace/out.txt, "65536"]}
  - {id: %[1]s-a-sleep, run: [/bin/helper, sleep, "0.5"]}`, tag))
	repoB := harness(fmt.Sprintf(`  - {id: %[1]s-b-ro, run: [/bin/helper, cat, /workspace/README]}
  - {id: %[1]s-b-copy, workspace: copy, run: [/bin/helper, write, /workspace/out.txt, "65536"]}
  - {id: %[1]s-b-sleep, run: [/bin/helper, sleep, "0.3"]}`, tag))
	crashID := tag + "-crash"
	repoC := harness(fmt.Sprintf(`  - {id: %s, run: [/bin/helper, sleep, "60"]}`, crashID))

	deadline := time.Now().Add(time.Duration(seconds) * time.Second)
	var (
		mu       sync.Mutex
		failures []string
		runs     = map[string]int{}
		wg       sync.WaitGroup
	)
	failf := func(format string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(failures) < 20 {
			failures = append(failures, fmt.Sprintf(format, a...))
		}
	}
	count := func(k string) { mu.Lock(); runs[k]++; mu.Unlock() }
	loop := func(name string, body func()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				body()
				count(name)
			}
		}()
	}
	for name, repo := range map[string]string{"a": repoA, "b": repoB} {
		loop("run-"+name, func() { runOnce(t, bin, repo, failf) })
	}
	loop("gc", func() {
		cmd := exec.Command(bin, "gc")
		if out, err := cmd.CombinedOutput(); err != nil {
			failf("proofgate gc: %v\n%s", err, out)
		}
	})
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	loop("crash", func() { crashOnce(bin, repoC, cli, crashID, failf) })
	wg.Wait()

	// Orphans of the last killed harness: one more gc, as the next run would.
	if out, err := exec.Command(bin, "gc").CombinedOutput(); err != nil {
		t.Errorf("final gc: %v\n%s", err, out)
	}
	t.Logf("iterations: %v", runs)
	for _, f := range failures {
		t.Error(f)
	}
	if runs["run-a"] < 3 || runs["run-b"] < 3 || runs["gc"] < 3 || runs["crash"] < 2 {
		t.Errorf("too few iterations to mean anything: %v", runs)
	}
	for _, id := range ids {
		f := make(client.Filters).Add("label", docker.LabelCheck+"="+id)
		cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
		if err != nil {
			t.Fatal(err)
		}
		vs, err := cli.VolumeList(ctx, client.VolumeListOptions{Filters: f})
		if err != nil {
			t.Fatal(err)
		}
		if len(cs.Items) != 0 || len(vs.Items) != 0 {
			t.Errorf("check %s leaked %d container(s) and %d volume(s)", id, len(cs.Items), len(vs.Items))
		}
	}
}

// gitRepo makes a committed repository whose contract runs checks (YAML
// list items) in the helper image.
func gitRepo(t *testing.T, image, checks string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	contract := fmt.Sprintf("version: 1\nname: concurrent\ndefaults: {runtime: docker, image: %q, timeout: 90s, resources: {memory: 64MiB, pids: 32}, tmpfs: 4MiB}\nchecks:\n%s\n", image, checks)
	for name, body := range map[string]string{
		".gitignore":               ".proofgate/runs/\n",
		"README":                   "concurrent harnesses\n",
		".proofgate/contract.yaml": contract,
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitCommitAll(t, dir, "init")
	return dir
}

// runOnce runs `proofgate run --json --jobs 2` in repo and reports any
// check that did not pass and any exit other than awaiting approval.
func runOnce(t *testing.T, bin, repo string, failf func(string, ...any)) {
	cmd := exec.Command(bin, "run", "--json", "--jobs", "2")
	cmd.Dir = repo
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if code := cmd.ProcessState.ExitCode(); code != exitAwaiting {
		failf("run in %s: exit %d (%v)\n%s\n%s", filepath.Base(repo), code, err, out.String(), errb.String())
		return
	}
	var res struct {
		Checks []struct {
			ID      string `json:"id"`
			Outcome string `json:"outcome"`
		} `json:"checks"`
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		failf("run output: %v\n%s", err, out.String())
		return
	}
	for _, c := range res.Checks {
		if c.Outcome != "passed" {
			failf("check %s: outcome %s\n%s", c.ID, c.Outcome, errb.String())
		}
	}
}

// crashOnce starts `proofgate run` in repo, waits until its check's
// container exists, and kills the harness with SIGKILL, leaving an orphan.
func crashOnce(bin, repo string, cli *client.Client, checkID string, failf func(string, ...any)) {
	cmd := exec.Command(bin, "run", "--quiet")
	cmd.Dir = repo
	if err := cmd.Start(); err != nil {
		failf("crash harness: %v", err)
		return
	}
	defer cmd.Wait()
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		cs, err := cli.ContainerList(context.Background(), client.ContainerListOptions{All: true,
			Filters: make(client.Filters).Add("label", docker.LabelCheck+"="+checkID)})
		if err == nil && ownedBy(cs, cmd.Process.Pid) {
			break
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
}

func ownedBy(cs client.ContainerListResult, pid int) bool {
	for _, c := range cs.Items {
		if strings.HasPrefix(c.Labels[docker.LabelOwner], strconv.Itoa(pid)+"/") {
			return true
		}
	}
	return false
}
