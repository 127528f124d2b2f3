package run

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/proofgate/proofgate/internal/blob"
	"github.com/proofgate/proofgate/internal/durable"
	"github.com/proofgate/proofgate/kernel/replay"
)

// WriteProducts writes products (a run's, from its audit) under dir, each
// at dir/<path>, from the blob store of the run at runDir (ADR 0039). Each
// file is staged beside its destination, re-hashed while it is copied and
// fsynced, then linked into place: a blob that does not hash to its
// digest, or a crash, leaves no file at the path. Nothing is followed out
// of dir: parents are created through an os.Root of it. An existing file
// is refused (fs.ErrExist) unless replace. Two products at one path with
// different digests are refused before anything is written.
func WriteProducts(runDir, dir string, products []replay.Product, replace bool) error {
	byPath := map[string]string{}
	for _, p := range products {
		if !replay.ValidProductPath(p.Path) {
			return fmt.Errorf("product path %q is not a clean relative path", p.Path)
		}
		if d, ok := byPath[p.Path]; ok && d != p.Digest {
			return fmt.Errorf("two checks produced %s with different content (%s, %s)", p.Path, d, p.Digest)
		}
		byPath[p.Path] = p.Digest
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	store := blob.New(filepath.Join(runDir, BlobDir))
	for _, p := range products {
		if err := writeProduct(root, store, p, replace); err != nil {
			return fmt.Errorf("%s: %w", p.Path, err)
		}
	}
	return nil
}

func writeProduct(root *os.Root, store *blob.Store, p replay.Product, replace bool) error {
	if d := path.Dir(p.Path); d != "." {
		if err := root.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	src, err := store.Open(p.Digest)
	if err != nil {
		return fmt.Errorf("the run's blob store: %w", err)
	}
	defer src.Close()
	tmp := path.Join(path.Dir(p.Path), ".proofgate-"+path.Base(p.Path)+".tmp")
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	defer root.Remove(tmp)
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(f, h), src)
	if err == nil {
		err = durable.Sync(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != p.Digest {
		return fmt.Errorf("the stored blob hashes to %s, the log recorded %s", got, p.Digest)
	}
	if replace {
		err = root.Rename(tmp, p.Path)
	} else {
		err = root.Link(tmp, p.Path)
	}
	if err != nil {
		return err
	}
	return durable.SyncDir(filepath.Join(root.Name(), filepath.FromSlash(strings.TrimSuffix(path.Dir(p.Path), "."))))
}
