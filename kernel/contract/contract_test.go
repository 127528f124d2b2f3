package contract

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func mustLoad(t *testing.T, file, profile string) *Resolved {
	t.Helper()
	r, err := Load(file, profile)
	if err != nil {
		t.Fatalf("Load(%s, %q): %v", file, profile, err)
	}
	return r
}

func mustHash(t *testing.T, r *Resolved) string {
	t.Helper()
	h, err := r.Hash()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h, "sha256:") || len(h) != len("sha256:")+64 {
		t.Fatalf("malformed hash %q", h)
	}
	return h
}

func mustParse(t *testing.T, src, profile string) *Resolved {
	t.Helper()
	r, err := Parse("contract.yaml", []byte(src), profile)
	if err != nil {
		t.Fatalf("Parse: %v\n%s", err, src)
	}
	return r
}

func parseErr(t *testing.T, src, profile string) *Error {
	t.Helper()
	r, err := Parse("contract.yaml", []byte(src), profile)
	if err == nil {
		t.Fatalf("accepted: %+v\n%s", r, src)
	}
	ce, ok := AsError(err)
	if !ok {
		t.Fatalf("error is %T, not *Error: %v", err, err)
	}
	return ce
}

func TestErrorFormat(t *testing.T) {
	src := `version: 1
name: t
defaults: {runtime: process}
checks:
  - {id: a, run: [echo]}
  - {id: b, run: [echo]}
  - {id: c, run: [echo], timeout: 10 minutes}
`
	_, err := Parse("contract.yaml", []byte(src), "")
	want := `contract.yaml: checks[2].timeout: "10 minutes" is not a duration`
	if err == nil || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
	}
}

func TestBuiltinDefaults(t *testing.T) {
	r := mustLoad(t, "testdata/minimal.yaml", "")
	c, ok := r.Check("hello")
	if !ok {
		t.Fatal("check hello missing")
	}
	want := Check{
		ID:        "hello",
		Run:       []string{"echo", "hello"},
		Runtime:   "docker",
		Image:     "busybox@sha256:1111111111111111111111111111111111111111111111111111111111111111",
		Pull:      "never",
		Timeout:   Duration(10 * time.Minute),
		Output:    1 << 20,
		Network:   "none",
		Workspace: "readonly",
		Resources: Resources{Memory: 2 << 30, CPUs: 2000, Pids: 512},
		Tmpfs:     64 << 20,
	}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("check = %+v\nwant    %+v", c, want)
	}
	if !reflect.DeepEqual(r.Approval, Approval{Required: 1, Roles: []string{"write", "maintain", "admin"}}) {
		t.Fatalf("approval = %+v", r.Approval)
	}
	if r.Budget.MaxDuration != 0 || r.Profile != "" || r.Version != 1 || r.Name != "minimal" {
		t.Fatalf("resolved = %+v", r)
	}
}

func TestResolveOverlays(t *testing.T) {
	r := mustLoad(t, "testdata/valid.yaml", "")
	unit, _ := r.Check("unit")
	if unit.Resources != (Resources{Memory: 2 << 30, CPUs: 500, Pids: 512}) {
		t.Errorf("resources = %+v: cpus must overlay field by field", unit.Resources)
	}
	if !reflect.DeepEqual(unit.Env, map[string]string{"GOFLAGS": "-mod=readonly", "CGO_ENABLED": "0"}) {
		t.Errorf("env = %v: check env must overlay defaults key by key", unit.Env)
	}
	vet, _ := r.Check("vet")
	if !reflect.DeepEqual(vet.Env, map[string]string{"GOFLAGS": "-mod=readonly"}) {
		t.Errorf("vet env = %v: one check's env leaked into another", vet.Env)
	}
	if unit.Timeout != Duration(10*time.Minute) || r.Budget.MaxDuration != Duration(30*time.Minute) {
		t.Errorf("timeout %v budget %v", unit.Timeout, r.Budget.MaxDuration)
	}

	p := mustLoad(t, "testdata/process.yaml", "")
	b, _ := p.Check("build")
	if b.Dir != "cmd/tool" {
		t.Errorf("dir = %q, want cmd/tool (cleaned)", b.Dir)
	}
	rep, _ := p.Check("report")
	want := []string{"./scripts/report.sh", "$(id)", ";", "|", "*"}
	if !slices.Equal(rep.Run, want) {
		t.Errorf("argv = %q: shell metacharacters must stay literal", rep.Run)
	}
	if rep.Evidence != "structured" || rep.Runtime != "process" || rep.Image != "" {
		t.Errorf("report = %+v", rep)
	}
	if !reflect.DeepEqual(rep.Mounts, []Mount{{Source: "cache/go", Target: "/cache/go", Writable: true}, {Source: "/srv/fixtures", Target: "/fixtures"}}) {
		t.Errorf("mounts = %+v", rep.Mounts)
	}
	if !slices.Equal(p.Approval.Roles, []string{"maintain", "admin"}) || !p.Approval.AllowCommitAuthors || p.Approval.Required != 2 {
		t.Errorf("approval = %+v", p.Approval)
	}
}

