package action

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/proofgate/proofgate/bundle/sigstore"
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
		Permissions map[string]string `yaml:"permissions"`
		Uses        string            `yaml:"uses"` // a reusable workflow
		With        map[string]string `yaml:"with"`
		Steps       []struct {
			ID   string            `yaml:"id"`
			Name string            `yaml:"name"`
			Uses string            `yaml:"uses"`
			With map[string]string `yaml:"with"`
			Env  map[string]string `yaml:"env"`
			Run  string            `yaml:"run"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

func readYAML(t *testing.T, rel string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", rel))
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
	wantIn := []string{"artifact-name", "attest", "contract", "fulcio-url", "github-token", "jobs", "mode", "on-pending", "profile", "rekor-url", "shard", "signing", "signing-key", "state-dir", "status", "trusted-root", "tsa-url"}
	wantOut := []string{"artifact-id", "attestation-id", "bundle-path", "bundle-sha256", "plan-artifact", "products", "products-artifact", "products-artifact-id", "products-dir",
		"run-artifact", "run-id", "shard-artifact", "shard-refusal", "signer", "sigstore-path", "state", "verification-digest"}
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
	// Key mode stays the default; keyless defaults to the public-good
	// instances.
	for in, want := range map[string]string{"mode": ModeRun, "shard": "",
		"signing": SigningKey, "fulcio-url": sigstore.DefaultFulcioURL,
		"tsa-url": sigstore.DefaultTSAURL, "rekor-url": sigstore.DefaultRekorURL, "signing-key": ""} {
		if d := a.Inputs[in].Default; d == nil || *d != want {
			t.Errorf("%s default %v, want %q", in, d, want)
		}
	}

	var v actionYAML
	readYAML(t, "verify/action.yml", &v)
	wantIn = []string{"artifact-name", "bundle", "certificate-oidc-issuer", "commit", "contract", "fulcio-url", "github-token", "match", "policy", "profile", "rekor-url", "require-approvals",
		"require-authorization", "require-rule", "require-sandbox", "signer-workflow", "source-ref", "source-repo", "subject", "trust-store", "trusted-root", "tsa-url",
		"vsa-key", "vsa-path", "vsa-signing", "vsa-verifier-id"}
	wantOut = []string{"products", "reason", "run-id", "signer", "unsandboxed", "verdict", "vsa", "vsa-policy"}
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
	for _, in := range []string{"trusted-root", "certificate-oidc-issuer", "signer-workflow", "source-repo", "source-ref"} {
		if d := v.Inputs[in].Default; d == nil || *d != "" {
			t.Errorf("verify %s default %v, want \"\"", in, d)
		}
	}
	// The strict default: only runs of the base contract are accepted.
	if d := v.Inputs["profile"].Default; d == nil || *d != "" {
		t.Errorf("verify profile default %v, want \"\"", d)
	}

	// Both images carry the entrypoint the action.yml files rely on.
	for _, f := range []string{"Dockerfile", "Dockerfile.offline"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "..", f))
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
	inputs := map[string]actionYAML{"OWNER/proofgate@" + placeholderSHA: a, "OWNER/proofgate/verify@" + placeholderSHA: v}

	check := func(file string, events []string, perms map[string]string, uses string, writes ...string) {
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
			if p == "write" && !slices.Contains(writes, k) {
				t.Errorf("%s: permissions.%s: write", file, k)
			}
		}
		found := false
		for _, j := range w.Jobs {
			if j.Uses != "" {
				found = j.Uses == uses || found
				checkCallerWith(t, file, j.With)
			}
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
	check("examples/workflows/proofgate.yml", []string{"merge_group", "pull_request", "pull_request_review", "push"},
		map[string]string{"contents": "read", "pull-requests": "read", "statuses": "write", "actions": "read"}, "OWNER/proofgate@"+placeholderSHA, "statuses")
	check("examples/workflows/release-gate.yml", []string{"push"},
		map[string]string{"actions": "read", "contents": "read"}, "OWNER/proofgate/verify@"+placeholderSHA)
	check("examples/workflows/proofgate-keyless.yml", []string{"pull_request", "pull_request_review", "push"},
		map[string]string{"contents": "read", "pull-requests": "read", "id-token": "write", "actions": "read"},
		"OWNER/proofgate/.github/workflows/proofgate.yml@"+placeholderSHA, "id-token")
	check("examples/workflows/release-gate-keyless.yml", []string{"push"},
		map[string]string{"actions": "read", "contents": "read"}, "OWNER/proofgate/verify@"+placeholderSHA)

	// The keyless gate pins the workflow the caller runs, at the same SHA.
	var g workflowYAML
	readYAML(t, "examples/workflows/release-gate-keyless.yml", &g)
	with := g.Jobs["verify"].Steps[1].With
	if with["signer-workflow"] != reusableWorkflow+"@"+placeholderSHA || with["trusted-root"] == "" {
		t.Errorf("release-gate-keyless.yml: signer-workflow %q trusted-root %q", with["signer-workflow"], with["trusted-root"])
	}
}

// The reusable workflow's identity, as the examples name it.
const (
	reusableWorkflow = "OWNER/proofgate/.github/workflows/proofgate.yml"
	placeholderSHA   = "1111111111111111111111111111111111111111"
)

// checkCallerWith checks a caller's with: against the reusable workflow's
// inputs.
func checkCallerWith(t *testing.T, file string, with map[string]string) {
	t.Helper()
	var rw reusableYAML
	readYAML(t, ".github/workflows/proofgate.yml", &rw)
	for k := range with {
		if _, ok := rw.On.WorkflowCall.Inputs[k]; !ok {
			t.Errorf("%s: passes %q, which .github/workflows/proofgate.yml does not declare", file, k)
		}
	}
}

type reusableYAML struct {
	On struct {
		WorkflowCall struct {
			Inputs map[string]struct {
				Type    string  `yaml:"type"`
				Default *string `yaml:"default"`
			} `yaml:"inputs"`
			Outputs map[string]struct {
				Value string `yaml:"value"`
			} `yaml:"outputs"`
		} `yaml:"workflow_call"`
	} `yaml:"on"`
}

// The reusable workflow: only workflow_call; the permissions keyless
// signing needs and no other write; the action signs keyless with only
// inputs action.yml declares, each caller input passed under its own name
// with the action's default; the contract's base commit comes from the
// event payload, and no caller input names a commit or ref.
func TestReusableWorkflow(t *testing.T) {
	const file = ".github/workflows/proofgate.yml"
	var w workflowYAML
	var rw reusableYAML
	var a actionYAML
	readYAML(t, file, &w)
	readYAML(t, file, &rw)
	readYAML(t, "action.yml", &a)
	if got := keys(w.On); !slices.Equal(got, []string{"workflow_call"}) {
		t.Errorf("on %v, want only workflow_call", got)
	}
	want := map[string]string{"contents": "read", "pull-requests": "read", "id-token": "write", "actions": "read"}
	job, ok := w.Jobs["proofgate"]
	if !ok || len(w.Jobs) != 1 {
		t.Fatalf("jobs %v, want one job proofgate", keys(w.Jobs))
	}
	for _, perms := range []map[string]string{w.Permissions, job.Permissions} {
		if !maps.Equal(perms, want) {
			t.Errorf("permissions %v, want %v", perms, want)
		}
	}
	inputs := rw.On.WorkflowCall.Inputs
	for name := range inputs {
		for _, bad := range []string{"sha", "base", "ref", "commit", "key"} {
			if strings.Contains(name, bad) {
				t.Errorf("workflow_call input %q: a caller (and so a PR) could choose it", name)
			}
		}
	}
	var action, source int
	for _, s := range job.Steps {
		// `uses: ./` until a release pins it to OWNER/REPO@<full sha>
		// (scripts/release-pin.sh workflow).
		if s.ID == "proofgate" && (s.Uses == "./" || releasedAction.MatchString(s.Uses)) {
			action++
			checkReusableStep(t, s.With, inputs, a)
		}
		if s.Env["BASE_SHA"] != "" {
			source++
			if s.Env["BASE_SHA"] != "${{ github.event.pull_request.base.sha }}" || s.Env["CONTRACT"] != "${{ inputs.contract }}" {
				t.Errorf("contract source step env %v", s.Env)
			}
		}
		for k, v := range s.With {
			if strings.Contains(v, "inputs.") && strings.Contains(k, "sha") {
				t.Errorf("step %s: %s comes from a caller input", s.ID, k)
			}
		}
	}
	if action != 1 || source != 1 {
		t.Errorf("%d action steps and %d contract source steps, want 1 and 1", action, source)
	}
	for name, o := range rw.On.WorkflowCall.Outputs {
		if o.Value != "${{ jobs.proofgate.outputs."+name+" }}" {
			t.Errorf("output %s = %q", name, o.Value)
		}
		if _, ok := a.Outputs[name]; !ok {
			t.Errorf("output %s is not an action output", name)
		}
	}
}

// releasedAction is the reusable workflow's action step once a release
// pinned it.
var releasedAction = regexp.MustCompile(`^[A-Za-z0-9-]+/[A-Za-z0-9._-]+@[0-9a-f]{40}$`)

// checkReusableStep checks the reusable workflow's action step.
func checkReusableStep(t *testing.T, with map[string]string, inputs map[string]struct {
	Type    string  `yaml:"type"`
	Default *string `yaml:"default"`
}, a actionYAML) {
	t.Helper()
	if with["signing"] != SigningKeyless {
		t.Errorf("signing %q, want keyless", with["signing"])
	}
	if _, ok := with["signing-key"]; ok {
		t.Error("the reusable workflow passes a signing key")
	}
	for k, v := range with {
		if _, ok := a.Inputs[k]; !ok {
			t.Errorf("with %q: not an input of action.yml", k)
		}
		ref, isInput := strings.CutPrefix(v, "${{ inputs.")
		if !isInput {
			continue
		}
		name := strings.TrimSuffix(ref, " }}")
		in, ok := inputs[name]
		if name != k || !ok {
			t.Errorf("with %s: %s, want ${{ inputs.%s }} declared by workflow_call", k, v, k)
			continue
		}
		if d := a.Inputs[k].Default; d != nil && (in.Default == nil || *in.Default != *d) {
			t.Errorf("workflow_call input %s default %v, action.yml's %q", k, in.Default, *d)
		}
	}
	for name := range inputs {
		if with[name] != "${{ inputs."+name+" }}" {
			t.Errorf("workflow_call input %s is not passed to the action", name)
		}
	}
}

// usesPinned is what a workflow may run: a local action or workflow
// (./…), or owner/repo[/path]@<full commit SHA>. A tag or branch can be
// moved under a workflow that holds id-token: write (release.yml, the
// reusable workflow that signs keyless): pinned, the SHA is the code.
var usesPinned = regexp.MustCompile(`^(\./\S*|[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+(/[A-Za-z0-9_./-]+)?@[0-9a-f]{40})$`)

// Every action and reusable workflow this repository's workflows and its
// examples run is pinned by full commit SHA.
func TestActionsPinnedByCommit(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "..", ".github", "workflows", "*.yml"))
	if err != nil {
		t.Fatal(err)
	}
	examples, err := filepath.Glob(filepath.Join("..", "..", "..", "examples", "workflows", "*.yml"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, examples...)
	if len(files) < 8 {
		t.Fatalf("found %d workflow files: %v", len(files), files)
	}
	n := 0
	for _, f := range files {
		rel, _ := filepath.Rel(filepath.Join("..", "..", ".."), f)
		var w workflowYAML
		readYAML(t, rel, &w)
		for id, j := range w.Jobs {
			uses := []string{j.Uses}
			for _, s := range j.Steps {
				uses = append(uses, s.Uses)
			}
			for _, u := range uses {
				if u == "" {
					continue
				}
				n++
				if !usesPinned.MatchString(u) {
					t.Errorf("%s: job %s uses %q: pin a full commit SHA (a tag can be moved)", rel, id, u)
				}
			}
		}
	}
	if n < 20 {
		t.Fatalf("checked %d uses, want the workflows' ≥ 20", n)
	}
}
