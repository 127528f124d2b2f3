package action

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/sigstore"
	"github.com/proofgate/proofgate/bundle/trust"
	"github.com/proofgate/proofgate/bundle/vsa"
	"github.com/proofgate/proofgate/internal/ci/artifact"
	"github.com/proofgate/proofgate/internal/ci/gate"
	"github.com/proofgate/proofgate/internal/githubtest"
	"github.com/proofgate/proofgate/internal/keytest"
	"github.com/proofgate/proofgate/internal/sigstoretest"
)

// openVSA reads the summary the step wrote and verifies it with the gate
// key only.
func openVSA(t *testing.T, fx *fixture, rel string, gateKey *keytest.Key) *vsa.Statement {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fx.ws, rel))
	if err != nil {
		t.Fatal(err)
	}
	s := trust.New()
	if _, err := s.Add(gateKey.PubPEM, "", nil, nil); err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(fx.ws, strings.TrimSuffix(rel, ".json")+".policy.json"))
	if err != nil {
		t.Fatal(err)
	}
	st, _, err := vsa.Open(b, s, doc)
	if err != nil {
		t.Fatal(err)
	}
	// The bundle's own key is not the gate's.
	bs, err := trust.Load(fx.trust)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := vsa.Open(b, bs, doc); err == nil {
		t.Fatal("the summary verifies with the bundle key")
	}
	return st
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestVerifyWritesVSA: with input vsa-key the step writes a summary signed
// by the gate key: PASSED naming the accepted bundle file, FAILED with the
// reason for a refused one; never over an existing file (an accepted
// bundle is then refused: the gate asked for a summary it cannot give).
func TestVerifyWritesVSA(t *testing.T) {
	fx := newFixture(t, processContract, nil)
	m := fx.release()
	fx.env["GITHUB_EVENT_NAME"], fx.env["GITHUB_SHA"] = "push", m
	fx.env["INPUT_TRUST-STORE"] = fx.trust
	gateKey := keytest.New(t)
	pemKey, err := os.ReadFile(gateKey.Path)
	if err != nil {
		t.Fatal(err)
	}
	data := profiledBundle(t, fx, owner+"/"+repo, "")
	p := filepath.Join(t.TempDir(), "base.tar.gz")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	fx.env["INPUT_BUNDLE"] = p
	fx.env["INPUT_VSA-KEY"] = string(pemKey)

	vr, err := fx.verify()
	mustCode(t, vr.Code, ExitOK, err, fx.log.String())
	rel := "proofgate-" + m + ".vsa.json"
	if vr.Outputs["vsa"] != rel || fx.outputs()["vsa"] != rel {
		t.Fatalf("output vsa %q, want %q", vr.Outputs["vsa"], rel)
	}
	secret := strings.Split(strings.TrimSpace(string(pemKey)), "\n")[1]
	masked := false
	for _, l := range strings.Split(fx.log.String(), "\n") {
		if strings.HasPrefix(l, "::add-mask::") {
			masked = masked || strings.Contains(l, secret)
		} else if strings.Contains(l, secret) {
			t.Fatalf("the gate key is in the log: %q", l)
		}
	}
	if !masked {
		t.Fatal("the gate key is not masked")
	}
	if !strings.Contains(fx.summary(), "| verification summary (VSA) | `"+rel+"` |") {
		t.Fatalf("the job summary does not name the VSA:\n%s", fx.summary())
	}
	st := openVSA(t, fx, rel, gateKey)
	if !st.Passed() || st.Subject[0].Name != "base.tar.gz" || st.Subject[0].Digest["sha256"] != sha(data) ||
		st.Predicate.VerifiedLevels[0] != vsa.LevelVerified || st.Predicate.ResourceURI != vsa.ResourcePrefix+sha(data) {
		t.Fatalf("summary %+v", st)
	}
	pol := st.Policy().Bundle
	if pol.Tree != vr.Tree || pol.ContractHash != vr.Contract || pol.Repo != owner+"/"+repo || pol.Profile == nil || *pol.Profile != "" || pol.RequireApprovals != 1 {
		t.Fatalf("policy %+v, want the gate's (tree %s, contract %s)", pol, vr.Tree, vr.Contract)
	}

	// The file exists now: never replaced; the accepted bundle is refused.
	before, _ := os.ReadFile(filepath.Join(fx.ws, rel))
	vr, err = fx.verify()
	mustCode(t, vr.Code, ExitUsage, err, fx.log.String())
	if vr.Reason != string(gate.ReasonVSAUnwritten) || vr.Outputs["vsa"] != "" || vr.Outputs["verdict"] != bundle.VerdictRefused {
		t.Fatalf("existing summary: %+v", vr)
	}
	if after, _ := os.ReadFile(filepath.Join(fx.ws, rel)); !bytes.Equal(before, after) {
		t.Fatal("the existing summary was replaced")
	}

	// Refused: FAILED with the typed reason.
	fx.env["INPUT_VSA-PATH"] = "out/failed.vsa.json"
	fx.env["INPUT_REQUIRE-APPROVALS"] = "2"
	vr, err = fx.verify()
	mustCode(t, vr.Code, ExitRefused, err, fx.log.String())
	if vr.Outputs["vsa"] != "out/failed.vsa.json" {
		t.Fatalf("refused: output vsa %q", vr.Outputs["vsa"])
	}
	st = openVSA(t, fx, "out/failed.vsa.json", gateKey)
	if st.Passed() || st.Predicate.VerificationResult != vsa.Failed || vr.Reason != string(bundle.InsufficientApprovals) ||
		len(st.Subject) != 1 || st.Subject[0].Digest["sha256"] != sha(data) || st.Policy().Bundle.RequireApprovals != 2 ||
		vr.Outputs["vsa-policy"] != "out/failed.vsa.policy.json" {
		t.Fatalf("refused summary %+v", st)
	}
}

