package artifact_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/proofgate/proofgate/ci/artifact"
)

// actServer starts nektos/act's own artifact server (scripts/actart, built
// by scripts/act-artifacts-up.sh) on 127.0.0.1 and returns its results URL
// and storage directory. Without PROOFGATE_ACT_ARTIFACTS the test is
// skipped, or fails under PROOFGATE_REQUIRE_ACT=1 (as scripts/test.sh sets).
func actServer(t *testing.T) (string, string) {
	bin := os.Getenv("PROOFGATE_ACT_ARTIFACTS")
	if bin == "" {
		if os.Getenv("PROOFGATE_REQUIRE_ACT") == "1" {
			t.Fatal("PROOFGATE_REQUIRE_ACT=1 but PROOFGATE_ACT_ARTIFACTS is unset (bash scripts/act-artifacts-up.sh)")
		}
		t.Skip("PROOFGATE_ACT_ARTIFACTS unset: act's artifact server not built")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	dir := t.TempDir()
	cmd := exec.Command(bin, dir, port)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() })
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", "127.0.0.1:"+port); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("act's artifact server did not listen")
		}
	}
	return "http://127.0.0.1:" + port + "/", dir
}

func TestUploadToActArtifactServer(t *testing.T) {
	results, dir := actServer(t)
	ctx := context.Background()
	tok := jwt(`{"scp":"Actions.Results:42:7"}`) // act wants a numeric run id
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
	ids := `"workflow_run_backend_id":"42","workflow_job_run_backend_id":"7",`
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
