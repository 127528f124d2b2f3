package artifact_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/internal/ci/artifact"
	"github.com/proofgate/proofgate/internal/githubtest"
)

func randomZip(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	rand.Read(b)
	z, err := artifact.Zip(map[string][]byte{"bundle.tar.gz": b})
	if err != nil {
		t.Fatal(err)
	}
	return z
}

// blockQueries returns the query strings of the blob PUTs, in order.
func blockQueries(t *testing.T, srv *githubtest.Server) []url.Values {
	var qs []url.Values
	for _, r := range srv.Requests() {
		if r.Method == "PUT" && strings.HasPrefix(r.Path, "/blob/") {
			q, err := url.ParseQuery(r.RawQuery)
			if err != nil {
				t.Fatal(err)
			}
			qs = append(qs, q)
		}
	}
	return qs
}

func TestUploadInBlocks(t *testing.T) {
	srv := githubtest.New(t)
	tok := srv.RuntimeToken("r", "j")
	z := randomZip(t, 2*artifact.BlockSize+1000) // three blocks of the real size
	r, err := artifact.UploadZipResult(context.Background(), nil, tok, srv.ResultsURL(), "big", z)
	if err != nil {
		t.Fatal(err)
	}
	if r.Blocks != 3 || r.Size != int64(len(z)) || r.ListedSize != r.Size {
		t.Fatalf("result %+v for %d bytes", r, len(z))
	}
	if got, ok := srv.Uploaded("big"); !ok || !bytes.Equal(got, z) {
		t.Fatal("committed blob differs from the zip")
	}
	qs := blockQueries(t, srv)
	if len(qs) != 4 || qs[3].Get("comp") != "blocklist" {
		t.Fatalf("want 3 Put Block + Put Block List, got %v", qs)
	}
	seen := map[string]bool{}
	for i, q := range qs[:3] {
		id := q.Get("blockid")
		raw, err := base64.StdEncoding.DecodeString(id)
		if q.Get("comp") != "block" || err != nil || len(raw) != 48 || len(id) != 64 || seen[id] {
			t.Fatalf("block %d: comp %q id %q (%d raw bytes, %v)", i, q.Get("comp"), id, len(raw), err)
		}
		if !strings.HasSuffix(string(raw), strconv.Itoa(i)) {
			t.Fatalf("block %d id %q does not end in its index", i, raw)
		}
		seen[id] = true
	}
	// The read-back went through the service with the name filter.
	if srv.Count("POST", "ListArtifacts") != 1 || srv.Count("POST", "GetSignedArtifactURL") != 1 {
		t.Fatalf("read-back requests: %+v", srv.Requests())
	}
}

// oldUpload is the protocol ProofGate used before: one Put Blob.
func oldUpload(t *testing.T, srv *githubtest.Server, tok, name string, z []byte) (putStatus int, finalizeErr error) {
	t.Helper()
	svc := srv.URL + "/twirp/github.actions.results.api.v1.ArtifactService/"
	post := func(method string, in map[string]any) (map[string]any, error) {
		in["workflow_run_backend_id"], in["workflow_job_run_backend_id"] = "r", "j"
		b, _ := json.Marshal(in)
		req, _ := http.NewRequest("POST", svc+method, bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out)
		if resp.StatusCode != 200 {
			return out, errors.New(resp.Status)
		}
		return out, nil
	}
	created, err := post("CreateArtifact", map[string]any{"name": name, "version": 4})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("PUT", created["signed_upload_url"].(string), bytes.NewReader(z))
	req.Header.Set("x-ms-blob-type", "BlockBlob")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	sum := sha256.Sum256(z)
	_, err = post("FinalizeArtifact", map[string]any{"name": name, "size": strconv.Itoa(len(z)), "hash": "sha256:" + hex.EncodeToString(sum[:])})
	return resp.StatusCode, err
}

func TestPlainPutBlobRefused(t *testing.T) {
	srv := githubtest.New(t)
	tok := srv.RuntimeToken("r", "j")
	z := randomZip(t, 1000)
	status, ferr := oldUpload(t, srv, tok, "old", z)
	if status != http.StatusBadRequest || ferr == nil {
		t.Fatalf("old single-PUT upload: PUT %d, finalize %v; want 400 and a failed finalize", status, ferr)
	}
	// An act-like server answers the same PUT with 200 and stores nothing:
	// the old protocol "succeeded" there and lost the bundle.
	act := githubtest.New(t)
	act.Faults = githubtest.ArtifactFaults{AcceptPlainPut: true, LaxFinalize: true}
	atok := act.RuntimeToken("r", "j")
	if status, ferr := oldUpload(t, act, atok, "old", z); status != 200 || ferr != nil {
		t.Fatalf("act-like server: PUT %d, finalize %v", status, ferr)
	}
	if got, _ := act.Uploaded("old"); len(got) != 0 {
		t.Fatalf("act-like server stored %d bytes of a plain PUT", len(got))
	}
	// The new protocol stores the bytes on the same server.
	r, err := artifact.UploadZipResult(context.Background(), nil, atok, act.ResultsURL(), "new", z)
	if got, _ := act.Uploaded("new"); err != nil || !bytes.Equal(got, z) || r.Size != int64(len(z)) {
		t.Fatalf("block upload to the act-like server: %v", err)
	}
}

