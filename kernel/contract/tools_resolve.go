package contract

import (
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/proofgate/proofgate/internal/printable"
)

// Tool parameter types.
const (
	ParamString  = "string"
	ParamInteger = "integer"
	ParamBoolean = "boolean"
	ParamPath    = "path"
	// ParamArray is a JSON array of any JSON values (a conversation's
	// messages). It reaches the tool only on stdin (stdin: json), never
	// as an argv element.
	ParamArray = "array"
)

// DefaultMaxItems bounds an array parameter that declares no max_items.
const DefaultMaxItems = 1024

// MaxParamItems is the largest max_items an array parameter may declare.
const MaxParamItems = 65536

// Policy effects, as the contract spells them (internal/policy gives them a type).
const (
	EffectAllow           = "allow"
	EffectBlock           = "block"
	EffectRequireApproval = "require-approval"
)

// DefaultMaxLength bounds a string or path parameter that declares no
// max_length, in Unicode code points.
const DefaultMaxLength = 4096

// MaxParamLength is the largest max_length a parameter may declare.
const MaxParamLength = 64 << 10

// StdinJSON is a tool's stdin mode that feeds the canonical arguments object.
const StdinJSON = "json"

// DefaultRuleID is the id of the decision no policy rule made; no rule may
// take it.
const DefaultRuleID = "default"

