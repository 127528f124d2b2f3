package docker

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/moby/moby/client"

	"github.com/proofgate/proofgate/internal/registrytest"
	"github.com/proofgate/proofgate/internal/testimage"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// helperID returns the helper image's ID (sha256:<hex>): an image imported
// here, so the daemon has it with tags but no repository digest, exactly
// as a docker build leaves it.
func helperID(t *testing.T, r *Runtime, ref string) string {
	t.Helper()
	res, err := r.cli.ImageInspect(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.RepoDigests) != 0 {
		t.Fatalf("helper image has repository digests %v: not a local build", res.RepoDigests)
	}
	return res.ID
}

// TestImageIDPinRuns: NAME:TAG@<image ID> and NAME@<image ID> of a locally
// built image run green, under every pull policy (pull: always pulls
// nothing: no registry serves an image ID), and the attestation records
// the image-ID pin.
func TestImageIDPinRuns(t *testing.T) {
	r, ref := sandbox(t)
	id := helperID(t, r, ref)
	repo := nameOnly(ref)[:strings.LastIndex(ref, ":")]
	for _, pinned := range []string{ref + "@" + id, repo + "@" + id} {
		for _, pull := range []string{"never", "missing", "always"} {
			spec := helperSpec(pinned, "cat", "/etc/marker")
			spec.Sandbox.Pull = pull
			res := check(t, r, spec, 1<<20)
			assertOutcome(t, res, runtime.Passed)
			a := res.Attestation
			if a.ImageRef != pinned || a.ImageID != id || a.ImagePin != "image-id" {
				t.Fatalf("%s (pull %s): attestation ref %q id %q pin %q, want the ID pin", pinned, pull, a.ImageRef, a.ImageID, a.ImagePin)
			}
		}
	}
	// A tag keeps its attestation as before: no image_pin.
	res := check(t, r, helperSpec(ref, "true"), 1<<20)
	if res.Attestation.ImagePin != "" || res.Attestation.ImageID != id {
		t.Fatalf("tag: pin %q id %q", res.Attestation.ImagePin, res.Attestation.ImageID)
	}
}

// TestImageIDPinRefusesOtherNames: the ID of the helper image under a name
// or tag the image does not carry (a typo, or the ID of a different image
// than the name says) is refused before any container exists, naming the
// image's real names and, when the name names another image now, its ID.
func TestImageIDPinRefusesOtherNames(t *testing.T) {
	r, ref := sandbox(t)
	id := helperID(t, r, ref)
	ctx := context.Background()
	bin, err := testimage.HelperBinary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	other, err := testimage.Import(ctx, "proofgate-test/other", append(testimage.HelperFiles(bin), testimage.File{Path: "/etc/other", Mode: 0o644, Body: []byte("other")}))
	if err != nil {
		t.Fatal(err)
	}
	otherID := helperID(t, r, other)
	repo := ref[:strings.LastIndex(ref, ":")]
	cases := map[string]string{
		"proofgate-test/helperr@" + id:           "not proofgate-test/helperr (its names are ",
		repo + ":no-such-tag@" + id:              "not " + repo + ":no-such-tag",
		ref + "@" + otherID:                      ref + " is now " + id + ": pin it as " + ref + "@" + id,
		"proofgate-test/other@" + id:             "not proofgate-test/other",
		"library/busybox@" + otherID:             "not library/busybox",
		repo + "@sha256:" + zeros(64):            "is not present",
		ref + "@sha512:" + zeros(128):            "is not present",
		"proofgate-test/other:" + "x@" + otherID: "not proofgate-test/other:x",
	}
	for pinned, want := range cases {
		spec := helperSpec(pinned, "true")
		spec.RunID = uniqueRun(t)
		res := check(t, r, spec, 1<<20)
		if res.Outcome != runtime.Error || !strings.Contains(res.Detail, want) {
			t.Errorf("%s: outcome %s detail %q, want error containing %q", pinned, res.Outcome, res.Detail, want)
		}
		// The names are sorted: testimage's :dev tag, which also names the
		// image, may come before ref.
		if strings.Contains(want, "its names are") && !strings.Contains(res.Detail, ref) {
			t.Errorf("%s: detail %q does not name %s", pinned, res.Detail, ref)
		}
		assertGone(t, r, spec.RunID)
		_, err := r.LookUp(ctx, pinned)
		var nm *NameMismatchError
		if strings.HasPrefix(want, "not ") || strings.Contains(want, "is now") {
			if !errors.As(err, &nm) {
				t.Errorf("LookUp(%s) = %v, want a *NameMismatchError", pinned, err)
			}
		} else if !errors.Is(err, ErrImageNotPresent) {
			t.Errorf("LookUp(%s) = %v, want ErrImageNotPresent", pinned, err)
		}
	}
}

