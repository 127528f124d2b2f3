package shardjob

import (
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/key"
	"github.com/proofgate/proofgate/bundle/sigstore"
	"github.com/proofgate/proofgate/internal/bounded"
	"github.com/proofgate/proofgate/internal/ci/handoff"
	"github.com/proofgate/proofgate/internal/shard"
)

// maxShardFiles bounds the files of a shard directory the shard job
// uploads: under artifact.MaxEntries, which the merge job's Unzip enforces.
const maxShardFiles = 900

// ReadShard returns the signed shard directory's regular files by slash
// path, as the shard job uploads them.
func ReadShard(dir string) (map[string][]byte, error) {
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file", p)
		}
		if len(files) >= maxShardFiles {
			return fmt.Errorf("more than %d files", maxShardFiles)
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		b, err := bounded.ReadFile(p, maxShardArtifactBytes)
		if err != nil {
			return err
		}
		files[filepath.ToSlash(rel)] = b
		return nil
	})
	return files, err
}

// Verifier verifies shard signatures with the job's own signer identity:
// its key (signer), or, when kv is not nil, the trusted root and its OIDC
// identity.
func Verifier(signer envelope.Signer, kv *sigstore.Verifiers) (shard.Verifier, error) {
	if kv != nil {
		return &bundle.ShardVerifier{Keyless: kv}, nil
	}
	ks, ok := signer.(*key.Signer)
	if !ok {
		return nil, Refuse(NoSigner, "", "the signer is not an Ed25519 key")
	}
	return &bundle.ShardVerifier{Keys: handoff.KeyVerifiers{ID: ks.KeyID(), Pub: ks.Public}}, nil
}

// KeylessVerifiers verifies a keyless plan and shards against the Sigstore
// trusted root (read from path) and the job's own OIDC identity c, which
// every job of the workflow run shares (same workflow file, ref and
// commit).
func KeylessVerifiers(root []byte, path string, c *handoff.JobClaims) (*sigstore.Verifiers, error) {
	v, err := sigstore.NewVerifiers(root, []sigstore.Identity{c.Identity("the job's own identity")})
	if err != nil {
		return nil, Refuse(NoSigner, "", "trusted root %s: %v", path, err)
	}
	return v, nil
}
