package action

import (
	"bytes"
	"slices"
	"testing"

	"github.com/proofgate/proofgate/internal/ci/gate"
)

func TestReadRequireAuthorizations(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		bad  bool
	}{
		{"", nil, false},
		{"deploy/prod", []string{"deploy/prod"}, false},
		{"deploy/prod, jira:OPS-1\n\n deploy/eu ", []string{"deploy/prod", "jira:OPS-1", "deploy/eu"}, false},
		{"deploy prod", nil, true},
		{"-x", nil, true},
	} {
		env := map[string]string{"INPUT_REQUIRE-AUTHORIZATION": tc.in}
		f := newWorkflow(func(k string) string { return env[k] }, &bytes.Buffer{})
		var in verifyInputs
		r := readLists(f.input, &in)
		if (r != nil) != tc.bad {
			t.Errorf("%q: refusal %v", tc.in, r)
			continue
		}
		if r != nil && r.Reason != string(gate.ReasonUsage) {
			t.Errorf("%q: reason %s", tc.in, r.Reason)
		}
		if !tc.bad && !slices.Equal(in.requireAuthorizations, tc.want) {
			t.Errorf("%q: %v, want %v", tc.in, in.requireAuthorizations, tc.want)
		}
	}
}
