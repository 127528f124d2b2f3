package action

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

type actionYAML struct {
	Name   string `yaml:"name"`
	Inputs map[string]struct {
		Default  *string `yaml:"default"`
		Required bool    `yaml:"required"`
	} `yaml:"inputs"`
	Outputs map[string]struct {
		Description string `yaml:"description"`
	} `yaml:"outputs"`
	Runs struct {
		Using string   `yaml:"using"`
		Image string   `yaml:"image"`
		Args  []string `yaml:"args"`
	} `yaml:"runs"`
}

type workflowYAML struct {
	On          map[string]any    `yaml:"on"`
	Permissions map[string]string `yaml:"permissions"`
	Jobs        map[string]struct {
		Steps []struct {
			ID   string            `yaml:"id"`
			Uses string            `yaml:"uses"`
			With map[string]string `yaml:"with"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

func readYAML(t *testing.T, rel string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", rel))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
}

func keys[M ~map[string]V, V any](m M) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestActionYAML(t *testing.T) {
	var a actionYAML
	readYAML(t, "action.yml", &a)
	wantIn := []string{"artifact-name", "contract", "github-token", "jobs", "on-pending", "profile", "signing-key", "state-dir"}
	wantOut := []string{"artifact-id", "bundle-path", "run-id", "state", "verification-digest"}
	if got := keys(a.Inputs); !slices.Equal(got, wantIn) {
		t.Errorf("action.yml inputs %v, want %v", got, wantIn)
	}
	if got := keys(a.Outputs); !slices.Equal(got, wantOut) {
		t.Errorf("action.yml outputs %v, want %v", got, wantOut)
	}
	if a.Runs.Using != "docker" || a.Runs.Image == "" || len(a.Runs.Args) != 0 {
		t.Errorf("action.yml runs: %+v", a.Runs)
	}
	if d := a.Inputs["github-token"].Default; d == nil || *d != "${{ github.token }}" {
		t.Errorf("github-token default %v", d)
	}
	if d := a.Inputs["contract"].Default; d == nil || *d != DefaultContract {
		t.Errorf("contract default %v", d)
	}
	if d := a.Inputs["on-pending"].Default; d == nil || *d != "fail" {
		t.Errorf("on-pending default %v", d)
	}
	if d := a.Inputs["state-dir"].Default; d == nil || *d != DefaultStateDir {
		t.Errorf("state-dir default %v", d)
	}

	var v actionYAML
	readYAML(t, "verify/action.yml", &v)
	wantIn = []string{"artifact-name", "bundle", "commit", "contract", "github-token", "match", "profile", "require-approvals", "trust-store", "vsa-key", "vsa-path", "vsa-verifier-id"}
	wantOut = []string{"reason", "run-id", "verdict", "vsa"}
	if got := keys(v.Inputs); !slices.Equal(got, wantIn) {
		t.Errorf("verify/action.yml inputs %v, want %v", got, wantIn)
	}
	if got := keys(v.Outputs); !slices.Equal(got, wantOut) {
		t.Errorf("verify/action.yml outputs %v, want %v", got, wantOut)
	}
	if v.Runs.Using != "docker" || !slices.Equal(v.Runs.Args, []string{"verify"}) {
		t.Errorf("verify/action.yml runs: %+v", v.Runs)
	}
	if d := v.Inputs["commit"].Default; d == nil || *d != "${{ github.sha }}" {
		t.Errorf("commit default %v", d)
	}
	if d := v.Inputs["trust-store"].Default; d == nil || *d != DefaultTrustStore {
		t.Errorf("trust-store default %v", d)
	}
	if d := v.Inputs["match"].Default; d == nil || *d != verifyMatchTree {
		t.Errorf("match default %v", d)
	}
	// The strict default: only runs of the base contract are accepted.
	if d := v.Inputs["profile"].Default; d == nil || *d != "" {
		t.Errorf("verify profile default %v, want \"\"", d)
	}

	// Both images carry the entrypoint the action.yml files rely on.
	for _, f := range []string{"Dockerfile", "Dockerfile.offline"} {
		b, err := os.ReadFile(filepath.Join("..", "..", f))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), `ENTRYPOINT ["/proofgate", "action"]`) || strings.Contains(string(b), "\nUSER ") {
			t.Errorf("%s: want ENTRYPOINT [\"/proofgate\", \"action\"] and no USER", f)
		}
	}
}

// The example workflows parse, trigger as documented, ask for least
// privilege, and pass only inputs the actions declare.
func TestExampleWorkflows(t *testing.T) {
	var a, v actionYAML
	readYAML(t, "action.yml", &a)
	readYAML(t, "verify/action.yml", &v)
	inputs := map[string]actionYAML{"proofgate/proofgate@v1": a, "proofgate/proofgate/verify@v1": v}

	check := func(file string, events []string, perms map[string]string, uses string) {
		var w workflowYAML
		readYAML(t, file, &w)
		if got := keys(w.On); !slices.Equal(got, events) {
			t.Errorf("%s: on %v, want %v", file, got, events)
		}
		for k, want := range perms {
			if w.Permissions[k] != want {
				t.Errorf("%s: permissions.%s = %q, want %q", file, k, w.Permissions[k], want)
			}
		}
		for k, p := range w.Permissions {
			if p == "write" {
				t.Errorf("%s: permissions.%s: write", file, k)
			}
		}
		found := false
		for _, j := range w.Jobs {
			for _, s := range j.Steps {
				act, ok := inputs[s.Uses]
				if !ok {
					continue
				}
				found = s.Uses == uses || found
				for k := range s.With {
					if _, ok := act.Inputs[k]; !ok {
						t.Errorf("%s: step %s passes undeclared input %q", file, s.ID, k)
					}
				}
			}
		}
		if !found {
			t.Errorf("%s: no step uses %s", file, uses)
		}
	}
	check("examples/workflows/proofgate.yml", []string{"pull_request", "pull_request_review", "push"},
		map[string]string{"contents": "read", "pull-requests": "read"}, "proofgate/proofgate@v1")
	check("examples/workflows/release-gate.yml", []string{"push"},
		map[string]string{"actions": "read", "contents": "read"}, "proofgate/proofgate/verify@v1")
}
