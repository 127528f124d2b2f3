package contract

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// jsonExpectations holds the expected error of the invalid JSON files,
// which cannot carry "# path:" and "# want:" comments.
var jsonExpectations = map[string][2]string{
	"too-many-checks.json":  {"checks", "has 257 items, want at most 256"},
	"unknown-field.json":    {"checks[0].shell", `unknown field "shell"`},
	"dup-key.json":          {"version", `duplicate key "version"`},
	"dup-env-key.json":      {"checks[0].env.A", `duplicate key "A"`},
	"case-variant-key.json": {"checks[0].Run", `unknown field "Run"`},
}

// expectation reads the "# path:" and "# want:" header of an invalid file.
func expectation(t *testing.T, name string, data []byte) (path, want string) {
	t.Helper()
	if e, ok := jsonExpectations[name]; ok {
		return e[0], e[1]
	}
	var havePath, haveWant bool
	for _, line := range strings.SplitN(string(data), "\n", 3)[:2] {
		if v, ok := strings.CutPrefix(line, "# path:"); ok {
			path, havePath = strings.TrimSpace(v), true
		}
		if v, ok := strings.CutPrefix(line, "# want:"); ok {
			want, haveWant = strings.TrimSpace(v), true
		}
	}
	if !havePath || !haveWant {
		t.Fatalf("%s: no '# path:' and '# want:' header and no entry in jsonExpectations", name)
	}
	return path, want
}

func invalidFiles(t testing.TB) []string {
	files, err := filepath.Glob(filepath.Join("testdata", "invalid", "*"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	if len(files) < 50 {
		t.Fatalf("only %d invalid contracts in testdata/invalid", len(files))
	}
	return files
}

// TestInvalidContracts loads every contract in testdata/invalid and checks
// that it is refused with an *Error naming the file, the expected field
// path and the expected message.
func TestInvalidContracts(t *testing.T) {
	for _, file := range invalidFiles(t) {
		name := filepath.Base(file)
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			wantPath, wantMsg := expectation(t, name, data)
			for _, profile := range []string{""} {
				r, err := Load(file, profile)
				if err == nil {
					t.Fatalf("accepted: %+v", r)
				}
				var ce *Error
				if !errors.As(err, &ce) {
					t.Fatalf("error is %T, not *contract.Error: %v", err, err)
				}
				if ce.File != file {
					t.Errorf("File = %q, want %q", ce.File, file)
				}
				if ce.Path != wantPath {
					t.Errorf("Path = %q, want %q (error: %v)", ce.Path, wantPath, err)
				}
				if !strings.Contains(ce.Msg, wantMsg) {
					t.Errorf("Msg = %q, want it to contain %q", ce.Msg, wantMsg)
				}
				prefix := file
				if ce.Line > 0 { // a YAML syntax error: file:line:col:
					prefix += ":" + strconv.Itoa(ce.Line) + ":" + strconv.Itoa(ce.Column)
				}
				prefix += ": "
				if wantPath != "" {
					prefix += wantPath + ": "
				}
				if !strings.HasPrefix(err.Error(), prefix) {
					t.Errorf("Error() = %q, want prefix %q", err.Error(), prefix)
				}
				// Deterministic: the same input yields the same error.
				for range 3 {
					_, again := Load(file, profile)
					if again == nil || again.Error() != err.Error() {
						t.Fatalf("second load gave %v, first %v", again, err)
					}
				}
			}
		})
	}
}
