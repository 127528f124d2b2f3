package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/internal/githubtest"
	"github.com/proofgate/proofgate/internal/sigstoretest"
)

// TestKeylessExportVerify walks the CLI's keyless path against the real
// Fulcio and timestamp authority: `bundle export --keyless` for a token of
// the reusable workflow, then `bundle verify --trusted-root` with no trust
// store: accepted with the workflow pinned (the signer and the witnessed
// time reported), refused (identity-mismatch) for another pinned ref and
// another source repository; a trust store identity pins it too, and
// revoking that identity refuses the same bundle (key-revoked), also when
// the flags name the same workflow.
func TestKeylessExportVerify(t *testing.T) {
	svc := sigstoretest.Start(t)
	f := newFixture(t, 1, "fixed", false)
	p := f.clone(t)
	p.must([]int{0}, "approve", f.runID, "--actor", "bob")
	out := t.TempDir()
	tok := filepath.Join(out, "token")
	const wf = "proofgate-org/proofgate/.github/workflows/proofgate.yml"
	if err := os.WriteFile(tok, []byte(svc.OIDC.Token(githubtest.Claims{Repository: "acme/widget", JobWorkflowRef: wf + "@refs/tags/v1"})), 0o600); err != nil {
		t.Fatal(err)
	}
	b := filepath.Join(out, "run.bundle.tar.gz")
	p.must([]int{0}, "bundle", "export", f.runID, "--keyless", "--fulcio-url", svc.FulcioURL, "--tsa-url", svc.TSAURL,
		"--id-token-file", tok, "-o", b)
	if _, err := os.Stat(filepath.Join(out, "run.bundle.sigstore.json")); err != nil {
		t.Fatalf("no companion: %v", err)
	}
	head, err := exec.Command("git", "-C", p.dir, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	verify := func(codes []int, extra ...string) verdictJSON {
		args := append([]string{"bundle", "verify", b, "--trusted-root", svc.TrustedRootPath,
			"--commit", strings.TrimSpace(string(head)), "--contract", ".proofgate/contract.yaml", "--json"}, extra...)
		var v verdictJSON
		if r := p.must(codes, args...); json.Unmarshal([]byte(r.stdout), &v) != nil {
			t.Fatalf("verify output: %s", r.stdout)
		}
		return v
	}
	iss := []string{"--certificate-oidc-issuer", svc.OIDC.URL}
	v := verify([]int{0}, append(iss, "--signer-workflow", wf+"@refs/tags/v1", "--source-repo", "acme/widget")...)
	if v.Verdict != "accepted" || !strings.HasSuffix(v.Signer, wf+"@refs/tags/v1") || v.WitnessedAt == "" {
		t.Fatalf("pinned: %+v", v)
	}
	for _, extra := range [][]string{{"--signer-workflow", wf + "@refs/tags/v2"}, {"--signer-workflow", wf, "--source-repo", "acme/other"}} {
		if v := verify([]int{1}, append(iss, extra...)...); v.Reason != "identity-mismatch" {
			t.Fatalf("%v: %+v, want identity-mismatch", extra, v)
		}
	}
	// The default issuer is GitHub's, not this test's.
	if v := verify([]int{1}, "--signer-workflow", wf); v.Reason != "identity-mismatch" {
		t.Fatalf("default issuer: %+v, want identity-mismatch", v)
	}

	store := filepath.Join(out, "trust.json")
	p.must([]int{0}, "trust", "add-identity", "--store", store, "--id", "reusable", "--signer-workflow", wf+"@refs/tags/v1",
		"--certificate-oidc-issuer", svc.OIDC.URL)
	if v := verify([]int{0}, "--trust", store); v.Verdict != "accepted" {
		t.Fatalf("store identity: %+v", v)
	}
	p.must([]int{0}, "trust", "revoke", "--store", store, "--identity-id", "reusable")
	if v := verify([]int{1}, "--trust", store); v.Reason != "key-revoked" {
		t.Fatalf("revoked store identity: %+v, want key-revoked", v)
	}
	// Issue 25 class 3: flags naming the revoked identity (the same
	// workflow and ref, or any ref of it) do not bring it back.
	for _, pin := range []string{wf + "@refs/tags/v1", wf} {
		if v := verify([]int{1}, append(iss, "--trust", store, "--signer-workflow", pin, "--source-repo", "acme/widget")...); v.Reason != "key-revoked" {
			t.Fatalf("revoked store identity, --signer-workflow %s: %+v, want key-revoked", pin, v)
		}
	}
}

type verdictJSON struct {
	Verdict     string `json:"verdict"`
	Reason      string `json:"reason"`
	Signer      string `json:"signer"`
	WitnessedAt string `json:"witnessed_at"`
}
