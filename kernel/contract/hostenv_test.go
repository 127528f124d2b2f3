package contract

import (
	"slices"
	"strings"
	"testing"
)

// TestEnvFromHost: the names resolve sorted, a check's list replaces the
// inherited one, the hash covers the names (so a run under a contract that
// takes HOME from the harness is not the run of one that does not), and a
// contract without the field keeps its hash (the member is omitted).
func TestEnvFromHost(t *testing.T) {
	const src = `version: 1
name: t
defaults: {runtime: process, env_from_host: [PATH, HOME]}
checks:
  - {id: a, run: [go, test]}
  - {id: b, run: [go, vet], env_from_host: [PATH]}
  - {id: c, run: [go, vet], env_from_host: []}
`
	r := mustParse(t, src, "")
	if got := r.Checks[0].EnvFromHost; !slices.Equal(got, []string{"HOME", "PATH"}) {
		t.Errorf("a: %v, want sorted [HOME PATH]", got)
	}
	if got := r.Checks[1].EnvFromHost; !slices.Equal(got, []string{"PATH"}) {
		t.Errorf("b: %v, want the check's own list", got)
	}
	if got := r.Checks[2].EnvFromHost; got != nil {
		t.Errorf("c: %v, want nil (an empty list clears the inherited one)", got)
	}
	canon, err := r.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(canon), `"env_from_host":["HOME","PATH"]`) {
		t.Errorf("canonical form lacks the names: %s", canon)
	}
	if strings.Count(string(canon), "env_from_host") != 2 {
		t.Errorf("an empty list must be omitted: %s", canon)
	}

	h1, _ := r.Hash()
	reordered := strings.Replace(src, "[PATH, HOME]", "[HOME, PATH]", 1)
	if h2, _ := mustParse(t, reordered, "").Hash(); h2 != h1 {
		t.Errorf("order changed the hash: %s vs %s", h1, h2)
	}
	fewer := strings.Replace(src, "[PATH, HOME]", "[PATH]", 1)
	if h3, _ := mustParse(t, fewer, "").Hash(); h3 == h1 {
		t.Error("dropping HOME did not change the hash")
	}
	without := "version: 1\nname: t\ndefaults: {runtime: process}\nchecks:\n  - {id: a, run: [go, test]}\n"
	if c, _ := mustParse(t, without, "").Canonical(); strings.Contains(string(c), "env_from_host") {
		t.Errorf("absent field appears in the canonical form: %s", c)
	}
}

// TestPlaceholderImageRefusedEverywhere: a placeholder image is a mistake
// whatever the runtime (the reference grammar check runs on every image
// field), and a real pinned image is accepted.
func TestPlaceholderImageRefusedEverywhere(t *testing.T) {
	_, err := Parse("contract.yaml", []byte("version: 1\nname: t\ndefaults: {runtime: process, image: \"x@sha256:<digest>\"}\nchecks:\n  - {id: a, run: [go, test]}\n"), "")
	if err == nil || !strings.Contains(err.Error(), "is a placeholder") {
		t.Fatalf("process default with a placeholder image: %v, want refused", err)
	}
	mustParse(t, "version: 1\nname: t\ndefaults: {image: \"golang:1.26@sha256:0000000000000000000000000000000000000000000000000000000000000000\"}\nchecks:\n  - {id: a, run: [go, test]}\n", "")
}
