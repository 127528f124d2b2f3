package replay

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Every event type the replay accepts is documented in docs/SPEC.md §4,
// and every row says who may write it.
func TestEventTypesDocumented(t *testing.T) {
	b, err := os.ReadFile("../../docs/SPEC.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n## 4. Event types\n")
	if !ok {
		t.Fatal("docs/SPEC.md has no section \"## 4. Event types\"")
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	for _, typ := range Types() {
		if !strings.Contains(sec, "\n| `"+typ+"` |") {
			t.Errorf("event type %s is not a row of docs/SPEC.md §4", typ)
		}
		if eventTypes[typ].writers == 0 {
			t.Errorf("event type %s: no writer may append it", typ)
		}
	}
}

func TestEventTypeTable(t *testing.T) {
	for _, typ := range Types() {
		if eventTypes[typ].first != (typ == TypePlanned) {
			t.Errorf("%s: first = %v; only run.planned opens a log", typ, eventTypes[typ].first)
		}
	}
	for _, tc := range []struct {
		typ  string
		w    Writer
		want bool
	}{
		{TypeCheckpoint, WriterAppend, true},
		{TypeLockBroken, WriterAppend, true},
		{TypeApproval, WriterAppend, false},
		{TypeState, WriterAppend, false},
		{TypeRecovered, WriterAppend, false},
		{TypeRecovered, WriterEventLog, true},
		{TypePlanned, WriterKernel, true},
		{"session.started", WriterAppend, false},
		{TypeSessionStarted, WriterSession, true},
		{TypeToolFinished, WriterSession, true},
		{TypeToolDecided, WriterKernel, false},
		{TypeState, WriterSession, false},
		{TypeCheckpoint, WriterSession, false},
	} {
		if got := MayWrite(tc.typ, tc.w); got != tc.want {
			t.Errorf("MayWrite(%s, %d) = %v, want %v", tc.typ, tc.w, got, tc.want)
		}
	}
}

// The table is the one place event types are registered: no other file
// of the package writes a row (as init functions once did, so the table
// said "every type" and listed fewer).
func TestEventTypesOnlyInTheTable(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`eventTypes\[[^\]]*\]\s*=`)
	for _, f := range files {
		if f == "table.go" || strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if loc := row.FindIndex(b); loc != nil {
			t.Errorf("%s writes a row of eventTypes (%q): add it to the table in table.go", f, b[loc[0]:loc[1]])
		}
	}
}