func TestProfiles(t *testing.T) {
	base := mustLoad(t, "testdata/valid.yaml", "")
	quick := mustLoad(t, "testdata/valid.yaml", "quick")
	release := mustLoad(t, "testdata/valid.yaml", "release")

	if quick.Profile != "quick" || release.Profile != "release" || base.Profile != "" {
		t.Fatalf("profiles %q %q %q", base.Profile, quick.Profile, release.Profile)
	}
	for _, r := range []*Resolved{quick, release} {
		if len(r.Checks) != len(base.Checks) {
			t.Fatalf("%s has %d checks, base %d: a profile dropped a check", r.Profile, len(r.Checks), len(base.Checks))
		}
		u, _ := r.Check("unit")
		if u.Timeout != Duration(2*time.Minute) {
			t.Errorf("%s: unit timeout %v, want 2m (release extends quick)", r.Profile, u.Timeout)
		}
		v, _ := r.Check("vet")
		bv, _ := base.Check("vet")
		if !reflect.DeepEqual(v, bv) {
			t.Errorf("%s: vet changed though no profile touched it", r.Profile)
		}
	}
	if quick.Approval.Required != 1 || release.Approval.Required != 2 {
		t.Errorf("approvals quick %d release %d", quick.Approval.Required, release.Approval.Required)
	}
	// Resolving a profile never mutates the base.
	u, _ := base.Check("unit")
	if u.Timeout != Duration(10*time.Minute) {
		t.Errorf("base unit timeout %v", u.Timeout)
	}

	strict := mustLoad(t, "testdata/process.yaml", "strict")
	rep, _ := strict.Check("report")
	if rep.Workspace != "none" || len(rep.Mounts) != 1 || !reflect.DeepEqual(rep.Env, map[string]string{"LC_ALL": "C", "HOME": "/tmp/home"}) {
		t.Errorf("strict report = %+v", rep)
	}
	if strict.Approval.Required != 3 || !slices.Equal(strict.Approval.Roles, []string{"admin"}) || strict.Approval.AllowCommitAuthors {
		t.Errorf("strict approval = %+v", strict.Approval)
	}

	// Unknown profile: refused, naming the known ones.
	_, err := Load("testdata/valid.yaml", "nightly")
	if err == nil || !strings.Contains(err.Error(), `unknown profile "nightly" (known profiles: quick, release)`) {
		t.Fatalf("unknown profile: %v", err)
	}
	_, err = Load("testdata/minimal.yaml", "quick")
	if err == nil || !strings.Contains(err.Error(), `unknown profile "quick" (none are defined)`) {
		t.Fatalf("unknown profile without profiles: %v", err)
	}
}

// A broken profile makes the whole contract invalid, even when another
// profile (or the base) is asked for.
func TestBrokenProfileRefusedForEveryProfile(t *testing.T) {
	for _, profile := range []string{"", "ok"} {
		src := `version: 1
name: t
defaults: {runtime: process}
checks: [{id: a, run: [echo]}]
profiles:
  ok: {}
  zz: {checks: [{id: a, network: host}]}
`
		e := parseErr(t, src, profile)
		if e.Path != "profiles.zz.checks[0].network" {
			t.Errorf("profile %q: %v", profile, e)
		}
	}
}

