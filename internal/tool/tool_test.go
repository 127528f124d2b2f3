package tool

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/proofgate/proofgate/internal/canon"
	"github.com/proofgate/proofgate/internal/process"
	"github.com/proofgate/proofgate/kernel/contract"
	"github.com/proofgate/proofgate/kernel/runtime"
)

// helperMode makes the test binary a tool: with PG_TOOL_HELPER=argv it
// prints each argument after argv[0] on its own line, Go-quoted (so a
// newline or a NUL inside one element cannot pass for two), then the
// bytes of its stdin Go-quoted on a last line.
func TestMain(m *testing.M) {
	if os.Getenv("PG_TOOL_HELPER") == "argv" {
		for _, a := range os.Args[1:] {
			fmt.Println(strconv.Quote(a))
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

const head = `version: 1
name: t
defaults: {runtime: process}
checks: [{id: c, run: [echo, ok]}]
`

func loadTools(t *testing.T, body string) *contract.Resolved {
	t.Helper()
	r, err := contract.Parse("contract.yaml", []byte(head+body), "")
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return r
}

func mustTool(t *testing.T, r *contract.Resolved, name string) contract.Tool {
	t.Helper()
	tl, ok := r.Tool(name)
	if !ok {
		t.Fatalf("no tool %s", name)
	}
	return tl
}

const tools = `tools:
  - name: greet
    run: [/bin/echo, hello, "{{name}}"]
    params:
      name: {type: string, required: true, max_length: 64, pattern: "^[A-Za-z ]+$"}
  - name: echo
    run: [/bin/echo, "--", "{{text}}", "{{text}}"]
    params:
      text: {type: string, required: true}
  - name: open
    run: [/bin/cat, "--", "{{file}}"]
    params:
      file: {type: path, required: true, max_length: 32}
  - name: scale
    run: [./scale, "{{n}}", "{{force}}"]
    stdin: json
    params:
      n: {type: integer, required: true}
      force: {type: boolean, required: true}
      env: {type: string, enum: [staging, production]}
      note: {type: string}
`

func argErrOf(t *testing.T, err error, reason Reason, param string) *ArgError {
	t.Helper()
	var ae *ArgError
	if !errors.As(err, &ae) {
		t.Fatalf("error %v (%T), want *ArgError %s", err, err, reason)
	}
	if ae.Reason != reason || ae.Param != param {
		t.Fatalf("ArgError %+v (%v), want reason %s param %q", ae, ae, reason, param)
	}
	return ae
}

func TestRenderArgv(t *testing.T) {
	r := loadTools(t, tools)
	c, err := Render(mustTool(t, r, "greet"), []byte(`{"name":"Ada Lovelace"}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"/bin/echo", "hello", "Ada Lovelace"}; !reflect.DeepEqual(c.Argv, want) || c.Stdin != nil {
		t.Fatalf("call %+v", c)
	}
	c, err = Render(mustTool(t, r, "scale"), []byte(` {"force": false, "n": -42, "note": "é\u00e9", "env": "staging"} `))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"./scale", "-42", "false"}; !reflect.DeepEqual(c.Argv, want) {
		t.Fatalf("argv %q", c.Argv)
	}
	if want := `{"env":"staging","force":false,"n":-42,"note":"éé"}`; string(c.Stdin) != want {
		t.Fatalf("stdin %s, want %s", c.Stdin, want)
	}
	// The stdin is the RFC 8785 form of the arguments: what the input hash is computed over.
	if b, _ := canon.Transform([]byte(`{"n":-42,"force":false,"env":"staging","note":"éé"}`)); !bytes.Equal(b, c.Stdin) {
		t.Fatalf("stdin is not canonical: %s vs %s", c.Stdin, b)
	}
}

func TestRenderRefusals(t *testing.T) {
	r := loadTools(t, tools)
	greet, open, scale := mustTool(t, r, "greet"), mustTool(t, r, "open"), mustTool(t, r, "scale")
	for _, tc := range []struct {
		name   string
		tool   contract.Tool
		args   string
		reason Reason
		param  string
	}{
		{"array", greet, `["Ada"]`, ReasonMalformed, ""},
		{"null", greet, `null`, ReasonMalformed, ""},
		{"empty", greet, ``, ReasonMalformed, ""},
		{"trailing", greet, `{"name":"Ada"} {}`, ReasonMalformed, ""},
		{"invalid utf8", greet, "{\"name\":\"A\xffa\"}", ReasonMalformed, ""},
		{"duplicate", greet, `{"name":"Ada","name":"Bob"}`, ReasonDuplicate, ""},
		{"duplicate escaped", greet, `{"name":"Ada","n\u0061me":"Bob"}`, ReasonDuplicate, ""},
		{"case variant", greet, `{"name":"Ada","Name":"Bob"}`, ReasonUnknown, "Name"},
		{"case variant alone", greet, `{"Name":"Ada"}`, ReasonUnknown, "Name"},
		{"confusable", greet, `{"nam\u0435":"Ada"}`, ReasonUnknown, "namе"},
		{"unknown", greet, `{"name":"Ada","shell":"sh"}`, ReasonUnknown, "shell"},
		{"missing", greet, `{}`, ReasonMissing, "name"},
		{"null value", greet, `{"name":null}`, ReasonType, "name"},
		{"number for string", greet, `{"name":1}`, ReasonType, "name"},
		{"object for string", greet, `{"name":{"a":1}}`, ReasonType, "name"},
		{"too long", greet, `{"name":"` + strings.Repeat("a", 65) + `"}`, ReasonTooLong, "name"},
		{"pattern", greet, `{"name":"Ada; rm -rf /"}`, ReasonPattern, "name"},
		{"pattern newline", greet, `{"name":"Ada\nBob"}`, ReasonPattern, "name"},
		{"nul", greet, `{"name":"Ada\u0000"}`, ReasonNUL, "name"},
		{"traversal", open, `{"file":"../../etc/passwd"}`, ReasonPath, "file"},
		{"absolute", open, `{"file":"/etc/passwd"}`, ReasonPath, "file"},
		{"inner traversal", open, `{"file":"a/../../b"}`, ReasonPath, "file"},
		{"inner dotdot clean", open, `{"file":"a/../b"}`, ReasonPath, "file"},
		{"flag", open, `{"file":"-rf"}`, ReasonPath, "file"},
		{"long flag", open, `{"file":"--output=/etc/x"}`, ReasonPath, "file"},
		{"unclean", open, `{"file":"a//b"}`, ReasonPath, "file"},
		{"dot slash", open, `{"file":"./a"}`, ReasonPath, "file"},
		{"trailing slash", open, `{"file":"a/"}`, ReasonPath, "file"},
		{"backslash", open, `{"file":"..\\..\\x"}`, ReasonPath, "file"},
		{"empty path", open, `{"file":""}`, ReasonPath, "file"},
		{"nul path", open, `{"file":"a\u0000b"}`, ReasonNUL, "file"},
		{"path too long", open, `{"file":"` + strings.Repeat("a", 33) + `"}`, ReasonTooLong, "file"},
		{"float", scale, `{"n":1.5,"force":true}`, ReasonType, "n"},
		{"integral float", scale, `{"n":1.0,"force":true}`, ReasonType, "n"},
		{"exponent", scale, `{"n":1e3,"force":true}`, ReasonType, "n"},
		{"minus zero", scale, `{"n":-0,"force":true}`, ReasonType, "n"},
		{"string integer", scale, `{"n":"1","force":true}`, ReasonType, "n"},
		{"huge", scale, `{"n":99999999999999999999,"force":true}`, ReasonRange, "n"},
		{"beyond 2^53", scale, `{"n":9007199254740993,"force":true}`, ReasonRange, "n"},
		{"below -2^53", scale, `{"n":-9007199254740992,"force":true}`, ReasonRange, "n"},
		{"string bool", scale, `{"n":1,"force":"true"}`, ReasonType, "force"},
		{"number bool", scale, `{"n":1,"force":1}`, ReasonType, "force"},
		{"enum", scale, `{"n":1,"force":true,"env":"Staging"}`, ReasonEnum, "env"},
		{"enum space", scale, `{"n":1,"force":true,"env":"staging "}`, ReasonEnum, "env"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Render(tc.tool, []byte(tc.args))
			if err == nil {
				t.Fatalf("accepted: %+v", c)
			}
			ae := argErrOf(t, err, tc.reason, tc.param)
			if s := ae.Error(); strings.ContainsAny(s, "\x00\n") || !isASCIIPrefix(s) {
				t.Fatalf("error not printable: %q", s)
			}
		})
	}
	// The safe-range bounds themselves are accepted.
	for _, n := range []string{"9007199254740991", "-9007199254740991", "0"} {
		if c, err := Render(scale, []byte(`{"n":`+n+`,"force":true}`)); err != nil || c.Argv[1] != n {
			t.Errorf("n=%s: %v %q", n, err, c.Argv)
		}
	}
	// Why the bound: beyond 2^53 the canonical form the input hash is
	// computed over cannot tell two integers apart.
	a, _ := canon.Transform([]byte(`{"n":9007199254740992}`))
	b, _ := canon.Transform([]byte(`{"n":9007199254740993}`))
	if !bytes.Equal(a, b) {
		t.Fatalf("canonical forms differ (%s, %s): the stated reason for the bound is wrong", a, b)
	}
	for _, ok := range []string{"a", "a/b", ".", "a.txt", "a-b/c", "x/.hidden", "a..b"} {
		if _, err := Render(open, []byte(`{"file":"`+ok+`"}`)); err != nil {
			t.Errorf("path %q refused: %v", ok, err)
		}
	}
}

// isASCIIPrefix reports whether the error's parameter name part is ASCII
// (QuoteToASCII): confusable runes show as escapes.
func isASCIIPrefix(s string) bool {
	name, _, _ := strings.Cut(s, ": ")
	for _, r := range name {
		if r > 0x7e {
			return false
		}
	}
	return true
}

func TestRenderSizeBound(t *testing.T) {
	r := loadTools(t, `tools:
  - name: big
    run: [/bin/echo]
    stdin: json
    params:
      text: {type: string, max_length: 65536}
`)
	big := mustTool(t, r, "big")
	pad := func(n int) []byte { // a valid object of exactly n bytes
		return []byte(`{"text":"` + strings.Repeat("a", n-len(`{"text":""}`)) + `"}`)
	}
	if _, err := Render(big, pad(MaxArgs)); err != nil {
		t.Fatalf("64 KiB refused: %v", err)
	}
	_, err := Render(big, pad(MaxArgs+1))
	argErrOf(t, err, ReasonTooLarge, "")
	_, err = Render(big, pad(65<<10))
	argErrOf(t, err, ReasonTooLarge, "")
	// Deep nesting in an unknown member is refused, not walked forever.
	deep := `{"x":` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `}`
	if _, err := Render(big, []byte(deep)); err == nil {
		t.Fatal("deep document accepted")
	}
}

// Shell metacharacters in a value arrive as exactly one literal argv
// element of a real process started through the process runtime: the
// tool's argv is never given to a shell. The value is also given twice in
// one call (two template elements) and both arrive intact.
func TestInjectionArrivesAsOneArgument(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r := loadTools(t, fmt.Sprintf(`tools:
  - name: show
    run: [%q, fixed, "{{text}}", "{{text}}", "{{count}}"]
    env: {PG_TOOL_HELPER: argv}
    timeout: 30s
    params:
      text: {type: string, required: true}
      count: {type: integer, required: true}
`, exe))
	show := mustTool(t, r, "show")
	ws := t.TempDir()
	marker := filepath.Join(ws, "pwned")
	for _, payload := range []string{
		"; rm -rf /", "$(id)", "`id`", "$(touch " + marker + ")", "`touch " + marker + "`",
		"a && touch " + marker, "| touch " + marker, "> " + marker, "*", "~", "$HOME", "'\"'", "a b  c",
		"\n; touch " + marker, "-rf", "--help", "{{text}}", "\\", "$((1+1))", "ü\u202eevil",
	} {
		args, _ := canon.Marshal(map[string]any{"text": payload, "count": 7})
		c, err := Render(show, args)
		if err != nil {
			t.Fatalf("%q refused: %v", payload, err)
		}
		spec := Spec("run-1", "a-1", show, c, ws)
		var out, errb bytes.Buffer
		res := process.New().Run(context.Background(), spec, runtime.NewCapture(&out, 1<<20), runtime.NewCapture(&errb, 1<<20))
		if res.Outcome != runtime.Passed {
			t.Fatalf("%q: outcome %s (%s) stderr %q", payload, res.Outcome, res.Detail, errb.String())
		}
		var got []string
		for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
			s, err := strconv.Unquote(line)
			if err != nil {
				t.Fatalf("%q: helper line %q: %v", payload, line, err)
			}
			got = append(got, s)
		}
		if want := []string{"fixed", payload, payload, "7"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("argv %q, want %q", got, want)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a payload ran a command")
	}
}

// Spec builds the runtime spec exactly as a check with the same settings
// gets it (contract.Execution.Spec), plus the call's argv and stdin.
func TestSpecMatchesCheck(t *testing.T) {
	r := loadTools(t, `tools:
  - name: x
    run: [/bin/cat]
    stdin: json
    timeout: 7s
    env: {A: "1"}
    network: host
    resources: {memory: 64MiB, cpus: 0.25, pids: 9}
    params: {p: {type: string}}
`)
	x := mustTool(t, r, "x")
	c, err := Render(x, []byte(`{"p":"v"}`))
	if err != nil {
		t.Fatal(err)
	}
	s := Spec("run-9", "a-1", x, c, "/repo")
	check := contract.Check{ID: "a-1", Run: []string{"/bin/cat"}, Runtime: x.Runtime, Pull: x.Pull, Timeout: x.Timeout,
		Output: x.Output, Network: x.Network, Workspace: x.Workspace, Resources: x.Resources, Tmpfs: x.Tmpfs, Env: x.Env}
	want := check.Execution().Spec("run-9", "a-1", check.Run, "/repo")
	want.Stdin = []byte(`{"p":"v"}`)
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("spec\n%+v\nwant\n%+v", s, want)
	}
	if s.Timeout != 7*time.Second || s.Sandbox.NanoCPUs != 250_000_000 || s.Env["A"] != "1" {
		t.Fatalf("spec %+v", s)
	}
	// The spec does not share the call's or the tool's memory.
	s.Stdin[0], s.Argv[0], s.Env["A"] = 'X', "mutated", "2"
	if c.Stdin[0] == 'X' || x.Run[0] == "mutated" || c.Argv[0] == "mutated" || x.Env["A"] != "1" {
		t.Fatal("spec aliases the call or the tool")
	}
	// Stdin fed through the process runtime arrives as the canonical arguments.
	var out bytes.Buffer
	s = Spec("run-9", "a-2", x, c, t.TempDir())
	res := process.New().Run(context.Background(), s, runtime.NewCapture(&out, 1<<20), runtime.NewCapture(&bytes.Buffer{}, 1<<20))
	if res.Outcome != runtime.Passed || out.String() != `{"p":"v"}` {
		t.Fatalf("outcome %s (%s), stdout %q", res.Outcome, res.Detail, out.String())
	}
}

// A hand-made tool whose template names an optional parameter is refused
// at render time, never rendered with the literal "{{p}}".
func TestRenderHandMadeTool(t *testing.T) {
	tl := contract.Tool{Name: "x", Run: []string{"/bin/echo", "{{p}}"}, Params: map[string]contract.Param{"p": {Type: "string"}}}
	_, err := Render(tl, []byte(`{}`))
	argErrOf(t, err, ReasonMissing, "p")
	tl.Params["p"] = contract.Param{Type: "float", Required: true}
	_, err = Render(tl, []byte(`{"p":1}`))
	argErrOf(t, err, ReasonType, "p")
}

func TestInputSchema(t *testing.T) {
	r := loadTools(t, tools)
	s := InputSchema(mustTool(t, r, "scale"))
	b, err := canon.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"additionalProperties":false,"properties":{"env":{"enum":["staging","production"],"maxLength":4096,"type":"string"},` +
		`"force":{"type":"boolean"},"n":{"maximum":9007199254740991,"minimum":-9007199254740991,"type":"integer"},` +
		`"note":{"maxLength":4096,"type":"string"}},"required":["force","n"],"type":"object"}`
	if string(b) != want {
		t.Fatalf("schema\n%s\nwant\n%s", b, want)
	}
	open := InputSchema(mustTool(t, r, "open"))
	if d := open["properties"].(map[string]any)["file"].(map[string]any)["description"]; !strings.Contains(fmt.Sprint(d), "relative") {
		t.Fatalf("path description %v", d)
	}
	if b, _ := canon.Marshal(InputSchema(contract.Tool{Name: "x"})); string(b) != `{"additionalProperties":false,"properties":{},"required":[],"type":"object"}` {
		t.Fatalf("empty schema %s", b)
	}
}

func contractFor(body string) (*contract.Resolved, error) {
	return contract.Parse("contract.yaml", []byte(head+body), "")
}
