package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/internal/githubtest"
	"github.com/proofgate/proofgate/internal/sigstoretest"
)

// The independent verifiers docs/verify.md's recipes run, built by
// scripts/verifiers-up.sh into $PROOFGATE_VERIFIERS; required (a failure,
// not a skip) with PROOFGATE_REQUIRE_VERIFIERS=1, as scripts/test.sh sets.
const (
	envVerifiers        = "PROOFGATE_VERIFIERS"
	envRequireVerifiers = "PROOFGATE_REQUIRE_VERIFIERS"
	githubIssuer        = "https://token.actions.githubusercontent.com"
	recipeWorkflow      = "proofgate/proofgate/.github/workflows/proofgate.yml"
	recipeGate          = "acme/widget/.github/workflows/release.yml" // the release gate that signs summaries keyless
)

func verifierTools(t *testing.T) string {
	t.Helper()
	dir := os.Getenv(envVerifiers)
	for _, n := range []string{"cosign2", "cosign3", "gh", "slsa-verifier", "sigstore-go-verification"} {
		if _, err := os.Stat(filepath.Join(dir, n)); dir == "" || err != nil {
			if os.Getenv(envRequireVerifiers) == "1" {
				t.Fatalf("%s=1 but %s has no %s (bash scripts/verifiers-up.sh)", envRequireVerifiers, envVerifiers, n)
			}
			t.Skipf("no verifiers (%s): bash scripts/verifiers-up.sh", envVerifiers)
		}
	}
	return dir
}

// recipeFiles are the files a recipe finds in its directory, under the
// names docs/verify.md gives them.
type recipeFiles struct {
	archive, companion, pub, root string
	vsa, gatePub, vsaKeyless      string
	product                       string   // a check's product, as "app"
	env                           []string // added to the recipe's environment (last wins)
}

