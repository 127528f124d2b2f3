// Command crashprobe appends three events to a new log at os.Args[1]
// with the eventlog package compiled into an ordinary program (not a test
// binary): TestCrashHookInertOutsideTests runs it with the crash hook set
// and expects it to live.
package main

import (
	"fmt"
	"os"

	"github.com/proofgate/proofgate/kernel/eventlog"
)

func main() {
	l, err := eventlog.Create(os.Args[1], eventlog.Binding{Run: "r1", Contract: "sha256:00"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for i := range 3 {
		if _, err := l.Append("note", map[string]int{"n": i}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	if err := l.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
