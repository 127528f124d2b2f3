package action

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/bundle/key"
	"github.com/proofgate/proofgate/bundle/trust"
	"github.com/proofgate/proofgate/internal/ci/artifact"
	"github.com/proofgate/proofgate/internal/githubtest"
)

const (
	owner = "acme"
	repo  = "widget"
	prNum = 7
)

var (
	alice = githubtest.User{Login: "alice", ID: 101} // PR author
	bob   = githubtest.User{Login: "bob", ID: 202}   // maintainer
	carol = githubtest.User{Login: "carol", ID: 303} // read-only
)

// processContract runs its checks as processes: no Docker needed.
const processContract = `version: 1
name: widget
defaults:
  runtime: process
  timeout: 30s
checks:
  - id: readme
    run: [test, -f, README.md]
  - id: guard
    run: [test, "!", -e, FORBIDDEN]
approval: {required: 1, roles: [write, maintain, admin]}
`

// fixture is a real git repository shaped like an actions/checkout of a
// pull request (the test merge commit of the PR head into the base, with
// history), plus a fake GitHub that knows the PR.
type fixture struct {
	t      *testing.T
	gh     *githubtest.Server
	ws     string // the workspace: detached at the test merge commit
	tmp    string // scratch
	wf     string // event.json (the runner's _github_workflow)
	fc     string // output and summary files (the runner's _runner_file_commands)
	base   string
	head   string
	merge  string
	keyPEM string
	trust  string // trust.json path
	env    map[string]string
	log    bytes.Buffer
	// runnerTemp, when set, is the host's RUNNER_TEMP directory: dockerRun
	// mounts it at /github/runner_temp, as the runner does.
	runnerTemp string
}

