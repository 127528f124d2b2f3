package eventlog_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/proofgate/proofgate/kernel/eventlog"
)

// A log is created bound to one run, source and contract; each Append
// writes one canonical, hash-chained line and fsyncs it before returning.
// Verify re-reads the file and checks every link and the binding.
func ExampleLog_Append() {
	dir, err := os.MkdirTemp("", "eventlog-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "events.ndjson")
	b := eventlog.Binding{
		Run:      "20260102T030405.000Z-0123abcd",
		Source:   eventlog.Source{Commit: strings.Repeat("a", 40), Tree: strings.Repeat("b", 40)},
		Contract: "sha256:" + strings.Repeat("c", 64),
	}
	l, err := eventlog.Create(path, b)
	if err != nil {
		log.Fatal(err)
	}
	first, err := l.Append("run.planned", map[string]any{"checks": []string{"unit"}})
	if err != nil {
		log.Fatal(err)
	}
	second, err := l.Append("state.changed", map[string]string{"from": "PLANNED", "to": "VERIFYING"})
	if err != nil {
		log.Fatal(err)
	}
	l.Close()
	fmt.Println(first.Seq, first.Prev == nil, second.Seq, *second.Prev == first.Hash)

	f, err := os.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	sum, err := eventlog.Verify(f, &b)
	fmt.Println(sum.Len, sum.Head == second.Hash, err)
	// Output:
	// 1 true 2 true
	// 2 true <nil>
}
