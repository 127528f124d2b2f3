package cache

import (
	"os"
	"testing"
)

// BenchmarkWalkDir: one walk of the tree in $PROOFGATE_BENCH_TREE (for
// example a module cache), by the walk this system uses and by the
// portable one; skipped without it.
func BenchmarkWalkDir(b *testing.B) {
	dir := os.Getenv("PROOFGATE_BENCH_TREE")
	if dir == "" {
		b.Skip("PROOFGATE_BENCH_TREE not set")
	}
	for _, w := range []struct {
		name string
		walk func() (Tree, error)
	}{
		{"walk", func() (Tree, error) { return walkTree(dir, false) }},
		{"portable", func() (Tree, error) { return walkTreePortable(dir, nil) }},
	} {
		b.Run(w.name, func(b *testing.B) {
			var n int64
			for b.Loop() {
				t, err := w.walk()
				if err != nil {
					b.Fatal(err)
				}
				n = t.Entries
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/entry")
		})
	}
}
