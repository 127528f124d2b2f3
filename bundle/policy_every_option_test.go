package bundle

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/proofgate/proofgate/internal/canon"
)

// Every requirement a gate can set must change the policy description, so
// a deploy gate pinning the VSA's policy digest never accepts a summary
// issued under a weaker policy (issue 25 class 2). The tests below walk the
// Policy and VerifyOptions structs by reflection: a field added without a
// row here fails them, and a row whose requirement does not change the
// description fails them too.

var (
	everySHA  = strings.Repeat("ab", 20)
	everyHash = "sha256:" + strings.Repeat("0", 64)
)

// policyFieldVariants names, for every field of Policy (and of its
// SourcePolicy and ContractPolicy, as "source.commit"), the policies that
// differ from basePolicy in that field.
var policyFieldVariants = map[string][]func() (*Policy, error){
	"source.commit": {func() (*Policy, error) {
		return NewPolicy(WithCommit(strings.Repeat("cd", 20)), WithContractHash(everyHash))
	}},
	"source.tree": {func() (*Policy, error) { return NewPolicy(WithTree(everySHA), WithContractHash(everyHash)) }},
	"source.any": {func() (*Policy, error) {
		return NewPolicy(WithoutSourceBindingUnsafe(), WithContractHash(everyHash))
	}},
	// set says one of commit, tree and any was chosen: it is never the
	// only difference (an unset source is refused by NewPolicy).
	"source.set":    nil,
	"contract.hash": {func() (*Policy, error) { return basePolicy(), nil }},
	"contract.any": {func() (*Policy, error) {
		return NewPolicy(WithCommit(everySHA), WithoutContractBindingUnsafe())
	}},
	"contract.set":   nil,
	"repo":           {withBase(WithRepo("acme/widget"))},
	"profile":        {withBase(WithProfile("")), withBase(WithProfile("quick"))},
	"approvals":      {withBase(WithApprovals(1)), withBase(WithApprovals(2))},
	"allowDirty":     {withBase(WithDirtySourceUnsafe())},
	"witnessed":      {withBase(WithWitnessTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)))},
	"requireSandbox": {withBase(WithRequireSandbox())},
	"requireRules": {withBase(WithRequireRule("release")), withBase(WithRequireRule("release"), WithRequireRule("security")),
		withBase(WithRequireRule("security"))},
	"requireAuthorizations": {withBase(WithRequireAuthorization("pypi")), withBase(WithRequireAuthorization("npm"))},
	"requireSubjects": {withBase(WithSubject(strings.Repeat("e", 64))), withBase(WithSubject(strings.Repeat("f", 64))),
		withBase(WithSubject(strings.Repeat("e", 64)), WithSubject(strings.Repeat("f", 64)))},
}

// basePolicy binds a commit and a contract hash and requires nothing else.
func basePolicy() *Policy {
	p, err := NewPolicy(WithCommit(everySHA), WithContractHash(everyHash))
	if err != nil {
		panic(err)
	}
	return p
}

func withBase(opts ...PolicyOption) func() (*Policy, error) {
	return func() (*Policy, error) { return NewPolicy(WithCommit(everySHA), WithContractHash(everyHash), opts...) }
}

// policyFields lists Policy's fields, descending into SourcePolicy and
// ContractPolicy ("source.commit").
func policyFields() []string {
	var names []string
	pt := reflect.TypeFor[Policy]()
	for i := range pt.NumField() {
		f := pt.Field(i)
		if f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeFor[time.Time]() {
			for j := range f.Type.NumField() {
				names = append(names, f.Name+"."+f.Type.Field(j).Name)
			}
			continue
		}
		names = append(names, f.Name)
	}
	return names
}

