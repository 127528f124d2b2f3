package githubtest

// The signed-URL blob store speaks exactly the Azure block-blob protocol
// that @actions/artifact uses and that the v4 artifact servers of
// Gitea/Forgejo and nektos/act accept:
//
//	PUT ?comp=block&blockid=<base64>   stores an uncommitted block. The id
//	    must be standard base64 of at most 64 bytes, of the same length as
//	    the blob's other ids; Content-Length is required; at most
//	    maxBlocks blocks of at most maxBlockBytes each.
//	PUT ?comp=blocklist                <BlockList><Latest>id</Latest>…</BlockList>
//	    commits the named uncommitted blocks in list order (Uncommitted is
//	    accepted as Latest; Committed is not supported) and drops the rest.
//	PUT (no comp)                      a plain Put Blob: REFUSED with 400
//	    PutBlobRefused, since Gitea and act store nothing for it. With
//	    Faults.AcceptPlainPut it answers 200 and stores nothing, as they do.

import (
	"bytes"
	"encoding/base64"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
)

const (
	maxBlocks         = 50000
	maxBlockBytes     = 64 << 20
	maxBlockListBytes = 8 << 20
)

// ArtifactFaults makes the fake's artifact service misbehave as lax or
// broken servers do, for hostile tests. Zero value: a correct server.
type ArtifactFaults struct {
	// AcceptPlainPut answers a plain Put Blob with 200 and stores nothing
	// (act and Gitea do this).
	AcceptPlainPut bool
	// DropBlock commits without the block at this 1-based list position.
	DropBlock int
	// SwapBlocks commits the first two listed blocks in swapped order.
	SwapBlocks bool
	// LaxFinalize makes FinalizeArtifact accept any size and hash, and a
	// missing blob as empty (act does).
	LaxFinalize bool
	// ListedSize, if set, maps the committed size to the size
	// ListArtifacts reports (act reports its directory's size).
	ListedSize func(committed int64) int64
	// Unlisted hides finalized artifacts from ListArtifacts.
	Unlisted bool
	// ListedIDOffset is added to the database_id ListArtifacts reports.
	ListedIDOffset int64
}

func (s *Server) putBlob(w http.ResponseWriter, r *http.Request, key string) {
	switch r.URL.Query().Get("comp") {
	case "":
		if s.Faults.AcceptPlainPut {
			_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, maxBlockBytes))
			w.WriteHeader(http.StatusOK)
			return
		}
		http.Error(w, "PutBlobRefused: this store keeps only Put Block uploads (comp=block, then comp=blocklist)", http.StatusBadRequest)
	case "block":
		s.putBlock(w, r, key)
	case "blocklist":
		s.putBlockList(w, r, key)
	default:
		http.Error(w, "UnsupportedQueryParameter comp", http.StatusBadRequest)
	}
}

func (s *Server) putBlock(w http.ResponseWriter, r *http.Request, key string) {
	id := r.URL.Query().Get("blockid")
	raw, err := base64.StdEncoding.DecodeString(id)
	if err != nil || len(raw) == 0 || len(raw) > 64 {
		http.Error(w, "InvalidQueryParameterValue blockid", http.StatusBadRequest)
		return
	}
	if r.ContentLength < 0 {
		http.Error(w, "MissingContentLength", http.StatusLengthRequired)
		return
	}
	blocks := s.blocks[key]
	for other := range blocks {
		if len(other) != len(id) {
			http.Error(w, "InvalidBlobOrBlock: block ids of different lengths", http.StatusBadRequest)
			return
		}
	}
	if _, ok := blocks[id]; !ok && len(blocks) >= maxBlocks {
		http.Error(w, "BlockCountExceedsLimit", http.StatusConflict)
		return
	}
	body, err := readBody(r, maxBlockBytes)
	if err != nil {
		http.Error(w, "RequestBodyTooLarge", http.StatusRequestEntityTooLarge)
		return
	}
	if blocks == nil {
		blocks = map[string][]byte{}
		s.blocks[key] = blocks
	}
	blocks[id] = body
	w.WriteHeader(http.StatusCreated)
}

func (s *Server) putBlockList(w http.ResponseWriter, r *http.Request, key string) {
	body, err := readBody(r, maxBlockListBytes)
	if err != nil {
		http.Error(w, "RequestBodyTooLarge", http.StatusRequestEntityTooLarge)
		return
	}
	ids, err := parseBlockList(body)
	if err != nil {
		http.Error(w, "InvalidXmlDocument: "+err.Error(), http.StatusBadRequest)
		return
	}
	ids = s.Faults.apply(ids)
	var buf bytes.Buffer
	for _, id := range ids {
		b, ok := s.blocks[key][id]
		if !ok {
			http.Error(w, "InvalidBlockList", http.StatusBadRequest)
			return
		}
		buf.Write(b)
	}
	s.blobs[key] = buf.Bytes()
	delete(s.blocks, key)
	w.WriteHeader(http.StatusCreated)
}

func (f ArtifactFaults) apply(ids []string) []string {
	ids = slices.Clone(ids)
	if f.SwapBlocks && len(ids) >= 2 {
		ids[0], ids[1] = ids[1], ids[0]
	}
	if f.DropBlock > 0 && f.DropBlock <= len(ids) {
		ids = slices.Delete(ids, f.DropBlock-1, f.DropBlock)
	}
	return ids
}

// parseBlockList reads <BlockList> with <Latest>/<Uncommitted> children in
// document order.
func parseBlockList(doc []byte) ([]string, error) {
	d := xml.NewDecoder(bytes.NewReader(doc))
	var ids []string
	depth, root := 0, false
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			switch {
			case depth == 1 && (root || t.Name.Local != "BlockList"):
				return nil, errors.New("root is not one BlockList")
			case depth == 1:
				root = true
			case depth == 2 && (t.Name.Local == "Latest" || t.Name.Local == "Uncommitted"):
				var id string
				if err := d.DecodeElement(&id, &t); err != nil {
					return nil, err
				}
				depth--
				if ids = append(ids, strings.TrimSpace(id)); len(ids) > maxBlocks {
					return nil, errors.New("too many blocks")
				}
			case depth >= 2:
				return nil, errors.New("unsupported element " + t.Name.Local)
			}
		case xml.EndElement:
			depth--
		}
	}
	if depth != 0 || !root {
		return nil, errors.New("no BlockList document")
	}
	return ids, nil
}
