package bundle

import (
	"fmt"
	"time"

	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/kernel/replay"
)

// VerifyStatement verifies a keyless bundle's signed statement without its
// archive (ADR 0040): env is the archive's DSSE envelope (rebuilt from the
// companion Sigstore bundle by bundle/sigstore.ArchiveEnvelope) and
// material that Sigstore bundle, as GitHub's attestation store keeps it
// after the workflow artifact has expired. It checks what the signed
// statement alone can show, in Verify's order: the verification material
// and the signature (a keyless key only: the attestation store holds no
// key-signed bundle); the statement, canonical; the witnessed identity and
// time; well-formed subjects with the required members named and the
// product subjects exactly the predicate's products; the run COMPLETE and
// signed_at plausible against the verification time; then the policy —
// source, clean work tree, repository, profile, contract, sandbox,
// approvals, rules, authorizations and subjects — against the predicate's
// run summary. What it cannot check, it does not claim: the event log is
// not replayed, so the predicate is the signer's word (the identity the
// policy pins), and no member file's digest is checked. The Result says so
// (StatementOnly).
func (v *Verifier) VerifyStatement(env, material []byte, p *Policy) (*Result, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	b := &unpacked{files: map[string][]byte{AttestationFile: env, envelope.MaterialFile: material}}
	if id := keyIDOf(env); !envelope.Keyless(id) {
		return nil, refuse(UnknownKey, fmt.Sprintf("keyid %q is not keyless: only a keyless bundle's statement verifies without its archive", clip(id)), "", nil)
	}
	k, err := b.openStatement(noKeys{}, v.material, p.witnessed)
	if err != nil {
		return nil, err
	}
	if b.subj, err = b.subjects(); err != nil {
		return nil, err
	}
	if err := b.checkSummary(v.now, p.witnessed); err != nil {
		return nil, err
	}
	if err := b.checkProductSubjects(); err != nil {
		return nil, err
	}
	res := &Result{RunID: b.id, KeyID: k.KeyID(), SignedAt: b.wk.WitnessedAt().UTC(), Signer: b.wk.Signer(),
		Witnessed: b.wk.WitnessedAt().UTC(), Run: b.summary, StatementOnly: true}
	if err := p.checkRun(b, res); err != nil {
		return nil, err
	}
	return res, nil
}

// checkSummary takes the predicate's run summary as the run (nothing to
// audit it against), which must be COMPLETE, with a signing time not past
// the verification or witness time.
func (b *unpacked) checkSummary(now, witnessed time.Time) error {
	b.summary = b.st.Predicate.Run
	if b.summary.State != replay.Complete {
		return refuse(NotComplete, fmt.Sprintf("the statement says the run is %s", b.summary.State), b.id, nil)
	}
	if now.IsZero() {
		now = time.Now()
	}
	for _, bound := range []time.Time{now, witnessed} {
		if !bound.IsZero() && b.signedAt.After(bound.Add(MaxClockSkew)) {
			return refuse(SigningTimeImplausible, fmt.Sprintf("signed_at %s is after %s (+%s)", b.signedAt.UTC().Format(time.RFC3339Nano),
				bound.UTC().Format(time.RFC3339Nano), MaxClockSkew), b.id, nil)
		}
	}
	s := &b.summary
	b.rep = &replay.Report{RunID: s.RunID, State: s.State, Source: s.Source, Repo: s.Repo, Profile: s.Profile,
		Worktree: &s.Worktree, ContractHash: s.ContractHash, Decisions: s.Decisions}
	return nil
}

// checkRun applies the policy to the run b's checks established (audited,
// or the signed summary): source, repository, profile, contract, sandbox,
// approvals, rules, authorizations and subjects; it sets res.Approvals.
func (p *Policy) checkRun(b *unpacked, res *Result) error {
	if err := p.bind(b.rep, b.id); err != nil {
		return err
	}
	if err := p.checkSandbox(&b.summary, b.id); err != nil {
		return err
	}
	res.Approvals = countApprovals(b.rep.Decisions)
	if res.Approvals < p.approvals {
		return refuse(InsufficientApprovals, fmt.Sprintf("%d distinct approvals, %d required", res.Approvals, p.approvals), b.id, nil)
	}
	if err := p.checkRules(b.rep.Decisions, b.id); err != nil {
		return err
	}
	if err := p.checkAuthorizations(&b.summary, b.id); err != nil {
		return err
	}
	return p.checkProducts(b.subj, b.id)
}
