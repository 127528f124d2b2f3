package githubtest

import (
	"strings"
	"testing"
)

// TestMatchPath checks the route table against the predicates it replaced.
func TestMatchPath(t *testing.T) {
	was := map[string]func(rest []string) bool{
		"pulls/...":       func(rest []string) bool { return len(rest) >= 2 && rest[0] == "pulls" },
		"commits/*/pulls": func(rest []string) bool { return len(rest) == 3 && rest[0] == "commits" && rest[2] == "pulls" },
		"collaborators/*/permission": func(rest []string) bool {
			return len(rest) == 3 && rest[0] == "collaborators" && rest[2] == "permission"
		},
		"contents/...":      func(rest []string) bool { return len(rest) >= 2 && rest[0] == "contents" },
		"actions/artifacts": func(rest []string) bool { return len(rest) == 2 && rest[0] == "actions" && rest[1] == "artifacts" },
		"actions/artifacts/*/zip": func(rest []string) bool {
			return len(rest) == 4 && rest[0] == "actions" && rest[1] == "artifacts" && rest[3] == "zip"
		},
		"actions/runs/*/artifacts": func(rest []string) bool {
			return len(rest) == 4 && rest[0] == "actions" && rest[1] == "runs" && rest[3] == "artifacts"
		},
		"attestations/*": func(rest []string) bool { return len(rest) == 2 && rest[0] == "attestations" },
	}
	words := []string{"attestations", "runs", "pulls", "commits", "collaborators", "permission", "contents", "actions", "artifacts", "zip", "x", "*", "..."}
	var paths [][]string
	var grow func(p []string)
	grow = func(p []string) {
		paths = append(paths, p)
		if len(p) == 5 {
			return
		}
		for _, w := range words {
			grow(append(append([]string(nil), p...), w))
		}
	}
	grow(nil)
	for _, rt := range repoRoutes {
		old := was[rt.pattern]
		if old == nil {
			t.Fatalf("route %q has no predicate to compare with", rt.pattern)
		}
		for _, p := range paths {
			if got, want := matchPath(rt.pattern, p), old(p); got != want {
				t.Errorf("matchPath(%q, %q) = %v, want %v", rt.pattern, strings.Join(p, "/"), got, want)
			}
		}
	}
}
