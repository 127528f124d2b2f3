package artifact_test

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"io/fs"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/proofgate/proofgate/internal/ci/artifact"
	"github.com/proofgate/proofgate/internal/ci/ghapi"
	"github.com/proofgate/proofgate/internal/githubtest"
)

const (
	owner = "acme"
	repo  = "widget"
	sha   = "1111111111111111111111111111111111111111"
	other = "2222222222222222222222222222222222222222"
)

func TestUploadRoundTrip(t *testing.T) {
	for _, camel := range []bool{false, true} {
		t.Run(map[bool]string{false: "snake", true: "camel"}[camel], func(t *testing.T) {
			srv := githubtest.New(t)
			srv.CamelCase = camel
			tok := srv.RuntimeToken("run-abc", "job-def")
			srv.SetRun(owner, repo, sha)
			bundle := make([]byte, 200<<10)
			rand.Read(bundle)
			id, err := artifact.Upload(context.Background(), tok, srv.ResultsURL(), "proofgate-"+sha[:12], map[string][]byte{"bundle.tar.gz": bundle})
			if err != nil {
				t.Fatal(err)
			}
			if id == 0 {
				t.Fatal("no artifact id")
			}
			z, ok := srv.Uploaded("proofgate-" + sha[:12])
			if !ok {
				t.Fatal("artifact not finalized")
			}
			files, err := artifact.Unzip(z, 1<<20, 1<<20)
			if err != nil || !bytes.Equal(files["bundle.tar.gz"], bundle) || len(files) != 1 {
				t.Fatalf("round trip: %v %d files", err, len(files))
			}
			// And the verify side finds and downloads it by REST.
			gh := client(t, srv)
			a, err := artifact.Find(context.Background(), gh, owner, repo, "proofgate-"+sha[:12], sha)
			if err != nil || a.ID != id {
				t.Fatalf("Find = %+v, %v (want id %d)", a, err, id)
			}
			got, err := artifact.Download(context.Background(), gh, owner, repo, a.ID, 1<<20)
			if err != nil || !bytes.Equal(got, z) {
				t.Fatalf("Download: %v", err)
			}
		})
	}
}

