package action

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/internal/bounded"
	"github.com/proofgate/proofgate/internal/githubtest"
	"github.com/proofgate/proofgate/kernel/replay"
)

// productContract's build check produces dist/app (ADR 0039).
const productContract = `version: 1
name: widget
defaults:
  runtime: process
  timeout: 30s
checks:
  - id: build
    run: [sh, -c, 'mkdir -p dist && printf "app built from %s" "$(cat README.md)" > dist/app']
    produces: [dist/app]
approval: {required: 1, roles: [write, maintain, admin]}
`

// TestActionProducts: a COMPLETE run's products are written under the
// state directory, named in the outputs, uploaded as their own artifact
// beside the bundle's; the verify action's subject input accepts the
// product and refuses a changed byte as not-a-product.
func TestActionProducts(t *testing.T) {
	fx := newFixtureBase(t, productContract, map[string]string{".gitignore": "dist/\n"}, nil)
	fx.prEvent()
	res, err := fx.run()
	mustCode(t, res.Code, ExitAwaiting, err, fx.log.String())
	id := fx.gh.AddReview(owner, repo, prNum, githubtest.Review{User: bob, State: "APPROVED", CommitID: fx.head})
	fx.reviewEvent(id)
	res, err = fx.run()
	mustCode(t, res.Code, ExitOK, err, fx.log.String())
	if res.State != replay.Complete {
		t.Fatalf("run %+v", res)
	}
	out := fx.outputs()
	dir := ".proofgate/products/" + res.RunID
	if out["products-dir"] != dir || out["products-artifact"] != ProductsArtifactPrefix+fx.head || out["bundle-sha256"] != res.BundleSHA256 {
		t.Fatalf("outputs %v", out)
	}
	var listed []struct{ Check, Path, SHA256 string }
	if err := json.Unmarshal([]byte(out["products"]), &listed); err != nil || len(listed) != 1 || listed[0].Path != "dist/app" || listed[0].Check != "build" {
		t.Fatalf("output products %q: %v", out["products"], err)
	}
	app := filepath.Join(fx.ws, dir, "dist", "app")
	want, err := os.ReadFile(app)
	if err != nil || string(want) != "app built from widget" {
		t.Fatalf("products-dir's dist/app: %q, %v", want, err)
	}
	if fileSum(t, app) != listed[0].SHA256 {
		t.Fatal("the written product is not the attested one")
	}
	if st := git(t, fx.ws, "status", "--porcelain"); strings.Contains(st, "products") {
		t.Fatalf("the products dirty the work tree:\n%s", st)
	}
	zipData, ok := fx.gh.Uploaded(ProductsArtifactPrefix + fx.head)
	if !ok {
		t.Fatal("no products artifact")
	}
	zr, err := zip.NewReader(bytes.NewReader(zipData), int64(len(zipData)))
	if err != nil || len(zr.File) != 1 || zr.File[0].Name != "dist/app" {
		t.Fatalf("products artifact: %v %v", err, zr)
	}
	rc, _ := zr.File[0].Open()
	got, _ := io.ReadAll(rc)
	if !bytes.Equal(got, want) {
		t.Fatalf("uploaded %q", got)
	}
	if bundleZip, _ := fx.gh.Uploaded(ArtifactPrefix + fx.head); bytes.Contains(bundleZip, []byte("dist/app")) {
		t.Fatal("the product is in the bundle's artifact")
	}

	// The release gate, by the binary's digest.
	m := fx.release()
	fx.env["GITHUB_EVENT_NAME"], fx.env["GITHUB_SHA"] = "push", m
	fx.env["INPUT_TRUST-STORE"] = fx.trust
	fx.env["INPUT_SUBJECT"] = dir + "/dist/app"
	vr, err := fx.verify()
	mustCode(t, vr.Code, ExitOK, err, fx.log.String())
	if vo := fx.outputs(); vo["verdict"] != "accepted" || !strings.Contains(vo["products"], listed[0].SHA256) {
		t.Fatalf("verify outputs %v", vo)
	}
	os.WriteFile(filepath.Join(fx.ws, "app-patched"), append(want[:len(want)-1:len(want)-1], 'X'), 0o644)
	fx.env["INPUT_SUBJECT"] = "app-patched"
	vr, err = fx.verify()
	mustCode(t, vr.Code, ExitRefused, err, fx.log.String())
	if vo := fx.outputs(); vo["reason"] != "not-a-product" {
		t.Fatalf("a patched binary: %v", vo)
	}
	fx.env["INPUT_SUBJECT"] = "../outside"
	vr, _ = fx.verify()
	if vr.Code != ExitUsage {
		t.Fatalf("subject outside the workspace: exit %d", vr.Code)
	}
}

func fileSum(t *testing.T, name string) string {
	d, err := bounded.SHA256File(name)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
