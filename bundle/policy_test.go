package bundle

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/proofgate/proofgate/bundle/trust"
	"github.com/proofgate/proofgate/kernel/exit"
	"github.com/proofgate/proofgate/kernel/replay"
)

// TestPolicyOptions: the option form of a policy binds as VerifyOptions
// does; the source and the contract are required, their opt-outs spelled
// out, and a zero or nil policy is refused before the bundle is read.
func TestPolicyOptions(t *testing.T) {
	f := makeRun(t, runOpts{approve: []string{"alice"}})
	k := newKey(t)
	st := storeWith(t, k)
	good := export(t, f, k, ExportOptions{})
	h := contractHashOf(t, f, "")
	v := NewVerifier(st)

	for _, c := range []struct {
		name string
		src  SourcePolicy
		con  ContractPolicy
		opts []PolicyOption
		want Reason
	}{
		{"commit and contract", WithCommit(f.commit), WithContractHash(h), []PolicyOption{WithApprovals(1), WithProfile("")}, ""},
		{"tree, upper case", WithTree(strings.ToUpper(f.tree)), WithContractHash(h), nil, ""},
		{"unsafe opt-outs", WithoutSourceBindingUnsafe(), WithoutContractBindingUnsafe(), nil, ""},
		{"other commit", WithCommit(strings.Repeat("b", 40)), WithContractHash(h), nil, CommitMismatch},
		{"other tree", WithTree(strings.Repeat("c", 40)), WithContractHash(h), nil, TreeMismatch},
		{"other contract", WithCommit(f.commit), WithContractHash("sha256:" + strings.Repeat("0", 64)), nil, ContractMismatch},
		{"other repo", WithoutSourceBindingUnsafe(), WithoutContractBindingUnsafe(), []PolicyOption{WithRepo("acme/other")}, RepoMismatch},
		{"other profile", WithoutSourceBindingUnsafe(), WithoutContractBindingUnsafe(), []PolicyOption{WithProfile("quick")}, ProfileMismatch},
		{"two approvals", WithoutSourceBindingUnsafe(), WithoutContractBindingUnsafe(), []PolicyOption{WithApprovals(2)}, InsufficientApprovals},
		{"witnessed before signing", WithoutSourceBindingUnsafe(), WithoutContractBindingUnsafe(), []PolicyOption{WithWitnessTime(time.Unix(0, 0))}, SigningTimeImplausible},
	} {
		p, err := NewPolicy(c.src, c.con, c.opts...)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		_, err = v.Verify(bytes.NewReader(good), p)
		if reasonOf(err) != c.want || (c.want == "") != (err == nil) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}

	for name, c := range map[string]struct {
		src   SourcePolicy
		con   ContractPolicy
		opts  []PolicyOption
		field PolicyField
	}{
		"no source":        {SourcePolicy{}, WithContractHash(h), nil, PolicySource},
		"no contract":      {WithCommit(f.commit), ContractPolicy{}, nil, PolicyContract},
		"empty commit":     {WithCommit(""), WithContractHash(h), nil, PolicyCommit},
		"short tree":       {WithTree(f.tree[:7]), WithContractHash(h), nil, PolicyTree},
		"empty hash":       {WithCommit(f.commit), WithContractHash(""), nil, PolicyContractHash},
		"negative":         {WithCommit(f.commit), WithContractHash(h), []PolicyOption{WithApprovals(-1)}, PolicyApprovals},
		"repo not a name":  {WithCommit(f.commit), WithContractHash(h), []PolicyOption{WithRepo("not a repo")}, PolicyRepo},
		"repo with a path": {WithCommit(f.commit), WithContractHash(h), []PolicyOption{WithRepo("a/b/c")}, PolicyRepo},
	} {
		_, err := NewPolicy(c.src, c.con, c.opts...)
		var pe *PolicyError
		if !errors.As(err, &pe) || pe.Field != c.field {
			t.Errorf("%s: got %v, want a policy error about %s", name, err, c.field)
		}
		if !errors.Is(err, exit.Usage) {
			t.Errorf("%s: %v is not of class usage", name, err)
		}
	}
	for name, p := range map[string]*Policy{"nil": nil, "zero": {}} {
		var pe *PolicyError
		if _, err := v.Verify(bytes.NewReader(good), p); !errors.As(err, &pe) {
			t.Errorf("%s policy: got %v, want a policy error", name, err)
		}
	}
}

