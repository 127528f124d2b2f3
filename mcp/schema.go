package mcp

import (
	"fmt"
	"slices"

	"github.com/proofgate/proofgate/kernel/contract"
)

// DefaultMaxLength is the length bound of a string param that declares
// none, and of every path param: the contract's documented default.
const DefaultMaxLength = 4096

// pathNote is what the schema of a path param says about it.
const pathNote = "a relative, clean path inside the repository: no leading '/' or '-', no '..' element, no NUL"

// InputSchema returns the JSON Schema (draft 2020-12 subset) of t's
// arguments object: its params with their types and bounds, the required
// ones, and no other member. It fails for a param type it does not know
// (the contract loader refuses those first).
func InputSchema(t contract.Tool) (map[string]any, error) {
	props := map[string]any{}
	required := []string{}
	for name, p := range t.Params {
		s, err := paramSchema(p)
		if err != nil {
			return nil, fmt.Errorf("tool %s: param %s: %w", t.Name, name, err)
		}
		props[name] = s
		if p.Required {
			required = append(required, name)
		}
	}
	slices.Sort(required)
	s := map[string]any{
		"type":                 "object",
		"properties":           props,
		"additionalProperties": false,
	}
	if len(required) > 0 {
		s["required"] = required
	}
	return s, nil
}

func paramSchema(p contract.Param) (map[string]any, error) {
	s := map[string]any{}
	switch p.Type {
	case "string":
		s["type"] = "string"
		s["maxLength"] = orDefault(p.MaxLength)
		if p.Pattern != "" {
			s["pattern"] = p.Pattern
		}
		if len(p.Enum) > 0 {
			s["enum"] = slices.Clone(p.Enum)
		}
	case "integer", "boolean":
		s["type"] = p.Type
	case "path":
		s["type"] = "string"
		s["maxLength"] = orDefault(p.MaxLength)
	default:
		return nil, fmt.Errorf("unknown type %q", p.Type)
	}
	desc := p.Description
	if p.Type == "path" {
		desc = joinNote(desc, pathNote)
	}
	if desc != "" {
		s["description"] = desc
	}
	return s, nil
}

func orDefault(n int) int {
	if n <= 0 {
		return DefaultMaxLength
	}
	return n
}

func joinNote(desc, note string) string {
	if desc == "" {
		return note
	}
	return desc + " (" + note + ")"
}
