package artifact_test

import (
	"strings"
	"testing"

	"github.com/proofgate/proofgate/internal/ci/artifact"
)

func FuzzBackendIDs(f *testing.F) {
	f.Add(jwt(`{"scp":"Actions.ExampleScope Actions.Results:ce7f54c7:ca395085"}`))
	f.Add(jwt(`{"scp":["Actions.Results:a:b"]}`))
	f.Add(jwt(`{"scp":"Actions.Results:a:b:c"}`))
	f.Add("a.b.c")
	f.Add("")
	f.Fuzz(func(t *testing.T, tok string) {
		run, job, err := artifact.BackendIDs(tok)
		if err != nil {
			return
		}
		if run == "" || job == "" || strings.Contains(run, ":") || strings.Contains(job, ":") {
			t.Fatalf("bad ids %q %q from %q", run, job, tok)
		}
	})
}

func FuzzUnzip(f *testing.F) {
	f.Add(rawZip(f, zipEntry{name: "a", data: []byte("x")}, zipEntry{name: "d/b", data: []byte("yy")}))
	f.Add(rawZip(f, zipEntry{name: "../a", data: []byte("x")}))
	f.Add([]byte("PK\x05\x06" + strings.Repeat("\x00", 18)))
	f.Fuzz(func(t *testing.T, data []byte) {
		files, err := artifact.Unzip(data, 1<<10, 4<<10)
		if err != nil {
			return
		}
		var total int
		for name, b := range files {
			if strings.HasPrefix(name, "/") || strings.Contains(name, "..") && (name == ".." || strings.HasPrefix(name, "../") || strings.Contains(name, "/../") || strings.HasSuffix(name, "/..")) || strings.Contains(name, "\\") {
				t.Fatalf("unsafe name accepted: %q", name)
			}
			if len(b) > 1<<10 {
				t.Fatalf("entry %q over the bound", name)
			}
			total += len(b)
		}
		if total > 4<<10 {
			t.Fatal("total over the bound")
		}
	})
}