// TestVerifyRecipes executes every recipe of docs/verify.md verbatim with
// the real tools (cosign v2 and v3, gh), offline (HTTPS_PROXY points at a
// closed loopback port, so a tool that tried the internet would fail),
// against bundles the CLI mints: key mode, and keyless from the real
// Fulcio and timestamp authority on 127.0.0.1 (the recipes' GitHub issuer
// is the only text replaced: by the local issuer's URL). Each recipe
// accepts its bundle and refuses another run's archive under the same
// companion; the key recipe refuses another key, the keyless ones a
// bundle another workflow signed.
func TestVerifyRecipes(t *testing.T) {
	tools := verifierTools(t)
	doc, err := os.ReadFile("../../docs/verify.md")
	if err != nil {
		t.Fatal(err)
	}
	svc := sigstoretest.Start(t)
	f := newFixture(t, 1, "fixed", false)
	p := f.clone(t)
	p.must([]int{0}, "approve", f.runID, "--actor", "bob")
	p.must([]int{3}, "run", "--quiet")
	other := p.runs()[1]
	p.must([]int{0}, "approve", other, "--actor", "bob")

	keys := t.TempDir()
	for _, k := range []string{"signer", "stranger", "gate"} {
		p.must([]int{0}, "keygen", "-o", filepath.Join(keys, k+".pem"))
	}
	out := t.TempDir()
	export := func(name, run string, signer ...string) recipeFiles {
		b := filepath.Join(out, name+".bundle.tar.gz")
		p.must([]int{0}, append([]string{"bundle", "export", run, "-o", b}, signer...)...)
		return recipeFiles{archive: b, companion: strings.TrimSuffix(b, ".tar.gz") + ".sigstore.json"}
	}
	keyless := func(workflow string) []string {
		tok := filepath.Join(t.TempDir(), "token")
		claims := githubtest.Claims{Repository: "acme/widget", JobWorkflowRef: workflow + "@refs/tags/v1"}
		if err := os.WriteFile(tok, []byte(svc.OIDC.Token(claims)), 0o600); err != nil {
			t.Fatal(err)
		}
		return []string{"--keyless", "--fulcio-url", svc.FulcioURL, "--tsa-url", svc.TSAURL, "--id-token-file", tok}
	}
	withKey := []string{"--key", filepath.Join(keys, "signer.pem")}
	signerPub, strangerPub := filepath.Join(keys, "signer.pub.pem"), filepath.Join(keys, "stranger.pub.pem")

	key, keyOther := export("key", f.runID, withKey...), export("key-other", other, withKey...)
	kl, klOther := export("keyless", f.runID, keyless(recipeWorkflow)...), export("keyless-other", other, keyless(recipeWorkflow)...)
	klStranger := export("keyless-stranger", f.runID, keyless("acme/widget/.github/workflows/release.yml")...)

	// A gate's summary of the key-mode bundle, and of the other run's.
	trust := filepath.Join(out, "trust.json")
	p.must([]int{0}, "trust", "add", "--store", trust, "--public-key", signerPub)
	head := strings.TrimSpace(string(must(exec.Command("git", "-C", p.dir, "rev-parse", "HEAD").Output())))
	summary := func(archive string) string {
		v := strings.TrimSuffix(archive, ".bundle.tar.gz") + ".vsa.json"
		p.must([]int{0}, "bundle", "verify", archive, "--trust", trust, "--commit", head, "--contract", ".proofgate/contract.yaml",
			"--vsa", v, "--vsa-key", filepath.Join(keys, "gate.pem"))
		return v
	}
	gatePub := filepath.Join(keys, "gate.pub.pem")
	keyVSA, otherVSA := summary(key.archive), summary(keyOther.archive)

	// Keyless summaries of the key-mode bundle by the release gate's
	// workflow (PASSED, and FAILED under another commit), and by another.
	keylessSummary := func(name, workflow, commit string, code int) string {
		v := filepath.Join(out, name+".vsa.sigstore.json")
		kl := keyless(workflow)
		for i := range kl {
			if strings.HasPrefix(kl[i], "--") {
				kl[i] = "--vsa-" + strings.TrimPrefix(kl[i], "--")
			}
		}
		p.must([]int{code}, append([]string{"bundle", "verify", key.archive, "--trust", trust, "--commit", commit,
			"--contract", ".proofgate/contract.yaml", "--vsa", v}, kl...)...)
		return v
	}
	gateVSA := keylessSummary("gate", recipeGate, head, 0)
	failedVSA := keylessSummary("failed", recipeGate, strings.Repeat("0", 40), 1)
	strangerVSA := keylessSummary("stranger", recipeWorkflow, head, 0)

	// What each refusal must say: the refusal is the tool's, for the
	// reason the case varies (a recipe that failed for a typo would pass
	// a bare exit-code check).
	const (
		notSubject = `artifact digests? do(es)? not match`
		wrongKey   = `accepted signatures do not match threshold`
		wrongID    = `no matching CertificateIdentity found`
		ghRefused  = `verifying with issuer "sigstore"`
	)
	type tc = recipeCase
	var cases []tc
	for _, cosign := range []string{"cosign2", "cosign3"} {
		cases = append(cases,
			tc{cosign + "/key", "verify-cosign-key", recipeFiles{archive: key.archive, companion: key.companion, pub: signerPub}, ""},
			tc{cosign + "/key/another-run", "verify-cosign-key", recipeFiles{archive: keyOther.archive, companion: key.companion, pub: signerPub}, notSubject},
			tc{cosign + "/key/another-key", "verify-cosign-key", recipeFiles{archive: key.archive, companion: key.companion, pub: strangerPub}, wrongKey},
			tc{cosign + "/keyless", "verify-cosign-keyless", recipeFiles{archive: kl.archive, companion: kl.companion, root: svc.TrustedRootPath}, ""},
			tc{cosign + "/keyless/another-run", "verify-cosign-keyless", recipeFiles{archive: klOther.archive, companion: kl.companion, root: svc.TrustedRootPath}, notSubject},
			tc{cosign + "/keyless/another-signer", "verify-cosign-keyless", recipeFiles{archive: klStranger.archive, companion: klStranger.companion, root: svc.TrustedRootPath}, wrongID},
		)
	}
	cases = append(cases,
		tc{"gh/keyless", "verify-gh", recipeFiles{archive: kl.archive, companion: kl.companion, root: svc.TrustedRootPath}, ""},
		tc{"gh/keyless/another-run", "verify-gh", recipeFiles{archive: klOther.archive, companion: kl.companion, root: svc.TrustedRootPath}, ghRefused},
		tc{"gh/keyless/another-signer", "verify-gh", recipeFiles{archive: klStranger.archive, companion: klStranger.companion, root: svc.TrustedRootPath}, ghRefused},
		tc{"sigstore-go/keyless", "verify-sigstore-go", recipeFiles{archive: kl.archive, companion: kl.companion, root: svc.TrustedRootPath}, ""},
		tc{"sigstore-go/keyless/another-run", "verify-sigstore-go", recipeFiles{archive: klOther.archive, companion: kl.companion, root: svc.TrustedRootPath}, notSubject},
		tc{"sigstore-go/keyless/another-signer", "verify-sigstore-go", recipeFiles{archive: klStranger.archive, companion: klStranger.companion, root: svc.TrustedRootPath}, wrongID},
		tc{"slsa-verifier/vsa", "verify-slsa-vsa", recipeFiles{archive: key.archive, vsa: keyVSA, gatePub: gatePub}, ""},
		tc{"slsa-verifier/vsa/another-archive", "verify-slsa-vsa", recipeFiles{archive: keyOther.archive, vsa: keyVSA, gatePub: gatePub}, "missing subject digest"},
		tc{"slsa-verifier/vsa/another-key", "verify-slsa-vsa", recipeFiles{archive: keyOther.archive, vsa: otherVSA, gatePub: strangerPub}, "no valid signature: verifying envelope: " + wrongKey},
		tc{"gh/vsa-keyless", "verify-gh-vsa", recipeFiles{archive: key.archive, vsaKeyless: gateVSA, root: svc.TrustedRootPath}, ""},
		tc{"gh/vsa-keyless/another-archive", "verify-gh-vsa", recipeFiles{archive: keyOther.archive, vsaKeyless: gateVSA, root: svc.TrustedRootPath}, ghRefused},
		tc{"gh/vsa-keyless/another-gate", "verify-gh-vsa", recipeFiles{archive: key.archive, vsaKeyless: strangerVSA, root: svc.TrustedRootPath}, ghRefused},
		tc{"gh/vsa-keyless/failed", "verify-gh-vsa", recipeFiles{archive: key.archive, vsaKeyless: failedVSA, root: svc.TrustedRootPath}, "the gate said: FAILED FAILED"},
	)
	for _, cosign := range []string{"cosign2", "cosign3"} {
		cases = append(cases,
			tc{cosign + "/vsa-keyless", "verify-cosign-vsa", recipeFiles{archive: key.archive, vsaKeyless: gateVSA, root: svc.TrustedRootPath}, ""},
			tc{cosign + "/vsa-keyless/another-archive", "verify-cosign-vsa", recipeFiles{archive: keyOther.archive, vsaKeyless: gateVSA, root: svc.TrustedRootPath}, notSubject},
			tc{cosign + "/vsa-keyless/another-gate", "verify-cosign-vsa", recipeFiles{archive: key.archive, vsaKeyless: strangerVSA, root: svc.TrustedRootPath}, wrongID},
			tc{cosign + "/vsa-keyless/failed", "verify-cosign-vsa", recipeFiles{archive: key.archive, vsaKeyless: failedVSA, root: svc.TrustedRootPath}, `(?m)^false$`},
		)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { runRecipeCase(t, doc, tools, svc.OIDC.URL, c) })
	}

	// proofgate vsa verify reads the keyless summaries the same way.
	t.Run("proofgate/vsa-keyless", func(t *testing.T) {
		pin := []string{"--trusted-root", svc.TrustedRootPath, "--certificate-oidc-issuer", svc.OIDC.URL}
		r := p.must([]int{0}, append([]string{"vsa", "verify", gateVSA, "--signer-workflow", recipeGate, "--subject", key.archive}, pin...)...)
		wantOut(t, r.stdout, "PASSED: key.bundle.tar.gz")
		wantOut(t, r.stdout, "signed by https://github.com/"+recipeGate+"@refs/tags/v1 (keyless, witnessed ")
		r = p.must([]int{1}, append([]string{"vsa", "verify", gateVSA, "--signer-workflow", recipeGate, "--subject", keyOther.archive}, pin...)...)
		wantOut(t, r.stderr, "subject-mismatch")
		r = p.must([]int{1}, append([]string{"vsa", "verify", strangerVSA, "--signer-workflow", recipeGate}, pin...)...)
		wantOut(t, r.stderr, "identity-mismatch")
		r = p.must([]int{1}, append([]string{"vsa", "verify", failedVSA, "--signer-workflow", recipeGate}, pin...)...)
		wantOut(t, r.stdout, "FAILED: key.bundle.tar.gz")
		r = p.must([]int{1}, append([]string{"vsa", "verify", keyVSA, "--signer-workflow", recipeGate}, pin...)...)
		wantOut(t, r.stderr, "malformed")
		r = p.must([]int{2}, "vsa", "verify", gateVSA, "--trusted-root", svc.TrustedRootPath)
		wantOut(t, r.stderr, "no identity to accept")
		r = p.must([]int{2}, "vsa", "verify", gateVSA)
		wantOut(t, r.stderr, "--trust is required")
	})
}

