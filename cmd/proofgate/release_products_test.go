package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proofgate/proofgate/internal/bounded"
	"github.com/proofgate/proofgate/internal/ci/ghapi"
	"github.com/proofgate/proofgate/internal/githubtest"
	"github.com/proofgate/proofgate/internal/sigstoretest"
	"github.com/proofgate/proofgate/internal/testimage"
)

// releaseContract builds a Go command in the sandbox and declares the
// binary as the check's product (ADR 0039).
const releaseContract = `version: 1
name: release
defaults:
  runtime: docker
  image: %s
  pull: never
  timeout: 5m
  network: none
  workspace: copy
  resources: {memory: 2GiB, pids: 512}
  tmpfs: 1GiB
  env: {HOME: /tmp, GOCACHE: /tmp/gocache, GOFLAGS: -trimpath, GOTOOLCHAIN: local, CGO_ENABLED: "0"}
checks:
  - id: build
    run: [go, build, -o, dist/app, ./cmd/app]
    produces: [dist/app]
  - id: vet
    run: [go, vet, ./...]
approval: {required: 1}
`

// TestReleaseProducts: a sandboxed go build's binary is attested by its
// own digest. The release gate (bundle verify --subject) accepts the
// binary export --products wrote and refuses it with one byte changed,
// another run's binary and a file whose digest is one of the bundle's own
// members; gh attestation verify and cosign v2 and v3 run docs/verify.md's
// product recipes on the keyless bundle and accept and refuse the same
// binaries.
func TestReleaseProducts(t *testing.T) {
	if ok, err := dockerCondition("docker"); err != nil {
		t.Fatal(err)
	} else if !ok {
		t.Skip("no docker daemon")
	}
	tools := verifierTools(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	image, err := testimage.EnsureGo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p := pg{t: t, dir: filepath.Join(t.TempDir(), "repo")}
	p.write(".proofgate/contract.yaml", strings.Replace(releaseContract, "%s", image, 1))
	p.write(".gitignore", ".proofgate/runs/\n.proofgate/bundles/\n")
	p.write("go.mod", "module example.com/app\n\ngo 1.26\n")
	p.write("cmd/app/main.go", "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"app v1\") }\n")
	p.git("init", "-q", ".")
	p.git("add", "-A")
	p.git("commit", "-q", "-m", "v1")
	os.Chmod(p.dir, 0o755)

	keys := keys(t)
	trust, signer := filepath.Join(keys, "trust.json"), filepath.Join(keys, "key.pem")
	out := t.TempDir()
	var ids []string
	release := func(name string) (bundle, product string) {
		before := map[string]bool{}
		for _, id := range ids {
			before[id] = true
		}
		p.must([]int{3}, "run", "--quiet")
		var id string
		for _, r := range p.runs() {
			if !before[r] && !strings.HasPrefix(r, ".") {
				id = r
			}
		}
		ids = append(ids, id)
		p.must([]int{0}, "approve", id, "--actor", "bob")
		bundle = filepath.Join(out, name+".bundle.tar.gz")
		p.must([]int{0}, "bundle", "export", id, "--key", signer, "-o", bundle, "--products", filepath.Join(out, name))
		return bundle, filepath.Join(out, name, "dist", "app")
	}
	v1, app1 := release("v1")
	head1 := p.head()
	// A product is its bytes (no mode is recorded, as in a workflow
	// artifact): made executable, it is the program that was built.
	os.Chmod(app1, 0o755)
	if b, err := exec.Command(app1).Output(); err != nil || string(b) != "app v1\n" {
		t.Fatalf("the product does not run as the binary it is: %q, %v", b, err)
	}

	gate := func(bundle, commit, subject string) (int, map[string]any) {
		t.Helper()
		r := p.run("", "bundle", "verify", bundle, "--trust", trust, "--commit", commit,
			"--contract", ".proofgate/contract.yaml", "--subject", subject, "--json")
		var v map[string]any
		if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
			t.Fatalf("verify --json: %v\n%s\n%s", err, r.stdout, r.stderr)
		}
		return r.code, v
	}
	code, v := gate(v1, head1, app1)
	if code != 0 || v["verdict"] != "accepted" {
		t.Fatalf("the gate refused the run's own binary: %d %v", code, v)
	}
	if v["archive_sha256"] != fileSum(t, v1) {
		t.Errorf("verdict archive_sha256 %v, the file hashes to %s", v["archive_sha256"], fileSum(t, v1))
	}
	prods, _ := v["products"].([]any)
	if len(prods) != 1 || prods[0].(map[string]any)["path"] != "dist/app" || prods[0].(map[string]any)["sha256"] != fileSum(t, app1) {
		t.Errorf("verdict products %v", v["products"])
	}

	// Another run, of the next commit.
	p.write("cmd/app/main.go", "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"app v2\") }\n")
	p.git("commit", "-q", "-am", "v2")
	v2, app2 := release("v2")
	if fileSum(t, app1) == fileSum(t, app2) {
		t.Fatal("two sources built one binary")
	}
	flipped := filepath.Join(t.TempDir(), "app")
	b, _ := os.ReadFile(app1)
	b[len(b)/2] ^= 1
	os.WriteFile(flipped, b, 0o755)
	empty := filepath.Join(t.TempDir(), "empty") // go build's stdout: a member of the bundle
	os.WriteFile(empty, nil, 0o644)
	for _, c := range []struct{ name, subject, detail string }{
		{"one byte changed", flipped, "no passed check produced"},
		{"another run's binary", app2, "no passed check produced"},
		{"a member's bytes (the build's empty stdout)", empty, "the bundle's own blobs/sha256/e3b0c442"},
	} {
		code, v := gate(v1, head1, c.subject)
		if code != 1 || v["reason"] != "not-a-product" || !strings.Contains(v["detail"].(string), c.detail) {
			t.Errorf("%s: exit %d, %v %v; want not-a-product (%s)", c.name, code, v["reason"], v["detail"], c.detail)
		}
	}
	if code, _ := gate(v2, p.head(), app2); code != 0 {
		t.Errorf("the second run's gate refused its own binary")
	}
	// export --products never overwrites a file it was not told to.
	r := p.run("", "bundle", "export", ids[1], "--key", signer, "-o", filepath.Join(out, "again.tar.gz"), "--products", filepath.Join(out, "v2"))
	if r.code != 2 || !strings.Contains(r.stderr, "exists") {
		t.Errorf("export --products over an existing file: exit %d, %s", r.code, r.stderr)
	}

	// The keyless bundle of the first run, with the Sigstore tools.
	svc := sigstoretest.Start(t)
	tok := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tok, []byte(svc.OIDC.Token(githubtest.Claims{Repository: "acme/widget", JobWorkflowRef: recipeWorkflow + "@refs/tags/v1"})), 0o600)
	kl := filepath.Join(out, "keyless.bundle.tar.gz")
	p.must([]int{0}, "bundle", "export", ids[0], "-o", kl, "--keyless", "--fulcio-url", svc.FulcioURL, "--tsa-url", svc.TSAURL, "--id-token-file", tok)
	doc, err := os.ReadFile("../../docs/verify.md")
	if err != nil {
		t.Fatal(err)
	}
	files := func(product string) recipeFiles {
		return recipeFiles{archive: kl, companion: strings.TrimSuffix(kl, ".tar.gz") + ".sigstore.json", root: svc.TrustedRootPath, product: product}
	}
	const ghNoMatch, cosignNoMatch = `verifying with issuer "sigstore"`, `artifact digests? do(es)? not match`
	var cases []recipeCase
	for _, tool := range []string{"cosign2", "cosign3"} {
		cases = append(cases,
			recipeCase{tool + "/product", "verify-cosign-product", files(app1), ""},
			recipeCase{tool + "/product/one-byte-changed", "verify-cosign-product", files(flipped), cosignNoMatch},
			recipeCase{tool + "/product/another-run", "verify-cosign-product", files(app2), cosignNoMatch})
	}
	// The attestation store: the companion stored as the action stores it
	// (input attest), found by gh through a fake of GitHub's API.
	gh := githubtest.New(t)
	gh.Token = "ghs_testtoken"
	gh.AddRepo("acme", "widget")
	client, err := ghapi.NewClient(ctx, gh.Token, gh.URL)
	if err != nil {
		t.Fatal(err)
	}
	comp, err := os.ReadFile(strings.TrimSuffix(kl, ".tar.gz") + ".sigstore.json")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ghapi.PostAttestation(ctx, client, "acme", "widget", comp); err != nil {
		t.Fatal(err)
	}
	proxy, ca := gh.APIProxy(t)
	online := func(product string) recipeFiles {
		f := files(product)
		f.companion = "" // found online, not given
		f.env = []string{"HTTPS_PROXY=" + proxy, "SSL_CERT_FILE=" + ca, "GH_TOKEN=" + gh.Token}
		return f
	}
	const ghNotStored = `no attestations found`
	cases = append(cases,
		recipeCase{"gh-online/product", "verify-gh-online", online(app1), ""},
		recipeCase{"gh-online/product/one-byte-changed", "verify-gh-online", online(flipped), ghNotStored},
		recipeCase{"gh-online/product/another-run", "verify-gh-online", online(app2), ghNotStored})
	cases = append(cases,
		recipeCase{"gh/product", "verify-gh-product", files(app1), ""},
		recipeCase{"gh/product/one-byte-changed", "verify-gh-product", files(flipped), ghNoMatch},
		recipeCase{"gh/product/another-run", "verify-gh-product", files(app2), ghNoMatch})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { runRecipeCase(t, doc, tools, svc.OIDC.URL, c) })
	}
}

// head is the repository's HEAD commit.
func (p pg) head() string {
	p.t.Helper()
	b, err := exec.Command("git", "-C", p.dir, "rev-parse", "HEAD").Output()
	if err != nil {
		p.t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func fileSum(t *testing.T, name string) string {
	d, err := bounded.SHA256File(name)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
