package docker

import (
	"context"
	"fmt"

	"github.com/moby/moby/client"
)

// RegistryMirrors returns the daemon's registry mirrors for Docker Hub
// (docker info: RegistryConfig.Mirrors), in the order dockerd tries them.
func (r *Runtime) RegistryMirrors(ctx context.Context) ([]string, error) {
	info, err := r.cli.Info(ctx, client.InfoOptions{})
	if err != nil {
		return nil, fmt.Errorf("docker: info: %w", err)
	}
	if info.Info.RegistryConfig == nil {
		return nil, nil
	}
	return info.Info.RegistryConfig.Mirrors, nil
}

// ImageDigests returns the ID and repo digests of image ref on the daemon;
// found is false when the daemon does not have it.
func (r *Runtime) ImageDigests(ctx context.Context, ref string) (id string, repoDigests []string, found bool, err error) {
	img, err := r.cli.ImageInspect(ctx, ref)
	if err != nil {
		if isNotFound(err) {
			return "", nil, false, nil
		}
		return "", nil, false, fmt.Errorf("docker: inspect image %s: %w", ref, err)
	}
	return img.ID, img.RepoDigests, true, nil
}
