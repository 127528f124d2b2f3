package docker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/distribution/reference"
	"github.com/moby/moby/client"
)

// How an image reference pins the bytes a check runs (ADR 0031).
//
// A reference with a digest, NAME[:TAG]@sha256:<hex>, is looked up first
// as a repository digest (the manifest digest the daemon recorded when it
// pulled NAME). When the daemon has no such repository digest, the same
// digest is tried as an image ID (the digest of the image configuration,
// which is what `docker build` gives a locally built image that no
// registry has seen): it is accepted only when the daemon's image with
// exactly that ID carries the reference's name (NAME:TAG among its tags
// when the reference has a tag, any tag or repository digest of NAME when
// it has none). Both forms are content addresses: the daemon runs exactly
// the pinned bytes. A reference without a digest is a tag, which can move.

// Pin says which of the three forms named the image a check ran.
type Pin string

const (
	PinRepoDigest Pin = "repo-digest" // NAME@sha256:<manifest digest>, a registry's content address
	PinImageID    Pin = "image-id"    // NAME@sha256:<image ID>, an image on this daemon (local builds)
	PinTag        Pin = "tag"         // no digest: mutable
)

// ErrImageNotPresent is LookUp's (and ImagePresent's) answer for an image
// the daemon does not have.
var ErrImageNotPresent = errors.New("image not present")

// Image is an image the daemon has, as a reference found it.
type Image struct {
	Ref         string // the reference as written
	ID          string // sha256:<hex>, the image ID
	Pin         Pin
	Env         []string // the image configuration's environment, KEY=VALUE
	RepoTags    []string
	RepoDigests []string
}

// NameMismatchError is a digest that is the ID of an image on the daemon
// that does not carry the reference's name: a typo in the name, or an image
// whose tag was moved to a rebuild (the old image is then untagged).
type NameMismatchError struct {
	Ref     string   // the reference as written
	ID      string   // the image whose ID the digest is
	Names   []string // its tags and repository digests
	Current string   // the ID the reference's NAME[:TAG] names now, "" when none
}

func (e *NameMismatchError) Error() string {
	name := nameOnly(e.Ref)
	names := "it has no name (untagged, as a rebuilt image's predecessor is)"
	if len(e.Names) > 0 {
		names = "its names are " + strings.Join(e.Names, ", ")
	}
	msg := fmt.Sprintf("docker: image %s: the digest is the ID of an image on this daemon that is not %s (%s)", e.Ref, name, names)
	if e.Current != "" && e.Current != e.ID {
		return msg + fmt.Sprintf("; %s is now %s: pin it as %s@%s, or fix the name", name, e.Current, name, e.Current)
	}
	return msg + "; fix the name in the contract, or tag the image: docker tag " + e.ID + " " + name
}

// LookUp finds the image ref names on the daemon, without pulling it. An
// absent image is an error wrapping ErrImageNotPresent; a digest that is
// the ID of an image that does not carry ref's name is a
// *NameMismatchError.
func (r *Runtime) LookUp(ctx context.Context, ref string) (Image, error) {
	n, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return Image{}, fmt.Errorf("docker: image %s: %w", ref, err)
	}
	img, err := r.inspect(ctx, ref)
	d, digested := n.(reference.Digested)
	switch {
	case err == nil && !digested:
		img.Pin = PinTag
		return img, nil
	case err == nil && img.ID != d.Digest().String():
		img.Pin = PinRepoDigest
		return img, nil
	case err == nil:
		// A daemon that resolves NAME@<image ID> itself: still an image ID.
		return r.byID(ctx, ref, n, d)
	case !errors.Is(err, ErrImageNotPresent) || !digested || d.Digest().Algorithm() != "sha256":
		return Image{}, err
	}
	return r.byID(ctx, ref, n, d)
}

// byID looks digest d up as an image ID and requires the image to carry
// n's name.
func (r *Runtime) byID(ctx context.Context, ref string, n reference.Named, d reference.Digested) (Image, error) {
	img, err := r.inspect(ctx, d.Digest().String())
	if err != nil {
		if errors.Is(err, ErrImageNotPresent) {
			return Image{}, fmt.Errorf("docker: image %s: %w", ref, ErrImageNotPresent)
		}
		return Image{}, err
	}
	if img.ID != d.Digest().String() {
		// Only an exact ID is a content address (never a prefix match).
		return Image{}, fmt.Errorf("docker: image %s: %w", ref, ErrImageNotPresent)
	}
	if !carriesName(n, img) {
		e := &NameMismatchError{Ref: ref, ID: img.ID, Names: append(slices.Clone(img.RepoTags), img.RepoDigests...)}
		if cur, err := r.inspect(ctx, nameOnly(ref)); err == nil {
			e.Current = cur.ID
		}
		return Image{}, e
	}
	img.Ref, img.Pin = ref, PinImageID
	return img, nil
}

