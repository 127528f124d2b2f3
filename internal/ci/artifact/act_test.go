package artifact_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/proofgate/proofgate/internal/acttest"
	"github.com/proofgate/proofgate/internal/ci/artifact"
)

func TestUploadToActArtifactServer(t *testing.T) {
	results, dir, tok := acttest.Start(t)
	ctx := context.Background()
	z := randomZip(t, 5000)
	r, err := artifact.UploadZipBlocks(ctx, nil, tok, results, "proofgate-bundle", z, 1024)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := os.ReadFile(filepath.Join(dir, "42", "proofgate-bundle", "proofgate-bundle.zip"))
	if err != nil || !bytes.Equal(stored, z) || r.Blocks != (len(z)+1023)/1024 {
		t.Fatalf("act stored %d bytes of %d (%v), %d blocks", len(stored), len(z), err, r.Blocks)
	}
	t.Logf("act v0.2.87 lists the artifact's size as %d for %d bytes stored", r.ListedSize, r.Size)

	// The old protocol against the real act: one plain Put Blob, answered
	// 200, nothing stored, Finalize ok. The read-back refuses it.
	id := oldActUpload(t, results, tok, "old", z)
	if fi, err := os.Stat(filepath.Join(dir, "42", "old", "old.zip")); err != nil || fi.Size() != 0 {
		t.Fatalf("act kept a plain PUT? %v %v", fi, err)
	}
	_, err = artifact.ReadBack(ctx, tok, results, "old", id, z)
	if rb := wantReadBack(t, err, artifact.ReasonSize); rb.Downloaded != 0 {
		t.Fatalf("read-back of the lost upload: %+v", rb)
	}
}

func oldActUpload(t *testing.T, results, tok, name string, z []byte) int64 {
	t.Helper()
	svc := results + "twirp/github.actions.results.api.v1.ArtifactService/"
	post := func(method, body string) map[string]any {
		resp, err := http.Post(svc+method, "application/json", bytes.NewReader([]byte(body)))
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: %v %v", method, resp, err)
		}
		defer resp.Body.Close()
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out)
		return out
	}
	ids := `"workflow_run_backend_id":"42","workflow_job_run_backend_id":"42",`
	created := post("CreateArtifact", `{`+ids+`"name":"`+name+`","version":4}`)
	req, _ := http.NewRequest("PUT", created["signedUploadUrl"].(string), bytes.NewReader(z))
	req.Header.Set("x-ms-blob-type", "BlockBlob")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("plain PUT to act: %v %v", resp, err)
	}
	resp.Body.Close()
	fin := post("FinalizeArtifact", `{`+ids+`"name":"`+name+`","size":"`+strconv.Itoa(len(z))+`","hash":"sha256:00"}`)
	id, _ := strconv.ParseInt(fin["artifactId"].(string), 10, 64)
	return id
}