// TestVerifyOptionsPolicy: VerifyOptions refuses what it refused before,
// and now the policy errors its callers (the CLI) used to check.
func TestVerifyOptionsPolicy(t *testing.T) {
	sha := strings.Repeat("a", 40)
	h := "sha256:" + strings.Repeat("0", 64)
	for _, c := range []struct {
		o     VerifyOptions
		field PolicyField
	}{
		{VerifyOptions{AnyContract: true}, PolicySource},
		{VerifyOptions{Commit: sha, Tree: sha, AnyContract: true}, PolicySource},
		{VerifyOptions{Commit: sha, AnySource: true, AnyContract: true}, PolicySource},
		{VerifyOptions{Commit: sha}, PolicyContract},
		{VerifyOptions{Commit: sha, ContractHash: h, AnyContract: true}, PolicyContract},
		{VerifyOptions{Commit: "HEAD", AnyContract: true}, PolicyCommit},
		{VerifyOptions{Tree: "abc", AnyContract: true}, PolicyTree},
		{VerifyOptions{AnySource: true, ContractHash: "sha256:nothex"}, PolicyContractHash},
		{VerifyOptions{AnySource: true, AnyContract: true, RequireApprovals: -1}, PolicyApprovals},
		{VerifyOptions{AnySource: true, AnyContract: true, Repo: "x y"}, PolicyRepo},
	} {
		_, err := c.o.Policy()
		var pe *PolicyError
		if !errors.As(err, &pe) || pe.Field != c.field {
			t.Errorf("%+v: got %v, want a policy error about %s", c.o, err, c.field)
		}
	}
	if _, err := (VerifyOptions{Tree: sha, ContractHash: h, Repo: "acme/widget.go", RequireApprovals: 2}).Policy(); err != nil {
		t.Errorf("a full policy: %v", err)
	}
}

// TestRefusalsOfUnexpectedErrors: the typed-error mappings fall back to a
// reason instead of dereferencing a type the error does not have.
func TestRefusalsOfUnexpectedErrors(t *testing.T) {
	plain := errors.New("plain")
	for name, c := range map[string]struct {
		err  error
		want Reason
	}{
		"key":            {refuseKey(plain, "r"), Malformed},
		"key, typed":     {refuseKey(&trust.KeyError{Reason: trust.KeyRevoked, KeyID: "k"}, "r"), KeyRevoked},
		"audit":          {refuseAudit(plain, "r"), AuditFailed},
		"audit, wrapped": {refuseAudit(fmt.Errorf("x: %w", &replay.AuditError{Reason: replay.ReasonChain}), "r"), ChainBroken},
		"audit, blob":    {refuseAudit(&replay.AuditError{Reason: replay.ReasonBlob}, "r"), MissingFile},
		"audit, other":   {refuseAudit(&replay.AuditError{Reason: replay.ReasonDecision}, "r"), AuditFailed},
	} {
		if got := reasonOf(c.err); got != c.want {
			t.Errorf("%s: %q, want %q", name, got, c.want)
		}
		if !errors.Is(c.err, exit.Refused) {
			t.Errorf("%s: %v is not of class refused", name, c.err)
		}
	}
}

// TestVerdictJSON: the verdict prints the members `bundle verify --json`
// printed, in the same order, leaving out the same empty ones; unsandboxed
// (ADR 0013) comes last, here naming the fixture's process check.
func TestVerdictJSON(t *testing.T) {
	f := makeRun(t, runOpts{approve: []string{"alice"}})
	k := newKey(t)
	res, err := Verify(bytes.NewReader(export(t, f, k, ExportOptions{})), storeWith(t, k), anyRun)
	v, err := VerdictOf(res, err)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(v)
	want := regexp.MustCompile(`^\{"verdict":"accepted","run_id":"[^"]+","key_id":"[0-9a-f]{64}","signed_at":"[^"]+",` +
		`"commit":"[0-9a-f]{40}","tree":"[0-9a-f]{40}","dirty":false,"worktree_digest":"sha256:[0-9a-f]{64}",` +
		`"repo":"acme/widget","contract_hash":"sha256:[0-9a-f]{64}","state":"COMPLETE","verification_digest":"sha256:[0-9a-f]{64}",` +
		`"chain_head":"sha256:[0-9a-f]{64}","approvals":1,"unsandboxed":\["hello"\]\}$`)
	if !want.Match(b) {
		t.Errorf("accepted: %s", b)
	}
	v, err = VerdictOf(nil, &VerifyError{Reason: CommitMismatch, Detail: "d", RunID: "r"})
	b, _ = json.Marshal(v)
	if err != nil || string(b) != `{"verdict":"refused","reason":"commit-mismatch","detail":"d","run_id":"r","approvals":0}` {
		t.Errorf("refused: %s %v", b, err)
	}
	pe := &PolicyError{PolicySource, "x"}
	if _, err := VerdictOf(nil, pe); err != pe {
		t.Errorf("a policy error is not a verdict: %v", err)
	}
}
