package tool

import (
	"encoding/json"

	"github.com/proofgate/proofgate/internal/strictjson"
	"github.com/proofgate/proofgate/kernel/contract"
)

// array checks an array argument: a JSON array of at most p.MaxItems
// elements (contract.DefaultMaxItems when unset), nested at most
// MaxArrayDepth levels. Its size is bounded by MaxArgs.
func array(name string, p contract.Param, raw []byte) error {
	if len(raw) == 0 || raw[0] != '[' {
		return argErr(name, ReasonType, "want an array, got %s", kindOf(raw))
	}
	// The depth is checked before decoding, so a deep value costs a scan.
	if d := depth(raw); d > MaxArrayDepth+1 {
		return argErr(name, ReasonTooDeep, "nested %d levels, more than %d", d-1, MaxArrayDepth)
	}
	var items []json.RawMessage
	if err := strictjson.Decode(raw, &items); err != nil {
		return argErr(name, ReasonType, "%v", err)
	}
	max := p.MaxItems
	if max <= 0 {
		max = contract.DefaultMaxItems
	}
	if len(items) > max {
		return argErr(name, ReasonTooMany, "%d elements, more than max_items %d", len(items), max)
	}
	return nil
}

// depth returns the deepest nesting of arrays and objects in raw (a
// top-level array is 1), skipping strings.
func depth(raw []byte) int {
	d, deepest, inString, escaped := 0, 0, false, false
	for _, c := range raw {
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case inString && c == '"':
			inString = false
		case inString:
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			d++
			deepest = max(deepest, d)
		case c == ']' || c == '}':
			d--
		}
	}
	return deepest
}
