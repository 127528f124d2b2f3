package bundle

import (
	"bytes"
	"strings"
	"testing"
)

func ptr(s string) *string { return &s }

// TestProfileBinding: VerifyOptions.Profile binds the contract profile the
// run used, compared exactly; "" demands the base contract. A real run
// planned under the weaker "quick" profile (shorter timeout) of the
// release tree is refused by a gate that names another profile or the base.
func TestProfileBinding(t *testing.T) {
	k := newKey(t)
	st := storeWith(t, k)
	quick := export(t, makeRun(t, runOpts{approve: []string{"alice"}, profile: "quick"}), k, ExportOptions{})
	base := export(t, makeRun(t, runOpts{approve: []string{"alice"}}), k, ExportOptions{})

	res, err := Verify(bytes.NewReader(quick), st, anyRun)
	if err != nil {
		t.Fatalf("quick run, profile not checked: %v", err)
	}
	if res.Run.Profile != "quick" {
		t.Fatalf("the quick run's predicate says profile %q", res.Run.Profile)
	}

	cases := []struct {
		name    string
		bundle  []byte
		profile *string
		want    Reason
	}{
		{"quick run, not checked", quick, nil, ""},
		{"quick run, quick required", quick, ptr("quick"), ""},
		{"quick run, base required", quick, ptr(""), ProfileMismatch},
		// nightly extends quick with the same limits: still another profile.
		{"quick run, nightly required", quick, ptr("nightly"), ProfileMismatch},
		{"quick run, Quick required", quick, ptr("Quick"), ProfileMismatch},
		{"quick run, 'quick ' required", quick, ptr("quick "), ProfileMismatch},
		{"quick run, unknown profile required", quick, ptr("release"), ProfileMismatch},
		{"base run, not checked", base, nil, ""},
		{"base run, base required", base, ptr(""), ""},
		{"base run, quick required", base, ptr("quick"), ProfileMismatch},
	}
	for _, c := range cases {
		_, err := Verify(bytes.NewReader(c.bundle), st, VerifyOptions{AnySource: true, AnyContract: true, Profile: c.profile})
		if got := reasonOf(err); got != c.want {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
		if c.want == ProfileMismatch && err != nil && !strings.Contains(err.Error(), "the run used") {
			t.Errorf("%s: detail does not name the run's profile: %v", c.name, err)
		}
	}

	// The order: the source and repository binding come first, the
	// approvals after.
	for _, c := range []struct {
		name string
		opts VerifyOptions
		want Reason
	}{
		{"wrong commit", VerifyOptions{AnyContract: true, Commit: strings.Repeat("0", 40), Profile: ptr("")}, CommitMismatch},
		{"wrong repo", VerifyOptions{AnySource: true, AnyContract: true, Repo: "acme/other", Profile: ptr("")}, RepoMismatch},
		{"too few approvals", VerifyOptions{AnySource: true, AnyContract: true, RequireApprovals: 5, Profile: ptr("")}, ProfileMismatch},
	} {
		if _, err := Verify(bytes.NewReader(quick), st, c.opts); reasonOf(err) != c.want {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// TestProfileInPredicateIsAudited: a trusted signer cannot relabel a quick
// run as a base-contract run: the predicate's profile is checked against
// the audited log before the gate's requirement is.
func TestProfileInPredicateIsAudited(t *testing.T) {
	k := newKey(t)
	st := storeWith(t, k)
	quick := export(t, makeRun(t, runOpts{approve: []string{"alice"}, profile: "quick"}), k, ExportOptions{})
	forged := repack(t, resign(t, files(t, quick), k, func(s *Statement) { s.Predicate.Run.Profile = "" }))
	_, err := Verify(bytes.NewReader(forged), st, VerifyOptions{AnySource: true, AnyContract: true, Profile: ptr("")})
	if reasonOf(err) != PredicateMismatch || !strings.Contains(err.Error(), `"profile"`) {
		t.Fatalf("relabelled quick run: %v, want predicate-mismatch on profile", err)
	}
}
