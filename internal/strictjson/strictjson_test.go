package strictjson

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

type key struct {
	ID     string     `json:"id"`
	Status string     `json:"status"`
	At     *time.Time `json:"at,omitempty"`
	//lint:ignore U1000 an unexported field is not a member: the tests decode into it
	secret string
}

type store struct {
	Version int   `json:"version"`
	Keys    []key `json:"keys"`
}

type inner struct {
	Pull *string `json:"pull"`
}

type outer struct {
	ID string `json:"id"`
	inner
	Raw  json.RawMessage   `json:"raw"`
	Any  any               `json:"any"`
	Map  map[string]key    `json:"map"`
	Num  json.Number       `json:"num"`
	Big  int64             `json:"big,string"`
	Meta map[string]string `json:"meta"`
	Skip string            `json:"-"`
	Bare int
}

func TestRefusals(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		open     bool
		kind     Kind
		path     string
	}{
		{"case variant beside the field", `{"version":1,"keys":[{"id":"a","status":"revoked","Status":"active"}]}`, false, CaseVariant, "keys[0].Status"},
		{"case variant alone", `{"version":1,"keys":[{"id":"a","STATUS":"active"}]}`, false, CaseVariant, "keys[0].STATUS"},
		{"case variant in an open format", `{"keys":[{"status":"revoked","Status":"active"}]}`, true, CaseVariant, "keys[0].Status"},
		{"kelvin sign folds to k", "{\"\u212aeys\":[]}", true, CaseVariant, "[\"\u212aeys\"]"},
		{"duplicate member", `{"version":1,"version":2}`, false, Duplicate, "version"},
		{"duplicate in an open format", `{"keys":[{"id":"a","id":"b"}]}`, true, Duplicate, "keys[0].id"},
		{"unknown member", `{"version":1,"extra":true}`, false, Unknown, "extra"},
		{"trailing data", `{"version":1} {}`, false, Trailing, ""},
		{"trailing garbage", `{"version":1}}`, false, Trailing, ""},
		{"truncated", `{"version":1,"keys":[`, false, Syntax, "keys[0]"},
		{"wrong type", `{"version":"1"}`, false, Type, "version"},
		{"invalid utf-8", "{\"keys\":[{\"id\":\"\xff\"}]}", false, Syntax, "keys[0].id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s store
			var err error
			if tc.open {
				err = DecodeOpen([]byte(tc.in), &s)
			} else {
				err = Decode([]byte(tc.in), &s)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v (%T), want *Error", err, err)
			}
			if e.Kind != tc.kind || e.Path != tc.path {
				t.Fatalf("err = %v: kind %q path %q, want %q at %q", err, e.Kind, e.Path, tc.kind, tc.path)
			}
			if tc.path != "" && !strings.HasPrefix(err.Error(), tc.path+": ") {
				t.Fatalf("error %q does not start with the path", err)
			}
		})
	}
}

func TestNestedUntypedDuplicatesAndCaseVariants(t *testing.T) {
	for _, tc := range []struct{ in, kind, path string }{
		{`{"raw":{"a":{"b":1,"b":2}}}`, string(Duplicate), "raw.a.b"},
		{`{"any":[{"x":1,"x":1}]}`, string(Duplicate), "any[0].x"},
		{`{"map":{"k":{"id":"a","ID":"b"}}}`, string(CaseVariant), "map.k.ID"},
		{`{"map":{"k":{},"k":{}}}`, string(Duplicate), "map.k"},
		{`{"Pull":"always"}`, string(CaseVariant), "Pull"},
		{`{"bare":1}`, string(CaseVariant), "bare"},
		{`{"Skip":"x"}`, string(Unknown), "Skip"},
		{`{"secret":"x"}`, string(Unknown), "secret"},
	} {
		var o outer
		err := Decode([]byte(tc.in), &o)
		var e *Error
		if !errors.As(err, &e) || string(e.Kind) != tc.kind || e.Path != tc.path {
			t.Errorf("%s: err = %v, want %s at %s", tc.in, err, tc.kind, tc.path)
		}
	}
	// Map keys are data, not fields: keys differing by case are distinct.
	var o outer
	if err := Decode([]byte(`{"meta":{"Path":"a","PATH":"b","path":"c"}}`), &o); err != nil || len(o.Meta) != 3 {
		t.Fatalf("map keys: %v %v", err, o.Meta)
	}
}

func TestEncodingJSONMeaningsKept(t *testing.T) {
	in := `{"id":"x","pull":"never","raw":{"k": [1, 2]},"any":{"n":1.5},"map":{"a":{"id":"a","status":"active","at":"2024-01-02T03:04:05.5Z"}},"num":12.50,"big":"9007199254740993","Bare":3}`
	var o outer
	if err := Decode([]byte(in), &o); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2024, 1, 2, 3, 4, 5, 5e8, time.UTC)
	if o.ID != "x" || *o.Pull != "never" || string(o.Raw) != `{"k": [1, 2]}` || o.Num != "12.50" ||
		o.Big != 9007199254740993 || o.Bare != 3 || !o.Map["a"].At.Equal(at) ||
		!reflect.DeepEqual(o.Any, map[string]any{"n": 1.5}) {
		t.Fatalf("decoded %+v", o)
	}
	var n struct {
		N json.Number `json:"n"`
	}
	if err := Decode([]byte(`{"n":"7"}`), &n); err != nil || n.N != "7" {
		t.Fatalf("number from a string: %v %q", err, n.N)
	}
	if err := Decode([]byte(`{"n":"seven"}`), &n); err == nil {
		t.Fatal("a non-number string decoded into json.Number")
	}
	// Open formats ignore members that name no field.
	var s store
	if err := DecodeOpen([]byte(`{"version":1,"other":{"Version":2,"x":[1]}}`), &s); err != nil || s.Version != 1 {
		t.Fatalf("open: %v %+v", err, s)
	}
}

type units int

func (u *units) UnmarshalJSON(b []byte) error {
	var s string
	if err := Decode(b, &s); err != nil {
		return err
	}
	*u = units(len(s))
	return nil
}

func TestUnmarshalJSONMethods(t *testing.T) {
	var v struct {
		U units `json:"u"`
	}
	if err := Decode([]byte(`{"u":"abc"}`), &v); err != nil || v.U != 3 {
		t.Fatalf("%v %v", err, v.U)
	}
	err := Decode([]byte(`{"u":1}`), &v)
	var e *Error
	if !errors.As(err, &e) || e.Path != "u" {
		t.Fatalf("method error: %v", err)
	}
}

func TestBounds(t *testing.T) {
	deep := strings.Repeat("[", MaxDepth+2) + strings.Repeat("]", MaxDepth+2)
	var v any
	var e *Error
	if err := Decode([]byte(deep), &v); !errors.As(err, &e) || e.Kind != TooDeep {
		t.Fatalf("deep: %v", err)
	}
	ok := strings.Repeat("[", 100) + strings.Repeat("]", 100)
	if err := Decode([]byte(ok), &v); err != nil {
		t.Fatalf("100 levels: %v", err)
	}
	if err := Read(strings.NewReader(`{"version":1}`), 5, &v); !errors.As(err, &e) || e.Kind != TooLarge {
		t.Fatalf("read limit: %v", err)
	}
	var s store
	if err := Read(strings.NewReader(`{"version":1}`), 100, &s); err != nil || s.Version != 1 {
		t.Fatalf("read: %v", err)
	}
	if err := Decode([]byte(`{}`), s); err == nil {
		t.Fatal("decoded into a non-pointer")
	}
}