// TestVerifyVSAFromArtifact: the summary of a downloaded artifact names the
// bundle file inside it and, as resourceUri, the artifact's address; its
// policy carries the artifact's created_at as the witness time.
func TestVerifyVSAFromArtifact(t *testing.T) {
	fx := newFixture(t, processContract, nil)
	m := fx.release()
	fx.env["GITHUB_EVENT_NAME"], fx.env["GITHUB_SHA"] = "push", m
	fx.env["INPUT_TRUST-STORE"] = fx.trust
	gateKey := keytest.New(t)
	pemKey, _ := os.ReadFile(gateKey.Path)
	fx.env["INPUT_VSA-KEY"] = string(pemKey)
	fx.env["INPUT_VSA-VERIFIER-ID"] = "https://example.invalid/deploy-gate"
	data := profiledBundle(t, fx, owner+"/"+repo, "")
	z, err := artifact.Zip(map[string][]byte{"x.bundle.tar.gz": data})
	if err != nil {
		t.Fatal(err)
	}
	id := fx.gh.AddArtifact(owner, repo, githubtest.Artifact{Name: ArtifactPrefix + fx.head, HeadSHA: fx.head, Data: z})
	vr, err := fx.verify()
	mustCode(t, vr.Code, ExitOK, err, fx.log.String())
	st := openVSA(t, fx, vr.Outputs["vsa"], gateKey)
	p := &st.Predicate
	wantURI := fmt.Sprintf("%s/%s/%s/actions/runs/", fx.gh.URL, owner, repo)
	if st.Subject[0].Name != "x.bundle.tar.gz" || st.Subject[0].Digest["sha256"] != sha(data) || !strings.HasPrefix(p.ResourceURI, wantURI) ||
		!strings.HasSuffix(p.ResourceURI, fmt.Sprintf("/artifacts/%d", id)) || p.Verifier.ID != "https://example.invalid/deploy-gate" ||
		st.Policy().Bundle.WitnessedAt == "" {
		t.Fatalf("summary %+v", st)
	}
}

// TestVerifyVSAInputs: a bad key or path is a usage error before anything
// is verified; no bundle found writes no summary.
func TestVerifyVSAInputs(t *testing.T) {
	fx := newFixture(t, processContract, nil)
	fx.env["GITHUB_EVENT_NAME"], fx.env["GITHUB_SHA"] = "push", fx.release()
	fx.env["INPUT_TRUST-STORE"] = fx.trust
	gateKey := keytest.New(t)
	pemKey, _ := os.ReadFile(gateKey.Path)
	for name, env := range map[string]map[string]string{
		"bad key":         {"INPUT_VSA-KEY": "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"},
		"path, no key":    {"INPUT_VSA-PATH": "v.json"},
		"escaping path":   {"INPUT_VSA-KEY": string(pemKey), "INPUT_VSA-PATH": "../v.json"},
		"bad verifier id": {"INPUT_VSA-KEY": string(pemKey), "INPUT_VSA-VERIFIER-ID": "not a uri"},
	} {
		t.Run(name, func(t *testing.T) {
			for k, v := range env {
				fx.env[k] = v
				defer delete(fx.env, k)
			}
			vr, err := fx.verify()
			mustCode(t, vr.Code, ExitUsage, err, fx.log.String())
			if vr.Reason != string(gate.ReasonUsage) || !strings.Contains(vr.Detail, "vsa") {
				t.Fatalf("%+v", vr)
			}
		})
	}
	fx.env["INPUT_VSA-KEY"] = string(pemKey)
	vr, err := fx.verify()
	mustCode(t, vr.Code, ExitRefused, err, fx.log.String())
	if vr.Reason != string(gate.ReasonNotFound) || vr.Outputs["vsa"] != "" {
		t.Fatalf("no artifact: %+v", vr)
	}
	if ents, _ := filepath.Glob(filepath.Join(fx.ws, "*.vsa.json")); len(ents) != 0 {
		t.Fatalf("a summary without a bundle: %v", ents)
	}
}