func TestProfileMayTighten(t *testing.T) {
	src := `version: 1
name: t
defaults: {runtime: process, network: host, allow_root: true}
checks:
  - {id: a, run: [echo], workspace: copy, mounts: [{source: /srv/c, target: /c, writable: true}]}
approval: {required: 1, roles: [write, admin], allow_commit_authors: true}
profiles:
  tight:
    checks:
      - {id: a, network: none, allow_root: false, workspace: none, mounts: [{source: /srv/c, target: /c}], timeout: 1h}
    approval: {required: 4, roles: [admin], allow_commit_authors: false}
`
	base := mustParse(t, src, "")
	r := mustParse(t, src, "tight")
	c := r.Checks[0]
	if c.Network != "none" || c.AllowRoot || c.Workspace != "none" || c.Mounts[0].Writable || c.Timeout != Duration(time.Hour) {
		t.Fatalf("tightened check = %+v", c)
	}
	// What the check runs is the base's, whatever the profile.
	b := base.Checks[0]
	if !slices.Equal(c.Run, b.Run) || c.Dir != b.Dir || c.Runtime != b.Runtime || c.Image != b.Image || !maps.Equal(c.Env, b.Env) {
		t.Fatalf("profile changed what the check runs: %+v, base %+v", c, b)
	}
	if r.Approval.Required != 4 || !slices.Equal(r.Approval.Roles, []string{"admin"}) || r.Approval.AllowCommitAuthors {
		t.Fatalf("tightened approval = %+v", r.Approval)
	}
	// Looseness is judged against the base, not the parent profile: a
	// child may undo its parent's tightening, down to the base's level.
	src2 := src +
		"  loose: {checks: [{id: a, network: none, allow_root: false}]}\n" +
		"  looser: {extends: loose, checks: [{id: a, network: host, allow_root: true}]}\n"
	if r := mustParse(t, src2, "looser"); r.Checks[0].Network != "host" || !r.Checks[0].AllowRoot {
		t.Fatalf("looser = %+v", r.Checks[0])
	}
	// But never below it.
	e := parseErr(t, strings.Replace(src, "network: host, allow_root: true", "allow_root: true", 1)+"  p: {checks: [{id: a, network: host}]}\n", "")
	if e.Path != "profiles.p.checks[0].network" {
		t.Fatalf("none -> host: %v", e)
	}
}

// A profile cannot change what a check runs, nor what it proves: each
// such field is refused with its path, whichever profile is asked for and
// whether or not the value differs from the base.
func TestProfileCannotChangeWhatRuns(t *testing.T) {
	const base = `version: 1
name: t
defaults: {runtime: process, env: {A: a}}
checks: [{id: a, run: [echo], dir: sub}, {id: b, run: [echo], criteria: [c], depends_on: [a], evidence: structured}]
criteria: [{id: c, text: c}]
profiles:
  ok: {checks: [{id: a, timeout: 1m}]}
  quick:
    checks:
      - {id: b, timeout: 5m}
      - {id: a, timeout: 2m, %s}
`
	for field, value := range map[string]string{
		"run":           "[echo]",        // same as the base
		"dir":           "other",         // different
		"runtime":       "process",       // same as the base
		"image":         `"x@sha256:00"`, // docker image on a process check
		"env":           "{A: a}",        // same as the base
		"env_from_host": "[PATH]",        // a process check could take it
		"criteria":      "[c]",           // a declared criterion
		"depends_on":    "[b]",           // a declared check
		"evidence":      "structured",    // a valid mode
	} {
		src := fmt.Sprintf(base, field+": "+value)
		for _, profile := range []string{"", "ok", "quick"} {
			e := parseErr(t, src, profile)
			want := "profiles.quick.checks[1]." + field
			if e.Path != want {
				t.Errorf("%s (profile %q): path %q, want %q (%v)", field, profile, e.Path, want, e)
			}
			if !strings.Contains(e.Msg, "a profile cannot change "+field+":") ||
				!strings.Contains(e.Msg, "it cannot change run, dir, runtime, image, env, env_from_host, criteria, depends_on or evidence") {
				t.Errorf("%s: message %q", field, e.Msg)
			}
		}
	}
	// A field a profile check simply does not have stays an unknown field.
	e := parseErr(t, fmt.Sprintf(base, "shell: x"), "")
	if e.Path != "profiles.quick.checks[1].shell" || e.Msg != `unknown field "shell"` {
		t.Errorf("shell: %v", e)
	}
}

// Same contract as YAML and as JSON with keys in another order and values
// spelled differently (600s vs 10m, 1024KiB vs 1MiB, roles reordered):
// identical hash. Checked for every profile.
func TestHashIndependentOfSyntax(t *testing.T) {
	for _, profile := range []string{"", "quick", "release"} {
		y := mustLoad(t, "testdata/valid.yaml", profile)
		j := mustLoad(t, "testdata/valid.json", profile)
		if hy, hj := mustHash(t, y), mustHash(t, j); hy != hj {
			cy, _ := y.Canonical()
			cj, _ := j.Canonical()
			t.Fatalf("profile %q: YAML %s\nJSON %s\n%s\n%s", profile, hy, hj, cy, cj)
		}
	}
}

