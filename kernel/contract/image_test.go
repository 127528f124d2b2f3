package contract

import (
	"strings"
	"testing"
)

// TestImageWarnings: a docker check whose image has no digest is named,
// a pinned one and a process check are not, and the warning says how to pin.
func TestImageWarnings(t *testing.T) {
	const src = `version: 1
name: x
defaults: {runtime: docker, image: "busybox:1.36"}
checks:
  - {id: tagged, run: ['true']}
  - {id: pinned, image: "busybox@sha256:0000000000000000000000000000000000000000000000000000000000000000", run: ['true']}
  - {id: local, runtime: process, run: ['true']}
  - {id: registry, image: "ghcr.io/o/r:v1@sha256:1111111111111111111111111111111111111111111111111111111111111111", run: ['true']}
  - {id: bare, image: "localhost:5000/team/tool", run: ['true']}
`
	r, err := Parse("c.yaml", []byte(src), "")
	if err != nil {
		t.Fatal(err)
	}
	ws := r.Warnings("c.yaml")
	if len(ws) != 2 {
		t.Fatalf("warnings = %v, want 2 (tagged, bare)", ws)
	}
	if ws[0].Path != "checks[0].image" || ws[1].Path != "checks[4].image" {
		t.Fatalf("paths = %q, %q", ws[0].Path, ws[1].Path)
	}
	if !strings.Contains(ws[0].String(), `c.yaml: checks[0].image: "busybox:1.36" is not pinned by digest`) ||
		!strings.Contains(ws[0].Msg, "busybox:1.36@sha256:<digest>") {
		t.Fatalf("warning = %q", ws[0])
	}
}

// TestImageProblem covers the grammar's edges: what docker pull accepts
// passes, placeholders and malformed references do not.
func TestImageProblem(t *testing.T) {
	ok := []string{"x", "busybox", "busybox:1.36", "library/busybox:latest", "localhost:5000/a/b:c",
		"ghcr.io/owner/repo@sha256:" + strings.Repeat("a", 64), "proofgate-test/helper:dev"}
	for _, s := range ok {
		if msg := imageProblem(s); msg != "" {
			t.Errorf("imageProblem(%q) = %q, want valid", s, msg)
		}
	}
	bad := map[string]string{
		"IMAGE@sha256:<fill in>":                    "placeholder",
		"golang@<digest>":                           "placeholder",
		"Busybox":                                   "lowercase",
		"busybox@sha256:" + "abc":                   "invalid digest",
		"busybox@md5:" + "ab":                       "invalid digest",
		"busybox@sha256:" + strings.Repeat("A", 64): "invalid digest",
		"busybox:":                                  "not a valid image reference",
		"-busybox":                                  "not a valid image reference",
		"a/" + strings.Repeat("b", 300):             "not a valid image reference",
	}
	for s, want := range bad {
		if msg := imageProblem(s); !strings.Contains(msg, want) {
			t.Errorf("imageProblem(%q) = %q, want it to contain %q", s, msg, want)
		}
	}
}

// TestImageDigestForms: the local image-ID pin NAME[:TAG]@sha256:<64 hex>
// (ADR 0031) is a valid, pinned reference (no warning); a digest that is
// truncated, too long, upper-case, without its algorithm or with an empty
// hex is refused at the field.
func TestImageDigestForms(t *testing.T) {
	hex := strings.Repeat("0123456789abcdef", 4)
	for _, s := range []string{"my-tool@sha256:" + hex, "my-tool:dev@sha256:" + hex, "localhost:5000/team/tool:v2@sha256:" + hex} {
		src := "version: 1\nname: x\nchecks:\n  - {id: a, runtime: docker, image: \"" + s + "\", run: ['true']}\n"
		r, err := Parse("c.yaml", []byte(src), "")
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		if ws := r.Warnings("c.yaml"); len(ws) != 0 {
			t.Fatalf("%s: warnings %v, want none (pinned)", s, ws)
		}
	}
	bad := []string{
		"my-tool@sha256:" + hex[:12],                   // docker images' short ID
		"my-tool@sha256:" + hex[:63],                   // one short
		"my-tool@sha256:" + hex + "0",                  // one long
		"my-tool@sha256:" + strings.ToUpper(hex),       // upper-case hex
		"my-tool@sha256:",                              // empty
		"my-tool@" + hex,                               // no algorithm
		"my-tool@sha256:" + hex[:63] + "g",             // not hex
		"my-tool:dev@sha256:" + hex + "@sha256:" + hex, // two digests
	}
	for _, s := range bad {
		src := "version: 1\nname: x\nchecks:\n  - {id: a, runtime: docker, image: \"" + s + "\", run: ['true']}\n"
		_, err := Parse("c.yaml", []byte(src), "")
		if err == nil || !strings.Contains(err.Error(), "checks[0].image") || !strings.Contains(err.Error(), "not a valid image reference") {
			t.Errorf("%s: %v, want an error at checks[0].image", s, err)
		}
	}
}
