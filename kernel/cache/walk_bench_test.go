package cache

import (
	"os"
	"testing"
)

// BenchmarkWalkDir: one walk of the tree in $PROOFGATE_BENCH_TREE (for
// example a module cache); skipped without it.
func BenchmarkWalkDir(b *testing.B) {
	dir := os.Getenv("PROOFGATE_BENCH_TREE")
	if dir == "" {
		b.Skip("PROOFGATE_BENCH_TREE not set")
	}
	var n int64
	for b.Loop() {
		t, err := walkTree(dir, false)
		if err != nil {
			b.Fatal(err)
		}
		n = t.Entries
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/entry")
}
