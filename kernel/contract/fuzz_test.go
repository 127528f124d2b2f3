package contract

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

// FuzzParse feeds arbitrary bytes (up to 64 KiB) to Parse: it must never
// panic, must finish within two seconds, must report failures as *Error,
// and whatever it accepts must canonicalise, hash stably, survive a JSON
// round trip of contract.json unchanged, and respect the invariants
// (argv, image, no Docker socket).
func FuzzParse(f *testing.F) {
	for _, seed := range []string{"testdata/valid.yaml", "testdata/valid.json", "testdata/minimal.yaml", "testdata/process.yaml", "testdata/tools.yaml", "testdata/rules.yaml"} {
		b, err := os.ReadFile(seed)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, "")
		f.Add(b, "quick")
		f.Add(b, "release")
		f.Add(b, "strict")
	}
	for _, file := range invalidFiles(f) {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, "")
	}
	addSectionSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte, profile string) {
		if len(data) > 64<<10 {
			return
		}
		start := time.Now()
		r, err := Parse("fuzz.yaml", data, profile)
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("Parse took %v on %d bytes", d, len(data))
		}
		if err != nil {
			if _, ok := AsError(err); !ok {
				t.Fatalf("error is %T, not *Error: %v", err, err)
			}
			return
		}
		c1, err := r.Canonical()
		if err != nil {
			t.Fatalf("accepted contract does not canonicalise: %v", err)
		}
		h1, err := r.Hash()
		if err != nil {
			t.Fatal(err)
		}
		r2, err := Parse("fuzz.yaml", data, profile)
		if err != nil {
			t.Fatalf("second parse failed: %v", err)
		}
		c2, _ := r2.Canonical()
		h2, _ := r2.Hash()
		if h1 != h2 || !bytes.Equal(c1, c2) {
			t.Fatalf("unstable hash: %s vs %s", h1, h2)
		}
		var back Resolved
		if err := json.Unmarshal(c1, &back); err != nil {
			t.Fatalf("contract.json does not read back: %v", err)
		}
		if c3, err := back.Canonical(); err != nil || !bytes.Equal(c1, c3) {
			t.Fatalf("contract.json round trip changed it:\n%s\n%s", c1, c3)
		}
		if len(r.Checks) == 0 || len(r.Checks) > 256 {
			t.Fatalf("%d checks accepted", len(r.Checks))
		}
		for _, c := range r.Checks {
			if len(c.Run) == 0 || c.Run[0] == "" {
				t.Fatalf("check %s accepted with empty argv", c.ID)
			}
			if c.Runtime == "docker" && c.Image == "" {
				t.Fatalf("check %s accepted without image", c.ID)
			}
			for _, m := range c.Mounts {
				if MountsDockerSocket(m.Source) {
					t.Fatalf("check %s mounts the Docker socket via %q", c.ID, m.Source)
				}
			}
		}
		checkToolInvariants(t, r)
	})
}

// checkToolInvariants asserts what the loader promises of tools and policy:
// unique ASCII names, argv templates whose only "{{" elements are whole
// required parameters (never the program), no env_from_host, docker tools
// with an image, and rules naming declared tools with unique ids.
func checkToolInvariants(t *testing.T, r *Resolved) {
	t.Helper()
	names := map[string]bool{}
	for _, tl := range r.Tools {
		if !toolName.MatchString(tl.Name) || names[tl.Name] {
			t.Fatalf("tool name %q accepted (duplicate or invalid)", tl.Name)
		}
		names[tl.Name] = true
		if len(tl.Run) == 0 || tl.Run[0] == "" || strings.Contains(tl.Run[0], "{{") {
			t.Fatalf("tool %s accepted with argv %q", tl.Name, tl.Run)
		}
		for _, a := range tl.Run[1:] {
			name, whole := TemplateParam(a)
			if !whole && strings.Contains(a, "{{") {
				t.Fatalf("tool %s accepted partial template %q", tl.Name, a)
			}
			if whole && !tl.Params[name].Required {
				t.Fatalf("tool %s accepted template of a missing or optional parameter %q", tl.Name, a)
			}
		}
		if tl.Runtime == "docker" && tl.Image == "" {
			t.Fatalf("tool %s accepted without image", tl.Name)
		}
		if len(tl.Execution().EnvFromHost) != 0 {
			t.Fatalf("tool %s takes host variables", tl.Name)
		}
	}
	ids := map[string]bool{}
	for _, rule := range r.Policy {
		if !names[rule.Tool] || ids[rule.ID] || rule.ID == DefaultRuleID {
			t.Fatalf("rule %+v accepted", rule)
		}
		ids[rule.ID] = true
	}
}

// addSectionSeeds adds the minimal contract with each newer section
// (retention, cleanup, benchmark, authorization, approval.agent_sessions),
// valid as their tests write them, plus hostile variants of each.
func addSectionSeeds(f *testing.F) {
	base, err := os.ReadFile("testdata/minimal.yaml")
	if err != nil {
		f.Fatal(err)
	}
	for _, extra := range []string{
		"retention: {}\n",
		"retention: {archive_after: 30d, blob_min_age: 2h}\n",
		"cleanup: [build, out/tmp]\n",
		"benchmark: {suite: s1, task: t1}\n",
		"authorization: {required: true}\n",
		"approval:\n  required: 2\n  agent_sessions: {workflow: .github/workflows/agent.yml}\n",
		"retention: {archive_after: 30d, blob_min_age: 2h}\ncleanup: [build]\nbenchmark: {suite: s1, task: t1}\nauthorization: {required: true}\n" +
			"approval: {agent_sessions: {workflow: .github/workflows/agent.yml}}\nprofiles:\n  quick: {}\n",
		// hostile: duplicates, case variants, huge numbers, escapes, nesting
		"retention: {archive_after: 30d, archive_after: 31d}\n",
		"Retention: {archive_after: 30d}\n",
		"retention: {archive_after: 99999999999999999999d}\n",
		"retention: {archive_after: 9223372036854775807h}\n",
		"cleanup: [a, a]\n",
		"cleanup: [../x, /abs, a/../../b]\n",
		"benchmark: {suite: s1, task: t1, Task: t2}\n",
		"authorization: {required: true, required: false}\n",
		"approval: {agent_sessions: {workflow: .github/workflows/../../x.yml}}\n",
		"approval: {agent_sessions: {workflow: .github/workflows/a.yml, workflow: .github/workflows/b.yml}}\n",
		"profiles:\n  p: {cleanup: [x], benchmark: {suite: a, task: b}, retention: {archive_after: 30d}}\n",
		"cleanup: " + strings.Repeat("[", 200) + strings.Repeat("]", 200) + "\n",
		"retention: {archive_after: 30",
	} {
		f.Add(append(bytes.Clone(base), extra...), "")
		f.Add(append(bytes.Clone(base), extra...), "quick")
	}
}
