package action

import (
	"context"

	"github.com/proofgate/proofgate/internal/ci/artifact"
)

// uploadArtifact uploads files as artifact name (Put Block, Put Block
// List, Finalize, read-back) and logs what the read-back saw.
func uploadArtifact(ctx context.Context, f *workflow, tok, results, name string, files map[string][]byte) (int64, error) {
	z, err := artifact.Zip(files)
	if err != nil {
		return 0, err
	}
	r, err := artifact.UploadZipResult(ctx, nil, tok, results, name, z)
	if err != nil {
		return 0, err
	}
	f.logf("proofgate: artifact %s: %d bytes in %d blocks, read back through the artifact service", name, r.Size, r.Blocks)
	if r.ListedSize != r.Size {
		f.logf("proofgate: the artifact service lists %d bytes for it (nektos/act lists a directory's size); the bytes read back are the ones uploaded", r.ListedSize)
	}
	return r.ID, nil
}
