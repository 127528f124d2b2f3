package contract

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// SchemaJSON is the JSON Schema of contract v1, published as
// docs/schema/contract.v1.json. The loader validates every contract with it.
//
//go:embed contract.v1.json
var SchemaJSON []byte

// SchemaID is the $id of the contract v1 schema.
const SchemaID = "https://proofgate.dev/schema/contract.v1.json"

var compiledSchema = sync.OnceValues(func() (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(SchemaJSON))
	if err != nil {
		return nil, fmt.Errorf("contract schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(SchemaID, doc); err != nil {
		return nil, fmt.Errorf("contract schema: %w", err)
	}
	s, err := c.Compile(SchemaID)
	if err != nil {
		return nil, fmt.Errorf("contract schema: %w", err)
	}
	return s, nil
})

// validateSchema validates the document against the schema and reports the
// violation that comes first in the file.
func (p *parser) validateSchema(doc *document) error {
	s, err := compiledSchema()
	if err != nil {
		return err
	}
	err = s.Validate(doc.value)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return p.errf("", "schema validation failed: %v", err)
	}
	var leaves []*jsonschema.ValidationError
	collectLeaves(ve, &leaves)
	type located struct {
		err *Error
		pos position
		ptr string
	}
	var all []located
	for _, l := range leaves {
		e, ptr := p.schemaError(doc, l)
		pos, ok := doc.pos[ptr]
		if !ok {
			pos = position{1 << 30, 1 << 30} // unknown: sort last
		}
		all = append(all, located{e, pos, ptr})
	}
	sort.SliceStable(all, func(i, j int) bool {
		if all[i].pos != all[j].pos {
			return all[i].pos.less(all[j].pos)
		}
		if all[i].err.Path != all[j].err.Path {
			return all[i].err.Path < all[j].err.Path
		}
		return all[i].err.Msg < all[j].err.Msg
	})
	if len(all) == 0 {
		return p.errf("", "does not match the contract schema")
	}
	return all[0].err
}

func collectLeaves(e *jsonschema.ValidationError, out *[]*jsonschema.ValidationError) {
	if _, names := e.ErrorKind.(*kind.PropertyNames); len(e.Causes) == 0 || names {
		*out = append(*out, e)
		return
	}
	for _, c := range e.Causes {
		collectLeaves(c, out)
	}
}

