package imagepin

import (
	"context"
	"strings"
	"testing"
)

// daemonFacts answers ImageDigests from fixed facts (what docker image
// inspect reports); the real daemon is exercised by the CLI scenario
// init_local_image.txt.
type daemonFacts struct {
	id      string
	digests []string
	found   bool
}

func (d daemonFacts) ImageDigests(context.Context, string) (string, []string, bool, error) {
	return d.id, d.digests, d.found, nil
}

func TestLocal(t *testing.T) {
	id := "sha256:" + strings.Repeat("1", 64)
	dg := "sha256:" + strings.Repeat("2", 64)
	other := "sha256:" + strings.Repeat("3", 64)
	for _, c := range []struct {
		image string
		d     daemonFacts
		want  Pin
		found bool
	}{
		// pulled: the repo digest of the same repository
		{"golang:1.26", daemonFacts{id, []string{"other/x@" + other, "golang@" + dg}, true},
			Pin{Image: "golang:1.26", Ref: "golang:1.26@" + dg, Digest: dg, Source: SourceLocal}, true},
		{"docker.io/library/golang:1.26", daemonFacts{id, []string{"golang@" + dg}, true},
			Pin{Image: "docker.io/library/golang:1.26", Ref: "docker.io/library/golang:1.26@" + dg, Digest: dg, Source: SourceLocal}, true},
		// tagged from another repository's pull: that digest would not
		// pull this name, so the local form
		{"mine:1", daemonFacts{id, []string{"golang@" + dg}, true},
			Pin{Image: "mine:1", Ref: "mine:1@" + id, Digest: id, Source: SourceLocalID}, true},
		// built here, never pushed
		{"mine", daemonFacts{id, nil, true}, Pin{Image: "mine", Ref: "mine@" + id, Digest: id, Source: SourceLocalID}, true},
		{"absent:1", daemonFacts{}, Pin{}, false},
	} {
		p, found, err := Local(context.Background(), c.d, c.image)
		if err != nil || found != c.found || p != c.want {
			t.Errorf("%s: %+v %v %v, want %+v %v", c.image, p, found, err, c.want, c.found)
		}
	}
	// a daemon answering an ID that is not a sha256 digest is refused
	if _, _, err := Local(context.Background(), daemonFacts{"sha256:zz", nil, true}, "mine:1"); err == nil {
		t.Error("a malformed image ID was accepted")
	}
	if _, _, err := Local(context.Background(), daemonFacts{}, "golang@"+dg); err == nil {
		t.Error("an image already pinned was resolved again")
	}
}
