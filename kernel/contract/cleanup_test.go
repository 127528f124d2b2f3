package contract

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// Contracts without cleanup or benchmark hash exactly as before; an empty
// cleanup list is the same as none.
func TestHashUnchangedWithoutCleanupOrBenchmark(t *testing.T) {
	data := minimalYAML(t)
	for _, extra := range []string{"", "cleanup: []\n"} {
		minimalUnchanged(t, extra)
	}
	if h := mustHash(t, mustParse(t, string(data), "")); h != "sha256:d68ddc54ff6c91a8ce7703f19667f080d0d899c36db9a45dc1597f7bc0710df7" {
		t.Errorf("minimal hash %s changed", h)
	}
}

// Cleanup roots and the benchmark binding are in the hash and the
// canonical form; profiles inherit them.
func TestCleanupAndBenchmarkHashed(t *testing.T) {
	data, _ := os.ReadFile("testdata/minimal.yaml")
	base := mustHash(t, mustParse(t, string(data), ""))
	seen := map[string]string{base: "base"}
	for _, extra := range []string{
		"cleanup: [build]\n",
		"cleanup: [build, out/tmp]\n",
		"benchmark: {suite: s1, task: t1}\n",
		"benchmark: {suite: s1, task: t2}\n",
	} {
		r := mustParse(t, string(data)+extra+"profiles:\n  quick: {}\n", "quick")
		h := mustHash(t, r)
		if prev, dup := seen[h]; dup {
			t.Errorf("%q hashes like %q", extra, prev)
		}
		seen[h] = extra
		c, _ := r.Canonical()
		if strings.HasPrefix(extra, "cleanup") && (len(r.Cleanup) == 0 || !bytes.Contains(c, []byte(`"cleanup":["build"`))) {
			t.Errorf("%q: cleanup %v, canonical %s", extra, r.Cleanup, c)
		}
		if strings.HasPrefix(extra, "benchmark") && (r.Benchmark == nil || r.Benchmark.Suite != "s1") {
			t.Errorf("%q: benchmark %+v", extra, r.Benchmark)
		}
	}
}

// Hostile cleanup roots are refused with the field path and the reason.
func TestCleanupRootsRefused(t *testing.T) {
	data, _ := os.ReadFile("testdata/minimal.yaml")
	for root, want := range map[string]string{
		`".git"`:            "names .git",
		`"a/.git/hooks"`:    "names .git",
		`".."`:              "contains '..'",
		`"a/../../etc"`:     "contains '..'",
		`"/tmp"`:            "absolute",
		`"."`:               "the repository itself",
		`"a/"`:              "not a clean path",
		`"./a"`:             "not a clean path",
		`".proofgate"`:      "state directory",
		`".proofgate/runs"`: "state directory",
		`"a\\b"`:            "backslash",
		`""`:                "", // schema: minLength
	} {
		_, err := Parse("contract.yaml", []byte(string(data)+"cleanup: ["+root+"]\n"), "")
		if err == nil || !strings.Contains(err.Error(), "cleanup") || !strings.Contains(err.Error(), want) {
			t.Errorf("cleanup [%s]: %v (want %q)", root, err, want)
		}
	}
	if _, err := Parse("c.yaml", []byte(string(data)+"cleanup: [a, a]\n"), ""); err == nil || !strings.Contains(err.Error(), "duplicate") {
		t.Errorf("duplicate root: %v", err)
	}
	for _, bad := range []string{"benchmark: {suite: s1}\n", "benchmark: {suite: s1, task: t1, x: 1}\n", "benchmark: {suite: S 1, task: t}\n",
		"profiles:\n  p: {cleanup: [x]}\n", "profiles:\n  p: {benchmark: {suite: a, task: b}}\n"} {
		if _, err := Parse("c.yaml", []byte(string(data)+bad), ""); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// minimalYAML is testdata/minimal.yaml, the contract whose canonical form
// and hash the golden files pin.
func minimalYAML(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("testdata/minimal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// minimalUnchanged parses minimal.yaml plus extra and wants its canonical
// form to be exactly testdata/minimal.canonical.json: a section that is
// absent or empty must not change existing contract hashes.
func minimalUnchanged(t *testing.T, extra string) (*Resolved, []byte) {
	t.Helper()
	want, err := os.ReadFile("testdata/minimal.canonical.json")
	if err != nil {
		t.Fatal(err)
	}
	r := mustParse(t, minimalYAML(t)+extra, "")
	c, err := r.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(c, bytes.TrimSpace(want)) {
		t.Errorf("with %q: canonical changed:\n%s", extra, c)
	}
	return r, c
}
