package blob_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/proofgate/proofgate/internal/blob"
)

// temps lists the store's temporary files.
func temps(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, ".tmp-*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// waitTemps waits until dir holds n temporary files.
func waitTemps(t *testing.T, dir string, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); len(temps(t, dir)) != n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("temporary files %v, want %d", temps(t, dir), n)
		}
	}
}

// Fill makes files ready in the background; a new blob is stored through
// one of them (the same bytes, read-only, verified, no other file made),
// an existing blob uses none; Close removes what is left.
func TestSparesPutThroughReadyFiles(t *testing.T) {
	dir := t.TempDir()
	sp := blob.New(dir).Spares(2)
	sp.Fill()
	waitTemps(t, dir, 2)
	ready := temps(t, dir)
	b := []byte("hello n1\n")
	n, err := sp.PutMany([]string{digest(b)}, [][]byte{b})
	if err != nil || n != int64(len(b)) {
		t.Fatalf("put: %d %v", n, err)
	}
	left := temps(t, dir)
	if len(left) != 1 || (left[0] != ready[0] && left[0] != ready[1]) {
		t.Fatalf("after one new blob: %v, want one of %v", left, ready)
	}
	s := blob.New(dir)
	if err := s.Verify(digest(b)); err != nil {
		t.Fatal(err)
	}
	p, _ := s.Path(digest(b))
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o444 {
		t.Fatalf("stored blob: %v %v", fi, err)
	}
	if _, err := sp.PutMany([]string{digest(b)}, [][]byte{b}); err != nil {
		t.Fatal(err)
	}
	if got := temps(t, dir); len(got) != 1 {
		t.Fatalf("an existing blob used a ready file: %v", got)
	}
	sp.Close()
	if got := temps(t, dir); len(got) != 0 {
		t.Fatalf("after Close: %v", got)
	}
	sp.Fill() // after Close: nothing
	time.Sleep(10 * time.Millisecond)
	if got := temps(t, dir); len(got) != 0 {
		t.Fatalf("Fill after Close made %v", got)
	}
}

// Without ready files PutMany creates its own, as Store.PutMany does.
func TestSparesWithoutFill(t *testing.T) {
	dir := t.TempDir()
	sp := blob.New(dir).Spares(2)
	defer sp.Close()
	b := []byte("x")
	if _, err := sp.PutMany([]string{digest(b)}, [][]byte{b}); err != nil {
		t.Fatal(err)
	}
	if err := blob.New(dir).Verify(digest(b)); err != nil {
		t.Fatal(err)
	}
	if got := temps(t, dir); len(got) != 0 {
		t.Fatalf("temporary files left: %v", got)
	}
}

// Puts, fills and a close racing (go test -race): every blob is stored,
// no temporary file survives Close.
func TestSparesConcurrent(t *testing.T) {
	dir := t.TempDir()
	sp := blob.New(dir).Spares(2)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 25 {
				sp.Fill()
				b := []byte(fmt.Sprintf("g%d-%d", g, i))
				if _, err := sp.PutMany([]string{digest(b)}, [][]byte{b}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	sp.Fill()
	sp.Close()
	if got := temps(t, dir); len(got) != 0 {
		t.Fatalf("after Close: %v", got)
	}
	s := blob.New(dir)
	for g := range 4 {
		for i := range 25 {
			if err := s.Verify(digest([]byte(fmt.Sprintf("g%d-%d", g, i)))); err != nil {
				t.Fatal(err)
			}
		}
	}
}
