// Package artifact moves ProofGate bundles through GitHub Actions artifacts:
// Upload speaks the v4 artifact protocol (Twirp service at
// ACTIONS_RESULTS_URL, Put Block uploads to the signed blob URL, then a
// read-back through the service), and Find/Download read another
// run's artifacts through the REST API for the release-gate verify step.
package artifact

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/proofgate/proofgate/internal/ci/ghapi"
	"github.com/proofgate/proofgate/internal/strictjson"
)

const (
	twirpService = "twirp/github.actions.results.api.v1.ArtifactService/"
	// MaxTokenBytes bounds the runtime token parsed by BackendIDs.
	MaxTokenBytes = 64 << 10
	// MaxUploadBytes bounds the zip uploaded (it is held in memory).
	MaxUploadBytes = 5000 << 20
	maxReplyBytes  = 1 << 20
)

// ErrBadToken means ACTIONS_RUNTIME_TOKEN is not a JWT carrying the
// Actions.Results scope.
var ErrBadToken = errors.New("runtime token has no Actions.Results:<run>:<job> scope")

// ValidateName refuses artifact names the service rejects.
func ValidateName(name string) error {
	if name == "" {
		return errors.New("artifact name is empty")
	}
	if len(name) > 256 {
		return fmt.Errorf("artifact name %.32q…: longer than 256 bytes", name)
	}
	if i := strings.IndexAny(name, "\":<>|*?\r\n\\/"); i >= 0 {
		return fmt.Errorf("artifact name %q: character %q is not allowed", name, name[i])
	}
	return nil
}

// BackendIDs extracts the workflow run and job backend ids from the runtime
// token's scp claim ("… Actions.Results:<run>:<job> …"). The token is not
// verified; the service does that.
func BackendIDs(runtimeToken string) (run, job string, err error) {
	if len(runtimeToken) > MaxTokenBytes {
		return "", "", fmt.Errorf("%w: token longer than %d bytes", ErrBadToken, MaxTokenBytes)
	}
	parts := strings.Split(runtimeToken, ".")
	if len(parts) != 3 {
		return "", "", fmt.Errorf("%w: not a JWT (%d parts)", ErrBadToken, len(parts))
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return "", "", fmt.Errorf("%w: payload: %v", ErrBadToken, err)
	}
	var claims struct {
		Scp json.RawMessage `json:"scp"`
	}
	if err := strictjson.DecodeOpen(payload, &claims); err != nil {
		return "", "", fmt.Errorf("%w: payload: %v", ErrBadToken, err)
	}
	var scopes []string
	var s string
	if err := strictjson.Decode(claims.Scp, &s); err == nil {
		scopes = strings.Fields(s)
	} else if err := strictjson.Decode(claims.Scp, &scopes); err != nil {
		return "", "", fmt.Errorf("%w: scp claim is neither a string nor a list", ErrBadToken)
	}
	for _, sc := range scopes {
		f := strings.Split(sc, ":")
		if len(f) == 3 && f[0] == "Actions.Results" && f[1] != "" && f[2] != "" {
			return f[1], f[2], nil
		}
	}
	return "", "", ErrBadToken
}

// Zip builds a deterministic zip of files (sorted names, fixed times).
func Zip(files map[string][]byte) ([]byte, error) {
	names := make([]string, 0, len(files))
	for n := range files {
		if err := checkEntryName(n); err != nil {
			return nil, err
		}
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, n := range names {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: n, Method: zip.Deflate,
			Modified: time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)})
		if err != nil {
			return nil, err
		}
		if _, err := w.Write(files[n]); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// TwirpError is an error answer of the artifact service.
type TwirpError struct {
	Method string
	Status int
	Code   string
	Msg    string
}

func (e *TwirpError) Error() string {
	return fmt.Sprintf("artifact service %s: HTTP %d %s: %s", e.Method, e.Status, e.Code, e.Msg)
}

// Upload zips files and uploads them as artifact name. See UploadZip.
func Upload(ctx context.Context, runtimeToken, resultsURL, name string, files map[string][]byte) (int64, error) {
	z, err := Zip(files)
	if err != nil {
		return 0, err
	}
	return UploadZip(ctx, nil, runtimeToken, resultsURL, name, z)
}

// UploadZip uploads a zip as artifact name and returns its id. See
// UploadZipResult.
func UploadZip(ctx context.Context, hc *http.Client, runtimeToken, resultsURL, name string, zipData []byte) (int64, error) {
	r, err := UploadZipResult(ctx, hc, runtimeToken, resultsURL, name, zipData)
	if err != nil {
		return 0, err
	}
	return r.ID, nil
}

// Result describes a finished, read-back upload.
type Result struct {
	ID     int64
	Size   int64 // bytes uploaded and read back
	Blocks int   // Put Block requests
	// ListedSize is the size ListArtifacts reported. It differs from Size
	// only on servers that misreport it (nektos/act reports a directory's);
	// the bytes downloaded back were identical all the same.
	ListedSize int64
}

