package artifact

import (
	"archive/zip"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/google/go-github/v62/github"
	"github.com/proofgate/proofgate/internal/ci/ghapi"
)

// Errors Find returns (wrapped) when no artifact is usable.
var (
	ErrNotFound    = errors.New("no artifact with this name")
	ErrExpired     = errors.New("the artifact for this commit has expired")
	ErrOtherCommit = errors.New("artifacts with this name exist only for other commits")
	ErrTooLarge    = errors.New("too large")
)

// maxListPages bounds Find's pagination (100 per page).
const maxListPages = 50

// Artifact is a workflow-run artifact as the REST API lists it.
type Artifact struct {
	ID        int64     `json:"id"`
	Name      string    `json:"name"`
	Size      int64     `json:"size_in_bytes"`
	Expired   bool      `json:"expired"`
	CreatedAt time.Time `json:"created_at"`
	// Run is the artifact's workflow run: its id and head, and the ids of
	// the repository it ran in and of its head's (a fork's when they
	// differ).
	Run struct {
		ID               int64  `json:"id"`
		HeadSHA          string `json:"head_sha"`
		RepositoryID     int64  `json:"repository_id"`
		HeadRepositoryID int64  `json:"head_repository_id"`
	} `json:"workflow_run"`
}

// Find returns the newest unexpired artifact called name whose workflow run's
// head_sha is headSHA. It says clearly when there is none, when the only ones
// have expired, and when they are for other commits.
func Find(ctx context.Context, gh *github.Client, owner, repo, name, headSHA string) (*Artifact, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	var best *Artifact
	expired, other := 0, 0
	for page := 1; page != 0; {
		if page > maxListPages {
			return nil, fmt.Errorf("artifacts %s in %s/%s: more than %d pages", name, owner, repo, maxListPages)
		}
		q := url.Values{"name": {name}, "per_page": {"100"}, "page": {fmt.Sprint(page)}}
		var list struct {
			Artifacts []*Artifact `json:"artifacts"`
		}
		resp, err := ghapi.Get(ctx, gh, fmt.Sprintf("repos/%s/%s/actions/artifacts?%s",
			url.PathEscape(owner), url.PathEscape(repo), q.Encode()), &list)
		if err != nil {
			return nil, fmt.Errorf("list artifacts %s in %s/%s: %w", name, owner, repo, err)
		}
		for _, a := range list.Artifacts {
			switch {
			case a.Name != name:
				continue
			case a.Run.HeadSHA != headSHA:
				other++
			case a.Expired:
				expired++
			case best == nil || a.CreatedAt.After(best.CreatedAt) || (a.CreatedAt.Equal(best.CreatedAt) && a.ID > best.ID):
				best = a
			}
		}
		page = resp.NextPage
	}
	switch {
	case best != nil:
		return best, nil
	case expired > 0:
		return nil, fmt.Errorf("artifact %s for %s in %s/%s: %w", name, headSHA, owner, repo, ErrExpired)
	case other > 0:
		return nil, fmt.Errorf("artifact %s in %s/%s: %d for other commits, none for %s: %w", name, owner, repo, other, headSHA, ErrOtherCommit)
	}
	return nil, fmt.Errorf("artifact %s in %s/%s: %w", name, owner, repo, ErrNotFound)
}

// Download fetches artifact id's zip: the API answers 302 to a signed URL,
// which is fetched without credentials. More than maxBytes is refused.
func Download(ctx context.Context, gh *github.Client, owner, repo string, id, maxBytes int64) ([]byte, error) {
	u, _, err := gh.Actions.DownloadArtifact(ctx, owner, repo, id, 0)
	if err != nil {
		return nil, fmt.Errorf("artifact %d in %s/%s: %w", id, owner, repo, err)
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return nil, fmt.Errorf("artifact %d: redirect to a non-http URL", id)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	// A separate client: nothing of gh's authentication reaches the blob host.
	hc := &http.Client{Transport: &ghapi.Retry{}, Timeout: 10 * time.Minute}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("download artifact %d: %w", id, redact(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("download artifact %d: HTTP %d", id, resp.StatusCode)
	}
	if resp.ContentLength > maxBytes {
		return nil, fmt.Errorf("artifact %d: %d bytes over the %d limit: %w", id, resp.ContentLength, maxBytes, ErrTooLarge)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("download artifact %d: %w", id, err)
	}
	if int64(len(data)) > maxBytes {
		return nil, fmt.Errorf("artifact %d: over the %d byte limit: %w", id, maxBytes, ErrTooLarge)
	}
	return data, nil
}

// MaxEntries bounds how many entries Unzip accepts.
const MaxEntries = 1000

func checkEntryName(n string) error {
	switch {
	case n == "" || len(n) > 1024:
		return fmt.Errorf("zip entry %.64q: empty or too long name", n)
	case strings.ContainsAny(n, "\\\x00") || strings.HasPrefix(n, "/"):
		return fmt.Errorf("zip entry %q: absolute path or backslash", n)
	case path.Clean(n) != n || n == "." || n == ".." || strings.HasPrefix(n, "../"):
		return fmt.Errorf("zip entry %q: not a clean relative path", n)
	}
	return nil
}

// Unzip reads a zip's regular files into memory. It refuses path traversal,
// absolute names, duplicates, symlinks and other special files, more than
// MaxEntries entries, an entry over maxEntry bytes and a total over maxTotal
// bytes (the sizes actually read, not the headers' claims).
func Unzip(data []byte, maxEntry, maxTotal int64) (map[string][]byte, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("artifact zip: %w", err)
	}
	if len(zr.File) > MaxEntries {
		return nil, fmt.Errorf("artifact zip: %d entries, more than %d", len(zr.File), MaxEntries)
	}
	out := map[string][]byte{}
	var total int64
	for _, f := range zr.File {
		name := f.Name
		if strings.HasSuffix(name, "/") && f.Mode().IsDir() {
			if err := checkEntryName(strings.TrimSuffix(name, "/")); err != nil {
				return nil, fmt.Errorf("artifact zip: %w", err)
			}
			continue
		}
		if err := checkEntryName(name); err != nil {
			return nil, fmt.Errorf("artifact zip: %w", err)
		}
		if !f.Mode().IsRegular() {
			return nil, fmt.Errorf("artifact zip: entry %q is not a regular file (%v)", name, f.Mode())
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("artifact zip: duplicate entry %q", name)
		}
		if f.UncompressedSize64 > uint64(maxEntry) {
			return nil, fmt.Errorf("artifact zip: entry %q claims %d bytes, over %d: %w", name, f.UncompressedSize64, maxEntry, ErrTooLarge)
		}
		rc, err := f.Open()
		if err != nil {
			return nil, fmt.Errorf("artifact zip: entry %q: %w", name, err)
		}
		b, err := io.ReadAll(io.LimitReader(rc, maxEntry+1))
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("artifact zip: entry %q: %w", name, err)
		}
		if int64(len(b)) > maxEntry {
			return nil, fmt.Errorf("artifact zip: entry %q over %d bytes: %w", name, maxEntry, ErrTooLarge)
		}
		total += int64(len(b))
		if total > maxTotal {
			return nil, fmt.Errorf("artifact zip: contents over %d bytes: %w", maxTotal, ErrTooLarge)
		}
		out[name] = b
	}
	return out, nil
}
