package githubtest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// signedURL creates artifact name and returns its signed upload URL.
func signedURL(t *testing.T, s *Server, name string) string {
	t.Helper()
	tok := s.RuntimeToken("r", "j")
	body, _ := json.Marshal(map[string]any{"workflow_run_backend_id": "r", "workflow_job_run_backend_id": "j", "name": name, "version": 4})
	req, _ := http.NewRequest("POST", s.URL+twirpPrefix+"CreateArtifact", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return out["signed_upload_url"].(string)
}

func put(t *testing.T, u, q string, body io.Reader) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("PUT", u+"&"+q, body)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func id(s string) string { return url.QueryEscape(base64.StdEncoding.EncodeToString([]byte(s))) }

func TestBlockProtocol(t *testing.T) {
	s := New(t)
	u := signedURL(t, s, "a")
	if code, msg := put(t, u, "x=1", strings.NewReader("zip")); code != 400 || !strings.Contains(msg, "PutBlobRefused") {
		t.Fatalf("plain Put Blob: %d %s", code, msg)
	}
	for _, b := range []string{"0001", "0000"} {
		if code, msg := put(t, u, "comp=block&blockid="+id(b), strings.NewReader(b)); code != 201 {
			t.Fatalf("put block: %d %s", code, msg)
		}
	}
	refusals := map[string]struct {
		q    string
		body io.Reader
		code int
	}{
		"not base64":       {"comp=block&blockid=%%%", strings.NewReader("x"), 400},
		"empty id":         {"comp=block&blockid=", strings.NewReader("x"), 400},
		"id over 64 bytes": {"comp=block&blockid=" + id(strings.Repeat("x", 65)), strings.NewReader("x"), 400},
		"other id length":  {"comp=block&blockid=" + id("0000002"), strings.NewReader("x"), 400},
		"no length":        {"comp=block&blockid=" + id("0002"), io.MultiReader(strings.NewReader("x")), 411},
		"oversize block":   {"comp=block&blockid=" + id("0003"), bytes.NewReader(make([]byte, maxBlockBytes+1)), 413},
		"unknown comp":     {"comp=appendblock", strings.NewReader("x"), 400},
		"unknown block":    {"comp=blocklist", strings.NewReader("<BlockList><Latest>" + base64.StdEncoding.EncodeToString([]byte("9999")) + "</Latest></BlockList>"), 400},
		"not xml":          {"comp=blocklist", strings.NewReader("<BlockList><Latest>"), 400},
		"no root":          {"comp=blocklist", strings.NewReader(""), 400},
		"other root":       {"comp=blocklist", strings.NewReader("<Blocks/>"), 400},
		"committed":        {"comp=blocklist", strings.NewReader("<BlockList><Committed>x</Committed></BlockList>"), 400},
	}
	for name, r := range refusals {
		if code, msg := put(t, u, r.q, r.body); code != r.code {
			t.Errorf("%s: %d %s, want %d", name, code, msg, r.code)
		}
	}
	// Committed in list order, not upload order; unlisted blocks dropped.
	list := "<?xml version=\"1.0\" encoding=\"utf-8\"?><BlockList><Latest>" + base64.StdEncoding.EncodeToString([]byte("0000")) +
		"</Latest><Uncommitted>" + base64.StdEncoding.EncodeToString([]byte("0001")) + "</Uncommitted></BlockList>"
	if code, msg := put(t, u, "comp=blocklist", strings.NewReader(list)); code != 201 {
		t.Fatalf("block list: %d %s", code, msg)
	}
	if got := string(s.blobs[strings.TrimPrefix(strings.SplitN(u, "?", 2)[0], s.URL+"/blob/")]); got != "00000001" {
		t.Fatalf("committed %q", got)
	}
}
