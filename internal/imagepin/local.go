package imagepin

import (
	"context"
	"fmt"

	"github.com/distribution/reference"
)

// Daemon is what Local asks of a Docker daemon.
type Daemon interface {
	// ImageDigests returns the image's ID (sha256:<hex>) and its repo
	// digests (NAME@sha256:<hex>); found is false when the daemon does
	// not have the image.
	ImageDigests(ctx context.Context, ref string) (id string, repoDigests []string, found bool, err error)
}

// Local pins image as the daemon has it: by the repo digest of the same
// repository when it has one (the image was pulled or pushed), else by
// its image ID in the local form NAME[:TAG]@sha256:<ID hex>. found is false
// when the daemon does not have the image.
func Local(ctx context.Context, d Daemon, image string) (p Pin, found bool, err error) {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return Pin{}, false, fmt.Errorf("image %q: %w", image, err)
	}
	if _, ok := named.(reference.Digested); ok {
		return Pin{}, false, fmt.Errorf("image %q is already pinned by digest", image)
	}
	id, digests, found, err := d.ImageDigests(ctx, image)
	if err != nil || !found {
		return Pin{}, found, err
	}
	for _, rd := range digests {
		r, err := reference.ParseNormalizedNamed(rd)
		if err != nil {
			continue
		}
		if c, ok := r.(reference.Canonical); ok && r.Name() == named.Name() && sha256Digest.MatchString(c.Digest().String()) {
			dg := c.Digest().String()
			return Pin{Image: image, Ref: image + "@" + dg, Digest: dg, Source: SourceLocal}, true, nil
		}
	}
	if !sha256Digest.MatchString(id) {
		return Pin{}, true, fmt.Errorf("image %s: the daemon gave the image ID %.80q, not sha256:<64 hex>", image, id)
	}
	return Pin{Image: image, Ref: image + "@" + id, Digest: id, Source: SourceLocalID}, true, nil
}
