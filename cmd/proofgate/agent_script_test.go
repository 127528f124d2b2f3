package main

import (
	"regexp"

	"github.com/rogpeppe/go-internal/testscript"
)

// grab VAR stdout|stderr REGEXP sets $VAR to the first submatch of REGEXP
// in the last command's stdout or stderr (the agent scenarios capture the
// session and action ids the CLI prints).
func cmdGrab(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 || (args[1] != "stdout" && args[1] != "stderr") {
		ts.Fatalf("usage: grab VAR stdout|stderr REGEXP")
	}
	re, err := regexp.Compile("(?m)" + args[2])
	ts.Check(err)
	m := re.FindStringSubmatch(ts.ReadFile(args[1]))
	if len(m) < 2 {
		ts.Fatalf("%s does not match %q", args[1], args[2])
	}
	ts.Setenv(args[0], m[1])
}
