package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proofgate/proofgate/internal/testimage"
)

// goRepoModule is a small module with one real dependency (in the host's
// module cache: a dependency of ProofGate itself) and a command, so every
// check of examples/go-repo has something to do.
var goRepoModule = map[string]string{
	"go.mod": "module example.com/svc\n\ngo 1.26\n",
	"canon.go": "package svc\n\nimport \"github.com/gowebpki/jcs\"\n\n// Canon canonicalises JSON.\n" +
		"func Canon(b []byte) ([]byte, error) { return jcs.Transform(b) }\n",
	"canon_test.go": "package svc\n\nimport \"testing\"\n\nfunc TestCanon(t *testing.T) {\n" +
		"\tif b, err := Canon([]byte(`{\"b\":1,\"a\":2}`)); err != nil || string(b) != `{\"a\":2,\"b\":1}` {\n\t\tt.Fatalf(\"%s %v\", b, err)\n\t}\n}\n",
	"cmd/svc/main.go": "package main\n\nimport (\n\t\"os\"\n\n\t\"example.com/svc\"\n)\n\n" +
		"func main() { b, _ := svc.Canon([]byte(`{}`)); os.Stdout.Write(b) }\n",
}

// goRepoContract is examples/go-repo/contract.yaml with what a test cannot
// use replaced: the Go toolchain image for the registry image, and the
// fetch check's proxy and checksum database for a module proxy on loopback
// serving the host's module cache (go.sum still verifies every module).
// Each replacement must match exactly once, so the test follows the
// example.
func goRepoContract(t *testing.T, image, proxy string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "examples", "go-repo", "contract.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, r := range [][2]string{
		{"image: golang:1.23@sha256:ad5c126b5cf501a8caef751a243bb717ec204ab1aa56dc41dc11be089fafcb4f", "image: " + image},
		{"pull: missing", "pull: never"},
		{`GOPROXY: "https://proxy.golang.org"`, `GOPROXY: "` + proxy + `"`},
		{"GOSUMDB: sum.golang.org", "GOSUMDB: \"off\""},
	} {
		if strings.Count(s, r[0]) != 1 {
			t.Fatalf("examples/go-repo/contract.yaml: %q occurs %d times", r[0], strings.Count(s, r[0]))
		}
		s = strings.Replace(s, r[0], r[1], 1)
	}
	return s
}

// moduleProxy serves the host's module download cache as a GOPROXY on
// 127.0.0.1 and writes go.sum for dir's requirements from it.
func moduleProxy(t *testing.T, dir string) string {
	t.Helper()
	dl := testimage.RequireJCS(t, dir, t.TempDir())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.FileServer(http.Dir(dl)), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

type runChecks struct {
	State  string `json:"state"`
	Checks []struct {
		ID       string `json:"id"`
		Outcome  string `json:"outcome"`
		Detail   string `json:"detail"`
		Products []struct {
			Path   string `json:"path"`
			Digest string `json:"digest"`
			Size   int64  `json:"size"`
		} `json:"products"`
		Attestation struct {
			Profile struct {
				Network string `json:"network"`
				Caches  []struct {
					Name       string `json:"name"`
					Mode       string `json:"mode"`
					Entries    int    `json:"entries"`
					Provenance string `json:"provenance"`
				} `json:"caches"`
			} `json:"profile"`
		} `json:"attestation"`
	} `json:"checks"`
}

func goRepoRun(t *testing.T, args ...string) runChecks {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(append([]string{"run", "--json"}, args...), &out, &errb)
	var r runChecks
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("run exit %d: %v\n%s\n%s", code, err, out.String(), errb.String())
	}
	return r
}

