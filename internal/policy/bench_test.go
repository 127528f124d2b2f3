package policy

import (
	"fmt"
	"strings"
	"testing"

	"github.com/proofgate/proofgate/kernel/contract"
)

// BenchmarkDecide decides against the largest policy the schema admits
// (256 tools, 1024 rules), for the tool whose rule is last.
func BenchmarkDecide(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(head + "tools:\n")
	for i := range 256 {
		fmt.Fprintf(&sb, "  - {name: t%d, run: [/bin/true]}\n", i)
	}
	sb.WriteString("policy:\n")
	for i := range 1024 {
		fmt.Fprintf(&sb, "  - {tool: t%d, effect: allow}\n", (i+1)%256)
	}
	r, err := contract.Parse("c.yaml", []byte(sb.String()), "")
	if err != nil {
		b.Fatal(err)
	}
	g := New(r)
	b.ReportAllocs()
	for b.Loop() {
		if d := g.Decide("t0"); d.Rule != 255 {
			b.Fatalf("%+v", d)
		}
	}
}