func describeJSON(t *testing.T, p *Policy) string {
	t.Helper()
	b, err := canon.Marshal(p.Describe())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestPolicyDescribeEveryField: for every field of Policy, each variant
// differs from the base policy in that field and describes differently
// from the base and from every other variant.
func TestPolicyDescribeEveryField(t *testing.T) {
	base := describeJSON(t, basePolicy())
	seen := map[string]string{base: "base"}
	for _, name := range policyFields() {
		variants, ok := policyFieldVariants[name]
		if !ok {
			t.Errorf("Policy field %s has no row in policyFieldVariants: add the policies that require it, and make Describe say it", name)
			continue
		}
		for i, mk := range variants {
			p, err := mk()
			if err != nil {
				t.Fatalf("%s[%d]: %v", name, i, err)
			}
			if name != "contract.hash" && !fieldDiffers(p, basePolicy(), name) {
				t.Errorf("%s[%d]: the variant does not differ from the base in %s", name, i, name)
			}
			d := describeJSON(t, p)
			if name == "contract.hash" {
				continue // the base itself: it must describe its hash
			}
			if prev, dup := seen[d]; dup {
				t.Errorf("%s[%d] describes as %s does: %s (a gate pinning the policy digest could not tell them apart)", name, i, prev, d)
			}
			seen[d] = name
		}
	}
	if !strings.Contains(base, everyHash) {
		t.Errorf("the base description %s does not name its contract hash", base)
	}
	for name := range policyFieldVariants {
		if !strings.Contains(strings.Join(policyFields(), " "), name) {
			t.Errorf("policyFieldVariants row %s names no Policy field", name)
		}
	}
}

// fieldDiffers reports whether a and b differ in the field name
// ("source.commit" or "repo").
func fieldDiffers(a, b *Policy, name string) bool {
	va, vb := reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem()
	for _, part := range strings.Split(name, ".") {
		va, vb = va.FieldByName(part), vb.FieldByName(part)
	}
	return !sameValue(va, vb)
}

// sameValue compares two values of unexported fields (which
// reflect.Value.Interface refuses): pointers by what they point to, slices
// element by element, anything else with ==.
func sameValue(a, b reflect.Value) bool {
	switch a.Kind() {
	case reflect.Pointer:
		return a.IsNil() == b.IsNil() && (a.IsNil() || sameValue(a.Elem(), b.Elem()))
	case reflect.Slice:
		if a.Len() != b.Len() {
			return false
		}
		for i := range a.Len() {
			if !sameValue(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	}
	return a.Equal(b)
}

// verifyOptionPolicy sets, for every field of VerifyOptions that is a
// requirement, a value that must change the description; integrity names
// the fields that are not part of the policy and why.
var (
	verifyOptionPolicy = map[string]func(*VerifyOptions){
		"Commit":                func(o *VerifyOptions) { o.Commit = strings.Repeat("cd", 20) },
		"Tree":                  func(o *VerifyOptions) { o.Commit, o.Tree = "", everySHA },
		"AnySource":             func(o *VerifyOptions) { o.Commit, o.AnySource = "", true },
		"ContractHash":          func(o *VerifyOptions) { o.ContractHash = "sha256:" + strings.Repeat("1", 64) },
		"AnyContract":           func(o *VerifyOptions) { o.ContractHash, o.AnyContract = "", true },
		"AllowDirty":            func(o *VerifyOptions) { o.AllowDirty = true },
		"Witnessed":             func(o *VerifyOptions) { o.Witnessed = time.Unix(1e9, 0) },
		"Repo":                  func(o *VerifyOptions) { o.Repo = "acme/widget" },
		"Profile":               func(o *VerifyOptions) { s := ""; o.Profile = &s },
		"RequireApprovals":      func(o *VerifyOptions) { o.RequireApprovals = 2 },
		"RequireSandbox":        func(o *VerifyOptions) { o.RequireSandbox = true },
		"RequireRules":          func(o *VerifyOptions) { o.RequireRules = []string{"release"} },
		"RequireAuthorizations": func(o *VerifyOptions) { o.RequireAuthorizations = []string{"pypi"} },
		"RequireSubjects":       func(o *VerifyOptions) { o.RequireSubjects = []string{strings.Repeat("e", 64)} },
	}
	verifyOptionIntegrity = map[string]string{
		"Now":      "the verification time; the VSA carries it as timeVerified",
		"Limits":   "archive size bounds (integrity), not a requirement of the run",
		"Material": "keyless material verifiers; the VSA hashes the trusted root and lists the identities beside the description",
	}
)

// TestVerifyOptionsEveryRequirement: every VerifyOptions field is either a
// requirement that changes the policy description, or named as integrity.
func TestVerifyOptionsEveryRequirement(t *testing.T) {
	base := VerifyOptions{Commit: everySHA, ContractHash: everyHash, RequireApprovals: 1}
	bp, err := base.Policy()
	if err != nil {
		t.Fatal(err)
	}
	baseJSON := describeJSON(t, bp)
	ot := reflect.TypeFor[VerifyOptions]()
	for i := range ot.NumField() {
		name := ot.Field(i).Name
		set, isPolicy := verifyOptionPolicy[name]
		if _, integrity := verifyOptionIntegrity[name]; integrity == isPolicy {
			t.Errorf("VerifyOptions.%s: name it in exactly one of verifyOptionPolicy (a requirement: the description must say it) and verifyOptionIntegrity", name)
			continue
		}
		if !isPolicy {
			continue
		}
		o := base
		set(&o)
		p, err := o.Policy()
		if err != nil {
			t.Fatalf("VerifyOptions.%s: %v", name, err)
		}
		if got := describeJSON(t, p); got == baseJSON {
			t.Errorf("VerifyOptions.%s does not change the policy description %s: a VSA issued without it has the same policy digest", name, got)
		}
	}
}

// TestPolicyDescribeUnchanged: a policy that takes none of the members
// added for issue 25 describes (and so digests) exactly as before, so
// VSAs pinned by digest keep verifying.
func TestPolicyDescribeUnchanged(t *testing.T) {
	got := describeJSON(t, basePolicy())
	want := `{"commit":"` + everySHA + `","contract_hash":"` + everyHash + `","require_approvals":0}`
	if got != want {
		t.Fatalf("Describe:\n got %s\nwant %s", got, want)
	}
}