// recipeCase is one run of a docs/verify.md recipe: its walk block, the
// files it finds, and what it must say ("" for a case it must accept).
type recipeCase struct {
	name, recipe string
	files        recipeFiles
	refusal      string // a regexp of the tool's refusal
}

// runRecipeCase runs c's recipe with the tools (the cosign build is the
// first element of c.name) against the local issuer.
func runRecipeCase(t *testing.T, doc []byte, tools, issuer string, c recipeCase) {
	t.Helper()
	lines := readmeBlock(t, doc, c.recipe)
	script := strings.ReplaceAll(strings.Join(lines, "\n"), githubIssuer, issuer)
	cosign, _, _ := strings.Cut(c.name, "/")
	if flag, ok := noCTLog[c.recipe]; ok {
		// The local Fulcio logs no certificate (no SCT): the variant
		// docs/verify.md gives for such an instance, after checking that
		// the recipe as printed refuses for that.
		out, err := runRecipe(t, tools, cosign, c.files, script)
		if err == nil || !strings.Contains(string(out), "SCT") {
			t.Fatalf("without %s: %v\n%s", flag[1], err, out)
		}
		script = strings.Replace(script, flag[0], flag[0]+" "+flag[1], 1)
	}
	out, err := runRecipe(t, tools, cosign, c.files, script)
	switch {
	case c.refusal == "" && err != nil:
		t.Fatalf("recipe %s refused its bundle: %v\n%s\n--- output:\n%s", c.recipe, err, script, out)
	case c.refusal != "" && err == nil:
		t.Fatalf("recipe %s accepted: %s\n--- output:\n%s", c.recipe, c.name, out)
	case c.refusal != "" && !regexp.MustCompile(c.refusal).Match(out):
		t.Fatalf("recipe %s refused, but not with %q:\n%s", c.recipe, c.refusal, out)
	}
}

