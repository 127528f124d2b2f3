package githubtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/proofgate/proofgate/internal/ci/artifact"
)

func runGet(t *testing.T, s *Server, path string, v any) int {
	t.Helper()
	resp, err := http.Get(s.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if v != nil && resp.StatusCode == 200 {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s: %v\n%s", path, err, b)
		}
	}
	return resp.StatusCode
}

type runList struct {
	Total     int `json:"total_count"`
	Artifacts []struct {
		ID   int64  `json:"id"`
		Name string `json:"name"`
		Run  struct {
			ID      int64  `json:"id"`
			HeadSHA string `json:"head_sha"`
		} `json:"workflow_run"`
	} `json:"artifacts"`
}

// Jobs of two workflow runs upload with their own tokens, concurrently
// valid; each run lists exactly its own artifacts, paginated, filtered by
// name; unknown runs, bad ids and unknown parameters are refused.
func TestRunArtifacts(t *testing.T) {
	s := New(t)
	s.AddRepo("o", "r")
	ctx := context.Background()
	toks := map[string]string{
		"a1": s.JobRuntimeToken("o", "r", "head1", 41, "a1"),
		"a2": s.JobRuntimeToken("o", "r", "head1", 41, "a2"),
		"b1": s.JobRuntimeToken("o", "r", "head2", 42, "b1"),
	}
	for i := 0; i < 3; i++ {
		for _, job := range []string{"a1", "a2", "b1"} {
			name := fmt.Sprintf("art-%s-%d", job, i)
			if _, err := artifact.Upload(ctx, toks[job], s.ResultsURL(), name, map[string][]byte{"f": []byte(name)}); err != nil {
				t.Fatalf("upload %s: %v", name, err)
			}
		}
	}
	var l runList
	if code := runGet(t, s, "/repos/o/r/actions/runs/41/artifacts?per_page=100", &l); code != 200 || l.Total != 6 || len(l.Artifacts) != 6 {
		t.Fatalf("run 41: %d %+v", code, l)
	}
	for _, a := range l.Artifacts {
		if a.Run.ID != 41 || a.Run.HeadSHA != "head1" || a.Name[:6] != "art-a1" && a.Name[:6] != "art-a2" {
			t.Fatalf("run 41 lists %+v", a)
		}
	}
	l = runList{}
	if code := runGet(t, s, "/repos/o/r/actions/runs/41/artifacts?per_page=4&page=2", &l); code != 200 || l.Total != 6 || len(l.Artifacts) != 2 {
		t.Fatalf("run 41 page 2: %d %+v", code, l)
	}
	l = runList{}
	if code := runGet(t, s, "/repos/o/r/actions/runs/42/artifacts?name=art-b1-2", &l); code != 200 || l.Total != 1 || l.Artifacts[0].Name != "art-b1-2" {
		t.Fatalf("run 42 by name: %d %+v", code, l)
	}
	l = runList{}
	if code := runGet(t, s, "/repos/o/r/actions/runs/42/artifacts?name=art-a1-0", &l); code != 200 || l.Total != 0 || l.Artifacts == nil {
		t.Fatalf("run 42, another run's name: %d %+v", code, l)
	}
	s.AddRun("o", "r", 43)
	if code := runGet(t, s, "/repos/o/r/actions/runs/43/artifacts", &l); code != 200 || l.Total != 0 {
		t.Fatalf("empty run: %d", code)
	}
	for path, want := range map[string]int{
		"/repos/o/r/actions/runs/44/artifacts":              404,
		"/repos/o/r/actions/runs/041/artifacts":             404,
		"/repos/o/r/actions/runs/x/artifacts":               404,
		"/repos/o/r/actions/runs/-1/artifacts":              404,
		"/repos/o/other/actions/runs/41/artifacts":          404,
		"/repos/o/r/actions/runs/41/artifacts?sort=id":      422,
		"/repos/o/r/actions/runs/41/artifacts?direction=up": 422,
	} {
		if code := runGet(t, s, path, nil); code != want {
			t.Errorf("%s: %d, want %d", path, code, want)
		}
	}
	// Each job's Twirp listing (the read-back) sees its own run only.
	if _, err := artifact.Upload(ctx, "not-a-token", s.ResultsURL(), "x", map[string][]byte{"f": nil}); err == nil {
		t.Fatal("an unknown runtime token was accepted")
	}
}