// carriesName: with a tag, n's name and tag are among img's tags; without
// one, any tag or repository digest of img is of n's repository.
func carriesName(n reference.Named, img Image) bool {
	t, tagged := n.(reference.Tagged)
	names := img.RepoTags
	if !tagged {
		names = append(slices.Clone(img.RepoTags), img.RepoDigests...)
	}
	for _, s := range names {
		m, err := reference.ParseNormalizedNamed(s)
		if err != nil || m.Name() != n.Name() {
			continue
		}
		if mt, ok := m.(reference.Tagged); !tagged || ok && mt.Tag() == t.Tag() {
			return true
		}
	}
	return false
}

// inspect is ImageInspect as an Image, with a missing image wrapping
// ErrImageNotPresent.
func (r *Runtime) inspect(ctx context.Context, ref string) (Image, error) {
	res, err := r.cli.ImageInspect(ctx, ref)
	if err != nil {
		if isNotFound(err) {
			return Image{}, fmt.Errorf("docker: image %s: %w", ref, ErrImageNotPresent)
		}
		return Image{}, fmt.Errorf("docker: inspect image %s: %w", ref, err)
	}
	if res.ID == "" {
		return Image{}, fmt.Errorf("docker: image %s has no id", ref)
	}
	img := Image{Ref: ref, ID: res.ID, RepoTags: res.RepoTags, RepoDigests: res.RepoDigests}
	if res.Config != nil {
		img.Env = res.Config.Env
	}
	return img, nil
}

// ImagePresent returns the ID of image ref on the daemon, without pulling
// it, or an error wrapping ErrImageNotPresent (LookUp's rules).
func (r *Runtime) ImagePresent(ctx context.Context, ref string) (string, error) {
	img, err := r.LookUp(ctx, ref)
	return img.ID, err
}

// PinnedRef is the reference that pins img, found through ref: ref itself
// when it has a digest; else ref@<repository digest> when img has one for
// ref's repository (a pulled or pushed image: the registry's content
// address), else ref@<image ID> (a local build; ADR 0031). The Pin says
// which form it is.
func PinnedRef(ref string, img Image) (string, Pin) {
	n, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return ref, PinTag
	}
	if _, ok := n.(reference.Digested); ok {
		if img.Pin == "" {
			return ref, PinRepoDigest
		}
		return ref, img.Pin
	}
	for _, s := range img.RepoDigests {
		m, err := reference.ParseNormalizedNamed(s)
		if d, ok := m.(reference.Digested); err == nil && ok && m.Name() == n.Name() {
			return ref + "@" + d.Digest().String(), PinRepoDigest
		}
	}
	return ref + "@" + img.ID, PinImageID
}

// nameOnly is ref without its digest: NAME[:TAG] as written.
func nameOnly(ref string) string {
	name, _, _ := strings.Cut(ref, "@")
	return name
}

// pullableTimeout bounds one registry question: an unreachable registry
// must not stall doctor.
const pullableTimeout = 30 * time.Second

// ErrNotInRegistry is Pullable's answer when the registry answered that it
// has no such name or manifest (not when it could not be reached).
var ErrNotInRegistry = errors.New("not in the registry")

// Pullable asks the registry whether ref can be pulled, without pulling
// it, and returns the manifest digest it names. The daemon asks
// (GET /distribution/{name}/json, API 1.30+): its registry mirrors (for
// Docker Hub names), insecure-registry settings and proxy apply as for a
// pull; it fetches the manifest and the image configuration, not the
// layers. Like run's pull it sends no credentials. A registry that answers
// it has no such name or manifest is an error wrapping ErrNotInRegistry.
func (r *Runtime) Pullable(ctx context.Context, ref string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, pullableTimeout)
	defer cancel()
	res, err := r.cli.DistributionInspect(ctx, ref, client.DistributionInspectOptions{})
	if err != nil && isNotFound(err) {
		return "", fmt.Errorf("docker: the registry of %s: %w: %w", ref, ErrNotInRegistry, err)
	}
	if err != nil {
		return "", fmt.Errorf("docker: the registry of %s: %w", ref, err)
	}
	return res.Descriptor.Digest.String(), nil
}

// notPullable says what a pull's failure means for a digest reference that
// may be a local image ID: no registry can serve an image ID.
func notPullable(ref string, err error) error {
	n, perr := reference.ParseNormalizedNamed(ref)
	if _, ok := n.(reference.Digested); perr != nil || !ok {
		return err
	}
	return fmt.Errorf("%w; if %s is the ID of an image built locally (not a registry digest), no registry can serve it: build it on this machine (docker build -t %s .) and re-pin with its ID (docker image inspect --format '{{.Id}}' %s)",
		err, ref[strings.LastIndex(ref, "@")+1:], nameOnly(ref), nameOnly(ref))
}