func client(t *testing.T, srv *githubtest.Server) *github.Client {
	t.Helper()
	srv.Token = "ghs_read"
	gh, err := ghapi.NewClient(context.Background(), "ghs_read", srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	return gh
}

func TestUploadRetriesAndRefusals(t *testing.T) {
	srv := githubtest.New(t)
	tok := srv.RuntimeToken("r", "j")
	srv.Fail("CreateArtifact", http.StatusServiceUnavailable, "0", 1)
	srv.Fail("/blob/", http.StatusInternalServerError, "", 1)
	srv.Fail("FinalizeArtifact", http.StatusTooManyRequests, "0", 1)
	hc := &http.Client{Transport: &ghapi.Retry{Sleep: func(context.Context, time.Duration) error { return nil }}}
	z, _ := artifact.Zip(map[string][]byte{"a": []byte("x")})
	if _, err := artifact.UploadZip(context.Background(), hc, tok, srv.ResultsURL(), "n1", z); err != nil {
		t.Fatalf("one failure per step should be retried: %v", err)
	}
	// One Put Block twice (the first refused), one Put Block List.
	if srv.Count("POST", "CreateArtifact") != 2 || srv.Count("PUT", "/blob/") != 3 || srv.Count("POST", "FinalizeArtifact") != 2 {
		t.Fatalf("retry counts wrong: %+v", srv.Requests())
	}
	// Persistent failure is an error with the method named.
	srv.Fail("CreateArtifact", http.StatusInternalServerError, "", -1)
	_, err := artifact.UploadZip(context.Background(), hc, tok, srv.ResultsURL(), "n2", z)
	var te *artifact.TwirpError
	if !errors.As(err, &te) || te.Method != "CreateArtifact" || te.Status != 500 {
		t.Fatalf("want TwirpError from CreateArtifact, got %v", err)
	}
}

func TestUploadWrongTokenRefused(t *testing.T) {
	srv := githubtest.New(t)
	srv.RuntimeToken("r", "j")
	other := githubtest.New(t).RuntimeToken("r", "j") // same ids, different token
	_, err := artifact.Upload(context.Background(), other, srv.ResultsURL(), "n", map[string][]byte{"a": nil})
	var te *artifact.TwirpError
	if !errors.As(err, &te) || te.Code != "unauthenticated" {
		t.Fatalf("want unauthenticated, got %v", err)
	}
}

func jwt(payload string) string {
	e := base64.RawURLEncoding.EncodeToString
	return e([]byte(`{"alg":"none"}`)) + "." + e([]byte(payload)) + "." + e([]byte("sig"))
}

func TestBackendIDs(t *testing.T) {
	run, job, err := artifact.BackendIDs(jwt(`{"scp":"Actions.ExampleScope Actions.Results:ce7f54c7:ca395085"}`))
	if err != nil || run != "ce7f54c7" || job != "ca395085" {
		t.Fatalf("got %q %q %v", run, job, err)
	}
	for name, tok := range map[string]string{
		"empty":         "",
		"two parts":     "a.b",
		"bad base64":    "a.!!!.c",
		"not json":      jwt(`scp`),
		"no scp":        jwt(`{"sub":"x"}`),
		"no results":    jwt(`{"scp":"Actions.ExampleScope"}`),
		"missing job":   jwt(`{"scp":"Actions.Results:run"}`),
		"empty ids":     jwt(`{"scp":"Actions.Results::"}`),
		"extra field":   jwt(`{"scp":"Actions.Results:a:b:c"}`),
		"scp is number": jwt(`{"scp":5}`),
		"huge":          strings.Repeat("a", artifact.MaxTokenBytes+1),
	} {
		if _, _, err := artifact.BackendIDs(tok); !errors.Is(err, artifact.ErrBadToken) {
			t.Errorf("%s: want ErrBadToken, got %v", name, err)
		}
	}
	// Upload refuses a malformed token before any request.
	srv := githubtest.New(t)
	if _, err := artifact.Upload(context.Background(), "not-a-jwt", srv.ResultsURL(), "n", map[string][]byte{"a": nil}); !errors.Is(err, artifact.ErrBadToken) {
		t.Fatalf("want ErrBadToken, got %v", err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("%d requests sent with a malformed token", n)
	}
}

func TestValidateName(t *testing.T) {
	for _, bad := range []string{"", "a\"b", "a:b", "a<b", "a>b", "a|b", "a*b", "a?b", "a\rb", "a\nb", "a\\b", "a/b", strings.Repeat("x", 300)} {
		if artifact.ValidateName(bad) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if err := artifact.ValidateName("proofgate-bundle-1234abcd.v1"); err != nil {
		t.Fatal(err)
	}
	srv := githubtest.New(t)
	tok := srv.RuntimeToken("r", "j")
	if _, err := artifact.Upload(context.Background(), tok, srv.ResultsURL(), "a/b", map[string][]byte{"a": nil}); err == nil {
		t.Fatal("bad name uploaded")
	}
	if len(srv.Requests()) != 0 {
		t.Fatal("requests sent for a bad name")
	}
}

func TestFind(t *testing.T) {
	srv := githubtest.New(t)
	srv.AddRepo(owner, repo)
	gh := client(t, srv)
	ctx := context.Background()
	base := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)

	if _, err := artifact.Find(ctx, gh, owner, repo, "b", sha); !errors.Is(err, artifact.ErrNotFound) {
		t.Fatalf("none: %v", err)
	}
	srv.AddArtifact(owner, repo, githubtest.Artifact{Name: "b", HeadSHA: other, CreatedAt: base})
	if _, err := artifact.Find(ctx, gh, owner, repo, "b", sha); !errors.Is(err, artifact.ErrOtherCommit) {
		t.Fatalf("other commit: %v", err)
	}
	srv.AddArtifact(owner, repo, githubtest.Artifact{Name: "b", HeadSHA: sha, Expired: true, CreatedAt: base.Add(5 * time.Hour)})
	if _, err := artifact.Find(ctx, gh, owner, repo, "b", sha); !errors.Is(err, artifact.ErrExpired) {
		t.Fatalf("expired: %v", err)
	}
	older := srv.AddArtifact(owner, repo, githubtest.Artifact{Name: "b", HeadSHA: sha, CreatedAt: base.Add(time.Hour)})
	newer := srv.AddArtifact(owner, repo, githubtest.Artifact{Name: "b", HeadSHA: sha, CreatedAt: base.Add(2 * time.Hour)})
	srv.AddArtifact(owner, repo, githubtest.Artifact{Name: "c", HeadSHA: sha, CreatedAt: base.Add(9 * time.Hour)})
	a, err := artifact.Find(ctx, gh, owner, repo, "b", sha)
	if err != nil || a.ID != newer || a.ID == older {
		t.Fatalf("want newest unexpired %d, got %+v %v", newer, a, err)
	}
	// The name filter went to the server, as the REST API takes it.
	found := false
	for _, r := range srv.Requests() {
		if strings.HasSuffix(r.Path, "/actions/artifacts") && strings.Contains(r.RawQuery, "name=b") && strings.Contains(r.RawQuery, "per_page=100") {
			found = true
		}
	}
	if !found {
		t.Fatal("list request without name/per_page")
	}
}

func TestFindPaginates(t *testing.T) {
	srv := githubtest.New(t)
	gh := client(t, srv)
	base := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	// 150 newer artifacts for other commits push the wanted one to page 2.
	want := srv.AddArtifact(owner, repo, githubtest.Artifact{Name: "b", HeadSHA: sha, CreatedAt: base})
	for i := 0; i < 150; i++ {
		srv.AddArtifact(owner, repo, githubtest.Artifact{Name: "b", HeadSHA: other, CreatedAt: base.Add(time.Duration(i+1) * time.Minute)})
	}
	a, err := artifact.Find(context.Background(), gh, owner, repo, "b", sha)
	if err != nil || a.ID != want {
		t.Fatalf("page 2 artifact: %+v %v", a, err)
	}
}

func TestDownloadWithoutAuthorizationAndBounded(t *testing.T) {
	srv := githubtest.New(t)
	gh := client(t, srv)
	data := bytes.Repeat([]byte("z"), 4096)
	id := srv.AddArtifact(owner, repo, githubtest.Artifact{Name: "b", HeadSHA: sha, Data: data})
	got, err := artifact.Download(context.Background(), gh, owner, repo, id, 4096)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("download: %v", err)
	}
	// The fake fails the test if the blob request carries Authorization;
	// check positively too that the API call had it and the blob call not.
	var api, blob bool
	for _, r := range srv.Requests() {
		if strings.HasSuffix(r.Path, "/zip") {
			api = r.Authorization == "Bearer ghs_read"
		}
		if strings.HasPrefix(r.Path, "/blob/") {
			blob = r.Authorization == ""
		}
	}
	if !api || !blob {
		t.Fatalf("auth on API %v, none on blob %v", api, blob)
	}
	if _, err := artifact.Download(context.Background(), gh, owner, repo, id, 4095); !errors.Is(err, artifact.ErrTooLarge) {
		t.Fatalf("oversized: %v", err)
	}
	exp := srv.AddArtifact(owner, repo, githubtest.Artifact{Name: "b", HeadSHA: sha, Data: data, Expired: true})
	if _, err := artifact.Download(context.Background(), gh, owner, repo, exp, 1<<20); err == nil {
		t.Fatal("expired artifact downloaded")
	}
}

func rawZip(t testing.TB, entries ...zipEntry) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate}
		if e.mode != 0 {
			h.SetMode(e.mode)
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(e.data)
	}
	zw.Close()
	return buf.Bytes()
}