func wantReadBack(t *testing.T, err error, reason artifact.ReadBackReason) *artifact.ReadBackError {
	t.Helper()
	var rb *artifact.ReadBackError
	if !errors.As(err, &rb) || rb.Reason != reason || !errors.Is(err, artifact.ErrNotStored) {
		t.Fatalf("want ReadBackError %q, got %v", reason, err)
	}
	return rb
}

func TestReadBackCatchesLostBytes(t *testing.T) {
	ctx := context.Background()
	const bs = 1024
	for name, tc := range map[string]struct {
		faults githubtest.ArtifactFaults
		reason artifact.ReadBackReason
	}{
		// act/Gitea keep nothing of what they did not understand.
		"only block dropped":   {githubtest.ArtifactFaults{DropBlock: 1, LaxFinalize: true}, artifact.ReasonSize},
		"middle block dropped": {githubtest.ArtifactFaults{DropBlock: 2, LaxFinalize: true}, artifact.ReasonSize},
		// Same length, blocks out of order, on a server not checking the hash.
		"blocks swapped": {githubtest.ArtifactFaults{SwapBlocks: true, LaxFinalize: true}, artifact.ReasonContent},
		// A listed size that matches does not hide a short blob.
		"lying listed size": {githubtest.ArtifactFaults{DropBlock: 3, LaxFinalize: true, ListedSize: func(int64) int64 { return 0 }}, artifact.ReasonSize},
	} {
		t.Run(name, func(t *testing.T) {
			srv := githubtest.New(t)
			srv.Faults = tc.faults
			tok := srv.RuntimeToken("r", "j")
			z := randomZip(t, 3*bs)
			if name == "only block dropped" {
				z = z[:bs] // one block
			}
			_, err := artifact.UploadZipBlocks(ctx, nil, tok, srv.ResultsURL(), "a", z, bs)
			rb := wantReadBack(t, err, tc.reason)
			if rb.Uploaded != int64(len(z)) || rb.Downloaded < 0 || (tc.reason == artifact.ReasonSize && rb.Downloaded == rb.Uploaded) {
				t.Fatalf("error fields: %+v", rb)
			}
		})
	}
	// A server that checks size and hash at Finalize refuses there.
	srv := githubtest.New(t)
	srv.Faults.SwapBlocks = true
	tok := srv.RuntimeToken("r", "j")
	_, err := artifact.UploadZipBlocks(ctx, nil, tok, srv.ResultsURL(), "a", randomZip(t, 3*bs), bs)
	var te *artifact.TwirpError
	if !errors.As(err, &te) || te.Method != "FinalizeArtifact" || !strings.Contains(te.Msg, "hash") {
		t.Fatalf("swapped blocks on a checking server: %v", err)
	}
}

func TestReadBackToleratesMisreportedSizeOnly(t *testing.T) {
	// act lists the size of a directory; the bytes are right all the same.
	srv := githubtest.New(t)
	srv.Faults = githubtest.ArtifactFaults{LaxFinalize: true, ListedSize: func(int64) int64 { return 4096 }}
	tok := srv.RuntimeToken("r", "j")
	z := randomZip(t, 5000)
	r, err := artifact.UploadZipResult(context.Background(), nil, tok, srv.ResultsURL(), "a", z)
	if err != nil || r.ListedSize != 4096 || r.Size != int64(len(z)) {
		t.Fatalf("misreported size with identical bytes: %+v %v", r, err)
	}
}

func TestReadBackNotListed(t *testing.T) {
	for name, tc := range map[string]struct {
		faults githubtest.ArtifactFaults
		reason artifact.ReadBackReason
	}{
		"not listed": {githubtest.ArtifactFaults{Unlisted: true}, artifact.ReasonNotListed},
		"another id": {githubtest.ArtifactFaults{ListedIDOffset: 7}, artifact.ReasonOtherID},
	} {
		t.Run(name, func(t *testing.T) {
			srv := githubtest.New(t)
			srv.Faults = tc.faults
			tok := srv.RuntimeToken("r", "j")
			_, err := artifact.UploadZipResult(context.Background(), nil, tok, srv.ResultsURL(), "a", randomZip(t, 100))
			if rb := wantReadBack(t, err, tc.reason); rb.Listed != -1 || rb.Downloaded != -1 {
				t.Fatalf("error fields: %+v", rb)
			}
		})
	}
}

func TestUploadOversizeRefusedBeforeAnyRequest(t *testing.T) {
	srv := githubtest.New(t)
	tok := srv.RuntimeToken("r", "j")
	_, err := artifact.UploadZipBlocks(context.Background(), nil, tok, srv.ResultsURL(), "a", make([]byte, artifact.MaxBlocks+1), 1)
	if !errors.Is(err, artifact.ErrTooLarge) || len(srv.Requests()) != 0 {
		t.Fatalf("over %d blocks: %v, %d requests", artifact.MaxBlocks, err, len(srv.Requests()))
	}
}
