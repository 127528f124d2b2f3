package action

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/proofgate/proofgate/bundle"
	"github.com/proofgate/proofgate/bundle/archive"
	"github.com/proofgate/proofgate/bundle/key"
	"github.com/proofgate/proofgate/bundle/trust"
	"github.com/proofgate/proofgate/bundle/vsa"
	"github.com/proofgate/proofgate/internal/app"
	"github.com/proofgate/proofgate/internal/bounded"
	"github.com/proofgate/proofgate/internal/ci/event"
	"github.com/proofgate/proofgate/internal/ci/gate"
	"github.com/proofgate/proofgate/kernel/exit"
)

// VSAKeyEnv is read when input vsa-key is empty.
const VSAKeyEnv = "PROOFGATE_VSA_KEY"

// vsaGate is the verify step's verification summary: the gate's key (nil
// when signed keyless), the file to write, and the bundle it names.
type vsaGate struct {
	signer     vsa.Signer
	keyless    *signingInputs // vsa-signing: keyless, or nil
	path       string         // relative to the workspace
	verifierID string
	cand       *gate.Bundle // noteVSA
}

// errNoVSAToken is the usage error of a keyless summary without id-token: write.
var errNoVSAToken = errors.New("vsa-signing: keyless needs the job's OIDC token, but " + idTokenURLEnv + " and " + idTokenTokenEnv +
	" are unset: give the job `permissions: id-token: write`")

// readVSAInputs reads inputs vsa-signing, vsa-key (or VSAKeyEnv),
// vsa-path and vsa-verifier-id; without a key, or vsa-signing: keyless, no
// summary is written.
func (g *verifyJob) readVSAInputs() *gate.Refusal {
	f := g.f
	pemKey := f.input("vsa-key")
	if pemKey == "" {
		pemKey = strings.TrimSpace(g.o.Getenv(VSAKeyEnv))
	}
	f.mask(pemKey)
	s := &vsaGate{path: f.input("vsa-path"), verifierID: f.input("vsa-verifier-id")}
	si, err := readSigningInput(f, "vsa-signing")
	if err != nil {
		return gate.Usage("%v", err)
	}
	suffix := ".vsa.json"
	switch {
	case si.mode == SigningKeyless:
		if r := g.keylessVSAInputs(f.input("vsa-key")); r != nil {
			return r
		}
		s.keyless, suffix = &si, ".vsa.sigstore.json"
	case pemKey == "" && (s.path != "" || s.verifierID != ""):
		return gate.Usage("input vsa-path or vsa-verifier-id is set but vsa-key is empty: the summary needs the gate's signing key")
	case pemKey == "":
		return nil
	default:
		pk, err := key.ParsePrivate([]byte(pemKey), "input vsa-key")
		if err == nil {
			s.signer, err = key.NewSigner(pk)
		}
		if err != nil {
			return gate.Usage("input vsa-key: %v", err)
		}
	}
	if s.path == "" {
		s.path = "proofgate-" + g.in.commit + suffix
	}
	if r := checkVSAPath(s.path, s.verifierID); r != nil {
		return r
	}
	g.vsa = s
	return nil
}

// keylessVSAInputs checks the inputs of a summary signed keyless: no
// vsa-key, the job's OIDC token available.
func (g *verifyJob) keylessVSAInputs(pemKey string) *gate.Refusal {
	if pemKey != "" {
		return gate.Usage("input vsa-key is set with vsa-signing: keyless: a keyless summary is signed by an ephemeral key")
	}
	if g.o.Getenv(idTokenURLEnv) == "" || g.o.Getenv(idTokenTokenEnv) == "" {
		return gate.Usage("%v", errNoVSAToken)
	}
	return nil
}

// checkVSAPath refuses a vsa-path that is not clean and relative, and a
// vsa-verifier-id that is not an absolute URI.
func checkVSAPath(path, id string) *gate.Refusal {
	if !event.CleanRel(path) {
		return gate.Usage("input vsa-path: %q is not a clean path relative to the workspace", path)
	}
	probe := vsa.Input{Name: "probe", Archive: &vsa.Archive{SHA256: strings.Repeat("0", 64)}, VerifierID: id, Verdict: bundle.Refusal("probe", "", "")}
	if _, err := vsa.New(probe); err != nil {
		return gate.Usage("input vsa-verifier-id: %v", err)
	}
	return nil
}

// noteVSA records a verified bundle for the summary: the accepted one, or
// else the first refused (whose refusal is the gate's).
func (g *verifyJob) noteVSA(b gate.Bundle) {
	accepted := func(b *gate.Bundle) bool { return b.Verdict.Verdict == bundle.VerdictAccepted }
	if g.vsa == nil || g.vsa.cand != nil && (accepted(g.vsa.cand) || !accepted(&b)) {
		return
	}
	g.vsa.cand = &b
}