type zipEntry struct {
	name string
	data []byte
	mode fs.FileMode
}

func TestUnzipRefusals(t *testing.T) {
	ok := rawZip(t, zipEntry{name: "dir/", mode: fs.ModeDir | 0o755}, zipEntry{name: "dir/a", data: []byte("1")}, zipEntry{name: "b", data: []byte("22")})
	files, err := artifact.Unzip(ok, 10, 10)
	if err != nil || string(files["dir/a"]) != "1" || string(files["b"]) != "22" {
		t.Fatalf("valid zip: %v %v", files, err)
	}
	for name, z := range map[string][]byte{
		"traversal":    rawZip(t, zipEntry{name: "../evil", data: []byte("x")}),
		"deep":         rawZip(t, zipEntry{name: "a/../../evil", data: []byte("x")}),
		"absolute":     rawZip(t, zipEntry{name: "/etc/passwd", data: []byte("x")}),
		"backslash":    rawZip(t, zipEntry{name: "..\\evil", data: []byte("x")}),
		"dot":          rawZip(t, zipEntry{name: "./a", data: []byte("x")}),
		"duplicate":    rawZip(t, zipEntry{name: "a", data: []byte("x")}, zipEntry{name: "a", data: []byte("y")}),
		"entry size":   rawZip(t, zipEntry{name: "a", data: bytes.Repeat([]byte("x"), 11)}),
		"total size":   rawZip(t, zipEntry{name: "a", data: bytes.Repeat([]byte("x"), 6)}, zipEntry{name: "b", data: bytes.Repeat([]byte("x"), 6)}),
		"not a zip":    []byte("PK\x03\x04garbage"),
		"symlink":      rawZip(t, zipEntry{name: "l", data: []byte("/etc/passwd"), mode: fs.ModeSymlink | 0o777}),
		"lying header": lyingZip(t),
	} {
		if _, err := artifact.Unzip(z, 10, 10); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// lyingZip has an entry whose header claims 5 bytes but inflates to 1 MiB.
func lyingZip(t *testing.T) []byte {
	var comp bytes.Buffer
	fw, _ := flate.NewWriter(&comp, flate.BestCompression)
	fw.Write(make([]byte, 1<<20))
	fw.Close()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.CreateRaw(&zip.FileHeader{Name: "bomb", Method: zip.Deflate,
		CompressedSize64: uint64(comp.Len()), UncompressedSize64: 5})
	if err != nil {
		t.Fatal(err)
	}
	w.Write(comp.Bytes())
	zw.Close()
	return buf.Bytes()
}