// TestImageIDPinAbsentCannotBePulled: an absent digest that may be a local
// image ID says, under pull: missing, that no registry serves an image ID
// and how to rebuild and re-pin; under pull: never, the same advice.
func TestImageIDPinAbsentCannotBePulled(t *testing.T) {
	r, _ := sandbox(t)
	reg := registrytest.Start()
	defer reg.Close()
	for _, pull := range []string{"missing", "never"} {
		pinned := reg.Host() + "/proofgate-test/built-here@sha256:" + strings.Repeat("1", 64)
		spec := helperSpec(pinned, "true")
		spec.Sandbox.Pull = pull
		res := check(t, r, spec, 1<<20)
		want := "no registry can serve it: build it on this machine (docker build -t " + reg.Host() + "/proofgate-test/built-here .) and re-pin"
		if res.Outcome != runtime.Error || !strings.Contains(res.Detail, want) {
			t.Fatalf("pull %s: outcome %s detail %q, want %q", pull, res.Outcome, res.Detail, want)
		}
	}
}

// TestPinsAndPullable: through a real registry on 127.0.0.1, a pushed image
// is pullable by tag and digest (the daemon's distribution inspect), an
// unknown name is not and neither is an image ID; once pulled by digest it
// is a repository-digest pin, whose attestation has no image_pin, and
// PinnedRef turns its tag into NAME:TAG@<manifest digest>, and the local
// helper's tag into NAME:TAG@<image ID>.
func TestPinsAndPullable(t *testing.T) {
	r, helper := sandbox(t)
	ctx := context.Background()
	reg := registrytest.Start()
	defer reg.Close()
	bin, err := testimage.HelperBinary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	manifest, id, err := reg.PushFiles(ctx, "proofgate-test/pushed", "v1", testimage.HelperFiles(bin))
	if err != nil {
		t.Fatal(err)
	}
	name := reg.Host() + "/proofgate-test/pushed"
	for _, ref := range []string{name + ":v1", name + "@" + manifest} {
		if got, err := r.Pullable(ctx, ref); err != nil || got != manifest {
			t.Fatalf("Pullable(%s) = %q, %v; want %s", ref, got, err, manifest)
		}
	}
	for _, ref := range []string{reg.Host() + "/proofgate-test/absent:v1", name + ":v2", name + "@" + id} {
		if got, err := r.Pullable(ctx, ref); !errors.Is(err, ErrNotInRegistry) {
			t.Fatalf("Pullable(%s) = %q, %v; want ErrNotInRegistry", ref, got, err)
		}
	}
	down := "127.0.0.1:9/proofgate-test/x:v1"
	if _, err := r.Pullable(ctx, down); err == nil || errors.Is(err, ErrNotInRegistry) || !strings.Contains(err.Error(), "127.0.0.1:9") {
		t.Fatalf("Pullable(%s) = %v, want an unreachable registry", down, err)
	}
	pinned := name + ":v1@" + manifest
	t.Cleanup(func() { r.cli.ImageRemove(context.Background(), pinned, client.ImageRemoveOptions{}) })
	spec := helperSpec(pinned, "cat", "/etc/marker")
	spec.Sandbox.Pull = "missing"
	res := check(t, r, spec, 1<<20)
	assertOutcome(t, res, runtime.Passed)
	if a := res.Attestation; a.ImageID != id || a.ImagePin != "" || a.ImageRef != pinned {
		t.Fatalf("repo digest attestation: ref %q id %q pin %q", a.ImageRef, a.ImageID, a.ImagePin)
	}
	img, err := r.LookUp(ctx, pinned)
	if err != nil || img.Pin != PinRepoDigest {
		t.Fatalf("LookUp(%s) = %+v, %v", pinned, img, err)
	}
	if _, err := r.cli.ImageTag(ctx, client.ImageTagOptions{Source: pinned, Target: name + ":v1"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.cli.ImageRemove(context.Background(), name+":v1", client.ImageRemoveOptions{}) })
	for ref, want := range map[string]string{name + ":v1": pinned, helper: helper + "@" + helperID(t, r, helper)} {
		img, err := r.LookUp(ctx, ref)
		if err != nil || img.Pin != PinTag {
			t.Fatalf("LookUp(%s) = %+v, %v; want a tag", ref, img, err)
		}
		if got, _ := PinnedRef(ref, img); got != want {
			t.Fatalf("PinnedRef(%s) = %s, want %s", ref, got, want)
		}
	}
}

func zeros(n int) string { return strings.Repeat("0", n) }
