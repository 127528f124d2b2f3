package contract

import (
	"errors"
	"strings"
	"testing"
)

const rulesBase = `version: 1
name: demo
checks:
  - {id: unit, runtime: process, run: [go, test]}
`

func parseRules(t *testing.T, approval string) (*Resolved, error) {
	t.Helper()
	return Parse("contract.yaml", []byte(rulesBase+approval), "")
}

func TestApprovalRulesResolve(t *testing.T) {
	r, err := parseRules(t, `approval:
  required: 1
  rules:
    - name: backend
      if: {changed_files: {paths: ["src/**"], ignore: ["src/**/*_test.go"]}, base_branch: [main]}
      requires: {teams: [acme/backend], code_owners: true}
    - name: docs
      requires: {count: 2, users: [alice, bob], permissions: [admin, write]}
      options: {invalidate_on_push: false, ignore_update_merges: true}
  disapproval: {teams: [acme/security]}
`)
	if err != nil {
		t.Fatal(err)
	}
	a := r.Approval
	if a.Mode != ModeAnd || len(a.Rules) != 2 || a.Disapproval == nil || a.Disapproval.Teams[0] != "acme/security" {
		t.Fatalf("%+v", a)
	}
	b, d := a.Rules[0], a.Rules[1]
	if b.Requires.Count != 1 || !b.Options.InvalidateOnPush || !b.Requires.CodeOwners || b.If.ChangedFiles.Ignore[0] != "src/**/*_test.go" {
		t.Errorf("backend defaults: %+v", b)
	}
	if d.Requires.Count != 2 || d.Options.InvalidateOnPush || !d.Options.IgnoreUpdateMerges || strings.Join(d.Requires.Permissions, ",") != "write,admin" {
		t.Errorf("docs: %+v", d)
	}
}

// TestApprovalRulesHashUnchanged: a contract without rules hashes as it
// did before rules existed (no mode, rules or disapproval member).
func TestApprovalRulesHashUnchanged(t *testing.T) {
	r, err := parseRules(t, "approval: {required: 2}\n")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := r.Canonical()
	if !strings.Contains(string(b), `"approval":{"allow_commit_authors":false,"required":2,"roles":["write","maintain","admin"]}`) {
		t.Fatalf("approval canonical form changed: %s", b)
	}
}

// TestApprovalRulesRefused: hostile and malformed rules, with the field
// path named.
func TestApprovalRulesRefused(t *testing.T) {
	for name, c := range map[string]struct{ yaml, path, msg string }{
		"glob into parent":  {`approval: {rules: [{name: r, if: {changed_files: {paths: ["src/../../etc/*"]}}}]}`, "approval.rules[0].if.changed_files.paths[0]", `".." segment`},
		"glob dotdot first": {`approval: {rules: [{name: r, if: {changed_files: {paths: ["../x"]}}}]}`, "approval.rules[0].if.changed_files.paths[0]", `".." segment`},
		"absolute glob":     {`approval: {rules: [{name: r, if: {changed_files: {paths: ["/etc/passwd"]}}}]}`, "approval.rules[0].if.changed_files.paths[0]", "absolute"},
		"ignore glob":       {`approval: {rules: [{name: r, if: {changed_files: {paths: ["a"], ignore: ["a/../b"]}}}]}`, "approval.rules[0].if.changed_files.ignore[0]", `".." segment`},
		"duplicate name":    {`approval: {rules: [{name: r}, {name: r}]}`, "approval.rules[1].name", "duplicate rule name"},
		"bad team":          {`approval: {rules: [{name: r, requires: {teams: [justateam]}}]}`, "approval.rules[0].requires.teams[0]", "org/team-slug"},
		"bad regexp":        {`approval: {rules: [{name: r, if: {title_matches: "(("}}]}`, "approval.rules[0].if.title_matches", "RE2"},
		"mode alone":        {`approval: {mode: or}`, "approval.mode", "without approval.rules"},
		"unknown member":    {`approval: {rules: [{name: r, requires: {anyone: true}}]}`, "approval.rules[0].requires", ""},
		"profile rules":     {"approval: {rules: [{name: r}]}\nprofiles: {p: {approval: {rules: [{name: s}]}}}", "profiles.p.approval.rules", "a profile cannot change approval rules"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := parseRules(t, c.yaml+"\n")
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("%v, want *Error", err)
			}
			if !strings.HasPrefix(e.Path, c.path) || !strings.Contains(e.Error(), c.msg) {
				t.Fatalf("%q: %v, want path %s and %q", e.Path, err, c.path, c.msg)
			}
		})
	}
}
