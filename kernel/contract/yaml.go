package contract

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// maxDepth bounds the nesting of the document; the deepest legal contract
// is about eight levels deep.
const maxDepth = 32

// position is a line and column in the source, 1-based.
type position struct{ line, col int }

func (p position) less(q position) bool {
	if p.line != q.line {
		return p.line < q.line
	}
	return p.col < q.col
}

// document is a contract converted from YAML into a generic JSON value
// (map[string]any, []any, string, json.Number, bool, nil), with the source
// position of every value keyed by its JSON pointer.
type document struct {
	value any
	pos   map[string]position
}

// pointer joins JSON pointer tokens, escaping '~' and '/'.
func pointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		t = strings.ReplaceAll(t, "~", "~0")
		b.WriteString(strings.ReplaceAll(t, "/", "~1"))
	}
	return b.String()
}

// decodeYAML parses exactly one YAML (or JSON) document into a generic value.
// Aliases, anchors, merge keys, custom tags, duplicate keys and non-string
// keys are refused with the path where they occur.
func (p *parser) decodeYAML(data []byte) (doc *document, err error) {
	defer func() {
		if r := recover(); r != nil {
			doc, err = nil, p.errf("", "invalid YAML: parser failure: %v", r)
		}
	}()
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	var root yaml.Node
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, p.errf("", "empty document")
		}
		return nil, p.syntaxErr(data, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, p.syntaxErr(data, err)
		}
		return nil, p.errf("", "more than one YAML document (line %d)", extra.Line)
	}
	doc = &document{pos: map[string]position{}}
	node := &root
	if node.Kind == yaml.DocumentNode {
		if len(node.Content) != 1 {
			return nil, p.errf("", "empty document")
		}
		node = node.Content[0]
	}
	v, err := p.convert(node, doc, "", nil, 0)
	if err != nil {
		return nil, err
	}
	doc.value = v
	return doc, nil
}

// syntaxErr reports a document yaml/v3 refused, at the line and column
// where the mistake is when the second parser can say (yamlpos.go), else
// with yaml/v3's message.
func (p *parser) syntaxErr(data []byte, err error) *Error {
	if line, col, msg, ok := syntaxAt(data); ok {
		e := p.errf("", "invalid YAML: %s", msg)
		e.Line, e.Column = line, col
		return e
	}
	return p.errf("", "invalid YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
}

func (p *parser) convert(n *yaml.Node, doc *document, path fieldPath, tokens []string, depth int) (any, error) {
	if depth > maxDepth {
		return nil, p.errf(path, "nested deeper than %d levels", maxDepth)
	}
	if n.Anchor != "" {
		return nil, p.errf(path, "YAML anchors are not allowed (line %d)", n.Line)
	}
	ptr := pointer(tokens)
	if _, ok := doc.pos[ptr]; !ok {
		doc.pos[ptr] = position{n.Line, n.Column}
	}
	switch n.Kind {
	case yaml.AliasNode:
		return nil, p.errf(path, "YAML aliases are not allowed (line %d)", n.Line)
	case yaml.MappingNode:
		if t := n.ShortTag(); t != "!!map" {
			return nil, p.errf(path, "YAML tag %s is not allowed (line %d)", t, n.Line)
		}
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind == yaml.AliasNode {
				return nil, p.errf(path, "YAML aliases are not allowed (line %d)", k.Line)
			}
			if k.Anchor != "" {
				return nil, p.errf(path, "YAML anchors are not allowed (line %d)", k.Line)
			}
			if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
				return nil, p.errf(path, "YAML merge keys (<<) are not allowed (line %d)", k.Line)
			}
			if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
				return nil, p.errf(path, "key %q on line %d is not a string", k.Value, k.Line)
			}
			kp := path.key(k.Value)
			if _, dup := m[k.Value]; dup {
				return nil, p.errf(kp, "duplicate key %q (line %d)", k.Value, k.Line)
			}
			kt := append(tokens[:len(tokens):len(tokens)], k.Value)
			doc.pos[pointer(kt)] = position{k.Line, k.Column}
			cv, err := p.convert(v, doc, kp, kt, depth+1)
			if err != nil {
				return nil, err
			}
			m[k.Value] = cv
		}
		return m, nil
	case yaml.SequenceNode:
		if t := n.ShortTag(); t != "!!seq" {
			return nil, p.errf(path, "YAML tag %s is not allowed (line %d)", t, n.Line)
		}
		a := make([]any, 0, len(n.Content))
		for i, c := range n.Content {
			ct := append(tokens[:len(tokens):len(tokens)], strconv.Itoa(i))
			cv, err := p.convert(c, doc, path.idx(i), ct, depth+1)
			if err != nil {
				return nil, err
			}
			a = append(a, cv)
		}
		return a, nil
	case yaml.ScalarNode:
		return p.scalar(n, path)
	}
	return nil, p.errf(path, "unsupported YAML node (line %d)", n.Line)
}

func (p *parser) scalar(n *yaml.Node, path fieldPath) (any, error) {
	switch t := n.ShortTag(); t {
	case "!!str", "!!timestamp":
		return n.Value, nil
	case "!!null":
		return nil, nil
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return nil, p.errf(path, "%q is not a boolean (line %d)", n.Value, n.Line)
		}
		return b, nil
	case "!!int":
		var i int64
		if err := n.Decode(&i); err != nil {
			return nil, p.errf(path, "integer %s is out of range (line %d)", n.Value, n.Line)
		}
		return json.Number(strconv.FormatInt(i, 10)), nil
	case "!!float":
		var f float64
		if err := n.Decode(&f); err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, p.errf(path, "%s is not a finite number (line %d)", n.Value, n.Line)
		}
		return json.Number(strconv.FormatFloat(f, 'g', -1, 64)), nil
	default:
		return nil, p.errf(path, "YAML tag %s is not allowed (line %d)", t, n.Line)
	}
}

// describe renders a generic value for an error message.
func describe(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		if len(v) > 64 {
			v = v[:64] + "..."
		}
		return strconv.Quote(v)
	case json.Number:
		return string(v)
	case bool:
		return strconv.FormatBool(v)
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%v", v)
}
