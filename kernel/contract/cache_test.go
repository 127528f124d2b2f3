package contract

import (
	"strings"
	"testing"
)

const cacheContract = `version: 1
name: t
defaults: {image: helper}
caches:
  go-mod: {mount: /cache/go-mod}
  go-build: {mount: /cache/go-build}
checks:
  - {id: fetch, run: [go, mod, download], network: host, caches: [go-mod]}
  - id: test
    run: [go, test]
    depends_on: [fetch]
    caches: [go-build, {name: go-mod, readonly: true}]
  - {id: plain, run: [echo]}
`

// TestCachesResolve: declared caches resolve sorted by name, checks keep
// their list order and mode, and both appear in the canonical form.
func TestCachesResolve(t *testing.T) {
	r := mustParse(t, cacheContract, "")
	if len(r.Caches) != 2 || r.Caches[0] != (Cache{Name: "go-build", Mount: "/cache/go-build"}) || r.Caches[1] != (Cache{Name: "go-mod", Mount: "/cache/go-mod"}) {
		t.Fatalf("caches %+v", r.Caches)
	}
	if u := r.Checks[0].Caches; len(u) != 1 || u[0] != (CacheUse{Name: "go-mod"}) {
		t.Fatalf("fetch uses %+v", u)
	}
	if u := r.Checks[1].Caches; len(u) != 2 || u[0] != (CacheUse{Name: "go-build"}) || u[1] != (CacheUse{Name: "go-mod", ReadOnly: true}) {
		t.Fatalf("test uses %+v", u)
	}
	if r.Checks[2].Caches != nil {
		t.Fatalf("plain uses %+v", r.Checks[2].Caches)
	}
	b, err := r.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"caches":[{"mount":"/cache/go-build","name":"go-build"},{"mount":"/cache/go-mod","name":"go-mod"}]`,
		`"caches":[{"name":"go-build"},{"name":"go-mod","readonly":true}]`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("canonical lacks %s:\n%s", want, b)
		}
	}
	// Equivalent spellings hash alike: {name: x} is the bare name.
	same := strings.Replace(cacheContract, "caches: [go-mod]}", "caches: [{name: go-mod, readonly: false}]}", 1)
	h1, _ := r.Hash()
	h2, _ := mustParse(t, same, "").Hash()
	if h1 != h2 {
		t.Fatalf("hash %s vs %s", h1, h2)
	}
}

// TestCachesKeepOldHashes: a contract without caches has the hash it had
// before caches existed (golden values computed on the parent commit).
func TestCachesKeepOldHashes(t *testing.T) {
	for file, want := range map[string]string{
		"testdata/valid.yaml":   "sha256:3586b1eacc43c0466a6c72d6a50a8f52b15da17171e5998d629d6b89ec8bdc1d",
		"testdata/minimal.yaml": "sha256:d68ddc54ff6c91a8ce7703f19667f080d0d899c36db9a45dc1597f7bc0710df7",
		"testdata/process.yaml": "sha256:ef8c76f8acd8d936e493f0cd11aed4eead9dbce958c93c34a9c16d7bf5d4d555",
	} {
		r, err := Load(file, "")
		if err != nil {
			t.Fatal(err)
		}
		if h, _ := r.Hash(); h != want {
			t.Errorf("%s: hash %s, want %s", file, h, want)
		}
	}
}

// TestCachesHostile: every refusal names the file and the field path.
func TestCachesHostile(t *testing.T) {
	cases := []struct {
		name, old, new, path, msg string
	}{
		{"undefined cache", "caches: [go-mod]}", "caches: [go-mdo]}", "checks[0].caches[0]", `unknown cache "go-mdo"`},
		{"named by no check", "caches: [go-build, {name: go-mod, readonly: true}]", "caches: [{name: go-mod, readonly: true}]", "caches.go-build", "named by no check"},
		{"used twice", "caches: [go-mod]}", "caches: [go-mod, {name: go-mod, readonly: true}]}", "checks[0].caches[1]", "already used at checks[0].caches[0]"},
		{"relative mount", "{mount: /cache/go-mod}", "{mount: cache/go-mod}", "caches.go-mod.mount", "must be an absolute path"},
		{"unclean mount", "{mount: /cache/go-mod}", "{mount: /cache/../go-mod}", "caches.go-mod.mount", "is not clean"},
		{"workspace", "{mount: /cache/go-mod}", "{mount: /workspace/.cache}", "caches.go-mod.mount", "only a cache with lifetime: run"},
		{"covers workspace", "{mount: /cache/go-mod}", "{mount: /workspace}", "caches.go-mod.mount", "overlaps /workspace"},
		{"tmp", "{mount: /cache/go-mod}", "{mount: /tmp/mod}", "caches.go-mod.mount", "overlaps /tmp"},
		{"home", "{mount: /cache/go-mod}", "{mount: /home}", "caches.go-mod.mount", "overlaps /home/sandbox"},
		{"proc", "{mount: /cache/go-mod}", "{mount: /proc/x}", "caches.go-mod.mount", "overlaps /proc"},
		{"root", "{mount: /cache/go-mod}", "{mount: /}", "caches.go-mod.mount", "over /"},
		{"each other", "{mount: /cache/go-mod}", "{mount: /cache/go-build/mod}", "caches.go-mod.mount", "overlaps cache go-build"},
		{"bad name", "  go-mod: {mount", "  Go_Mod: {mount", "caches.Go_Mod", "not a valid cache name"},
		{"unknown field", "{mount: /cache/go-mod}", "{mount: /cache/go-mod, key: x}", "caches.go-mod.key", "unknown field"},
		{"item field", "{name: go-mod, readonly: true}", "{name: go-mod, writable: true}", "checks[1].caches[1]", ""},
		{"process runtime", "network: host, caches: [go-mod]}", "network: host, runtime: process, caches: [go-mod]}", "checks[0].caches", "caches need runtime docker"},
		{"check mount overlap", "network: host, caches: [go-mod]}", "network: host, caches: [go-mod], mounts: [{source: /srv, target: /cache}]}", "checks[0].caches[0]", "overlaps the check's mount /cache"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.Replace(cacheContract, tc.old, tc.new, 1)
			if src == cacheContract {
				t.Fatalf("replacement %q not found", tc.old)
			}
			e := parseErr(t, src, "")
			if e.File != "contract.yaml" || !strings.HasPrefix(e.Path, tc.path) || !strings.Contains(e.Msg, tc.msg) {
				t.Fatalf("got %q (path %q), want path %s and %q", e.Error(), e.Path, tc.path, tc.msg)
			}
		})
	}
	// More caches than the bound.
	var b strings.Builder
	b.WriteString("version: 1\nname: t\ndefaults: {image: helper}\ncaches:\n")
	for i := range MaxCaches + 1 {
		b.WriteString("  c" + string(rune('a'+i)) + ": {mount: /c/" + string(rune('a'+i)) + "}\n")
	}
	b.WriteString("checks: [{id: a, run: [echo]}]\n")
	if e := parseErr(t, b.String(), ""); e.Path != "caches" || !strings.Contains(e.Msg, "at most 16") {
		t.Fatalf("too many caches: %v", e)
	}
	// A profile cannot change a check's caches.
	e := parseErr(t, cacheContract+"profiles:\n  p: {checks: [{id: plain, caches: [go-mod]}]}\n", "")
	if e.Path != "profiles.p.checks[0].caches" || !strings.Contains(e.Msg, "a profile cannot change caches") {
		t.Fatalf("profile caches: %v", e)
	}
}

const runCacheContract = `version: 1
name: t
defaults: {image: helper, workspace: copy}
caches:
  npm: {mount: /cache/npm}
  node-modules: {mount: /workspace/node_modules, lifetime: run}
checks:
  - {id: npm-install, network: host, caches: [npm, node-modules], run: [npm, ci]}
  - id: npm-test
    depends_on: [npm-install]
    caches: [{name: node-modules, readonly: true}]
    run: [npm, test]
`

// TestRunCacheResolve: lifetime run resolves (and may lie under
// /workspace); persistent, written out or absent, resolves to the same
// form and hash as a contract written before lifetimes.
func TestRunCacheResolve(t *testing.T) {
	r := mustParse(t, runCacheContract, "")
	want := []Cache{{Name: "node-modules", Mount: "/workspace/node_modules", Lifetime: LifetimeRun}, {Name: "npm", Mount: "/cache/npm"}}
	if len(r.Caches) != 2 || r.Caches[0] != want[0] || r.Caches[1] != want[1] || !r.Caches[0].Run() || r.Caches[1].Run() {
		t.Fatalf("caches %+v", r.Caches)
	}
	b, _ := r.Canonical()
	if !strings.Contains(string(b), `{"lifetime":"run","mount":"/workspace/node_modules","name":"node-modules"},{"mount":"/cache/npm","name":"npm"}`) {
		t.Fatalf("canonical %s", b)
	}
	h1, _ := mustParse(t, cacheContract, "").Hash()
	h2, _ := mustParse(t, strings.Replace(cacheContract, "{mount: /cache/go-mod}", "{mount: /cache/go-mod, lifetime: persistent}", 1), "").Hash()
	if h1 != h2 {
		t.Fatalf("lifetime: persistent changed the hash: %s vs %s", h1, h2)
	}
	// A run cache outside /workspace is fine too (a virtualenv at /venv).
	mustParse(t, strings.Replace(runCacheContract, "/workspace/node_modules", "/venv", 1), "")
	// A reader may depend on the install through another check.
	mustParse(t, runCacheContract+`  - {id: lint, depends_on: [npm-test], caches: [{name: node-modules, readonly: true}], run: [npm, run, lint]}
`, "")
}

// TestRunCacheHostile: what a run-lifetime cache may not do, each refusal
// naming the field path.
func TestRunCacheHostile(t *testing.T) {
	cases := []struct {
		name, old, new, path, msg string
	}{
		{"dotdot", "/workspace/node_modules,", "/workspace/../etc,", "caches.node-modules.mount", "is not clean"},
		{"workspace itself", "/workspace/node_modules,", "/workspace,", "caches.node-modules.mount", "overlaps /workspace"},
		{"over tmp", "/workspace/node_modules,", "/tmp/nm,", "caches.node-modules.mount", "overlaps /tmp"},
		{"overlaps persistent", "/workspace/node_modules,", "/cache/npm/nm,", "caches.npm.mount", "overlaps cache node-modules"},
		{"persistent under workspace", "{mount: /cache/npm}", "{mount: /workspace/.npm}", "caches.npm.mount", "only a cache with lifetime: run"},
		{"bad lifetime", "lifetime: run}", "lifetime: forever}", "caches.node-modules.lifetime", `"forever" is not one of "persistent", "run"`},
		{"readonly workspace", "defaults: {image: helper, workspace: copy}", "defaults: {image: helper}", "checks[0].caches[1]", "needs workspace: copy"},
		{"no workspace", "    run: [npm, test]\n", "    run: [npm, test]\n    workspace: none\n", "checks[1].caches[0]", "the check's workspace is none"},
		{"reader without writer", "    depends_on: [npm-install]\n", "", "checks[1].caches[0]", "depends on no check that writes it"},
		{"reader of a read-only install", "caches: [npm, node-modules], run: [npm, ci]", "caches: [npm, {name: node-modules, readonly: true}], run: [npm, ci]", "checks[0].caches[1]", "depends on no check that writes it"},
		{"profile narrows workspace", "    run: [npm, test]\n", "    run: [npm, test]\nprofiles:\n  p: {checks: [{id: npm-test, workspace: readonly}]}\n", "profiles.p.checks[0].workspace", "needs workspace: copy"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.Replace(runCacheContract, tc.old, tc.new, 1)
			if src == runCacheContract {
				t.Fatalf("replacement %q not found", tc.old)
			}
			profile := ""
			if strings.Contains(src, "profiles:") {
				profile = "p"
			}
			e := parseErr(t, src, profile)
			if e.File != "contract.yaml" || !strings.HasPrefix(e.Path, tc.path) || !strings.Contains(e.Msg, tc.msg) {
				t.Fatalf("got %q (path %q), want path %s and %q", e.Error(), e.Path, tc.path, tc.msg)
			}
		})
	}
}