// noCTLog is, per recipe, the flag it needs for a Fulcio without a
// certificate transparency log, and the text of the recipe it follows.
var noCTLog = map[string][2]string{
	"verify-cosign-keyless": {"--use-signed-timestamps", "--insecure-ignore-sct"},
	"verify-cosign-product": {"--use-signed-timestamps", "--insecure-ignore-sct"},
	"verify-cosign-vsa":     {"--use-signed-timestamps", "--insecure-ignore-sct"},
	"verify-sigstore-go":    {"-requireTlog=false", "-requireCTlog=false"},
}

// runRecipe runs script with sh -e in a fresh directory holding files
// under docs/verify.md's names, with the tools first on PATH (cosign is
// the given build), HOME empty, and every non-loopback HTTP(S) request
// sent to a closed port.
func runRecipe(t *testing.T, tools, cosign string, f recipeFiles, script string) ([]byte, error) {
	t.Helper()
	dir, bin := t.TempDir(), t.TempDir()
	for src, name := range map[string]string{f.archive: "proofgate-bundle.tar.gz", f.companion: "proofgate-bundle.sigstore.json",
		f.pub: "proofgate.pub.pem", f.root: "trusted_root.json", f.vsa: "proofgate.vsa.json", f.gatePub: "gate.pub.pem", f.product: "app",
		f.vsaKeyless: "proofgate.vsa.sigstore.json"} {
		if src == "" {
			continue
		}
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{"gh": "gh", "slsa-verifier": "slsa-verifier", "sigstore-go-verification": "sigstore-go-verification"}
	if cosign == "cosign2" || cosign == "cosign3" {
		links["cosign"] = cosign
	}
	for name, target := range links {
		if err := os.Symlink(filepath.Join(tools, target), filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	home := t.TempDir()
	cmd := exec.Command("sh", "-ec", script)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + bin + ":" + os.Getenv("PATH"), "HOME=" + home, "XDG_CONFIG_HOME=" + home,
		"TUF_ROOT=" + filepath.Join(home, "tuf"), "GH_NO_UPDATE_NOTIFIER=1", "GH_PROMPT_DISABLED=1",
		"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "NO_PROXY=127.0.0.1,localhost"}
	cmd.Env = append(cmd.Env, f.env...)
	return cmd.CombinedOutput()
}