// toolName is the pattern of tool, parameter and rule names: lower-case
// ASCII, so that no two names differ by case or by a confusable rune.
var toolName = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,63}$`)

// resolveTools resolves the tools: section over the defaults tmpl, exactly
// as checks are resolved (applySettings, setRun, setDir, checkImage), then
// checks each tool's argv template against its parameters.
func (p *parser) resolveTools(tmpl Check, raws []rawTool) ([]Tool, error) {
	var tools []Tool
	first := map[string]int{}
	for i, rt := range raws {
		tp := fieldPath("tools").idx(i)
		if !toolName.MatchString(rt.Name) {
			return nil, p.errf(tp.key("name"), "%q is not a valid name (want %s: lower-case ASCII)", truncate(rt.Name, 64), toolName)
		}
		if j, dup := first[rt.Name]; dup {
			return nil, p.errf(tp.key("name"), "duplicate tool name %q (first at tools[%d])", rt.Name, j)
		}
		first[rt.Name] = i
		t, err := p.resolveTool(tmpl, rt, tp)
		if err != nil {
			return nil, err
		}
		tools = append(tools, t)
	}
	return tools, nil
}

// resolveTool resolves one tool at tp.
func (p *parser) resolveTool(tmpl Check, rt rawTool, tp fieldPath) (Tool, error) {
	c := tmpl.clone()
	c.EnvFromHost = nil // a tool never receives the harness's variables
	if err := p.applySettings(&c, &rt.rawSettings, tp); err != nil {
		return Tool{}, err
	}
	if err := p.setRun(&c, rt.Run, tp.key("run")); err != nil {
		return Tool{}, err
	}
	if rt.Dir != nil {
		if err := p.setDir(&c, *rt.Dir, tp.key("dir")); err != nil {
			return Tool{}, err
		}
	}
	if err := p.checkImage(&c, tp); err != nil {
		return Tool{}, err
	}
	if c.Workspace == "copy" {
		c.WorkspaceSize = effectiveWorkspaceSize(c)
	} else {
		c.WorkspaceSize = 0
	}
	t := Tool{Name: rt.Name, Run: c.Run}
	t.setExecution(c.Execution())
	if rt.Description != nil {
		if err := p.printableText(*rt.Description, tp.key("description")); err != nil {
			return Tool{}, err
		}
		t.Description = *rt.Description
	}
	if rt.Stdin != nil && *rt.Stdin == StdinJSON {
		t.Stdin = StdinJSON
	}
	params, err := p.resolveParams(rt.Params, tp.key("params"))
	if err != nil {
		return Tool{}, err
	}
	t.Params = params
	if err := p.checkTemplate(t, tp); err != nil {
		return Tool{}, err
	}
	return t, nil
}

// checkTemplate enforces the template rule: an element that is exactly
// "{{p}}" names a declared, required parameter p and is replaced by its
// value as one element; "{{" anywhere else (inside an element, or as the
// program) is refused. A parameter the argv does not name must reach the
// tool on stdin.
func (p *parser) checkTemplate(t Tool, tp fieldPath) error {
	used := map[string]bool{}
	for i, a := range t.Run {
		at := tp.key("run").idx(i)
		name, isParam := TemplateParam(a)
		switch {
		case isParam && i == 0:
			return p.errf(at, "%q: the program cannot be a parameter", a)
		case isParam:
			prm, ok := t.Params[name]
			if !ok {
				return p.errf(at, "%q names no parameter of the tool (declared: %s)", a, paramList(t.Params))
			}
			if !prm.Required {
				return p.errf(at, "%q names parameter %q, which is not required: a parameter in run must be required", a, name)
			}
			if prm.Type == ParamArray {
				return p.errf(at, "%q names array parameter %q: an array reaches the tool only on stdin (stdin: json), never as an argv element", a, name)
			}
			used[name] = true
		case strings.Contains(a, "{{"):
			return p.errf(at, "%q interpolates partially: an element is either exactly \"{{param}}\" (replaced by the value as one whole element) or holds no \"{{\"", truncate(a, 64))
		}
	}
	if t.Stdin == StdinJSON {
		return nil
	}
	for _, name := range slices.Sorted(maps.Keys(t.Params)) {
		if !used[name] && t.Params[name].Type == ParamArray {
			return p.errf(tp.key("params").key(name), "array parameter %q reaches the tool only on stdin: set stdin: json", name)
		}
		if !used[name] {
			return p.errf(tp.key("params").key(name), "parameter %q is not used: name it in run as \"{{%s}}\" or set stdin: json", name, name)
		}
	}
	return nil
}

// TemplateParam reports whether the argv element a is exactly "{{name}}"
// with a valid parameter name, and returns the name.
func TemplateParam(a string) (string, bool) {
	inner, ok := strings.CutPrefix(a, "{{")
	if !ok {
		return "", false
	}
	inner, ok = strings.CutSuffix(inner, "}}")
	if !ok || !toolName.MatchString(inner) {
		return "", false
	}
	return inner, true
}

func paramList(ps map[string]Param) string {
	if len(ps) == 0 {
		return "none"
	}
	return strings.Join(slices.Sorted(maps.Keys(ps)), ", ")
}

// resolveParams checks each parameter: its name, the fields its type
// allows, its pattern (Go RE2) and enum. A string or path parameter gets
// its effective max_length.
func (p *parser) resolveParams(raws map[string]rawParam, pp fieldPath) (map[string]Param, error) {
	if len(raws) == 0 {
		return nil, nil
	}
	out := make(map[string]Param, len(raws))
	for _, name := range slices.Sorted(maps.Keys(raws)) {
		at := pp.key(name)
		if !toolName.MatchString(name) {
			return nil, p.errf(at, "%q is not a valid parameter name (want %s: lower-case ASCII)", truncate(name, 64), toolName)
		}
		prm, err := p.resolveParam(raws[name], at)
		if err != nil {
			return nil, err
		}
		out[name] = prm
	}
	return out, nil
}

func (p *parser) resolveParam(rp rawParam, at fieldPath) (Param, error) {
	prm := Param{Type: rp.Type, Required: rp.Required != nil && *rp.Required}
	if rp.Description != nil {
		if err := p.printableText(*rp.Description, at.key("description")); err != nil {
			return Param{}, err
		}
		prm.Description = *rp.Description
	}
	if rp.MaxItems != nil && prm.Type != ParamArray {
		return Param{}, p.errf(at.key("max_items"), "applies to array parameters, not %s", prm.Type)
	}
	if prm.Type == ParamArray {
		prm.MaxItems = DefaultMaxItems
		if rp.MaxItems != nil {
			n, err := strconv.Atoi(rp.MaxItems.String())
			if err != nil || n < 1 || n > MaxParamItems {
				return Param{}, p.errf(at.key("max_items"), "%s is not an integer from 1 to %d", rp.MaxItems.String(), MaxParamItems)
			}
			prm.MaxItems = n
		}
	}
	textual := prm.Type == ParamString || prm.Type == ParamPath
	if !textual {
		for _, f := range []struct {
			name string
			set  bool
		}{{"max_length", rp.MaxLength != nil}, {"pattern", rp.Pattern != nil}, {"enum", rp.Enum != nil}} {
			if f.set {
				return Param{}, p.errf(at.key(f.name), "applies to string and path parameters, not %s", prm.Type)
			}
		}
		return prm, nil
	}
	prm.MaxLength = DefaultMaxLength
	if rp.MaxLength != nil {
		n, err := strconv.Atoi(rp.MaxLength.String())
		if err != nil || n < 1 || n > MaxParamLength {
			return Param{}, p.errf(at.key("max_length"), "%s is not an integer from 1 to %d", rp.MaxLength.String(), MaxParamLength)
		}
		prm.MaxLength = n
	}
	var re *regexp.Regexp
	if rp.Pattern != nil {
		var err error
		if re, err = regexp.Compile(*rp.Pattern); err != nil {
			return Param{}, p.errf(at.key("pattern"), "not a Go (RE2) regular expression: %v", err)
		}
		prm.Pattern = *rp.Pattern
	}
	if rp.Enum != nil {
		if prm.Type != ParamString {
			return Param{}, p.errf(at.key("enum"), "applies to string parameters, not %s", prm.Type)
		}
		if err := p.checkEnum(rp.Enum, prm.MaxLength, re, at.key("enum")); err != nil {
			return Param{}, err
		}
		prm.Enum = slices.Clone(rp.Enum)
	}
	return prm, nil
}

// checkEnum refuses an enum value that is repeated, holds a NUL, or that
// the parameter's own max_length or pattern would refuse (it could never
// be passed).
func (p *parser) checkEnum(enum []string, max int, re *regexp.Regexp, at fieldPath) error {
	seen := map[string]int{}
	for i, v := range enum {
		switch j, dup := seen[v]; {
		case dup:
			return p.errf(at.idx(i), "%q is listed twice (first at %s)", truncate(v, 64), at.idx(j))
		case strings.IndexByte(v, 0) >= 0:
			return p.errf(at.idx(i), "contains a NUL byte")
		case utf8.RuneCountInString(v) > max:
			return p.errf(at.idx(i), "is longer than the parameter's max_length %d", max)
		case re != nil && !re.MatchString(v):
			return p.errf(at.idx(i), "%q does not match the parameter's pattern", truncate(v, 64))
		}
		seen[v] = i
	}
	return nil
}

// printableText refuses a description or reason that is not printable text
// on one line: it reaches agents and terminals.
func (p *parser) printableText(s string, at fieldPath) error {
	if err := printable.CheckText(string(at), s); err != nil {
		if pe, ok := err.(*printable.Error); ok {
			return p.errf(at, "%s", pe.Detail)
		}
		return p.errf(at, "%v", err)
	}
	return nil
}

// resolvePolicy resolves the policy: rules, in order. A rule names a
// declared tool; ids default to rule-<index> and are unique; "default" is
// reserved for the decision no rule made.
func (p *parser) resolvePolicy(tools []Tool, raws []rawRule) ([]Rule, error) {
	declared := map[string]bool{}
	for _, t := range tools {
		declared[t.Name] = true
	}
	ids := map[string]int{}
	var rules []Rule
	for i, rr := range raws {
		at := fieldPath("policy").idx(i)
		r := Rule{ID: "rule-" + strconv.Itoa(i), Tool: rr.Tool, Effect: rr.Effect}
		if rr.ID != nil {
			r.ID = *rr.ID
			if !toolName.MatchString(r.ID) {
				return nil, p.errf(at.key("id"), "%q is not a valid rule id (want %s)", truncate(r.ID, 64), toolName)
			}
			if r.ID == DefaultRuleID {
				return nil, p.errf(at.key("id"), "%q is reserved for the decision no rule made", r.ID)
			}
		}
		if j, dup := ids[r.ID]; dup {
			return nil, p.errf(at.key("id"), "duplicate rule id %q (first at policy[%d])", r.ID, j)
		}
		ids[r.ID] = i
		if !declared[r.Tool] {
			return nil, p.errf(at.key("tool"), "unknown tool %q (declared tools: %s)", truncate(r.Tool, 64), toolList(tools))
		}
		switch r.Effect {
		case EffectAllow, EffectBlock, EffectRequireApproval:
		default:
			return nil, p.errf(at.key("effect"), "%q is not one of allow, block, require-approval", truncate(r.Effect, 64))
		}
		if rr.Reason != nil {
			if err := p.printableText(*rr.Reason, at.key("reason")); err != nil {
				return nil, err
			}
			r.Reason = *rr.Reason
		}
		rules = append(rules, r)
	}
	return rules, nil
}

func toolList(tools []Tool) string {
	if len(tools) == 0 {
		return "none"
	}
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
	}
	return strings.Join(names, ", ")
}

// clone deep-copies a tool.
func (t Tool) clone() Tool {
	t.Run = slices.Clone(t.Run)
	t.Mounts = slices.Clone(t.Mounts)
	t.Env = maps.Clone(t.Env)
	if t.Params != nil {
		ps := make(map[string]Param, len(t.Params))
		for k, v := range t.Params {
			v.Enum = slices.Clone(v.Enum)
			ps[k] = v
		}
		t.Params = ps
	}
	return t
}

// refuseProfileTools refuses a profile that sets tools or policy (the
// schema refuses them first; this keeps the resolver honest on its own).
func (p *parser) refuseProfileTools(pr rawProfile, lp fieldPath) error {
	if pr.Tools != nil {
		return p.errf(lp.key("tools"), "a profile cannot change the tools: tools and policy come from the base contract only")
	}
	if pr.Policy != nil {
		return p.errf(lp.key("policy"), "a profile cannot change the policy: tools and policy come from the base contract only")
	}
	return nil
}
