package cache

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkAcquireRelease: the harness's cost of one read-only and one
// writable use of a cache of 10,000 files in 256 directories (about the
// shape of a Go build cache): two tree walks each, plus the lock and the
// state record. Reported per use.
func BenchmarkAcquireRelease(b *testing.B) {
	s, err := Open(b.TempDir(), Local(), "")
	if err != nil {
		b.Fatal(err)
	}
	l, err := s.Acquire(context.Background(), "r", "c", []Use{rw})
	if err != nil {
		b.Fatal(err)
	}
	dir := l.Mounts()[0].Source
	for i := range 10000 {
		p := filepath.Join(dir, fmt.Sprintf("%02x", i%256), fmt.Sprintf("%d-a", i))
		os.MkdirAll(filepath.Dir(p), 0o777)
		if err := os.WriteFile(p, []byte("entry"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	l.Release()
	for _, u := range []Use{ro, rw} {
		b.Run(fmt.Sprintf("readonly=%v", u.ReadOnly), func(b *testing.B) {
			for b.Loop() {
				l, err := s.Acquire(context.Background(), "r", "c", []Use{u})
				if err != nil {
					b.Fatal(err)
				}
				if err := l.Release(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRunCacheUse: the harness's cost of one read-only use of a
// run-lifetime cache the size of a node_modules (20,000 files, 200 MB in
// 200 directories): its Acquire and Release walks (the bind mount itself
// is constant time), per use; and, once, the cost of removing the tree
// when the run ends (RunDir.Close), reported as close-ms.
func BenchmarkRunCacheUse(b *testing.B) {
	s, err := Open(b.TempDir(), Local(), "")
	if err != nil {
		b.Fatal(err)
	}
	d, err := s.OpenRun()
	if err != nil {
		b.Fatal(err)
	}
	l, err := d.Acquire(context.Background(), "r", "install", []Use{nm})
	if err != nil {
		b.Fatal(err)
	}
	dir := l.Mounts()[0].Source
	body := make([]byte, 10<<10)
	for i := range 20000 {
		p := filepath.Join(dir, fmt.Sprintf("d%d", i/100), fmt.Sprintf("f%d.js", i))
		os.MkdirAll(filepath.Dir(p), 0o777)
		if err := os.WriteFile(p, body, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Release(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		l, err := d.Acquire(context.Background(), "r", "test", []Use{nmRO})
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Release(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	start := time.Now()
	if err := d.Close(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(time.Since(start).Milliseconds()), "close-ms")
}