func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=Alice", "GIT_AUTHOR_EMAIL=alice@example.com",
		"GIT_COMMITTER_NAME=Alice", "GIT_COMMITTER_EMAIL=alice@example.com", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func writeFile(t testing.TB, p, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// newFixture makes the repository: base commit with baseContract, the PR
// head changing prFiles ("" deletes), and the test merge checked out.
func newFixture(t *testing.T, baseContract string, prFiles map[string]string) *fixture {
	t.Helper()
	return newFixtureBase(t, baseContract, nil, prFiles)
}

// newFixtureBase is newFixture with extra files in the base commit.
func newFixtureBase(t *testing.T, baseContract string, baseFiles, prFiles map[string]string) *fixture {
	t.Helper()
	fx := &fixture{t: t, gh: githubtest.New(t), tmp: t.TempDir()}
	fx.wf, fx.fc = filepath.Join(fx.tmp, "workflow"), filepath.Join(fx.tmp, "file_commands")
	for _, d := range []string{fx.wf, fx.fc} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	fx.ws = filepath.Join(t.TempDir(), "ws")
	if err := os.MkdirAll(fx.ws, 0o755); err != nil {
		t.Fatal(err)
	}
	git(t, fx.ws, "init", "-q", "-b", "main")
	writeFile(t, filepath.Join(fx.ws, "README.md"), "widget\n")
	writeFile(t, filepath.Join(fx.ws, ".proofgate/contract.yaml"), baseContract)
	for p, data := range baseFiles {
		writeFile(t, filepath.Join(fx.ws, p), data)
	}
	git(t, fx.ws, "add", "-A")
	git(t, fx.ws, "commit", "-q", "-m", "base")
	fx.base = git(t, fx.ws, "rev-parse", "HEAD")
	git(t, fx.ws, "checkout", "-q", "-b", "topic")
	writeFile(t, filepath.Join(fx.ws, "feature.txt"), "a feature\n")
	for p, data := range prFiles {
		if data == "" {
			os.Remove(filepath.Join(fx.ws, p))
		} else {
			writeFile(t, filepath.Join(fx.ws, p), data)
		}
	}
	git(t, fx.ws, "add", "-A")
	git(t, fx.ws, "commit", "-q", "-m", "feature")
	fx.head = git(t, fx.ws, "rev-parse", "HEAD")
	git(t, fx.ws, "checkout", "-q", "--detach", fx.base)
	git(t, fx.ws, "merge", "-q", "--no-ff", "--no-edit", "-m", "Merge "+fx.head+" into "+fx.base, fx.head)
	fx.merge = git(t, fx.ws, "rev-parse", "HEAD")

	fx.gh.AddRepo(owner, repo)
	fx.gh.AddPR(owner, repo, githubtest.PR{Number: prNum, Author: alice, HeadSHA: fx.head, BaseSHA: fx.base})
	fx.gh.AddCommit(owner, repo, prNum, githubtest.Commit{SHA: fx.head, Author: &alice, Committer: &alice, Message: "feature"})
	fx.gh.SetPermission(owner, repo, "bob", githubtest.Permission{Permission: "write"})
	fx.gh.SetPermission(owner, repo, "carol", githubtest.Permission{Permission: "read"})
	fx.gh.SetRun(owner, repo, fx.head)

	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	fx.keyPEM = string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	pubPEM, err := key.PublicPEM(pub)
	if err != nil {
		t.Fatal(err)
	}
	st := trust.New()
	if _, err := st.Add(pubPEM, "repo:"+owner+"/"+repo, nil, nil); err != nil {
		t.Fatal(err)
	}
	fx.trust = filepath.Join(fx.wf, "trust.json")
	if err := st.Save(fx.trust); err != nil {
		t.Fatal(err)
	}
	fx.gh.Token = "ghs_testtoken"
	fx.env = map[string]string{
		"GITHUB_ACTIONS":        "true",
		"GITHUB_REPOSITORY":     owner + "/" + repo,
		"GITHUB_WORKSPACE":      fx.ws,
		"GITHUB_API_URL":        fx.gh.URL,
		"GITHUB_SERVER_URL":     fx.gh.URL,
		"GITHUB_SHA":            fx.merge,
		"GITHUB_OUTPUT":         filepath.Join(fx.fc, "set_output_1"),
		"GITHUB_STEP_SUMMARY":   filepath.Join(fx.fc, "step_summary_1"),
		"ACTIONS_RUNTIME_TOKEN": fx.gh.RuntimeToken("run-backend-1", "job-backend-1"),
		"ACTIONS_RESULTS_URL":   fx.gh.ResultsURL(),
		"INPUT_GITHUB-TOKEN":    fx.gh.Token,
		"INPUT_SIGNING-KEY":     fx.keyPEM,
		"INPUT_ON-PENDING":      "fail",
		"INPUT_JOBS":            "2",
	}
	return fx
}

// prEvent writes a pull_request event and points the environment at it.
func (fx *fixture) prEvent() {
	fx.t.Helper()
	p, err := fx.gh.WritePullRequestEvent(fx.wf, owner, repo, prNum, "synchronize")
	if err != nil {
		fx.t.Fatal(err)
	}
	fx.env["GITHUB_EVENT_NAME"] = "pull_request"
	fx.env["GITHUB_EVENT_PATH"] = p
}

// reviewEvent writes a pull_request_review event for review id.
func (fx *fixture) reviewEvent(id int64) {
	fx.t.Helper()
	p, err := fx.gh.WriteReviewEvent(fx.wf, owner, repo, prNum, id)
	if err != nil {
		fx.t.Fatal(err)
	}
	fx.env["GITHUB_EVENT_NAME"] = "pull_request_review"
	fx.env["GITHUB_EVENT_PATH"] = p
}

func (fx *fixture) getenv(k string) string { return fx.env[k] }

func (fx *fixture) resetFiles() {
	os.Remove(fx.env["GITHUB_OUTPUT"])
	os.Remove(fx.env["GITHUB_STEP_SUMMARY"])
	fx.log.Reset()
}

func (fx *fixture) run() (*Result, error) {
	fx.t.Helper()
	fx.resetFiles()
	return Run(context.Background(), Options{Getenv: fx.getenv, Stdout: &fx.log})
}

func (fx *fixture) verify() (*VerifyResult, error) {
	fx.t.Helper()
	fx.resetFiles()
	return Verify(context.Background(), Options{Getenv: fx.getenv, Stdout: &fx.log})
}

// release makes the merge commit that lands on main: a different commit
// with the tested tree.
func (fx *fixture) release() string {
	fx.t.Helper()
	tree := git(fx.t, fx.ws, "rev-parse", fx.merge+"^{tree}")
	m := git(fx.t, fx.ws, "commit-tree", tree, "-p", fx.base, "-p", fx.head, "-m", "Merge pull request #7")
	git(fx.t, fx.ws, "update-ref", "refs/heads/main", m)
	return m
}

func (fx *fixture) summary() string {
	b, _ := os.ReadFile(fx.env["GITHUB_STEP_SUMMARY"])
	return string(b)
}

// outputs parses the GITHUB_OUTPUT file (name<<delimiter ... delimiter).
func (fx *fixture) outputs() map[string]string {
	fx.t.Helper()
	return parseOutputs(fx.t, fx.env["GITHUB_OUTPUT"])
}

func parseOutputs(t testing.TB, path string) map[string]string {
	t.Helper()
	out := map[string]string{}
	f, err := os.Open(path)
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, delim, ok := strings.Cut(sc.Text(), "<<")
		if !ok {
			t.Fatalf("output file line %q is not name<<delimiter", sc.Text())
		}
		var val []string
		for sc.Scan() && sc.Text() != delim {
			val = append(val, sc.Text())
		}
		out[name] = strings.Join(val, "\n")
	}
	return out
}

// forge rewrites one file inside the bundle held by an artifact zip and
// returns a well-formed zip around the re-packed bundle and the untouched
// companion: the archive is valid, only the signed content changed.
func forge(t testing.TB, zipData []byte, file string, edit func([]byte) []byte) []byte {
	t.Helper()
	files, err := artifact.Unzip(zipData, 1<<30, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	for name, tgz := range files {
		// The companion Sigstore bundle is left as it is.
		if !strings.HasSuffix(name, ".tar.gz") {
			continue
		}
		zr, err := gzip.NewReader(bytes.NewReader(tgz))
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(zr)
		var out bytes.Buffer
		zw := gzip.NewWriter(&out)
		tw := tar.NewWriter(zw)
		found := false
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			if h.Name == file {
				data, found = edit(data), true
				h.Size = int64(len(data))
			}
			if err := tw.WriteHeader(h); err != nil {
				t.Fatal(err)
			}
			tw.Write(data)
		}
		if !found {
			t.Fatalf("bundle has no %s", file)
		}
		tw.Close()
		zw.Close()
		files[name] = out.Bytes()
	}
	z, err := artifact.Zip(files)
	if err != nil {
		t.Fatal(err)
	}
	return z
}

// rezip returns the artifact zip with edit applied to its files (by name).
func rezip(t testing.TB, zipData []byte, edit func(files map[string][]byte)) []byte {
	t.Helper()
	files, err := artifact.Unzip(zipData, 1<<30, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	edit(files)
	z, err := artifact.Zip(files)
	if err != nil {
		t.Fatal(err)
	}
	return z
}
