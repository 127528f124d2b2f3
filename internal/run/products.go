package run

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/proofgate/proofgate/internal/blob"
	"github.com/proofgate/proofgate/kernel/replay"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// productStore is the runtime.Collector of one check (ADR 0039): it stores
// each product in the run's blob store, content-addressed, within
// replay.MaxProducts and replay.MaxProductBytes.
type productStore struct {
	blobs *blob.Store
	mu    sync.Mutex
	got   []replay.Product
	total int64
}

// Add stores one product, read from r, which must hold exactly size bytes.
func (ps *productStore) Add(path string, size int64, r io.Reader) error {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if !replay.ValidProductPath(path) {
		return fmt.Errorf("%q cannot name a product: a clean relative path of UTF-8 without control characters or backslashes", path)
	}
	if len(ps.got) >= replay.MaxProducts {
		return fmt.Errorf("%s: more than %d products", path, replay.MaxProducts)
	}
	if size < 0 || size > replay.MaxProductBytes-ps.total {
		return fmt.Errorf("%s: %d bytes, past the %d bytes a check's products may hold in all", path, size, int64(replay.MaxProductBytes))
	}
	w, err := ps.blobs.Create()
	if err != nil {
		return err
	}
	defer w.Abort()
	n, err := io.Copy(w, io.LimitReader(r, size+1))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if n != size {
		return fmt.Errorf("%s: read %d bytes, its entry said %d", path, n, size)
	}
	d, _, err := w.Commit()
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	ps.total += size
	ps.got = append(ps.got, replay.Product{Path: path, Digest: d, Size: size})
	return nil
}

// products returns what was stored, sorted by path, or why it is not what
// globs declare: a path offered twice, or a glob that matched nothing.
func (ps *productStore) products(globs []string) ([]replay.Product, error) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	got := slices.Clone(ps.got)
	slices.SortFunc(got, func(a, b replay.Product) int { return strings.Compare(a.Path, b.Path) })
	for i := 1; i < len(got); i++ {
		if got[i].Path == got[i-1].Path {
			return nil, fmt.Errorf("%s was offered twice", got[i].Path)
		}
	}
	for _, g := range globs {
		if !slices.ContainsFunc(got, func(p replay.Product) bool { return runtime.Produced([]string{g}, p.Path) }) {
			return nil, fmt.Errorf("no regular file in the workspace matches %q", g)
		}
	}
	return got, nil
}
