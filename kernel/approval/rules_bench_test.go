package approval

import (
	"fmt"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/kernel/approval/codeowners"
	"github.com/proofgate/proofgate/kernel/contract"
)

// BenchmarkEvaluateRules: 3000 changed files (GitHub's listing limit), a
// CODEOWNERS of 1000 entries, 50 reviewers, a team rule, a path rule and
// a code-owners rule.
func BenchmarkEvaluateRules(b *testing.B) {
	var co strings.Builder
	co.WriteString("* @acme/backend\n")
	for i := range 1000 {
		fmt.Fprintf(&co, "/pkg%d/** @u%d\n", i, i%50)
	}
	file, err := codeowners.Parse([]byte(co.String()))
	if err != nil {
		b.Fatal(err)
	}
	f := Facts{Head: head, BaseBranch: "main", Author: dave, CodeOwners: file, Roles: map[string]string{},
		Teams: map[string]map[string]bool{"acme/backend": {}}}
	for i := range 3000 {
		f.Files = append(f.Files, ChangedFile{Path: fmt.Sprintf("pkg%d/sub/file%d.go", i%1200, i)})
	}
	f.Teams["acme/backend"]["dave"] = false
	for i := range 50 {
		login := fmt.Sprintf("u%d", i)
		f.Roles[login] = "write"
		f.Teams["acme/backend"][login] = i == 0
		f.Reviews = append(f.Reviews, approved(int64(i+1), acct(login, 100+i), head))
	}
	r := teamRule("backend")
	r.If.ChangedFiles = &contract.ChangedFiles{Paths: []string{"pkg1/**"}}
	owners := contract.ApprovalRule{Name: "owners", Requires: contract.RuleRequires{Count: 1, CodeOwners: true}, Options: contract.RuleOptions{InvalidateOnPush: true}}
	a := rules(r, owners)
	for b.Loop() {
		d, err := EvaluateRules(a, f)
		if err != nil || !d.Satisfied {
			b.Fatalf("%v %+v", err, d.Rules)
		}
	}
}
