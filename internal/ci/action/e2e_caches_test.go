//go:build linux

package action

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/proofgate/proofgate/internal/run"
	"github.com/proofgate/proofgate/internal/testimage"
	"github.com/proofgate/proofgate/kernel/replay"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// cachesContract: a fetch check writes the deps cache, a later offline
// check reads it read-only (the file the restore brought and the one the
// fetch wrote).
const cachesContract = `version: 1
name: widget
defaults:
  runtime: docker
  image: IMAGE
  pull: never
  timeout: 60s
  network: none
  workspace: readonly
  resources: {memory: 128MiB, cpus: 1, pids: 64}
caches:
  deps: {mount: /cache/deps}
checks:
  - id: fetch
    run: [/bin/helper, write, /cache/deps/fetched.txt, "7"]
    caches: [deps]
  - id: use
    run: [/bin/helper, cat, /cache/deps/restored.txt]
    caches: [{name: deps, readonly: true}]
    depends_on: [fetch]
approval: {required: 1, roles: [write, maintain, admin]}
`

// TestE2ECachesRunnerTemp plays examples/workflows/proofgate-caches.yml
// with the action image the way the runner runs it: the job's RUNNER_TEMP
// is a host directory mounted at /github/runner_temp (RUNNER_TEMP keeps
// the host path, which the container lacks), actions/cache restore is a
// tar extracted into it as the runner user would (umask 022, no owners),
// followed by the workflow's chown to root; save is a tar of the scope
// directory the workflow saves. Job 1 (push to main) mounts the restored
// default/deps writable and records a write; job 2, from job 1's save, is
// warm: its checks mount a tree whose state names job 1's write
// (generation 1, written by job 1's fetch) and hold job 1's file; job 3, a
// pull request restored from the same save, writes only pr-7/deps (seeded
// from default) and leaves default/ byte for byte as it was.
func TestE2ECachesRunnerTemp(t *testing.T) {
	image := e2eImage(t)
	helper, err := testimage.Ensure(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	fx := newFixture(t, strings.Replace(cachesContract, "IMAGE", helper, 1), nil)
	saved := filepath.Join(fx.tmp, "saved-default.tar")

	// Job 1: a push to main; the restore step found an older entry.
	seed := filepath.Join(fx.tmp, "seed", "default", "deps")
	writeFile(t, filepath.Join(seed, "restored.txt"), "from the cache service\n")
	tarC(t, filepath.Join(fx.tmp, "seed", "default"), saved)
	rt := fx.job(t, saved)
	fx.pushEvent()
	wantCode(t, fx, fx.dockerRun(image), ExitAwaiting)
	c := fx.started(t)
	if m := c["fetch"]; len(m) != 1 || m[0].Mode != runtime.CacheReadWrite || m[0].Scope != "default" || m[0].Provenance != "unrecorded" || m[0].Generation != 0 {
		t.Fatalf("job 1 fetch mounted %+v\n%s", m, fx.log.String())
	}
	if m := c["use"]; len(m) != 1 || m[0].Mode != runtime.CacheReadOnly || m[0].Provenance != "recorded" || m[0].Generation != 1 {
		t.Fatalf("job 1 use mounted %+v", m)
	}
	// What the save step uploads: the scope directory with the sandbox's
	// write and the state record.
	def := filepath.Join(rt, "proofgate-cache", "default")
	if b, err := os.ReadFile(filepath.Join(def, "deps", "fetched.txt")); err != nil || len(b) != 7 {
		t.Fatalf("fetched.txt in the runner temp: %q %v", b, err)
	}
	st := readState(t, filepath.Join(def, "deps.state"))
	if st["generation"] != float64(1) || !strings.HasSuffix(st["written_by"].(string), "/fetch") {
		t.Fatalf("state after job 1: %v", st)
	}
	job1 := st["written_by"].(string)
	fx.chownRunner(t, rt)
	tarC(t, def, saved)

	// Job 2: the next push, restored from job 1's save: warm.
	rt = fx.job(t, saved)
	fx.pushEvent()
	wantCode(t, fx, fx.dockerRun(image), ExitAwaiting)
	c = fx.started(t)
	if m := c["fetch"]; len(m) != 1 || m[0].Generation != 1 || m[0].WrittenBy != job1 || m[0].Entries != 2 || m[0].Provenance != "unrecorded" {
		t.Fatalf("job 2 fetch: want job 1's recorded write, restored: %+v", m)
	}
	if m := c["use"]; len(m) != 1 || m[0].Generation != 2 || m[0].Provenance != "recorded" {
		t.Fatalf("job 2 use: %+v", m)
	}
	fx.chownRunner(t, rt)
	tarC(t, filepath.Join(rt, "proofgate-cache", "default"), saved)

	// Job 3: pull request 7, restored from the default branch's save.
	rt = fx.job(t, saved)
	def = filepath.Join(rt, "proofgate-cache", "default")
	before := snapshot(t, def)
	fx.prEvent()
	wantCode(t, fx, fx.dockerRun(image), ExitAwaiting)
	c = fx.started(t)
	if m := c["fetch"]; len(m) != 1 || m[0].Scope != "pr-7" || m[0].RunScope != "pr-7" || m[0].Provenance != "seeded" || m[0].Mode != runtime.CacheReadWrite {
		t.Fatalf("job 3 fetch: want pr-7 seeded from default: %+v", m)
	}
	if m := c["use"]; len(m) != 1 || m[0].Scope != "pr-7" {
		t.Fatalf("job 3 use: %+v", m)
	}
	if after := snapshot(t, def); after != before {
		t.Fatalf("a pull request's run changed default/:\nbefore %s\nafter  %s", before, after)
	}
	pr := filepath.Join(rt, "proofgate-cache", "pr-7")
	if b, err := os.ReadFile(filepath.Join(pr, "deps", "restored.txt")); err != nil || string(b) != "from the cache service\n" {
		t.Fatalf("pr-7 seed: %q %v", b, err)
	}
	if st := readState(t, filepath.Join(pr, "deps.state")); st["generation"] != float64(1) {
		t.Fatalf("pr-7 state: %v", st)
	}
}

// job starts a job: a fresh runner temp directory that the restore step
// filled from the tar (as the runner user: umask 022, owners not kept;
// then the workflow's chown to root), and no runs left in the workspace.
func (fx *fixture) job(t *testing.T, saved string) string {
	t.Helper()
	rt, err := os.MkdirTemp(fx.tmp, "runner-temp-")
	if err != nil {
		t.Fatal(err)
	}
	def := filepath.Join(rt, "proofgate-cache", "default")
	if err := os.MkdirAll(def, 0o755); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf("umask 022 && tar -xf %q -C %q --no-same-owner --no-same-permissions && chown -R 0:0 %q", saved, def, filepath.Join(rt, "proofgate-cache"))
	if out, err := exec.Command("sh", "-c", script).CombinedOutput(); err != nil {
		t.Fatalf("restore: %v\n%s", err, out)
	}
	if err := os.RemoveAll(filepath.Join(fx.ws, ".proofgate", "runs")); err != nil {
		t.Fatal(err)
	}
	fx.runnerTemp = rt
	fx.env["RUNNER_TEMP"] = rt
	return rt
}

// chownRunner is the workflow's chown back to the runner user before the
// save (uid 1001 on GitHub's runners).
func (fx *fixture) chownRunner(t *testing.T, rt string) {
	t.Helper()
	if out, err := exec.Command("chown", "-R", "1001:1001", filepath.Join(rt, "proofgate-cache")).CombinedOutput(); err != nil {
		t.Fatalf("chown: %v %s", err, out)
	}
}

// pushEvent is a push of the checked-out commit to the default branch.
func (fx *fixture) pushEvent() {
	fx.t.Helper()
	p := filepath.Join(fx.wf, "push.json")
	writeFile(fx.t, p, `{"ref":"refs/heads/main","after":"`+fx.merge+`","repository":{"full_name":"`+owner+"/"+repo+`","name":"`+repo+`","owner":{"login":"`+owner+`"},"default_branch":"main"}}`)
	fx.env["GITHUB_EVENT_NAME"], fx.env["GITHUB_EVENT_PATH"] = "push", p
	fx.env["GITHUB_REF"], fx.env["GITHUB_SHA"] = "refs/heads/main", fx.merge
}

// started reads the caches each check.started of the job's one run
// recorded.
func (fx *fixture) started(t *testing.T) map[string][]runtime.Cache {
	t.Helper()
	id := fx.outputs()["run-id"]
	b, err := os.ReadFile(filepath.Join(fx.ws, ".proofgate", "runs", id, run.EventsFile))
	if err != nil {
		t.Fatalf("events of run %q: %v\n%s", id, err, fx.log.String())
	}
	out := map[string][]runtime.Cache{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var ev struct {
			Type string                  `json:"type"`
			Data replay.CheckStartedData `json:"data"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err == nil && ev.Type == replay.TypeCheckStarted {
			out[ev.Data.Check] = ev.Data.Caches
		}
	}
	return out
}

func tarC(t *testing.T, dir, out string) {
	t.Helper()
	if b, err := exec.Command("tar", "-cf", out, "-C", dir, ".").CombinedOutput(); err != nil {
		t.Fatalf("save: %v\n%s", err, b)
	}
}

func readState(t *testing.T, p string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]any
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// snapshot is every entry of dir: path, mode, size, mtime, inode, ctime
// and a hash of a file's bytes (not the access time: reading sets it).
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := de.Info()
		if err != nil {
			return err
		}
		var ino uint64
		var ctime int64
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			ino, ctime = st.Ino, st.Ctim.Nano()
		}
		fmt.Fprintf(h, "%s %v %d %d %d %d\n", p, fi.Mode(), fi.Size(), fi.ModTime().UnixNano(), ino, ctime)
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h.Write(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}
