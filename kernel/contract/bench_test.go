package contract

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// worstCase builds a contract close to every bound: 256 checks with env
// and mounts, 64 profiles extending each other in one chain, each
// overriding every check, as large as MaxFileSize allows.
func worstCase() []byte {
	var b strings.Builder
	b.WriteString("version: 1\nname: worst\ndefaults: {runtime: process, env: {A: a}}\ncriteria:\n")
	for i := range 64 {
		fmt.Fprintf(&b, "  - {id: c%d, text: criterion %d}\n", i, i)
	}
	b.WriteString("checks:\n")
	for i := range 256 {
		fmt.Fprintf(&b, "  - {id: k%d, run: [echo, \"%d\"], criteria: [c%d], env: {B: b}, mounts: [{source: /srv/m%d, target: /m}]", i, i, i%64, i)
		if i > 0 {
			fmt.Fprintf(&b, ", depends_on: [k%d]", i-1)
		}
		b.WriteString("}\n")
	}
	b.WriteString("profiles:\n")
	for p := range 64 {
		fmt.Fprintf(&b, "  p%d:\n", p)
		if p > 0 {
			fmt.Fprintf(&b, "    extends: p%d\n", p-1)
		}
		b.WriteString("    checks:\n")
		for i := range 256 {
			line := fmt.Sprintf("      - {id: k%d, timeout: %ds, pull: never}\n", i, p+1)
			if b.Len()+len(line) > MaxFileSize-100 {
				break
			}
			b.WriteString(line)
		}
	}
	return []byte(b.String())
}

func TestWorstCaseIsBounded(t *testing.T) {
	data := worstCase()
	start := time.Now()
	r, err := Parse("worst.yaml", data, "p63")
	if err != nil {
		t.Fatal(err)
	}
	d := time.Since(start)
	t.Logf("worst case: %d bytes, %d checks, parsed in %v", len(data), len(r.Checks), d)
	// A guard against super-linear blow-ups, not a speed target: ~0.6s of
	// CPU unloaded, up to ~25s wall under -race on a loaded 2-core machine.
	if d > 90*time.Second {
		t.Fatalf("worst case took %v", d)
	}
}

func BenchmarkParseValid(b *testing.B) {
	data, err := os.ReadFile("testdata/valid.yaml")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Parse("valid.yaml", data, "release"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseWorstCase(b *testing.B) {
	data := worstCase()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Parse("worst.yaml", data, "p63"); err != nil {
			b.Fatal(err)
		}
	}
}