// writeVSA writes the summary of the noted bundle and sets output vsa. No
// bundle was verified (none found, unusable input): no summary. It
// returns the refusal of an accepted bundle whose summary failed.
func (g *verifyJob) writeVSA(ctx context.Context, accepted bool) *gate.Refusal {
	if g.vsa == nil || g.vsa.cand == nil {
		g.f.output("vsa", "")
		g.f.output("vsa-policy", "")
		return nil
	}
	err := g.vsa.write(ctx, g)
	if err == nil {
		g.f.output("vsa", g.vsa.path)
		g.f.output("vsa-policy", policyPath(g.vsa.path))
		g.f.logf("wrote verification summary %s (%s) and its policy document %s", g.vsa.path, passedOrFailed(g.vsa.cand.Verdict), policyPath(g.vsa.path))
		return nil
	}
	g.f.output("vsa", "")
	g.f.output("vsa-policy", "")
	if !accepted {
		g.f.annotate("warning", "ProofGate VSA not written", err.Error())
		return nil
	}
	class := exit.Environment
	if errors.Is(err, fs.ErrExist) {
		class = exit.Usage
	}
	return &gate.Refusal{Class: class, Reason: string(gate.ReasonVSAUnwritten), Detail: err.Error()}
}

func passedOrFailed(v bundle.Verdict) string {
	if v.Verdict == bundle.VerdictAccepted {
		return vsa.Passed
	}
	return vsa.Failed
}

// policyPath is where the policy document of the summary at path is
// written: path without ".sigstore.json" or ".json", then ".policy.json".
func policyPath(path string) string {
	if p, ok := strings.CutSuffix(path, ".sigstore.json"); ok {
		return p + ".policy.json"
	}
	return strings.TrimSuffix(path, ".json") + ".policy.json"
}

// write signs the summary and creates its file and its policy document's
// (policyPath); an existing one is refused (fs.ErrExist) and left as it
// was, and neither is left without the other.
func (s *vsaGate) write(ctx context.Context, g *verifyJob) error {
	c := s.cand
	a, err := vsa.Inspect(bytes.NewReader(c.Data), archive.DefaultLimits)
	if err != nil {
		return err
	}
	p, err := c.Policy.Policy()
	if err != nil {
		return err
	}
	tr, ids, err := g.vsaTrust()
	if err != nil {
		return err
	}
	in := vsa.Input{Name: c.Name, Archive: a, ResourceURI: c.URI, VerifierID: s.verifierID, Policy: p.Describe(),
		Identities: ids, Trust: tr, Verdict: c.Verdict, Time: c.Policy.Now}
	st, doc, err := vsa.Summarize(in)
	if err != nil {
		return err
	}
	o := app.SummaryOptions{Key: s.signer, Out: g.abs(s.path), Policy: g.abs(policyPath(s.path))}
	if s.keyless != nil {
		if o.Keyless, err = newKeylessSigner(ctx, g.o, g.f, *s.keyless, errNoVSAToken); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Dir(o.Out), 0o755); err != nil {
		return err
	}
	_, err = app.WriteSummary(ctx, st, doc, o)
	var fe *app.SummaryFileError
	if errors.As(err, &fe) {
		name := s.path
		if fe.Path == o.Policy {
			name = policyPath(s.path)
		}
		return fmt.Errorf("vsa-path %s: %w (remove it or choose another vsa-path)", name, fe.Err)
	}
	return err
}

// vsaTrust is the trust material the gate judged by (the trust store, which
// a keyless gate may lack, and the trusted root) and the identity inputs
// that pinned a keyless signer, for the summary's policy.
func (g *verifyJob) vsaTrust() ([]vsa.Resource, map[string]string, error) {
	var res []vsa.Resource
	tb, err := bounded.ReadFile(g.abs(g.in.trustStore), trust.MaxSize)
	switch {
	case err == nil:
		res = append(res, vsa.TrustFile(filepath.Base(g.in.trustStore), tb))
	case !errors.Is(err, fs.ErrNotExist) || g.ids.TrustedRoot == "":
		return nil, nil, fmt.Errorf("trust store: %w", err)
	}
	if g.ids.TrustedRoot == "" {
		return res, nil, nil
	}
	rb, err := bounded.ReadFile(g.abs(g.ids.TrustedRoot), 64<<20)
	if err != nil {
		return nil, nil, fmt.Errorf("trusted root: %w", err)
	}
	res = append(res, vsa.TrustFile(filepath.Base(g.ids.TrustedRoot), rb))
	ids := map[string]string{}
	for name, v := range map[string]string{"certificate-oidc-issuer": g.ids.Issuer, "signer-workflow": g.ids.SignerWorkflow,
		"source-repo": g.ids.SourceRepo, "source-ref": g.ids.SourceRef} {
		if v != "" {
			ids[name] = v
		}
	}
	return res, ids, nil
}
