package shardjob

import (
	"testing"

	"github.com/proofgate/proofgate/internal/shard"
)

func TestShardArtifactNames(t *testing.T) {
	if got := ShardArtifactName(77, 2, shard.Spec{Index: 3, Count: 10}); got != "proofgate-shard-77-2-3-of-10" {
		t.Fatalf("name %q", got)
	}
	if got := PlanArtifactName(77, 2); got != "proofgate-plan-77-2" {
		t.Fatalf("plan name %q", got)
	}
	for name, want := range map[string]string{
		"proofgate-shard-77-2-3-of-10":  "3/10",
		"proofgate-shard-77-2-10-of-10": "10/10",
		"proofgate-shard-77-1-3-of-10":  "", // another attempt
		"proofgate-shard-78-2-3-of-10":  "", // another run
		"proofgate-shard-77-2-03-of-10": "",
		"proofgate-shard-77-2-11-of-10": "",
		"proofgate-shard-77-2-0-of-10":  "",
		"proofgate-shard-77-2-3-of-257": "",
		"proofgate-shard-77-2-3-of-10x": "",
		"proofgate-shard-77-2-+3-of-10": "",
		"proofgate-shard-77-2-3":        "",
		"proofgate-plan-77-2":           "",
		"proofgate-shard-77-23-of-10":   "",
	} {
		sp, ok := parseShardArtifactName(name, 77, 2)
		if got := map[bool]string{true: sp.String(), false: ""}[ok]; got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
}
