package toolimage

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Push writes idx to the registry at host (plain HTTP, "127.0.0.1:5391")
// as repo ("library/golang") under each tag. Blobs the registry already
// has are not uploaded again.
func Push(ctx context.Context, host, repo string, tags []string, idx v1.ImageIndex) error {
	m := make(map[name.Reference]remote.Taggable, len(tags))
	for _, t := range tags {
		ref, err := name.NewTag(host+"/"+repo+":"+t, name.Insecure, name.StrictValidation)
		if err != nil {
			return fmt.Errorf("toolimage: tag %q: %w", t, err)
		}
		m[ref] = idx
	}
	if len(m) == 0 {
		return fmt.Errorf("toolimage: push %s: no tags", repo)
	}
	if err := remote.MultiWrite(m, remote.WithContext(ctx)); err != nil {
		return fmt.Errorf("toolimage: push %s/%s: %w", host, repo, err)
	}
	return nil
}