// instance walks the document along a JSON pointer, returning the value and
// the field path in contract notation.
func instance(doc *document, loc []string) (any, fieldPath) {
	v := doc.value
	var path fieldPath
	for _, tok := range loc {
		switch cur := v.(type) {
		case map[string]any:
			path = path.key(tok)
			v = cur[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			path = path.idx(i)
			if err != nil || i < 0 || i >= len(cur) {
				v = nil
			} else {
				v = cur[i]
			}
		default:
			path = path.key(tok)
			v = nil
		}
	}
	return v, path
}

// defName returns the $defs entry a schema location points into, if any.
func defName(schemaURL string) string {
	_, frag, ok := strings.Cut(schemaURL, "#/$defs/")
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(frag, "/")
	return name
}

// profileFixed are the check fields a profile cannot set. A workflow, which
// a pull request can edit, chooses the profile, so a profile must never
// change what a check runs or what it proves.
var profileFixed = []string{"run", "dir", "runtime", "image", "env", "env_from_host", "criteria", "depends_on", "evidence", "caches", "produces"}

// profileRule explains profileFixed in error messages.
const profileRule = "a profile tunes limits and tightens isolation; it cannot change run, dir, runtime, image, env, env_from_host, criteria, depends_on or evidence (nor caches or produces)"

// schemaError turns one leaf validation error into a contract *Error with a
// plain message, and returns the JSON pointer it is located at.
func (p *parser) schemaError(doc *document, l *jsonschema.ValidationError) (*Error, string) {
	loc := l.InstanceLocation
	v, path := instance(doc, loc)
	def := defName(l.SchemaURL)
	switch k := l.ErrorKind.(type) {
	case *kind.AdditionalProperties:
		props := append([]string(nil), k.Properties...)
		sort.Strings(props)
		// Report the first unknown key in file order.
		best := props[0]
		for _, prop := range props[1:] {
			a := doc.pos[pointer(append(loc[:len(loc):len(loc)], prop))]
			b := doc.pos[pointer(append(loc[:len(loc):len(loc)], best))]
			if a.less(b) {
				best = prop
			}
		}
		kt := append(loc[:len(loc):len(loc)], best)
		if def == "profileCheck" && slices.Contains(profileFixed, best) {
			return p.errf(path.key(best), "a profile cannot change %s: %s", best, profileRule), pointer(kt)
		}
		return p.errf(path.key(best), "unknown field %q", best), pointer(kt)
	case *kind.Required:
		missing := append([]string(nil), k.Missing...)
		sort.Strings(missing)
		return p.errf(path.key(missing[0]), "required"), pointer(loc)
	case *kind.PropertyNames:
		// The library aliases InstanceLocation of propertyNames errors to
		// a slice it goes on mutating, so find the object by searching
		// the document for the offending key where the schema allows a map.
		env := def == "env"
		loc = findMapWithKey(doc, k.Property, env)
		_, path = instance(doc, loc)
		kt := append(loc[:len(loc):len(loc)], k.Property)
		what := "profile name (want ^[a-z0-9][a-z0-9_-]{0,62}$)"
		if !env && topLevelHas(doc, "caches", k.Property) && !topLevelHas(doc, "profiles", k.Property) {
			loc = []string{"caches"}
			_, path = instance(doc, loc)
			kt = []string{"caches", k.Property}
			what = "cache name (want ^[a-z0-9][a-z0-9_-]{0,62}$)"
		}
		if env {
			what = "environment variable name (want ^[A-Za-z_][A-Za-z0-9_]*$, at most 128 bytes)"
		}
		return p.errf(path.key(k.Property), "%q is not a valid %s", truncate(k.Property, 64), what), pointer(kt)
	}
	if _, not := l.ErrorKind.(*kind.Not); not && def == "profile" && len(loc) > 0 {
		return p.errf(path, "a profile cannot change the %s: tools and policy come from the base contract only, since a workflow (which a pull request can edit) chooses the profile", loc[len(loc)-1]), pointer(loc)
	}
	return p.valueError(def, loc, path, l, v)
}

// valueError is a schema violation of a value, by the definition it
// breaks (a duration, a size, an id, an image, ...), at path.
func (p *parser) valueError(def string, loc []string, path fieldPath, l *jsonschema.ValidationError, v any) (*Error, string) {
	ptr := pointer(loc)
	switch def {
	case "duration":
		return p.errf(path, "%s is not a duration", describe(v)), ptr
	case "size":
		if _, isStr := v.(string); isStr {
			if _, err := ParseSize(v.(string)); err != nil {
				return p.errf(path, "%s", err.Error()), ptr
			}
		}
		return p.errf(path, "%s is not a size (want bytes as an integer, or e.g. 512KiB, 1MiB, 2GB)", describe(v)), ptr
	case "argv":
		switch l.ErrorKind.(type) {
		case *kind.MinLength:
			return p.errf(path, "argv[0] must not be empty"), ptr
		case *kind.MinItems:
			return p.errf(path, "argv must not be empty"), ptr
		case *kind.Type:
			if _, isStr := v.(string); isStr && len(loc) > 0 && loc[len(loc)-1] == "run" {
				return p.errf(path, "must be an argv array such as [go, test, ./...], not a shell string"), ptr
			}
		}
	case "id":
		if _, ok := l.ErrorKind.(*kind.Pattern); ok {
			return p.errf(path, "%s is not a valid id (want ^[a-z0-9][a-z0-9._-]{0,62}$)", describe(v)), ptr
		}
	case "image":
		if str, isStr := v.(string); isStr {
			if msg := imageProblem(str); msg != "" {
				return p.errf(path, "%s", msg), ptr
			}
		}
	case "envFromHost":
		switch k := l.ErrorKind.(type) {
		case *kind.Pattern:
			return p.errf(path, "%s is not a valid environment variable name (want ^[A-Za-z_][A-Za-z0-9_]*$)", describe(v)), ptr
		case *kind.UniqueItems:
			if list, ok := v.([]any); ok && k.Duplicates[1] < len(list) {
				return p.errf(path.idx(k.Duplicates[1]), "%s is listed twice", describe(list[k.Duplicates[1]])), ptr
			}
		}
	case "toolName":
		if _, ok := l.ErrorKind.(*kind.Pattern); ok {
			return p.errf(path, "%s is not a valid name (want ^[a-z][a-z0-9_-]{0,63}$: lower-case ASCII)", describe(v)), ptr
		}
	case "toolArgv":
		switch l.ErrorKind.(type) {
		case *kind.MinLength:
			return p.errf(path, "argv[0] must not be empty"), ptr
		case *kind.MinItems:
			return p.errf(path, "argv must not be empty"), ptr
		case *kind.Type:
			if _, isStr := v.(string); isStr && len(loc) > 0 && loc[len(loc)-1] == "run" {
				return p.errf(path, "must be an argv array such as [/bin/echo, \"{{name}}\"], not a shell string"), ptr
			}
		}
	case "profileName":
		if _, ok := l.ErrorKind.(*kind.Pattern); ok {
			return p.errf(path, "%s is not a valid profile name (want ^[a-z0-9][a-z0-9_-]{0,62}$)", describe(v)), ptr
		}
	}
	return p.errf(path, "%s", kindMessage(l.ErrorKind, v)), ptr
}

// kindMessage renders a schema violation without the library's printer.
func kindMessage(k jsonschema.ErrorKind, v any) string {
	switch k := k.(type) {
	case *kind.Type:
		return fmt.Sprintf("got %s, want %s", typeName(v, k.Got), strings.Join(k.Want, " or "))
	case *kind.Enum:
		var want []string
		for _, w := range k.Want {
			b, _ := json.Marshal(w)
			want = append(want, string(b))
		}
		return fmt.Sprintf("%s is not one of %s", describe(v), strings.Join(want, ", "))
	case *kind.Const:
		b, _ := json.Marshal(k.Want)
		return fmt.Sprintf("%s is not supported (want %s)", describe(v), b)
	case *kind.MinItems:
		return fmt.Sprintf("has %d items, want at least %d", k.Got, k.Want)
	case *kind.MaxItems:
		return fmt.Sprintf("has %d items, want at most %d", k.Got, k.Want)
	case *kind.MaxProperties:
		return fmt.Sprintf("has %d entries, want at most %d", k.Got, k.Want)
	case *kind.MinLength:
		if k.Want == 1 {
			return "must not be empty"
		}
		return fmt.Sprintf("is %d characters long, want at least %d", k.Got, k.Want)
	case *kind.MaxLength:
		return fmt.Sprintf("is %d characters long, want at most %d", k.Got, k.Want)
	case *kind.Pattern:
		return fmt.Sprintf("%s does not match %s", describe(v), k.Want)
	case *kind.UniqueItems:
		return fmt.Sprintf("items %d and %d are equal", k.Duplicates[0], k.Duplicates[1])
	case *kind.Minimum:
		return fmt.Sprintf("%s is below the minimum %s", describe(v), k.Want.RatString())
	case *kind.Maximum:
		return fmt.Sprintf("%s is above the maximum %s", describe(v), k.Want.RatString())
	case *kind.ExclusiveMinimum:
		return fmt.Sprintf("%s must be greater than %s", describe(v), k.Want.RatString())
	case *kind.ExclusiveMaximum:
		return fmt.Sprintf("%s must be less than %s", describe(v), k.Want.RatString())
	case *kind.FalseSchema:
		return "not allowed"
	}
	return "does not match the contract schema"
}

func typeName(v any, got string) string {
	if _, ok := v.(json.Number); ok {
		return "number " + describe(v)
	}
	if s, ok := v.(string); ok {
		return "string " + strconv.Quote(truncate(s, 64))
	}
	return got
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// topLevelHas reports whether the document's top-level object field holds
// key.
func topLevelHas(doc *document, field, key string) bool {
	top, _ := doc.value.(map[string]any)
	m, _ := top[field].(map[string]any)
	_, ok := m[key]
	return ok
}

// findMapWithKey returns the location of the first object (in file order)
// that holds key and is an env map (env) or the profiles map (!env).
func findMapWithKey(doc *document, key string, env bool) []string {
	if !env {
		return []string{"profiles"}
	}
	var best []string
	var bestPos position
	var walk func(v any, loc []string)
	walk = func(v any, loc []string) {
		switch v := v.(type) {
		case map[string]any:
			if _, ok := v[key]; ok && len(loc) > 0 && loc[len(loc)-1] == "env" {
				pos := doc.pos[pointer(append(loc[:len(loc):len(loc)], key))]
				if best == nil || pos.less(bestPos) {
					best, bestPos = slices.Clone(loc), pos
				}
			}
			for k, c := range v {
				walk(c, append(loc[:len(loc):len(loc)], k))
			}
		case []any:
			for i, c := range v {
				walk(c, append(loc[:len(loc):len(loc)], strconv.Itoa(i)))
			}
		}
	}
	walk(doc.value, nil)
	return best
}
