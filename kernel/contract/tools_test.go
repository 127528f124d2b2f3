package contract

import (
	"bytes"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

// The tools fixture resolves: execution settings inherited from defaults
// like a check's, env merged key by key, effective max_length filled in,
// stdin none resolved to "", rule ids defaulted by index.
func TestToolsResolve(t *testing.T) {
	r := mustLoad(t, "testdata/tools.yaml", "")
	if len(r.Tools) != 4 || len(r.Policy) != 4 {
		t.Fatalf("tools %d, policy %d", len(r.Tools), len(r.Policy))
	}
	greet, ok := r.Tool("greet")
	if !ok {
		t.Fatal("no greet")
	}
	if greet.Runtime != "process" || greet.Timeout != Duration(30*time.Second) || greet.Env["LC_ALL"] != "C" ||
		greet.Network != "none" || greet.Workspace != "readonly" || greet.Output != DefaultOutputLimit || greet.Stdin != "" {
		t.Errorf("greet did not inherit defaults: %+v", greet)
	}
	if p := greet.Params["name"]; p.Type != "string" || !p.Required || p.MaxLength != 64 || p.Pattern != "^[A-Za-z ]+$" {
		t.Errorf("greet.name = %+v", p)
	}
	if p := r.Tools[1].Params["target"]; p.MaxLength != DefaultMaxLength {
		t.Errorf("path param default max_length = %d", p.MaxLength)
	}
	deploy, _ := r.Tool("deploy")
	if deploy.Stdin != StdinJSON || deploy.Dir != "scripts" || deploy.Timeout != Duration(2*time.Minute) ||
		!reflect.DeepEqual(deploy.Env, map[string]string{"LC_ALL": "C", "DEPLOY": "1"}) {
		t.Errorf("deploy = %+v", deploy)
	}
	if p := deploy.Params["replicas"]; p.MaxLength != 0 || p.Required {
		t.Errorf("integer param got %+v", p)
	}
	lint, _ := r.Tool("lint")
	if lint.Runtime != "docker" || lint.WorkspaceSize != DefaultWorkspaceSize {
		t.Errorf("lint = %+v", lint)
	}
	wantIDs := []string{"no-wipe", "rule-1", "rule-2", "rule-3"}
	for i, rule := range r.Policy {
		if rule.ID != wantIDs[i] {
			t.Errorf("policy[%d].id = %q, want %q", i, rule.ID, wantIDs[i])
		}
	}
	if r.Policy[0].Reason != "never delete the tree" || r.Policy[2].Effect != EffectRequireApproval {
		t.Errorf("policy = %+v", r.Policy)
	}
	if _, ok := r.Tool("Greet"); ok {
		t.Error("Tool matched a case variant")
	}
	// A profile carries the base tools and policy unchanged.
	q := mustLoad(t, "testdata/tools.yaml", "quick")
	if !reflect.DeepEqual(q.Tools, r.Tools) || !reflect.DeepEqual(q.Policy, r.Policy) {
		t.Error("profile changed tools or policy")
	}
	q.Tools[0].Run[0] = "mutated"
	if r.Tools[0].Run[0] == "mutated" {
		t.Error("profile shares the base's tool slices")
	}
}

// A tool and a check with the same settings resolve to the same Execution
// (one resolver), and so to the same runtime spec.
func TestToolExecutionEqualsCheck(t *testing.T) {
	settings := `runtime: docker
    image: "busybox@sha256:1111111111111111111111111111111111111111111111111111111111111111"
    pull: missing
    timeout: 45s
    output_limit: 2KiB
    network: host
    workspace: copy
    workspace_size: 10MiB
    resources: {memory: 256MiB, cpus: 0.5, pids: 64}
    tmpfs: 8MiB
    allow_root: true
    mounts: [{source: /srv/data, target: /data}]
    env: {B: "2"}
    dir: sub/dir`
	src := `version: 1
name: t
defaults: {runtime: process, env: {A: "1"}, timeout: 5s}
checks:
  - id: c
    run: [echo, ok]
    ` + settings + `
tools:
  - name: x
    run: [echo, ok]
    ` + settings + `
  - name: plain
    run: [echo]
checks_placeholder: 0
`
	src = strings.Replace(src, "checks_placeholder: 0\n", "", 1)
	r := mustParse(t, src, "")
	c, _ := r.Check("c")
	x, _ := r.Tool("x")
	if ce, te := c.Execution(), x.Execution(); !reflect.DeepEqual(ce, te) {
		t.Fatalf("check %+v\ntool  %+v", ce, te)
	}
	cs := c.Execution().Spec("run1", "id", c.Run, "/repo")
	ts := x.Execution().Spec("run1", "id", x.Run, "/repo")
	if !reflect.DeepEqual(cs, ts) {
		t.Fatalf("specs differ:\n%+v\n%+v", cs, ts)
	}
	plain, _ := r.Tool("plain")
	if plain.Runtime != "process" || plain.Timeout != Duration(5*time.Second) || plain.Env["A"] != "1" || plain.WorkspaceSize != 0 {
		t.Errorf("plain = %+v", plain)
	}
}

// A tool never inherits env_from_host from defaults: the harness's
// variables (tokens) do not reach what an agent calls.
func TestToolDropsEnvFromHost(t *testing.T) {
	r := mustParse(t, `version: 1
name: t
defaults: {runtime: process, env_from_host: [GITHUB_TOKEN]}
checks: [{id: c, run: [echo]}]
tools: [{name: x, run: [echo]}]
`, "")
	if c, _ := r.Check("c"); len(c.EnvFromHost) != 1 {
		t.Fatalf("check lost env_from_host: %+v", c)
	}
	x, _ := r.Tool("x")
	if sp := x.Execution().Spec("r", "a", x.Run, "/"); len(sp.FromHost) != 0 {
		t.Fatalf("tool spec takes host variables %v", sp.FromHost)
	}
}

// Contracts without tools hash exactly as before; empty tools and policy
// lists are the same as none.
func TestHashUnchangedWithoutTools(t *testing.T) {
	for _, extra := range []string{"", "tools: []\npolicy: []\n"} {
		_, c := minimalUnchanged(t, extra)
		if bytes.Contains(c, []byte(`"tools"`)) || bytes.Contains(c, []byte(`"policy"`)) {
			t.Errorf("canonical names tools or policy: %s", c)
		}
	}
	if h := mustHash(t, mustLoad(t, "testdata/minimal.yaml", "")); h != "sha256:d68ddc54ff6c91a8ce7703f19667f080d0d899c36db9a45dc1597f7bc0710df7" {
		t.Errorf("minimal.yaml hash %s changed", h)
	}
}

// Tools and policy are part of the hash: each change below changes it.
func TestToolsHashChanges(t *testing.T) {
	data, err := os.ReadFile("testdata/tools.yaml")
	if err != nil {
		t.Fatal(err)
	}
	base := mustHash(t, mustParse(t, string(data), ""))
	for _, edit := range [][2]string{
		{"effect: allow}\n  - {tool: deploy", "effect: block}\n  - {tool: deploy"},
		{"max_length: 64", "max_length: 65"},
		{"hello, \"{{name}}\"", "hi, \"{{name}}\""},
		{"stdin: json", "stdin: none\n    run: [./scripts/deploy.sh, \"{{env}}\"]"},
		{"reason: never delete the tree", "reason: never delete it"},
		{"description: Print a greeting.", "description: Print a greeting!"},
	} {
		src := strings.Replace(string(data), edit[0], edit[1], 1)
		if src == string(data) {
			t.Fatalf("edit %q did not apply", edit[0])
		}
		if strings.Contains(edit[1], "stdin: none") {
			src = strings.Replace(src, "    run: [./scripts/deploy.sh]\n", "", 1)
			src = strings.Replace(src, "replicas: {type: integer}\n      dry_run: {type: boolean}", "", 1)
		}
		r, err := Parse("contract.yaml", []byte(src), "")
		if err != nil {
			t.Fatalf("edit %q: %v", edit[0], err)
		}
		if h := mustHash(t, r); h == base {
			t.Errorf("edit %q left the hash unchanged", edit[0])
		}
	}
}

func TestTemplateParam(t *testing.T) {
	for a, want := range map[string]string{"{{name}}": "name", "{{a-b_c1}}": "a-b_c1"} {
		if got, ok := TemplateParam(a); !ok || got != want {
			t.Errorf("%q: %q %v", a, got, ok)
		}
	}
	for _, a := range []string{"{{Name}}", "{{ name }}", "{{name}}}", "{{{name}}", "x{{name}}", "{{}}", "{{name", "{{na\x00me}}"} {
		if got, ok := TemplateParam(a); ok {
			t.Errorf("%q accepted as %q", a, got)
		}
	}
}
