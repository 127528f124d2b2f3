package artifact

import (
	"context"
	"net/http"
)

// UploadZipBlocks is UploadZipResult with another block size, so tests
// can make many blocks from small zips.
func UploadZipBlocks(ctx context.Context, hc *http.Client, tok, results, name string, z []byte, blockSize int) (*Result, error) {
	return uploadZip(ctx, hc, tok, results, name, z, blockSize)
}

// ReadBack runs the read-back of an artifact finalized with id.
func ReadBack(ctx context.Context, tok, results, name string, id int64, data []byte) (int64, error) {
	run, job, err := BackendIDs(tok)
	if err != nil {
		return 0, err
	}
	c := twirpClient{hc: http.DefaultClient, svc: results + twirpService, token: tok, run: run, job: job}
	return c.readBack(ctx, name, id, data)
}
