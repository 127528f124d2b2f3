package docker

import (
	"context"
	"errors"
	"fmt"
)

// ErrImageNotPresent is ImagePresent's answer for an image the daemon does
// not have.
var ErrImageNotPresent = errors.New("image not present")

// ImagePresent returns the ID of image ref on the daemon, without pulling
// it, or an error wrapping ErrImageNotPresent.
func (r *Runtime) ImagePresent(ctx context.Context, ref string) (string, error) {
	img, err := r.cli.ImageInspect(ctx, ref)
	if err != nil {
		if isNotFound(err) {
			return "", fmt.Errorf("docker: image %s: %w", ref, ErrImageNotPresent)
		}
		return "", fmt.Errorf("docker: inspect image %s: %w", ref, err)
	}
	return img.ID, nil
}