// UploadZipResult uploads a zip as artifact name through the v4 protocol:
// CreateArtifact, Put Block + Put Block List to the signed URL (no
// credentials; see blocks.go), FinalizeArtifact with size and sha256, then
// the read-back of readback.go. hc nil means a client retrying 429/5xx.
func UploadZipResult(ctx context.Context, hc *http.Client, runtimeToken, resultsURL, name string, zipData []byte) (*Result, error) {
	return uploadZip(ctx, hc, runtimeToken, resultsURL, name, zipData, BlockSize)
}

func uploadZip(ctx context.Context, hc *http.Client, runtimeToken, resultsURL, name string, zipData []byte, blockSize int) (*Result, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	if len(zipData) > MaxUploadBytes {
		return nil, fmt.Errorf("artifact %s: %w: %d bytes exceeds %d", name, ErrTooLarge, len(zipData), MaxUploadBytes)
	}
	if n := (len(zipData) + blockSize - 1) / blockSize; n > MaxBlocks {
		return nil, fmt.Errorf("artifact %s: %w: %d bytes need %d blocks of %d, over %d", name, ErrTooLarge, len(zipData), n, blockSize, MaxBlocks)
	}
	run, job, err := BackendIDs(runtimeToken)
	if err != nil {
		return nil, fmt.Errorf("ACTIONS_RUNTIME_TOKEN: %w", err)
	}
	base, err := url.Parse(resultsURL)
	if err != nil || (base.Scheme != "https" && base.Scheme != "http") || base.Host == "" {
		return nil, fmt.Errorf("ACTIONS_RESULTS_URL %q: not an http(s) URL", resultsURL)
	}
	if hc == nil {
		hc = &http.Client{Transport: &ghapi.Retry{}, Timeout: 10 * time.Minute}
	}
	c := twirpClient{hc: hc, svc: base.Scheme + "://" + base.Host + "/" + twirpService, token: runtimeToken, run: run, job: job}

	var created map[string]json.RawMessage
	if err := c.call(ctx, "CreateArtifact", map[string]any{"name": name, "version": 4}, &created); err != nil {
		return nil, err
	}
	var signed string
	if err := field(created, "signed_upload_url", &signed); err != nil || signed == "" {
		return nil, fmt.Errorf("artifact service CreateArtifact: no signed_upload_url in reply")
	}
	r := &Result{Size: int64(len(zipData))}
	if r.Blocks, err = putBlocks(ctx, hc, signed, zipData, blockSize); err != nil {
		return nil, err
	}
	sum := sha256.Sum256(zipData)
	var fin map[string]json.RawMessage
	if err := c.call(ctx, "FinalizeArtifact", map[string]any{
		"name": name, "size": strconv.Itoa(len(zipData)), "hash": "sha256:" + hex.EncodeToString(sum[:]),
	}, &fin); err != nil {
		return nil, err
	}
	var ok bool
	if err := field(fin, "ok", &ok); err != nil || !ok {
		return nil, fmt.Errorf("artifact service FinalizeArtifact: reply not ok")
	}
	if err := field(fin, "artifact_id", &r.ID); err != nil {
		return nil, fmt.Errorf("artifact service FinalizeArtifact: artifact_id: %w", err)
	}
	if r.ListedSize, err = c.readBack(ctx, name, r.ID, zipData); err != nil {
		return nil, err
	}
	return r, nil
}

func call(ctx context.Context, hc *http.Client, svc, method, token string, in any, out *map[string]json.RawMessage) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, svc+method, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("artifact service %s: %w", method, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxReplyBytes+1))
	if err != nil {
		return fmt.Errorf("artifact service %s: %w", method, err)
	}
	if len(raw) > maxReplyBytes {
		return fmt.Errorf("artifact service %s: reply over %d bytes", method, maxReplyBytes)
	}
	if resp.StatusCode != http.StatusOK {
		te := &TwirpError{Method: method, Status: resp.StatusCode}
		var e struct {
			Code string `json:"code"`
			Msg  string `json:"msg"`
		}
		if strictjson.DecodeOpen(raw, &e) == nil {
			te.Code, te.Msg = e.Code, e.Msg
		}
		return te
	}
	if err := strictjson.DecodeOpen(raw, out); err != nil {
		return fmt.Errorf("artifact service %s: reply: %w", method, err)
	}
	return nil
}

// field reads a reply field by its proto name or lowerCamelCase JSON name;
// int64 fields may be JSON numbers or strings (protojson).
func field(m map[string]json.RawMessage, snake string, dst any) error {
	raw, ok := m[snake]
	if c, dup := m[camel(snake)]; dup && ok && snake != camel(snake) {
		return fmt.Errorf("field %s: given both as %s and as %s", snake, snake, camel(snake))
	} else if !ok {
		raw, ok = c, dup
	}
	if !ok {
		return fmt.Errorf("field %s missing", snake)
	}
	if p, isInt := dst.(*int64); isInt {
		var s string
		if strictjson.Decode(raw, &s) == nil {
			v, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return fmt.Errorf("field %s: %w", snake, err)
			}
			*p = v
			return nil
		}
	}
	return strictjson.Decode(raw, dst)
}

func camel(s string) string {
	parts := strings.Split(s, "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}

// redact drops the signed query string from URL errors (it is a credential).
func redact(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil {
			u.RawQuery = ""
			return &url.Error{Op: ue.Op, URL: u.String(), Err: ue.Err}
		}
	}
	return err
}
