package bundle

import (
	"bytes"
	"fmt"
	"path/filepath"

	"github.com/proofgate/proofgate/bundle/trust"
)

// A release gate verifies a bundle against its trust store with a policy
// that says which commit and which contract the run must have been made
// for; a refusal is a *VerifyError with a typed Reason. The bundle here is
// the accepted failure vector (testdata/vectors/accepted.txtar).
func ExampleVerifier_Verify() {
	vc, err := parseVector(filepath.Join(vectorDir, "accepted.txtar"))
	if err != nil {
		panic(err)
	}
	store, err := trust.Parse(vc.trust, "trust.json")
	if err != nil {
		panic(err)
	}
	commit, contract := vc.opts.Commit, vc.opts.ContractHash
	v := NewVerifier(store, WithCurrentTime(vc.opts.Now))

	p, err := NewPolicy(WithCommit(commit), WithContractHash(contract), WithApprovals(1))
	if err != nil {
		panic(err)
	}
	res, err := v.Verify(bytes.NewReader(vc.bundle), p)
	if err != nil {
		panic(err)
	}
	fmt.Println("accepted:", res.Run.State, res.Approvals, "approval(s), clean source:", !res.Run.Worktree.Dirty)

	// The same bundle, required for another commit.
	other, _ := NewPolicy(WithCommit("0000000000000000000000000000000000000000"), WithContractHash(contract))
	_, err = v.Verify(bytes.NewReader(vc.bundle), other)
	verdict, _ := VerdictOf(nil, err)
	fmt.Println(verdict.Verdict+":", verdict.Reason)

	// A policy that names no source is refused before the bundle is read.
	_, err = NewPolicy(SourcePolicy{}, WithContractHash(contract))
	fmt.Println("policy error:", err != nil)
	// Output:
	// accepted: COMPLETE 1 approval(s), clean source: true
	// refused: commit-mismatch
	// policy error: true
}
