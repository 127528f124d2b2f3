package contract

import (
	"bytes"
	"errors"
	"os"
	"testing"
)

// A contract without authorization:, or with {required: false}, hashes
// exactly as before; {required: true} is in the hash.
func TestAuthorizationHash(t *testing.T) {
	data := minimalYAML(t)
	for _, extra := range []string{"", "authorization: {required: false}\n"} {
		r, _ := minimalUnchanged(t, extra)
		if r.AuthorizationRequired() {
			t.Errorf("with %q: authorization required", extra)
		}
	}
	base := mustHash(t, mustParse(t, string(data), ""))
	req := mustParse(t, string(data)+"authorization: {required: true}\n", "")
	if !req.AuthorizationRequired() {
		t.Fatal("required: true not resolved")
	}
	if h := mustHash(t, req); h == base {
		t.Error("authorization.required: true left the hash unchanged")
	}
	c, _ := req.Canonical()
	if !bytes.Contains(c, []byte(`"authorization":{"required":true}`)) {
		t.Errorf("canonical lacks the section: %s", c)
	}
}

// Unknown fields, a missing required and a profile that sets it are refused
// with the field's path.
func TestAuthorizationInvalid(t *testing.T) {
	data, err := os.ReadFile("testdata/minimal.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, extra := range []string{
		"authorization: {required: true, targets: [x]}\n",
		"authorization: {}\n",
		"authorization: {required: yes-please}\n",
		"authorization: true\n",
	} {
		_, err := Parse("contract.yaml", []byte(string(data)+extra), "")
		var ce *Error
		if !errors.As(err, &ce) {
			t.Errorf("%q: got %v, want a *contract.Error", extra, err)
			continue
		}
		if !bytes.Contains([]byte(ce.Error()), []byte("authorization")) {
			t.Errorf("%q: error %q does not name authorization", extra, ce)
		}
	}
}
