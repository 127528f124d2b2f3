package app

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/proofgate/proofgate/kernel/exit"
)

// DoctorClass: OK without a fail (warnings allowed); a usage fail wins
// over an environment fail whichever comes first.
func TestDoctorClass(t *testing.T) {
	warn := Finding{Name: "w", Status: "warn"}
	env := Finding{Name: "docker", Status: "fail", Class: exit.Environment}
	use := Finding{Name: "contract", Status: "fail", Class: exit.Usage}
	for _, c := range []struct {
		found  []Finding
		want   exit.Class
		failed []string
	}{
		{[]Finding{warn}, exit.OK, nil},
		{[]Finding{warn, env}, exit.Environment, []string{"docker"}},
		{[]Finding{env, use}, exit.Usage, []string{"docker", "contract"}},
		{[]Finding{use, env}, exit.Usage, []string{"contract", "docker"}},
	} {
		got, failed := DoctorClass(c.found)
		if got != c.want || !slices.Equal(failed, c.failed) {
			t.Errorf("%+v: %v %v", c.found, got, failed)
		}
	}
}

// In a repository whose contract is missing, the doctor fails the
// contract (usage) with the init fix, and checks the repository.
func TestDoctorMissingContract(t *testing.T) {
	state, _ := executed(t)
	repo := filepath.Dir(state)
	t.Chdir(repo)
	found := Doctor(context.Background(), DoctorOptions{Contract: filepath.Join(repo, "none.yaml"), Trust: filepath.Join(repo, "trust.json"), State: state})
	byName := map[string]Finding{}
	for _, f := range found {
		byName[f.Name] = f
	}
	if f := byName["repository"]; f.Status != "ok" {
		t.Fatalf("repository: %+v", f)
	}
	if f := byName["contract"]; f.Status != "fail" || f.Class != exit.Usage || f.Fix == "" {
		t.Fatalf("contract: %+v", f)
	}
	if c, _ := DoctorClass(found); c != exit.Usage {
		t.Fatalf("class %v", c)
	}
}