// Golden hashes pin the canonical form: a change here is a change of the
// wire format and must be deliberate.
func TestGoldenHashes(t *testing.T) {
	golden := map[string]string{}
	data, err := os.ReadFile("testdata/golden-hashes.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			t.Fatalf("bad golden line %q", line)
		}
		golden[f[0]+" "+f[1]] = f[2]
	}
	if len(golden) < 6 {
		t.Fatalf("only %d golden hashes", len(golden))
	}
	for key, want := range golden {
		file, profile, _ := strings.Cut(key, " ")
		if profile == "-" {
			profile = ""
		}
		if got := mustHash(t, mustLoad(t, filepath.Join("testdata", file), profile)); got != want {
			t.Errorf("%s profile %q: hash %s, want %s", file, profile, got, want)
		}
	}
	canon, err := mustLoad(t, "testdata/minimal.yaml", "").Canonical()
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/minimal.canonical.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(canon, bytes.TrimSpace(want)) {
		t.Fatalf("canonical form changed:\n%s\nwant\n%s", canon, want)
	}
	// The hash is the plain SHA-256 of the canonical bytes.
	sum := sha256.Sum256(bytes.TrimSpace(want))
	if h := "sha256:" + hex.EncodeToString(sum[:]); h != golden["minimal.yaml -"] {
		t.Fatalf("sha256 of minimal.canonical.json %s, golden %s", h, golden["minimal.yaml -"])
	}
}

// Every semantic change gives a different hash.
func TestHashChangesWithSemantics(t *testing.T) {
	base, err := os.ReadFile("testdata/valid.yaml")
	if err != nil {
		t.Fatal(err)
	}
	mutations := map[string][2]string{
		"name":      {"name: my-service", "name: my-service2"},
		"timeout":   {"timeout: 10m", "timeout: 11m"},
		"output":    {"output_limit: 1MiB", "output_limit: 1MB"},
		"memory":    {"memory: 2GiB", "memory: 2GB"},
		"cpus":      {"cpus: 0.5", "cpus: 0.501"},
		"pids":      {"pids: 512", "pids: 513"},
		"env":       {"GOFLAGS: -mod=readonly", "GOFLAGS: -mod=mod"},
		"argv":      {"run: [go, vet, ./...]", "run: [go, vet, ./..., -v]"},
		"image":     {"golang:1.23@", "golang:1.24@"},
		"pull":      {"pull: never", "pull: missing"},
		"network":   {"network: none", "network: host"},
		"workspace": {"workspace: readonly", "workspace: copy"},
		"criterion": {"text: unit tests pass", "text: unit tests pass!"},
		"approval":  {"approval: {required: 1", "approval: {required: 0"},
		"roles":     {"roles: [write, maintain, admin]", "roles: [maintain, admin]"},
		"authors":   {"allow_commit_authors: false", "allow_commit_authors: true"},
		"budget":    {"max_duration: 30m", "max_duration: 31m"},
		"depends":   {"depends_on: [vet]", "depends_on: []"},
		"order":     {"  - id: vet\n    run: [go, vet, ./...]\n", ""},
		"runtime":   {"runtime: docker", "runtime: process"},
		"profile":   {"release: {extends: quick, approval: {required: 2}}", "release: {extends: quick, approval: {required: 3}}"},
	}
	// Each mutation is hashed for the base and for the release profile; a
	// mutation must change at least the one it targets ("profile" changes
	// only release).
	hashes := map[string]string{
		mustHash(t, mustParse(t, string(base), "")):        "original",
		mustHash(t, mustParse(t, string(base), "release")): "original release",
	}
	for name, m := range mutations {
		if !strings.Contains(string(base), m[0]) {
			t.Fatalf("%s: %q not in valid.yaml", name, m[0])
		}
		src := strings.Replace(string(base), m[0], m[1], 1)
		if name == "order" { // the same checks in another order
			src = strings.Replace(src, "    env: {CGO_ENABLED: \"0\"}\n", "    env: {CGO_ENABLED: \"0\"}\n"+m[0], 1)
		}
		profile := ""
		if name == "profile" {
			profile = "release"
		}
		h := mustHash(t, mustParse(t, src, profile))
		if prev, dup := hashes[h]; dup {
			t.Errorf("mutation %s gives the same hash as %s", name, prev)
		}
		hashes[h] = name
	}
	// The profile name itself is part of the resolved contract.
	q := mustHash(t, mustParse(t, string(base)+"  other: {extends: quick}\n", "other"))
	q2 := mustHash(t, mustParse(t, string(base)+"  other: {extends: quick}\n", "quick"))
	if q == q2 {
		t.Error("profiles with identical settings but different names hash alike")
	}
}

