package action

// The verify step's keyless side: identity inputs pin which workflow a
// keyless bundle's certificate must name, a Sigstore trusted root (read
// offline from the workspace) says which Fulcio CAs and timestamp
// authorities to trust, and the companion Sigstore bundle in the artifact
// must carry exactly the archive's envelope.

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/envelope"
	"github.com/proofgate/proofgate/bundle/sigstore"
	"github.com/proofgate/proofgate/bundle/trust"
	"github.com/proofgate/proofgate/internal/strictjson"
)

// ReasonCompanion refuses an artifact whose companion Sigstore bundle does
// not carry the archive's envelope (or, keyless, is not the archive's
// material byte for byte): what Sigstore tooling would verify differs
// from what the gate verified.
const ReasonCompanion = "companion-mismatch"

// signerWorkflow is the shape of input signer-workflow:
// OWNER/REPO/.github/workflows/FILE.yml, optionally @REF.
var signerWorkflow = regexp.MustCompile(`^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+/\.github/workflows/[A-Za-z0-9_.-]+\.ya?ml(@[^\s@]+)?$`)

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

// identity checks the inputs and returns the identity policy they pin, or
// nil without input trusted-root (key-signed bundles only) or without
// signer-workflow (then only the trust store's identities pin the signer,
// and loadTrust refuses a gate with none). Issuer, source repository or
// ref without signer-workflow are refused: such an identity would accept a
// bundle signed by any workflow Fulcio certified a token of.
func (in identityInputs) identity() (*sigstore.Identity, *refusal) {
	pins := in.issuer != "" || in.signerWorkflow != "" || in.sourceRepo != "" || in.sourceRef != ""
	if in.trustedRoot == "" {
		if pins {
			return nil, refuseUsage("inputs certificate-oidc-issuer, signer-workflow, source-repo and source-ref pin a keyless signer, and need input trusted-root (the Sigstore trusted_root.json to verify it against)")
		}
		return nil, nil
	}
	if !cleanRel(in.trustedRoot) {
		return nil, refuseUsage("input trusted-root: %q is not a clean path relative to the repository root", in.trustedRoot)
	}
	if in.signerWorkflow == "" {
		if in.issuer != "" || in.sourceRepo != "" || in.sourceRef != "" {
			return nil, refuseUsage("inputs certificate-oidc-issuer, source-repo and source-ref narrow input signer-workflow, which is empty: an unpinned identity (no workflow) would accept a bundle signed by any workflow; pin it, e.g. OWNER/proofgate/.github/workflows/proofgate.yml@<full sha>")
		}
		return nil, nil // the trust store's identities, if any (loadTrust)
	}
	if strings.Contains(in.signerWorkflow, "://") || !signerWorkflow.MatchString(in.signerWorkflow) {
		return nil, refuseUsage("input signer-workflow: %q is not OWNER/REPO/.github/workflows/FILE.yml[@REF] (no https://HOST/ prefix)", in.signerWorkflow)
	}
	if in.sourceRepo != "" {
		if _, _, ok := splitRepo(in.sourceRepo); !ok {
			return nil, refuseUsage("input source-repo: %q is not OWNER/REPO", in.sourceRepo)
		}
	}
	if in.sourceRef != "" && !strings.HasPrefix(in.sourceRef, "refs/") {
		return nil, refuseUsage("input source-ref: %q is not a full ref (refs/heads/..., refs/tags/...)", in.sourceRef)
	}
	if in.issuer != "" {
		if err := checkServiceURL(in.issuer); err != nil {
			return nil, refuseUsage("input certificate-oidc-issuer: %v", err)
		}
	}
	return &sigstore.Identity{Name: "verify inputs", Issuer: in.issuer, SignerWorkflow: in.signerWorkflow,
		SourceRepo: in.sourceRepo, SourceRef: in.sourceRef}, nil
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
		if err := checkCompanion(data, comp.data); err != nil {
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

// checkCompanion checks that the companion Sigstore bundle comp carries
// the archive's envelope: for a keyless archive it is its
// attestation.sigstore.json member byte for byte; for a key-signed one a
// key Sigstore bundle of the same payload type, payload and signature,
// whose hint is the envelope's key id.
func checkCompanion(archiveBytes, comp []byte) error {
	members, err := attestationMembers(archiveBytes)
	if err != nil {
		return err
	}
	if m, ok := members[envelope.MaterialFile]; ok {
		if !bytes.Equal(m, comp) {
			return fmt.Errorf("not the archive's %s", envelope.MaterialFile)
		}
		return nil
	}
	env, ok := members[envelopeFile]
	if !ok {
		return fmt.Errorf("the archive has no %s", envelopeFile)
	}
	sb, err := sigstore.Read(comp)
	if err != nil {
		return err
	}
	if err := sb.SameEnvelope(env); err != nil {
		return err
	}
	var e envelope.Envelope
	if err := strictjson.Decode(env, &e); err != nil || len(e.Signatures) != 1 {
		return errors.New("the archive's envelope does not have one signature")
	}
	if sb.Hint != e.Signatures[0].KeyID {
		return fmt.Errorf("public key hint %q is not the envelope's key id", clipText(sb.Hint))
	}
	return nil
}

func clipText(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// witnessedText formats a witnessed time for the summary.
func witnessedText(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}
