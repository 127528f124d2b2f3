package action

// The verify step's keyless side: identity inputs pin which workflow a
// keyless bundle's certificate must name, a Sigstore trusted root (read
// offline from the workspace) says which Fulcio CAs and timestamp
// authorities to trust, and the companion Sigstore bundle in the artifact
// must carry exactly the archive's envelope.

import (
	"bytes"
	"fmt"
	"time"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/sigstore"
	"github.com/proofgate/proofgate/bundle/trust"
	"github.com/proofgate/proofgate/internal/ci/artifact"
	"github.com/proofgate/proofgate/internal/ci/keyless"
)

// ReasonCompanion refuses an artifact whose companion Sigstore bundle does
// not carry the archive's envelope (or, keyless, is not the archive's
// material byte for byte): what Sigstore tooling would verify differs
// from what the gate verified.
const ReasonCompanion = "companion-mismatch"

// identityInputs are the verify inputs of keyless verification.
type identityInputs struct {
	trustedRoot, issuer, signerWorkflow, sourceRepo, sourceRef string
}

func readIdentityInputs(f *workflow) identityInputs {
	return identityInputs{
		trustedRoot:    f.input("trusted-root"),
		issuer:         f.input("certificate-oidc-issuer"),
		signerWorkflow: f.input("signer-workflow"),
		sourceRepo:     f.input("source-repo"),
		sourceRef:      f.input("source-ref"),
	}
}

// identity checks the inputs and returns the identity policy they pin
// (keyless.Pins.Identity), or nil without input trusted-root or
// signer-workflow; a refusal is usage.
func (in identityInputs) identity() (*sigstore.Identity, *refusal) {
	id, err := keyless.Pins{TrustedRoot: in.trustedRoot, Issuer: in.issuer, SignerWorkflow: in.signerWorkflow,
		SourceRepo: in.sourceRepo, SourceRef: in.sourceRef}.Identity()
	if err != nil {
		return nil, refuseUsage("%s", err)
	}
	return id, nil
}

// loadTrust loads the trust store and, with input trusted-root, the
// keyless verifiers. With a trusted root, a missing trust store is an
// empty one (keyless bundles need no keys).
func (g *gate) loadTrust() *refusal {
	id, r := g.ids.identity()
	if r != nil {
		return r
	}
	var err error
	if g.ids.trustedRoot == "" {
		if g.store, err = trust.Load(g.abs(g.in.trustStore)); err != nil {
			return refuseUsage("input trust-store: %v", err)
		}
		return nil
	}
	if g.store, err = trust.LoadOrNew(g.abs(g.in.trustStore)); err != nil {
		return refuseUsage("input trust-store: %v", err)
	}
	var ids []sigstore.Identity
	if id != nil {
		ids = append(ids, *id)
	}
	ids = append(ids, sigstore.TrustIdentities(g.store)...)
	if len(ids) == 0 {
		return refuseUsage("input trusted-root is set but nothing pins the signer: set signer-workflow (e.g. OWNER/proofgate/.github/workflows/proofgate.yml@<full sha>) or add identities to the trust store (proofgate trust add-identity); an unpinned identity would accept a bundle signed by any workflow of any repository")
	}
	mv, err := sigstore.LoadVerifiers(g.abs(g.ids.trustedRoot), ids)
	if err != nil {
		return refuseUsage("input trusted-root: %v", err)
	}
	g.mv = mv
	return nil
}

// witnessRecorder is the gate's MaterialVerifiers: it delegates and keeps
// the key the material vouched for, so the gate can report the signer of
// the bundle it accepts.
type witnessRecorder struct {
	mv   envelope.MaterialVerifiers
	last envelope.WitnessedKey
}

func (w *witnessRecorder) VerifierFor(keyID string, env, material []byte) (envelope.WitnessedKey, error) {
	k, err := w.mv.VerifierFor(keyID, env, material)
	if err == nil {
		w.last = k
	}
	return k, err
}

// verifyOne verifies one bundle (and its companion, when the artifact
// carries one) and records the attempt.
func (g *gate) verifyOne(data []byte, comp *companionFile, opts bundle.VerifyOptions, label string) Attempt {
	res := g.res
	rec := &witnessRecorder{mv: g.mv}
	r, err := verifyBundle(data, g.store, rec, opts)
	v, err := bundle.VerdictOf(r, err)
	if err != nil {
		v = bundle.Refusal(string(bundle.Malformed), err.Error(), "")
	}
	if v.Verdict == VerdictAccepted && comp != nil {
		if err := artifact.CheckCompanion(data, comp.data); err != nil {
			v = bundle.Refusal(ReasonCompanion, fmt.Sprintf("%s: %v", comp.name, err), r.RunID)
		}
	}
	if v.Verdict == VerdictAccepted {
		res.Accepted, res.RunID = r, r.RunID
		if rec.last != nil {
			res.Signer, res.Witnessed = rec.last.Signer(), rec.last.WitnessedAt()
		}
	} else if res.RunID == "" {
		res.RunID = v.RunID
	}
	att := Attempt{Artifact: label, Verdict: v.Verdict, Reason: v.Reason, Detail: v.Detail}
	res.Attempts = append(res.Attempts, att)
	return att
}

// verifyBundle is bundle.Verify with the keyless material verifiers, when
// the gate has a trusted root.
func verifyBundle(data []byte, store *trust.Store, rec *witnessRecorder, opts bundle.VerifyOptions) (*bundle.Result, error) {
	p, err := opts.Policy()
	if err != nil {
		return nil, err
	}
	var vopts []bundle.VerifierOption
	if opts.Limits != nil {
		vopts = append(vopts, bundle.WithLimits(*opts.Limits))
	}
	if !opts.Now.IsZero() {
		vopts = append(vopts, bundle.WithCurrentTime(opts.Now))
	}
	if rec.mv != nil {
		vopts = append(vopts, bundle.WithMaterialVerifiers(rec))
	}
	return bundle.NewVerifier(store, vopts...).Verify(bytes.NewReader(data), p)
}

// companionFile is a companion Sigstore bundle found beside an archive.
type companionFile struct {
	name string
	data []byte
}

// witnessedText formats a witnessed time for the summary.
func witnessedText(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}
