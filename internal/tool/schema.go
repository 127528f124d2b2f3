package tool

import (
	"maps"
	"slices"

	"github.com/proofgate/proofgate/kernel/contract"
)

// InputSchema returns a JSON Schema (2020-12) of t's arguments object, for
// clients that show tools to agents (MCP's inputSchema). It describes what
// Render accepts as far as JSON Schema can: the object is closed, required
// parameters are listed, strings carry maxLength, pattern and enum,
// integers their safe range, arrays maxItems (their depth bound is
// Render's). Render stays the authority: the path rules
// (relative, clean, no "..", no leading "-") are stated in the
// description only.
func InputSchema(t contract.Tool) map[string]any {
	props := map[string]any{}
	required := []any{}
	for _, name := range slices.Sorted(maps.Keys(t.Params)) {
		p := t.Params[name]
		props[name] = paramSchema(p)
		if p.Required {
			required = append(required, name)
		}
	}
	return map[string]any{
		"type":                 "object",
		"properties":           props,
		"required":             required,
		"additionalProperties": false,
	}
}

func paramSchema(p contract.Param) map[string]any {
	s := map[string]any{}
	desc := p.Description
	switch p.Type {
	case contract.ParamInteger:
		s["type"], s["minimum"], s["maximum"] = "integer", -MaxSafeInteger, MaxSafeInteger
	case contract.ParamBoolean:
		s["type"] = "boolean"
	case contract.ParamArray:
		s["type"] = "array"
		s["maxItems"] = p.MaxItems
		if p.MaxItems <= 0 {
			s["maxItems"] = contract.DefaultMaxItems
		}
	case contract.ParamString, contract.ParamPath:
		s["type"] = "string"
		if p.MaxLength > 0 {
			s["maxLength"] = p.MaxLength
		}
		if p.Pattern != "" {
			s["pattern"] = p.Pattern
		}
		if p.Enum != nil {
			enum := make([]any, len(p.Enum))
			for i, v := range p.Enum {
				enum[i] = v
			}
			s["enum"] = enum
		}
		if p.Type == contract.ParamPath {
			note := "A path relative to the tool's working directory: clean, no \"..\", not starting with \"-\"."
			if desc == "" {
				desc = note
			} else {
				desc += " " + note
			}
		}
	}
	if desc != "" {
		s["description"] = desc
	}
	return s
}