func TestDockerSocketMounts(t *testing.T) {
	dir := t.TempDir()
	// A real unix socket with an innocent name.
	sock := filepath.Join(dir, "innocent")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// A symlink with an innocent name to the socket.
	link := filepath.Join(dir, "cache")
	if err := os.Symlink(sock, link); err != nil {
		t.Fatal(err)
	}
	// A symlink to the well-known Docker socket path (it need not exist).
	dlink := filepath.Join(dir, "data")
	if err := os.Symlink("/var/run/docker.sock", dlink); err != nil {
		t.Fatal(err)
	}
	// A symlink to a directory containing the well-known path.
	rlink := filepath.Join(dir, "varrun")
	if err := os.Symlink("/var/run", rlink); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "plain")
	if err := os.Mkdir(plain, 0o755); err != nil {
		t.Fatal(err)
	}
	sources := []string{
		sock, link, dlink, rlink,
		"/var/run/docker.sock", "/run/docker.sock", "/var/run/../run/docker.sock", "//var//run/docker.sock/",
		"/var/run", "/run", "/var", "/", "/run/user/1000/docker.sock", "docker.sock", "sub/docker.sock",
	}
	if _, err := os.Stat("/var/run/docker.sock"); err == nil {
		t.Log("the Docker socket exists here: its real path is covered too")
	}
	for _, src := range sources {
		yaml := fmt.Sprintf("version: 1\nname: t\ndefaults: {runtime: process}\nchecks: [{id: a, run: [echo], mounts: [{source: %q, target: /m}]}]\n", src)
		e := parseErr(t, yaml, "")
		if e.Path != "checks[0].mounts[0].source" || e.Msg != MsgDockerSocket {
			t.Errorf("source %s: %v", src, e)
		}
	}
	ok := fmt.Sprintf("version: 1\nname: t\ndefaults: {runtime: process}\nchecks: [{id: a, run: [echo], mounts: [{source: %q, target: /m}]}]\n", plain)
	mustParse(t, ok, "")
}