// TestVerifyKeylessVSA: with vsa-signing: keyless the gate signs its
// summary with a Fulcio certificate for its own job's workflow (the real
// services on 127.0.0.1, the runner's token endpoint faked): a Sigstore
// bundle whose statement OpenKeyless accepts for the gate's workflow with
// the policy document beside it, and refuses for another workflow. A
// vsa-key with it, or a job without id-token: write, is a usage error
// before anything is verified.
func TestVerifyKeylessVSA(t *testing.T) {
	svc := sigstoretest.Start(t)
	fx := newFixture(t, processContract, nil)
	m := fx.release()
	fx.env["GITHUB_EVENT_NAME"], fx.env["GITHUB_SHA"] = "push", m
	fx.env["INPUT_TRUST-STORE"] = fx.trust
	data := profiledBundle(t, fx, owner+"/"+repo, "")
	p := filepath.Join(t.TempDir(), "base.tar.gz")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	fx.env["INPUT_BUNDLE"] = p
	fx.env["INPUT_VSA-SIGNING"] = SigningKeyless
	fx.env["INPUT_FULCIO-URL"], fx.env["INPUT_TSA-URL"] = svc.FulcioURL, svc.TSAURL
	const gateWF = owner + "/" + repo + "/.github/workflows/release.yml"

	for name, env := range map[string]map[string]string{
		"with vsa-key": {"INPUT_VSA-KEY": "x", idTokenURLEnv: "http://127.0.0.1:9/token", idTokenTokenEnv: "t"},
		"no id-token":  {},
		"plain http":   {"INPUT_TSA-URL": "http://tsa.example/api/v1/timestamp", idTokenURLEnv: "http://127.0.0.1:9/token", idTokenTokenEnv: "t"},
	} {
		t.Run(name, func(t *testing.T) {
			saved := map[string]string{}
			for k, v := range env {
				saved[k] = fx.env[k]
				fx.env[k] = v
			}
			defer func() {
				for k, v := range saved {
					fx.env[k] = v
				}
			}()
			vr, err := fx.verify()
			mustCode(t, vr.Code, ExitUsage, err, fx.log.String())
			if vr.Reason != string(gate.ReasonUsage) || vr.Outputs["vsa"] != "" {
				t.Fatalf("%+v", vr)
			}
		})
	}

	u, reqToken := svc.OIDC.RequestEndpoint(githubtest.Claims{Repository: owner + "/" + repo, Ref: "refs/tags/v1", SHA: m,
		EventName: "push", WorkflowRef: gateWF + "@refs/tags/v1", JobWorkflowRef: gateWF + "@refs/tags/v1"})
	fx.env[idTokenURLEnv], fx.env[idTokenTokenEnv] = u, reqToken
	vr, err := fx.verify()
	mustCode(t, vr.Code, ExitOK, err, fx.log.String())
	rel, relPolicy := "proofgate-"+m+".vsa.sigstore.json", "proofgate-"+m+".vsa.policy.json"
	if vr.Outputs["vsa"] != rel || vr.Outputs["vsa-policy"] != relPolicy {
		t.Fatalf("outputs vsa %q, vsa-policy %q", vr.Outputs["vsa"], vr.Outputs["vsa-policy"])
	}
	b, err := os.ReadFile(filepath.Join(fx.ws, rel))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(fx.ws, relPolicy))
	if err != nil {
		t.Fatal(err)
	}
	pin := func(wf string) *sigstore.Verifiers {
		v, err := sigstore.NewVerifiers(svc.TrustedRoot, []sigstore.Identity{{Name: "gate", Issuer: svc.OIDC.URL, SignerWorkflow: wf}})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	st, k, err := vsa.OpenKeyless(b, pin(gateWF), doc)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Passed() || st.Subject[0].Digest["sha256"] != sha(data) || st.Policy().Bundle.Repo != owner+"/"+repo ||
		!strings.HasSuffix(k.Signer(), gateWF+"@refs/tags/v1") {
		t.Fatalf("summary %+v signed by %s", st, k.Signer())
	}
	if _, _, err := vsa.OpenKeyless(b, pin(owner+"/"+repo+"/.github/workflows/proofgate.yml"), doc); err == nil {
		t.Fatal("the summary verifies for another workflow")
	}
	if strings.Contains(fx.log.String(), reqToken) && !strings.Contains(fx.log.String(), "::add-mask::"+reqToken) {
		t.Fatal("the request token is in the log unmasked")
	}
}