// TestGoRepoExampleWarmOffline runs examples/go-repo's contract, as
// written but for the image and the proxy, on a module with a real
// dependency: the fetch check (network host) fills go-mod from a proxy on
// loopback, vet, unit and build run with network none and go-mod
// read-only; the second run finds go-build warm and recorded. Hostile: a
// check that drops the go-mod cache has no modules and no network, and
// fails.
func TestGoRepoExampleWarmOffline(t *testing.T) {
	if ok, err := dockerCondition("docker"); err != nil {
		t.Fatal(err)
	} else if !ok {
		t.Skip("no docker daemon")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	image, err := testimage.EnsureGo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	repo := t.TempDir()
	for name, body := range goRepoModule {
		os.MkdirAll(filepath.Dir(filepath.Join(repo, name)), 0o755)
		if err := os.WriteFile(filepath.Join(repo, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	proxy := moduleProxy(t, repo)
	os.MkdirAll(filepath.Join(repo, ".proofgate"), 0o755)
	contract := goRepoContract(t, image, proxy)
	os.WriteFile(filepath.Join(repo, ".proofgate", "contract.yaml"), []byte(contract), 0o644)
	// No go-mod for vet: the hostile variant.
	os.WriteFile(filepath.Join(repo, "nomod.yaml"), []byte(strings.Replace(contract,
		"    caches: [go-build, {name: go-mod, readonly: true}]\n    run: [go, vet, ./...]", "    caches: [go-build]\n    run: [go, vet, ./...]", 1)), 0o644)
	os.WriteFile(filepath.Join(repo, ".gitignore"), []byte(".proofgate/runs/\n"), 0o644)
	gitCommitAll(t, repo, "svc")
	os.Chmod(repo, 0o755)
	wd, _ := os.Getwd()
	t.Cleanup(func() { os.Chdir(wd) })
	if err := os.Chdir(repo); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(t.TempDir(), "caches")

	first := goRepoRun(t, "--cache-root", root)
	assertGoRepoRun(t, "first", first, false)
	second := goRepoRun(t, "--cache-root", root)
	assertGoRepoRun(t, "second", second, true)

	bad := goRepoRun(t, "--cache-root", root, "--contract", "nomod.yaml")
	for _, c := range bad.Checks {
		if c.ID == "vet" && c.Outcome != "failed" {
			t.Errorf("vet without go-mod: %s (%s), want failed", c.Outcome, c.Detail)
		}
	}
	if bad.State != "BLOCKED" {
		t.Errorf("run without go-mod for vet: %s", bad.State)
	}
}

// assertGoRepoRun: every check passed, only fetch had the network, the
// offline checks mounted go-mod read-only and go-build writable; on the
// second run go-build is non-empty and its provenance recorded.
func assertGoRepoRun(t *testing.T, which string, r runChecks, warm bool) {
	t.Helper()
	if r.State != "AWAITING_APPROVAL" || len(r.Checks) != 4 {
		t.Fatalf("%s run: %s, %d checks: %+v", which, r.State, len(r.Checks), r.Checks)
	}
	for _, c := range r.Checks {
		p := c.Attestation.Profile
		if c.Outcome != "passed" {
			t.Errorf("%s run: %s %s: %s", which, c.ID, c.Outcome, c.Detail)
		}
		if want := c.ID == "build"; want != (len(c.Products) == 1 && c.Products[0].Path == "dist/svc" && c.Products[0].Size > 1<<20) {
			t.Errorf("%s run: %s products %+v", which, c.ID, c.Products)
		}
		wantNet := "none"
		if c.ID == "fetch" {
			wantNet = "host"
		}
		if p.Network != wantNet {
			t.Errorf("%s run: %s network %q, want %q", which, c.ID, p.Network, wantNet)
		}
		modes := map[string]string{}
		for _, cc := range p.Caches {
			modes[cc.Name] = cc.Mode
			if warm && c.ID == "vet" && cc.Name == "go-build" && (cc.Entries == 0 || cc.Provenance != "recorded") {
				t.Errorf("second run: vet's go-build %d entries, provenance %q: not warm", cc.Entries, cc.Provenance)
			}
		}
		want := map[string]string{"go-build": "rw", "go-mod": "ro"}
		if c.ID == "fetch" {
			want = map[string]string{"go-mod": "rw"}
		}
		if len(modes) != len(want) || modes["go-build"] != want["go-build"] || modes["go-mod"] != want["go-mod"] {
			t.Errorf("%s run: %s caches %v, want %v", which, c.ID, modes, want)
		}
	}
}