func TestCheckMountSource(t *testing.T) {
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, "cache"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", filepath.Join(ws, "etc")); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", filepath.Join(ws, "s"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := os.Symlink(filepath.Join(ws, "s"), filepath.Join(ws, "tools")); err != nil {
		t.Fatal(err)
	}
	got, err := CheckMountSource(ws, "cache")
	if err != nil {
		t.Fatal(err)
	}
	if real, _ := filepath.EvalSymlinks(filepath.Join(ws, "cache")); got != real {
		t.Errorf("resolved %q, want %q", got, real)
	}
	for _, src := range []string{"etc", "tools", "../x", "s"} {
		if _, err := CheckMountSource(ws, src); err == nil {
			t.Errorf("%s accepted", src)
		}
	}
	if _, err := CheckMountSource(ws, "/var/run"); err == nil || !strings.Contains(err.Error(), MsgDockerSocket) {
		t.Errorf("/var/run: %v", err)
	}
}

func TestFileLimits(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	pad := "# " + strings.Repeat("x", 1000) + "\n"
	content := []byte("version: 1\nname: t\ndefaults: {runtime: process}\nchecks: [{id: a, run: [echo]}]\n" + strings.Repeat(pad, MaxFileSize/len(pad)+1))
	if err := os.WriteFile(big, content, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(big, "")
	if err == nil || !strings.Contains(err.Error(), "larger than the limit") || !strings.HasPrefix(err.Error(), big+": ") {
		t.Fatalf("big file: %v", err)
	}
	if _, err := Parse("big.yaml", content, ""); err == nil || !strings.Contains(err.Error(), "larger than the limit") {
		t.Fatalf("big data: %v", err)
	}
	// Exactly at the limit is fine.
	at := content[:MaxFileSize]
	at = append(at[:len(at)-1:len(at)-1], '\n')
	if _, err := Parse("at.yaml", at, ""); err != nil {
		t.Fatalf("file of exactly MaxFileSize: %v", err)
	}
	// Not a regular file (would block or never end).
	if _, err := Load("/dev/zero", ""); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("/dev/zero: %v", err)
	}
	if _, err := Load(dir, ""); err == nil {
		t.Fatal("directory accepted")
	}
	_, err = Load(filepath.Join(dir, "missing.yaml"), "")
	var ce *Error
	if !errors.As(err, &ce) || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	if _, err := Parse("bin.yaml", []byte("version: 1\nname: \"\xff\"\n"), ""); err == nil || !strings.Contains(err.Error(), "UTF-8") {
		t.Fatalf("invalid UTF-8: %v", err)
	}
}

func TestDeepNestingRefused(t *testing.T) {
	src := "version: 1\nname: t\nx: " + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + "\n"
	start := time.Now()
	e := parseErr(t, src, "")
	if !strings.Contains(e.Msg, "nested deeper") && !strings.Contains(e.Msg, "invalid YAML") {
		t.Fatalf("%v", e)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("took %v", d)
	}
}

func TestSchemaPublishedCopyIdentical(t *testing.T) {
	pub, err := os.ReadFile("../../docs/schema/contract.v1.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(pub, SchemaJSON) {
		t.Fatal("docs/schema/contract.v1.json differs from kernel/contract/contract.v1.json: copy it over")
	}
	if _, err := compiledSchema(); err != nil {
		t.Fatal(err)
	}
}

// The schema and the raw structs must name the same fields, or strict
// decoding would refuse what the schema accepts (or the reverse).
func TestSchemaMatchesStructs(t *testing.T) {
	var s struct {
		Properties map[string]any `json:"properties"`
		Defs       map[string]struct {
			Properties map[string]any `json:"properties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(SchemaJSON, &s); err != nil {
		t.Fatal(err)
	}
	pairs := map[string]any{
		"":             rawContract{},
		"settings":     rawSettings{},
		"check":        rawCheck{},
		"profileCheck": rawProfileCheck{},
		"resources":    rawResources{},
		"mount":        rawMount{},
		"criterion":    Criterion{},
		"approval":     rawApproval{},
		"budget":       rawBudget{},
		"profile":      rawProfile{},
	}
	for def, v := range pairs {
		props := s.Properties
		if def != "" {
			props = s.Defs[def].Properties
		}
		schemaFields := slices.Sorted(maps.Keys(props))
		structFields := jsonFields(reflect.TypeOf(v))
		slices.Sort(structFields)
		if !slices.Equal(schemaFields, structFields) {
			t.Errorf("%q: schema %v, struct %v", def, schemaFields, structFields)
		}
	}
}

func jsonFields(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			out = append(out, jsonFields(f.Type)...)
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		out = append(out, name)
	}
	return out
}

// contract.json is read back by other packages: the resolved contract must
// survive a JSON round trip unchanged.
func TestResolvedJSONRoundTrip(t *testing.T) {
	for _, f := range []string{"valid.yaml", "process.yaml", "minimal.yaml"} {
		r := mustLoad(t, filepath.Join("testdata", f), "")
		b, err := r.Canonical()
		if err != nil {
			t.Fatal(err)
		}
		var back Resolved
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if !reflect.DeepEqual(&back, r) {
			t.Fatalf("%s: round trip changed the contract\n%+v\n%+v", f, back, *r)
		}
	}
}

func TestLoadRefusesFIFOWithoutHanging(t *testing.T) {
	p := filepath.Join(t.TempDir(), "fifo.yaml")
	mkfifo(t, p)
	done := make(chan error, 1)
	go func() { _, err := Load(p, ""); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("Load(fifo) = %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Load blocked on a FIFO")
	}
}

// The format table of the package doc names every top-level section the
// schema accepts, and no other: the doc is how a maintainer learns the
// format, and it once omitted four sections.
func TestDocTableMatchesSchema(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "// Top level (unknown fields anywhere are refused):")
	table, _, ok2 := strings.Cut(rest, "\n//\n// Settings")
	if !ok || !ok2 {
		t.Fatal("doc.go has no top-level format table")
	}
	var documented []string
	for _, line := range strings.Split(table, "\n") {
		f := strings.Fields(strings.TrimPrefix(line, "//"))
		if len(f) > 1 && f[0] != "field" {
			documented = append(documented, f[0])
		}
	}
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(SchemaJSON, &s); err != nil {
		t.Fatal(err)
	}
	var schema []string
	for k := range s.Properties {
		schema = append(schema, k)
	}
	slices.Sort(schema)
	slices.Sort(documented)
	if !slices.Equal(schema, documented) {
		t.Fatalf("doc.go's top-level table lists %v, the schema accepts %v", documented, schema)
	}
}
