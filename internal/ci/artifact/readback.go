package artifact

// Read-back: after FinalizeArtifact, the artifact is read back through
// the service, in two steps:
//
//  1. ListArtifacts {workflow_run_backend_id, workflow_job_run_backend_id,
//     name_filter}: it must be listed under its name with the artifact_id
//     Finalize returned; the size listed is compared with the size uploaded.
//  2. GetSignedArtifactURL {…, name} → signed_url, GET without credentials,
//     reading at most the uploaded size + 1 bytes: the bytes must be the
//     uploaded ones (same length and sha256).
//
// The upload fails with a *ReadBackError if step 1 does not find it, or if
// step 2 reads other bytes. A listed size other than the uploaded one is an
// error too, unless step 2 read exactly the uploaded bytes: nektos/act
// (v0.2.87, measured) lists an artifact's size as the size of the
// directory it keeps the zip in (4096 on ext4), whatever was stored, so a
// size-only check would refuse every upload there. Step 2 is what catches
// a lax server that stored other bytes of the same length (blocks
// committed out of order on a server that does not check the hash).
// An upload whose bytes the server dropped fails here: act answers a plain
// Put Blob with 200, stores nothing and finalizes an empty artifact; Gitea
// lists only artifacts whose blocks it could merge completely.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// ErrNotStored is what every *ReadBackError unwraps to: the artifact
// service does not hold the bytes that were uploaded.
var ErrNotStored = errors.New("the artifact service does not hold the uploaded bytes")

// ReadBackReason says what the read-back found.
type ReadBackReason string

// The read-back refusals.
const (
	ReasonNotListed ReadBackReason = "not listed"       // no artifact of that name
	ReasonOtherID   ReadBackReason = "other id"         // listed, not with Finalize's id
	ReasonSize      ReadBackReason = "size mismatch"    // downloaded size differs from the upload
	ReasonContent   ReadBackReason = "content mismatch" // same length downloaded, other bytes
)

// ReadBackError is an upload the service does not hold as sent.
type ReadBackError struct {
	Name       string
	Reason     ReadBackReason
	Uploaded   int64 // bytes sent
	Listed     int64 // size ListArtifacts reported, -1 if not listed
	Downloaded int64 // bytes read back, -1 if not downloaded
	Err        error // why the download failed, if it did
}

func (e *ReadBackError) Error() string {
	s := fmt.Sprintf("artifact %s read back through the service: %s: uploaded %d bytes, listed %d", e.Name, e.Reason, e.Uploaded, e.Listed)
	if e.Downloaded >= 0 {
		s += fmt.Sprintf(", downloaded %d", e.Downloaded)
	}
	if e.Err != nil {
		s += fmt.Sprintf(" (download: %v)", e.Err)
	}
	return s + "; the runner's artifact server did not store the upload"
}

// Unwrap returns ErrNotStored.
func (e *ReadBackError) Unwrap() error { return ErrNotStored }

// twirpClient calls one artifact service for one job.
type twirpClient struct {
	hc       *http.Client
	svc      string
	token    string
	run, job string
}

func (c twirpClient) call(ctx context.Context, method string, in map[string]any, out *map[string]json.RawMessage) error {
	in["workflow_run_backend_id"], in["workflow_job_run_backend_id"] = c.run, c.job
	return call(ctx, c.hc, c.svc, method, c.token, in, out)
}

// readBack checks the finalized artifact (see the section comment). It
// returns the size ListArtifacts reported.
func (c twirpClient) readBack(ctx context.Context, name string, id int64, data []byte) (int64, error) {
	listed, err := c.listedSize(ctx, name, id, int64(len(data)))
	if err != nil {
		return 0, err
	}
	e := &ReadBackError{Name: name, Reason: ReasonSize, Uploaded: int64(len(data)), Listed: listed, Downloaded: -1}
	got, err := c.download(ctx, name, int64(len(data)))
	if err != nil {
		e.Err = err
		return 0, e
	}
	e.Downloaded = int64(len(got))
	switch {
	case len(got) != len(data):
		return 0, e
	case sha256.Sum256(got) != sha256.Sum256(data):
		e.Reason = ReasonContent
		return 0, e
	}
	return listed, nil
}

func (c twirpClient) listedSize(ctx context.Context, name string, id, uploaded int64) (int64, error) {
	var reply map[string]json.RawMessage
	if err := c.call(ctx, "ListArtifacts", map[string]any{"name_filter": name}, &reply); err != nil {
		return 0, err
	}
	var list []map[string]json.RawMessage
	if err := field(reply, "artifacts", &list); err != nil {
		return 0, fmt.Errorf("artifact service ListArtifacts: %w", err)
	}
	named := 0
	for _, a := range list {
		var n string
		var dbID, size int64
		if field(a, "name", &n) != nil || n != name {
			continue
		}
		named++
		if err := field(a, "database_id", &dbID); err != nil || dbID != id {
			continue
		}
		if err := field(a, "size", &size); err != nil {
			return 0, fmt.Errorf("artifact service ListArtifacts: artifact %s: %w", name, err)
		}
		return size, nil
	}
	reason := ReasonNotListed
	if named > 0 {
		reason = ReasonOtherID
	}
	return 0, &ReadBackError{Name: name, Reason: reason, Uploaded: uploaded, Listed: -1, Downloaded: -1}
}

// download fetches the artifact's zip through GetSignedArtifactURL, reading
// at most limit+1 bytes.
func (c twirpClient) download(ctx context.Context, name string, limit int64) ([]byte, error) {
	var reply map[string]json.RawMessage
	if err := c.call(ctx, "GetSignedArtifactURL", map[string]any{"name": name}, &reply); err != nil {
		return nil, err
	}
	var signed string
	if err := field(reply, "signed_url", &signed); err != nil || signed == "" {
		return nil, fmt.Errorf("artifact service GetSignedArtifactURL: no signed_url in reply")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, signed, nil)
	if err != nil {
		return nil, fmt.Errorf("signed artifact URL: %w", err)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, redact(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("download: HTTP %d", resp.StatusCode)
	}
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, io.LimitReader(resp.Body, limit+1)); err != nil {
		return nil, redact(err)
	}
	return buf.Bytes(), nil
}
