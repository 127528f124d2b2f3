package main

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The warm ratio of TestFirstDay (bash scripts/bench.sh firstday sets
// PROOFGATE_FIRSTDAY_WARM=1; the test suite does not run it): a warm
// sandboxed `proofgate run` against two baselines measured in the same
// rounds, interleaved, each warmed once first:
//
//   - bare: the same commands on the host, with warm caches, in one
//     persistent checkout (what a developer types);
//   - raw docker: the same commands, each a plain `docker run --rm` of the
//     pinned image with the same cache mounts, network and hardening
//     flags, in a fresh copy of the checkout per run (what isolation costs
//     before ProofGate adds anything).
//
// The bare and raw sequences run as the sandbox's user 65534 when the test
// runs as root (some tests, cobra's among them, expect permission errors
// root does not get).

// rawDocker is the environment the generated contract gives the checks.
type rawDocker struct {
	caches []string // NAME:MOUNT, each a directory of the baseline's own
	deps   string   // the cache the fetch fills, read-only after it ("" for none)
	env    []string // every check's
	fetch  []string // the first check's (it has the network) on top of env
	rest   []string // the other checks' (network none) on top of env
}

// firstDayRounds is how many interleaved rounds the warm ratio takes
// (PROOFGATE_FIRSTDAY_ROUNDS, default 3); each figure is the median.
func firstDayRounds() int {
	if n, err := strconv.Atoi(os.Getenv("PROOFGATE_FIRSTDAY_ROUNDS")); err == nil && n > 0 {
		return n
	}
	return 3
}

func firstDayWarm(t *testing.T, p thirdParty, repo string, env []string) {
	home := bareHome(t)
	bare := filepath.Join(home, "src")
	copyTree(t, repo, bare)
	benv := append(slices.Clone(env), "HOME="+home, "GOCACHE="+home+"/go-build", "GOMODCACHE="+home+"/go-mod",
		"npm_config_cache="+home+"/npm", "GOTOOLCHAIN=local")
	raw := newRawBaseline(t, p, repo, home)
	chownTree(t, home)
	runBare(t, p, bare, benv)
	raw.run(t)

	var sandboxed, plain, docker []time.Duration
	for range firstDayRounds() {
		t0 := time.Now()
		walk(t, repo, env, "warm run", []string{"proofgate run"}, 3)
		sandboxed = append(sandboxed, time.Since(t0))
		t0 = time.Now()
		runBare(t, p, bare, benv)
		plain = append(plain, time.Since(t0))
		docker = append(docker, raw.run(t))
	}
	s, b, d := median(sandboxed), median(plain), median(docker)
	sc := exec.Command("proofgate", "status", "latest")
	sc.Dir, sc.Env = repo, env
	out, _ := sc.CombinedOutput()
	t.Logf("FIRSTDAY %s: the last warm run's checks:\n%s", p.name, out)
	t.Logf("FIRSTDAY %s: warm sandboxed run %.2f s, bare %.2f s (ratio %.2f), raw docker run %.2f s (ratio %.2f); medians of %d rounds",
		p.name, s.Seconds(), b.Seconds(), s.Seconds()/b.Seconds(), d.Seconds(), s.Seconds()/d.Seconds(), len(sandboxed))
}

// rawBaseline runs a project's sequence as plain docker runs.
type rawBaseline struct {
	p      thirdParty
	repo   string   // the source of each fresh copy
	dir    string   // where the copy is made
	image  string   // the contract's pinned image
	deps   string   // the deps cache's HOST:MOUNT
	caches []string // HOST:MOUNT
}

var contractImage = regexp.MustCompile(`(?m)^  image: "([^"]+)"`)

func newRawBaseline(t *testing.T, p thirdParty, repo, home string) *rawBaseline {
	t.Helper()
	c, err := os.ReadFile(filepath.Join(repo, ".proofgate", "contract.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	m := contractImage.FindSubmatch(c)
	if m == nil {
		t.Fatal("the generated contract names no default image")
	}
	r := &rawBaseline{p: p, repo: repo, dir: filepath.Join(home, "raw"), image: string(m[1])}
	for _, c := range p.docker.caches {
		name, mount, _ := strings.Cut(c, ":")
		host := filepath.Join(home, "raw-cache", name)
		if err := os.MkdirAll(host, 0o755); err != nil {
			t.Fatal(err)
		}
		r.caches = append(r.caches, host+":"+mount)
		if name == p.docker.deps {
			r.deps = host + ":" + mount
		}
	}
	return r
}

// run copies the checkout afresh (mtimes kept, .git and runs left out, as
// the copy workspace does) and runs the sequence, returning its time
// (the copy included: the sandbox's copy is part of its time).
func (r *rawBaseline) run(t *testing.T) time.Duration {
	t.Helper()
	t0 := time.Now()
	if err := os.RemoveAll(r.dir); err != nil {
		t.Fatal(err)
	}
	copyCmd := exec.Command("sh", "-c", `mkdir -p "$1" && tar -C "$2" --exclude=./.git --exclude=./.proofgate/runs -cf - . | tar -C "$1" -xf -`,
		"sh", r.dir, r.repo)
	if out, err := copyCmd.CombinedOutput(); err != nil {
		t.Fatalf("copy: %v\n%s", err, out)
	}
	chownTree(t, r.dir)
	for i, argv := range r.p.bare {
		args := []string{"run", "--rm", "--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
			"--tmpfs", "/tmp:rw,exec,mode=1777", "--tmpfs", "/home/sandbox:rw,exec,uid=65534,gid=65534",
			"-e", "HOME=/home/sandbox", "-v", r.dir + ":/workspace", "-w", "/workspace"}
		if os.Getuid() == 0 {
			args = append(args, "--user", "65534:65534")
		}
		net, extra := "none", r.p.docker.rest
		if i == 0 {
			net, extra = "host", r.p.docker.fetch
		}
		args = append(args, "--network", net)
		for _, kv := range append(slices.Clone(r.p.docker.env), extra...) {
			args = append(args, "-e", kv)
		}
		for _, c := range r.caches {
			if i > 0 && c == r.deps {
				c += ":ro"
			}
			args = append(args, "-v", c)
		}
		args = append(append(args, r.image), argv...)
		if out, err := exec.Command("docker", args...).CombinedOutput(); err != nil {
			t.Fatalf("raw docker %v: %v\n%s", argv, err, out)
		}
	}
	return time.Since(t0)
}

// runBare runs the project's bare sequence in dir.
func runBare(t *testing.T, p thirdParty, dir string, env []string) {
	t.Helper()
	for _, argv := range p.bare {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir, cmd.Env = dir, env
		if os.Getuid() == 0 {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("bare %v: %v\n%s", argv, err, out)
		}
	}
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// bareHome is a directory user 65534 can reach (t.TempDir's parents are
// 0700), removed after the test.
func bareHome(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "firstday-bare-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

// chownTree gives the tree to 65534 when the test runs as root.
func chownTree(t *testing.T, dir string) {
	t.Helper()
	if os.Getuid() != 0 {
		return
	}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, 65534, 65534)
	})
	if err != nil {
		t.Fatal(err)
	}
}
