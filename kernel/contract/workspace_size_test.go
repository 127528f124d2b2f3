package contract

import (
	"strings"
	"testing"
)

// TestWorkspaceSize: workspace_size bounds what a copy-mode check can write
// into its workspace. It is resolved only for copy-mode checks (default
// 1GiB, from defaults or the check), absent otherwise, uses the size
// syntax, and a profile may lower it but never raise it above the base's.
func TestWorkspaceSize(t *testing.T) {
	src := `version: 1
name: t
defaults: {runtime: process, workspace_size: 256MiB}
checks:
  - {id: a, run: [echo], workspace: copy}
  - {id: b, run: [echo], workspace: copy, workspace_size: 64MiB}
  - {id: c, run: [echo]}
  - {id: d, run: [echo], workspace: copy}
profiles:
  small: {checks: [{id: a, workspace_size: 16MiB}, {id: c, workspace: copy}]}
  big: {checks: [{id: b, workspace_size: 65MiB}]}
`
	src = strings.Replace(src, "  - {id: d, run: [echo], workspace: copy}\n", "", 1)
	_, err := Parse("contract.yaml", []byte(src), "")
	ce, ok := AsError(err)
	if !ok || ce.Path != "profiles.big.checks[0].workspace_size" || !strings.Contains(ce.Error(), "a profile cannot raise") {
		t.Fatalf("raising workspace_size in a profile: %v", err)
	}
	src = strings.Replace(src, "  big: {checks: [{id: b, workspace_size: 65MiB}]}\n", "  big: {checks: [{id: b, workspace_size: 64MiB}]}\n", 1)
	base := mustParse(t, src, "")
	if a, b, c := base.Checks[0].WorkspaceSize, base.Checks[1].WorkspaceSize, base.Checks[2].WorkspaceSize; a != 256<<20 || b != 64<<20 || c != 0 {
		t.Fatalf("workspace sizes %d %d %d", a, b, c)
	}
	small := mustParse(t, src, "small")
	if small.Checks[0].WorkspaceSize != 16<<20 || small.Checks[2].Workspace != "copy" || small.Checks[2].WorkspaceSize != 256<<20 {
		t.Fatalf("profile small: %+v", small.Checks)
	}
	// The built-in default, and absent from the canonical form of a
	// non-copy check (so existing contracts keep their hash).
	r := mustParse(t, "version: 1\nname: t\ndefaults: {runtime: process}\nchecks: [{id: a, run: [echo], workspace: copy}, {id: b, run: [echo]}]\n", "")
	if r.Checks[0].WorkspaceSize != DefaultWorkspaceSize || DefaultWorkspaceSize != 1<<30 || r.Checks[1].WorkspaceSize != 0 {
		t.Fatalf("defaults: %+v", r.Checks)
	}
	canon, err := r.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(canon), `"workspace_size":1073741824`) != 1 {
		t.Fatalf("canonical %s", canon)
	}
	for _, bad := range []string{"0", "-1", "1.5", "12QB"} {
		_, err := Parse("contract.yaml", []byte("version: 1\nname: t\ndefaults: {runtime: process}\nchecks: [{id: a, run: [echo], workspace: copy, workspace_size: "+bad+"}]\n"), "")
		if ce, ok := AsError(err); !ok || ce.Path != "checks[0].workspace_size" {
			t.Errorf("workspace_size %s: %v", bad, err)
		}
	}
}
