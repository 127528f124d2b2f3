package toolimage

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// stampVersion changes when Build lays images out differently, so that a
// cache written by an older build is not reused.
const stampVersion = "toolimage/1"

// Stamp is a digest of everything Build reads for s: the configuration and,
// for each file, its path, mode, owner, link, body, and for a host file its
// size, modification time and inode (not its bytes: hashing GOROOT on every
// warm run is what the cache avoids).
func Stamp(s Spec) (string, error) {
	h := sha256.New()
	enc := json.NewEncoder(h)
	if err := enc.Encode([]any{stampVersion, s.Name, s.Config}); err != nil {
		return "", err
	}
	for i, files := range s.Layers {
		for _, f := range files {
			rec := []any{i, f.Path, uint32(f.Mode), f.UID, f.GID, f.Link, sha256.Sum256(f.Body)}
			if f.Source != "" {
				fi, err := os.Stat(f.Source)
				if err != nil {
					return "", fmt.Errorf("toolimage: %w", err)
				}
				var ino uint64
				if st, ok := fi.Sys().(*syscall.Stat_t); ok {
					ino = st.Ino
				}
				rec = append(rec, f.Source, fi.Size(), fi.ModTime().UnixNano(), ino)
			}
			if err := enc.Encode(rec); err != nil {
				return "", err
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:24], nil
}

// Cache keeps built images as OCI layouts in a directory, one per spec name
// and stamp, so a warm run reads the compressed layers instead of
// compressing the toolchains again.
type Cache struct{ Dir string }

func (c Cache) path(name, stamp string) string { return filepath.Join(c.Dir, name+"-"+stamp) }

// Load returns the cached index for name and stamp, or ok false when there
// is none.
func (c Cache) Load(name, stamp string) (idx v1.ImageIndex, ok bool, err error) {
	lp, err := layout.FromPath(c.path(name, stamp))
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("toolimage: cache: %w", err)
	}
	top, err := lp.ImageIndex()
	if err != nil {
		return nil, false, fmt.Errorf("toolimage: cache: %w", err)
	}
	im, err := top.IndexManifest()
	if err != nil || len(im.Manifests) != 1 {
		return nil, false, fmt.Errorf("toolimage: cache %s: want one index (%v)", c.path(name, stamp), err)
	}
	idx, err = top.ImageIndex(im.Manifests[0].Digest)
	if err != nil {
		return nil, false, fmt.Errorf("toolimage: cache: %w", err)
	}
	return idx, true, nil
}

// Save writes idx for name and stamp (into a temporary directory renamed
// into place, so a killed run leaves no half-written cache) and removes the
// older stamps of name.
func (c Cache) Save(name, stamp string, idx v1.ImageIndex) error {
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return fmt.Errorf("toolimage: cache: %w", err)
	}
	tmp, err := os.MkdirTemp(c.Dir, ".tmp-"+name+"-")
	if err != nil {
		return fmt.Errorf("toolimage: cache: %w", err)
	}
	defer os.RemoveAll(tmp)
	lp, err := layout.Write(tmp, empty.Index)
	if err == nil {
		err = lp.AppendIndex(idx)
	}
	if err == nil {
		err = os.Rename(tmp, c.path(name, stamp))
		if _, serr := os.Stat(filepath.Join(c.path(name, stamp), "index.json")); err != nil && serr == nil {
			err = nil // a concurrent run saved the same stamp first
		}
	}
	if err != nil {
		return fmt.Errorf("toolimage: cache %s: %w", name, err)
	}
	old, _ := filepath.Glob(filepath.Join(c.Dir, name+"-*"))
	for _, p := range old {
		if p != c.path(name, stamp) && !strings.HasPrefix(filepath.Base(p), ".") {
			os.RemoveAll(p)
		}
	}
	return nil
}
