package artifact

// Blob upload: the zip goes to the signed upload URL as Azure block-blob
// blocks, as @actions/artifact does through @azure/storage-blob's
// uploadStream, and never as one Put Blob. The v4 artifact servers of
// Gitea/Forgejo and nektos/act store only Put Block bodies and answer a
// plain PUT with 200 while storing nothing.
//
// Wire format, for a zip of n bytes and block size B (BlockSize):
//
//	PUT <signed>&comp=block&blockid=<id_i>      body: bytes [i*B, min((i+1)*B, n))
//	    (i = 0 … ceil(n/B)-1, one at a time, in order: act appends bodies in
//	    arrival order and ignores the block list)
//	PUT <signed>&comp=blocklist                 body: the XML below
//
//	<?xml version="1.0" encoding="utf-8"?>
//	<BlockList><Latest>id_0</Latest><Latest>id_1</Latest>…</BlockList>
//
// A block id is the standard base64 of 48 ASCII bytes: 32 lower-case hex
// digits of a random per-upload prefix, then the block index as 16 decimal
// digits. Azure requires ids of at most 64 bytes before encoding and of one
// length within a blob; @azure/storage-blob's generateBlockID makes the
// same 48-byte shape (prefix, zero-padded index). Signed-URL requests carry
// no Authorization header.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

const (
	// BlockSize is the size of each Put Block body but the last (4 MiB,
	// Azure's default block size; @actions/artifact uses 8 MiB).
	BlockSize = 4 << 20
	// MaxBlocks is Azure's limit on the blocks of one committed blob.
	MaxBlocks = 50000
)

// BlobError is a refused or failed request to the signed upload URL.
type BlobError struct {
	Op     string // "put block" or "put block list"
	Block  int    // block index for "put block", else -1
	Status int    // HTTP status, 0 for a transport error
	Msg    string
	Err    error
}

func (e *BlobError) Error() string {
	where := e.Op
	if e.Block >= 0 {
		where = fmt.Sprintf("%s %d", e.Op, e.Block)
	}
	if e.Err != nil {
		return fmt.Sprintf("upload blob: %s: %v", where, e.Err)
	}
	return fmt.Sprintf("upload blob: %s: HTTP %d: %s", where, e.Status, e.Msg)
}

func (e *BlobError) Unwrap() error { return e.Err }

// blockIDs returns n block ids of one length (see the package wire format).
func blockIDs(n int) ([]string, error) {
	var p [16]byte
	if _, err := rand.Read(p[:]); err != nil {
		return nil, err
	}
	prefix := hex.EncodeToString(p[:])
	ids := make([]string, n)
	for i := range ids {
		ids[i] = base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "%s%016d", prefix, i))
	}
	return ids, nil
}

// putBlocks uploads data in blocks of blockSize, then commits the list. It
// returns the number of blocks.
func putBlocks(ctx context.Context, hc *http.Client, signed string, data []byte, blockSize int) (int, error) {
	n := (len(data) + blockSize - 1) / blockSize
	if n > MaxBlocks {
		return 0, fmt.Errorf("upload blob: %d bytes need %d blocks of %d, over %d", len(data), n, blockSize, MaxBlocks)
	}
	ids, err := blockIDs(n)
	if err != nil {
		return 0, err
	}
	for i, id := range ids {
		chunk := data[i*blockSize : min((i+1)*blockSize, len(data))]
		u := withQuery(signed, "comp=block&blockid="+url.QueryEscape(id))
		if err := putSigned(ctx, hc, u, "application/octet-stream", chunk, "put block", i); err != nil {
			return 0, err
		}
	}
	var list bytes.Buffer
	list.WriteString(`<?xml version="1.0" encoding="utf-8"?>` + "\n<BlockList>")
	for _, id := range ids {
		list.WriteString("<Latest>" + id + "</Latest>") // base64: nothing to escape
	}
	list.WriteString("</BlockList>")
	if err := putSigned(ctx, hc, withQuery(signed, "comp=blocklist"), "application/xml", list.Bytes(), "put block list", -1); err != nil {
		return 0, err
	}
	return n, nil
}

// withQuery appends a query to the signed URL, keeping its own query
// string byte for byte (servers check a signature over it).
func withQuery(signed, q string) string {
	if strings.Contains(signed, "?") {
		return signed + "&" + q
	}
	return signed + "?" + q
}

func putSigned(ctx context.Context, hc *http.Client, u, contentType string, body []byte, op string, block int) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, u, bytes.NewReader(body))
	if err != nil {
		return &BlobError{Op: op, Block: block, Err: redact(&url.Error{Op: "PUT", URL: u, Err: err})}
	}
	req.Header.Set("Content-Type", contentType)
	if block < 0 {
		req.Header.Set("x-ms-blob-content-type", "application/zip")
	}
	resp, err := hc.Do(req)
	if err != nil {
		return &BlobError{Op: op, Block: block, Err: redact(err)}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return &BlobError{Op: op, Block: block, Status: resp.StatusCode, Msg: strings.TrimSpace(string(msg))}
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	return nil
}
