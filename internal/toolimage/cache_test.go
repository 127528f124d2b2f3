package toolimage

import (
	"os"
	"path/filepath"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/proofgate/proofgate/internal/testimage"
)

func smallSpec(body string) Spec {
	return Spec{
		Name:   "small",
		Layers: [][]testimage.File{{{Path: "/etc/hello", Mode: 0o644, Body: []byte(body)}}},
		Config: v1.Config{Env: []string{"PATH=/bin"}},
	}
}

// Build makes a Docker manifest list with one linux image; the cache gives
// back the same digest, a second save of the same stamp (a concurrent run)
// is no error, and a changed input changes the stamp.
func TestBuildAndCache(t *testing.T) {
	s := smallSpec("hi\n")
	idx, err := Build(s)
	if err != nil {
		t.Fatal(err)
	}
	if mt, _ := idx.MediaType(); mt != types.DockerManifestList {
		t.Errorf("index media type %s, want %s", mt, types.DockerManifestList)
	}
	im, err := idx.IndexManifest()
	if err != nil || len(im.Manifests) != 1 || im.Manifests[0].Platform == nil || im.Manifests[0].Platform.OS != "linux" {
		t.Fatalf("index manifest %+v, %v: want one linux image", im, err)
	}
	stamp, err := Stamp(s)
	if err != nil {
		t.Fatal(err)
	}
	c := Cache{Dir: t.TempDir()}
	if _, ok, err := c.Load(s.Name, stamp); ok || err != nil {
		t.Fatalf("Load of an empty cache = %v, %v", ok, err)
	}
	for i := 0; i < 2; i++ {
		if err := c.Save(s.Name, stamp, idx); err != nil {
			t.Fatalf("save %d: %v", i, err)
		}
	}
	got, ok, err := c.Load(s.Name, stamp)
	if err != nil || !ok {
		t.Fatalf("Load = %v, %v", ok, err)
	}
	want, _ := idx.Digest()
	if d, _ := got.Digest(); d != want {
		t.Errorf("cached digest %s, want %s", d, want)
	}
	if other, _ := Stamp(smallSpec("changed\n")); other == stamp {
		t.Error("a changed file body kept the stamp")
	}
	if left, _ := filepath.Glob(filepath.Join(c.Dir, ".tmp-*")); len(left) != 0 {
		t.Errorf("temporary directories left: %q", left)
	}
}

// A host file's stamp changes with its modification time and size.
func TestStampHostFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "tool")
	if err := os.WriteFile(p, []byte("v1"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := Spec{Name: "x", Layers: [][]testimage.File{{{Path: "/bin/tool", Mode: 0o755, Source: p}}}}
	a, err := Stamp(s)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("v2 longer"), 0o755); err != nil {
		t.Fatal(err)
	}
	if b, _ := Stamp(s); a == b {
		t.Error("a rewritten host file kept the stamp")
	}
}
